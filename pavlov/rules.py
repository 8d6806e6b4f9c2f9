r"""Write rules of a sequence memory: how each CS-US pairing changes the store.

Every rule reads and writes the state of :mod:`pavlov.attention`, :math:`S_t \in \mathbb R^{d_k \times d_v}`
with row vectors, and reads after writing, :math:`o_t = q_t S_t`. They differ in the write:

==================  =================================================================================================
``hebbian``         :math:`S_t = S_{t-1} + \alpha_t\, k_t^\top v_t` (the source's additive store)
``decay``           :math:`S_t = \gamma_t S_{t-1} + k_t^\top v_t` (forgetting, as in RetNet)
``delta``           :math:`S_t = S_{t-1} + \beta_t\, k_t^\top (v_t - k_t S_{t-1})` (DeltaNet; Rescorla-Wagner)
``delta_rectified`` :math:`S_t = S_{t-1} + \beta_t\, k_t^\top (v_t - \max(0, k_t S_{t-1}))` (error of a ReLU read-out)
``gated_delta``     :math:`S_t = \gamma_t (I - \beta_t k_t^\top k_t) S_{t-1} + \beta_t\, k_t^\top v_t` (Gated DeltaNet)
``oja``             source: :math:`S_t = S_{t-1} + \alpha_t (k_t^\top v_t - S_{t-1}\,\mathrm{diag}(v_t^2))`;
                    standard: :math:`S_t = S_{t-1} + \alpha_t (k_t^\top v_t - S_{t-1}\, v_t^\top v_t)`
``bcm``             :math:`S_t = S_{t-1} + \alpha_t\, k_t^\top (v_t \odot (v_t - \theta_{t-1}))`,
                    :math:`\theta_t = \theta_{t-1} + (v_t^2 - \theta_{t-1})/\tau`
``kalman``          :math:`S_t = S_{t-1} + g_t (v_t - k_t S_{t-1})`, :math:`P_t = P_{t-1} - g_t k_t P_{t-1} + \delta_t I`,
                    :math:`g_t = P_{t-1} k_t^\top / (\sigma^2_t + k_t P_{t-1} k_t^\top)` (Kalman filter; least squares;
                    ``diagonal=True``: :math:`P` kept diagonal, a variance per key coordinate)
==================  =================================================================================================

In the Hebbian, Oja and BCM rules the postsynaptic activity is the US :math:`v_t`, which drives the
output unconditionally, as in the source's store. Oja's standard form (his subspace rule, one
output per column of :math:`S`) subtracts the whole output outer product :math:`v^\top v`; the
source keeps only its diagonal, which makes every column an independent single-neuron Oja rule. For
a one-dimensional US the two coincide. BCM's state is the pair :math:`(S, \theta)`, with the sliding
threshold :math:`\theta \in \mathbb R^{d_v}` a running mean of :math:`v^2` over about ``tau`` steps.
The Kalman rule's state is the pair :math:`(S, P)`, the posterior mean of the store and the covariance
:math:`P \in \mathbb R^{d_k \times d_k}` of its columns, which sets a gain for every key, a key absent
from the pairing included.

Every rule has the signature ``rule(q, k, v, *, <parameters>, initial_state=None, chunk_size=None)
-> (outputs, final_state)`` with ``q, k: [..., T, d_k]``, ``v: [..., T, d_v]``, outputs
``[..., T, d_v]`` and a state ``[..., d_k, d_v]`` (zero when ``initial_state`` is None). A parameter
is a number or a tensor of one value per step, ``[..., T]``, broadcast over the batch. Float16 and
bfloat16 inputs are computed in float32 and returned in their dtype (the state would lose the signal).

``chunk_size=None`` runs the recurrence one step at a time. A ``chunk_size`` runs the linear rules
(Hebbian, decay, delta, gated delta) chunkwise in parallel: inside a chunk of :math:`C` steps the
delta rule's corrections solve one unit lower-triangular system (the WY/UT form of Yang et al. 2024),

.. math::

    (I + \mathrm{diag}(\beta)\, \mathrm{tril}_{-1}(D \odot K K^\top))\, U
        = \mathrm{diag}(\beta)\,(V - \mathrm{diag}(\Gamma)\, K S_0), \qquad
    O = \mathrm{diag}(\Gamma)\, Q S_0 + \mathrm{tril}(D \odot Q K^\top)\, U,

with :math:`\Gamma_t = \prod_{l \le t} \gamma_l` and :math:`D_{ti} = \prod_{i < l \le t} \gamma_l`; all chunks
are solved at once and only the state is carried from chunk to chunk,
:math:`S_C = \Gamma_C S_0 + \sum_i D_{Ci}\, k_i^\top u_i`. Oja and BCM are not linear in the state
pairwise like this and run recurrently only. The Kalman rule without drift runs its information
form chunkwise: :math:`P_t^{-1}` and :math:`P_t^{-1} S_t` are sums over the pairings, so each chunk's
are prefix sums and each step's store one Cholesky solve.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from . import _validate
from ._precision import float32_accumulation


def _check_inputs(q, k, v, initial_state, chunk_size, *, chunked: bool = True):
    _validate.sequences(q, k, v)
    if chunk_size is not None:
        if not chunked:
            raise ValueError("chunk_size must be None: this rule has only a recurrent form")
        _validate.positive_int("chunk_size", chunk_size)
    state_shape = (*q.shape[:-2], q.shape[-1], v.shape[-1])
    if initial_state is None:
        return q.new_zeros(state_shape)
    _validate.tensor("initial_state", initial_state, min_dim=2)
    _validate.same_device_dtype(q=q, initial_state=initial_state)
    if tuple(initial_state.shape) != state_shape:
        raise ValueError(f"initial_state must have shape {state_shape} (batch..., d_k, d_v), "
                         f"got {tuple(initial_state.shape)}")
    return initial_state


def _check_pair(rule: str, q, k, v, initial_state, chunk_size, second: str, shape, *, chunked: bool = False):
    """The state ``S`` and the second state of a rule that carries two, from ``initial_state`` (a pair or None).

    ``shape(batch, d_k, d_v)`` is the second state's shape; it is None when ``initial_state`` is (the rule
    sets its own), and the state ``S`` then zero.
    """
    paired = initial_state is not None
    if paired and (not isinstance(initial_state, tuple) or len(initial_state) != 2):
        raise TypeError(f"initial_state of {rule} must be a pair (state, {second}) or None")
    state = _check_inputs(q, k, v, initial_state[0] if paired else None, chunk_size, chunked=chunked)
    if not paired:
        return state, None
    name, expected = f"initial_state {second}", tuple(shape(state.shape[:-2], *state.shape[-2:]))
    other = _validate.tensor(name, initial_state[1])
    _validate.same_device_dtype(v=v, **{name: other})
    if tuple(other.shape) != expected:
        raise ValueError(f"{name} must have shape {expected}, got {tuple(other.shape)}")
    return state, other


def _per_step(name: str, value, q: torch.Tensor, *, low: float = 0.0, high: float | None = None,
              strict: bool = False) -> torch.Tensor:
    """A rate as a ``[..., T]`` tensor broadcast over the batch of ``q``, checked to lie in [low, high] (``strict``: (low, high])."""
    steps = q.shape[:-1]
    if isinstance(value, torch.Tensor):
        _validate.tensor(name, value, min_dim=0)
        _validate.same_device_dtype(q=q, **{name: value})
        if value.dim() > 0 and value.shape[-1] != steps[-1]:
            raise ValueError(f"{name} must be a number or have one value per step (last dimension {steps[-1]}), "
                             f"got shape {tuple(value.shape)}")
        try:
            value = value.expand(steps)
        except RuntimeError:
            raise ValueError(f"{name} of shape {tuple(value.shape)} does not broadcast to the steps "
                             f"{tuple(steps)} of q") from None
        if value.device.type == "meta":       # shapes only: no values to check
            return value
        lo, hi = torch.aminmax(value.detach())
        lo, hi = float(lo), float(hi)
    else:
        lo = hi = _validate.finite_float(name, value)
        value = q.new_full(steps, lo)
    if lo < low or (strict and lo == low) or (high is not None and hi > high):
        opening = "(" if strict else "["
        rng = f"{opening}{low}, {high}]" if high is not None else f"{'>' if strict else '>='} {low}"
        raise ValueError(f"{name} must lie in {rng}, got values from {lo} to {hi}")
    return value


def _linear_recurrent(q, k, v, gamma, beta, state, *, correct: bool, rectify: bool = False):
    """One step at a time: :math:`S_t = \\gamma_t S_{t-1} + k_t^T u_t`, :math:`u_t = \\beta_t (v_t - [\\gamma_t k_t S_{t-1}])`.

    ``rectify``: the prediction in the error is :math:`\\max(0, \\gamma_t k_t S_{t-1})`, a ReLU read-out.
    """
    outputs = []
    for t in range(q.shape[-2]):
        kt, g, b = k[..., t, :], gamma[..., t, None, None], beta[..., t, None]
        state = g * state
        if correct:
            prediction = (kt[..., None, :] @ state).squeeze(-2)
            u = b * (v[..., t, :] - (prediction.clamp(min=0) if rectify else prediction))
        else:
            u = b * v[..., t, :]
        state = state + kt[..., :, None] * u[..., None, :]
        outputs.append((q[..., t, None, :] @ state).squeeze(-2))
    return torch.stack(outputs, dim=-2), state


def _decays(gamma: torch.Tensor, positive: bool) -> tuple[torch.Tensor, torch.Tensor]:
    """``D [..., C, C]`` with :math:`D_{ti} = \\prod_{i < l \\le t} \\gamma_l` below the diagonal, and ``Gamma [..., C, 1]``.

    With every :math:`\\gamma > 0` (``positive``), one difference of cumulative log-decays; with a zero (a step
    that forgets everything), products of masked copies, which keep the zero exact and its gradient finite.
    """
    if not positive:
        decay = _segment_products(gamma)
        return decay, decay[..., :, :1] * gamma[..., :1, None]     # Gamma_t = D_t1 gamma_1
    log_gain = gamma.log().cumsum(-1)                                # log Gamma_t
    above = torch.ones(gamma.shape[-1], gamma.shape[-1], dtype=torch.bool, device=gamma.device).triu(1)
    decay = (log_gain[..., :, None] - log_gain[..., None, :]).masked_fill(above, float("-inf")).exp()
    return decay, log_gain.exp()[..., None]


def _scan(gains, inputs: torch.Tensor, state: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """The states of :math:`S_{c+1} = a_c S_c + I_c` at each chunk's start ``[..., m, d_k, d_v]``, and the last one.

    ``gains`` ``[..., m]`` (None: all 1), ``inputs`` ``[..., m, d_k, d_v]``. Row ``c`` of the weights holds
    :math:`\\prod_{j < l < c} a_l` for every earlier chunk ``j``, so the scan is matrix products, not a loop.
    """
    if gains is None:
        before = F.pad(inputs.cumsum(-3)[..., :-1, :, :], (0, 0, 0, 0, 1, 0))   # written before chunk c
        starts = before + state[..., None, :, :]
        return starts, starts[..., -1, :, :] + inputs[..., -1, :, :]
    weights = F.pad(_segment_products(gains)[..., :-1, :], (0, 0, 1, 0))   # (..., m, m): zero unless j < c
    reach = F.pad(gains[..., :-1], (1, 0), value=1.0).cumprod(-1)     # prod_{l < c} a_l, (..., m)
    starts = (weights @ inputs.flatten(-2)).unflatten(-1, inputs.shape[-2:])
    starts = torch.addcmul(starts, reach[..., None, None], state[..., None, :, :])
    return starts, gains[..., -1, None, None] * starts[..., -1, :, :] + inputs[..., -1, :, :]


def _segment_products(x: torch.Tensor) -> torch.Tensor:
    """``[..., C] -> [..., C, C]``: entry ``(t, i)`` is :math:`\\prod_{i < l \\le t} x_l` on and below the diagonal, 0 above.

    Products of masked copies, not ratios of cumulative products, so a zero (a step that forgets
    everything) stays exact and keeps a finite gradient.
    """
    size = x.shape[-1]
    ones = torch.ones(size, size, dtype=torch.bool, device=x.device)
    products = x[..., :, None].expand(*x.shape, size).masked_fill(~ones.tril(-1), 1).cumprod(-2)
    return products.masked_fill(~ones.tril(), 0)


BLOCK_STEPS = 512    # steps whose chunks are prepared together: the chunk tensors of one block stay in cache


def _linear_chunkwise(q, k, v, gamma, beta, state, *, correct: bool, chunk_size: int):
    """Blocks of chunks at a time: every chunk of a block at once, then one product per chunk for the state."""
    length = q.shape[-2]
    pad = -length % chunk_size
    if pad:   # padded steps write nothing (beta = 0) and keep the state (gamma = 1)
        q, k, v = (F.pad(x, (0, 0, 0, pad)) for x in (q, k, v))
        beta = None if beta is None else F.pad(beta, (0, pad))
        gamma = None if gamma is None else F.pad(gamma, (0, pad), value=1.0)
    split = lambda x: x.reshape(*x.shape[:-2], -1, chunk_size, x.shape[-1])
    q, k, v = split(q), split(k), split(v)
    beta = None if beta is None else split(beta[..., None])
    gamma = None if gamma is None else split(gamma[..., None])
    chunks, per_block = q.shape[-3], max(1, BLOCK_STEPS // chunk_size)
    positive = gamma is not None and bool((gamma > 0).all())        # once: decays may then be taken in logs
    outputs = []
    for start in range(0, chunks, per_block):
        block = slice(start, start + per_block)
        # one contiguous copy of the block, not one hidden in every batched product that reads it
        part = [None if x is None else x[..., block, :, :].contiguous() for x in (q, k, v, gamma, beta)]
        out, state = _chunk_block(*part, state, correct=correct, positive=positive)
        outputs.append(out)
    return torch.cat(outputs, dim=-3).flatten(-3, -2)[..., :length, :], state


def _chunk_block(q, k, v, gamma, beta, state, *, correct: bool, positive: bool = True):
    """One block of chunks ``[..., m, C, d]`` (rates ``[..., m, C, 1]``); ``gamma=None`` means no forgetting."""
    size = q.shape[-2]
    k_t = k.transpose(-1, -2)
    if gamma is None:             # D is the causal mask and Gamma = 1: skip the products
        scores = (q @ k_t).tril_()                                  # tril(Q K^T)
        query_state, carried_t = q, k_t
    else:
        decay, gain = _decays(gamma[..., 0], positive)              # D_ti (zero above the diagonal), Gamma_t
        scores = (q @ k_t) * decay                                  # tril(D * Q K^T)
        query_state, carried_t = gain * q, (k * decay[..., -1, :, None]).transpose(-1, -2)  # (D_Ci k_i)^T
    writes = v if beta is None else beta * v                        # beta None: rate 1 (the decay rule)
    if correct:
        # T = (I + diag(beta) tril_-1(D * K K^T))^-1, then U' = T diag(beta) V and W = T diag(beta Gamma) K
        coupling = k @ k_t if gamma is None else (k @ k_t) * decay
        system = (beta * coupling.tril_(-1)).diagonal_scatter(q.new_ones(size).expand(coupling.shape[:-1]),
                                                              dim1=-2, dim2=-1)
        eye = torch.eye(size, dtype=q.dtype, device=q.device)
        inverse = torch.linalg.solve_triangular(system, eye, upper=False, unitriangular=True)
        writes, corrections = inverse @ writes, inverse @ (beta * (k if gamma is None else gain * k))
        query_state = query_state - scores @ corrections
    local = scores @ writes
    inputs = carried_t @ writes                                     # what a chunk adds to the state
    if not correct:               # the state at each chunk's start is a weighted sum of the chunks before it
        starts, state = _scan(None if gamma is None else gain[..., -1, 0], inputs, state)
        return local + query_state @ starts, state
    chunk_gain = 1.0 if gamma is None else gain[..., -1:, :]        # (..., m, 1, 1)
    eye_k = torch.eye(k.shape[-1], dtype=q.dtype, device=q.device)
    steps = (chunk_gain * eye_k - carried_t @ corrections).unbind(-3)   # S_next = (Gamma_C I - K~^T W) S + K~^T U'
    states = []
    # only the delta rules' state crosses chunk boundaries one chunk at a time; unbind once, as indexing in
    # the loop costs a full-size gradient buffer per chunk in the backward pass
    for step, added in zip(steps, inputs.unbind(-3)):
        states.append(state)
        state = step @ state + added
    return local + query_state @ torch.stack(states, dim=-3), state


def _linear(q, k, v, gamma, rate: tuple[str, object] | None, initial_state, chunk_size, *, correct: bool):
    """The four linear rules: check, broadcast the rates (``rate``: the write rate's name and value), run a form."""
    state = _check_inputs(q, k, v, initial_state, chunk_size)
    gamma = None if gamma is None else _per_step("gamma", gamma, q, high=1.0)
    beta = None if rate is None else _per_step(*rate, q)            # None: every write at rate 1
    if chunk_size is None:
        beta = q.new_ones(q.shape[:-1]) if beta is None else beta
        gamma = q.new_ones(q.shape[:-1]) if gamma is None else gamma
        return _linear_recurrent(q, k, v, gamma, beta, state, correct=correct)
    return _linear_chunkwise(q, k, v, gamma, beta, state, correct=correct, chunk_size=chunk_size)


@float32_accumulation
def hebbian(q, k, v, *, alpha=1.0, initial_state=None, chunk_size=None):
    r"""The additive Hebbian rule :math:`S_t = S_{t-1} + \alpha_t k_t^\top v_t`, read as :math:`o_t = q_t S_t`.

    Example:
        >>> q = k = torch.eye(2, dtype=torch.float64)
        >>> v = torch.tensor([[1.0], [2.0]], dtype=torch.float64)
        >>> out, state = hebbian(q, k, v, alpha=0.5)
        >>> out.squeeze(-1).tolist(), state.squeeze(-1).tolist()
        ([0.5, 1.0], [0.5, 1.0])
    """
    return _linear(q, k, v, None, ("alpha", alpha), initial_state, chunk_size, correct=False)


@float32_accumulation
def decay(q, k, v, *, gamma, initial_state=None, chunk_size=None):
    r"""The forgetting rule :math:`S_t = \gamma_t S_{t-1} + k_t^\top v_t`, with :math:`0 \le \gamma_t \le 1`.

    Example:
        >>> q = k = torch.ones(3, 1, dtype=torch.float64)
        >>> decay(q, k, torch.ones(3, 1, dtype=torch.float64), gamma=0.5)[0].squeeze(-1).tolist()
        [1.0, 1.5, 1.75]
    """
    return _linear(q, k, v, gamma, None, initial_state, chunk_size, correct=False)


@float32_accumulation
def delta(q, k, v, *, beta, initial_state=None, chunk_size=None):
    r"""The delta rule :math:`S_t = S_{t-1} + \beta_t k_t^\top (v_t - k_t S_{t-1})`: write only the error.

    With a unit key and :math:`\beta = 1` the pairing overwrites what the key recalled before.

    Example:
        >>> k = torch.tensor([[1.0], [1.0]], dtype=torch.float64)
        >>> v = torch.tensor([[2.0], [5.0]], dtype=torch.float64)
        >>> delta(k, k, v, beta=1.0)[0].squeeze(-1).tolist()
        [2.0, 5.0]
    """
    return _linear(q, k, v, None, ("beta", beta), initial_state, chunk_size, correct=True)


@float32_accumulation
def gated_delta(q, k, v, *, gamma, beta, initial_state=None, chunk_size=None):
    r"""Decay and delta together, :math:`S_t = \gamma_t (I - \beta_t k_t^\top k_t) S_{t-1} + \beta_t k_t^\top v_t`.

    Example:
        >>> k = torch.ones(2, 1, dtype=torch.float64)
        >>> gated_delta(k, k, torch.tensor([[2.0], [5.0]], dtype=torch.float64), gamma=0.5, beta=0.5)[0].squeeze(-1).tolist()
        [1.0, 2.75]
    """
    return _linear(q, k, v, gamma, ("beta", beta), initial_state, chunk_size, correct=True)


@float32_accumulation
def delta_rectified(q, k, v, *, beta, initial_state=None, chunk_size=None):
    r"""The delta rule on a ReLU read-out, :math:`S_t = S_{t-1} + \beta_t k_t^\top (v_t - \max(0, k_t S_{t-1}))`.

    The error compares the US with the rectified prediction, so a key whose prediction is negative (an
    inhibitor presented alone) meets no error when the US is absent and keeps its strength. The output is
    the store's linear read-out :math:`o_t = q_t S_t`, the strength, like every rule's. Recurrent only.

    Example (an inhibitor, strength -1, presented without the US keeps it):
        >>> k = torch.ones(3, 1, dtype=torch.float64)
        >>> out, state = delta_rectified(k, k, torch.zeros(3, 1, dtype=torch.float64), beta=0.5,
        ...                              initial_state=-torch.ones(1, 1, dtype=torch.float64))
        >>> out.squeeze(-1).tolist()
        [-1.0, -1.0, -1.0]
    """
    state = _check_inputs(q, k, v, initial_state, chunk_size, chunked=False)
    beta = _per_step("beta", beta, q)
    return _linear_recurrent(q, k, v, q.new_ones(q.shape[:-1]), beta, state, correct=True, rectify=True)


OJA_FORMS = ("source", "standard")


@float32_accumulation
def oja(q, k, v, *, alpha, form="source", initial_state=None, chunk_size=None):
    r"""Oja's rule with the US as output: the source's per-column form or the standard subspace form.

    ``form="source"``: :math:`S_t = S_{t-1} + \alpha_t (k_t^\top v_t - S_{t-1} \mathrm{diag}(v_t^2))`;
    ``form="standard"``: :math:`S_t = S_{t-1} + \alpha_t (k_t^\top v_t - S_{t-1} v_t^\top v_t)`.

    Example (a repeated pair: the source's form converges to :math:`k^\top (1/v)`):
        >>> k = torch.ones(200, 1, dtype=torch.float64)
        >>> v = torch.tensor([[0.5, 2.0]], dtype=torch.float64).expand(200, 2)
        >>> oja(k, k, v, alpha=0.4)[1].round(decimals=6).tolist()
        [[2.0, 0.5]]
    """
    _validate.option("form", form, OJA_FORMS)
    state = _check_inputs(q, k, v, initial_state, chunk_size, chunked=False)
    alpha = _per_step("alpha", alpha, q)
    outputs = []
    for t in range(q.shape[-2]):
        kt, vt, a = k[..., t, :], v[..., t, :], alpha[..., t, None, None]
        if form == "source":
            forget = state * vt[..., None, :] ** 2                              # S diag(v^2)
        else:
            forget = (state @ vt[..., :, None]) * vt[..., None, :]              # S v^T v
        state = state + a * (kt[..., :, None] * vt[..., None, :] - forget)
        outputs.append((q[..., t, None, :] @ state).squeeze(-2))
    return torch.stack(outputs, dim=-2), state


@float32_accumulation
def bcm(q, k, v, *, alpha, tau, initial_state=None, chunk_size=None):
    r"""The BCM rule with a sliding threshold, :math:`S_t = S_{t-1} + \alpha_t k_t^\top (v_t \odot (v_t - \theta_{t-1}))`.

    The threshold tracks the mean squared activity, :math:`\theta_t = \theta_{t-1} + (v_t^2 - \theta_{t-1}) / \tau`,
    ``tau >= 1`` steps. The state is the pair ``(S [..., d_k, d_v], theta [..., d_v])``; ``initial_state``
    is such a pair or None (both zero).

    Example (a repeated unit US: potentiation stops as the threshold reaches :math:`v^2 = 1`):
        >>> k = v = torch.ones(100, 1, dtype=torch.float64)
        >>> out, (state, theta) = bcm(k, k, v, alpha=0.1, tau=5.0)
        >>> round(state.item(), 6), round(theta.item(), 6)
        (0.5, 1.0)
    """
    state, theta = _check_pair("bcm", q, k, v, initial_state, chunk_size, "theta",
                               lambda batch, d_k, d_v: (*batch, d_v))
    if theta is None:
        theta = v.new_zeros(*v.shape[:-2], v.shape[-1])
    elif theta.device.type != "meta" and bool((theta < 0).any()):
        raise ValueError("initial_state theta must be non-negative (a running mean of v^2)")
    alpha = _per_step("alpha", alpha, q)
    tau = _validate.finite_float("tau", tau)
    if tau < 1:
        raise ValueError(f"tau must be at least 1 step, got {tau}")
    outputs = []
    for t in range(q.shape[-2]):
        kt, vt = k[..., t, :], v[..., t, :]
        state = state + alpha[..., t, None, None] * kt[..., :, None] * (vt * (vt - theta))[..., None, :]
        theta = theta + (vt ** 2 - theta) / tau
        outputs.append((q[..., t, None, :] @ state).squeeze(-2))
    return torch.stack(outputs, dim=-2), (state, theta)


KALMAN_PRIOR = 1e3
"""The Kalman filter's default prior variance :math:`p_0` (see :func:`kalman`)."""
KALMAN_NOISE = 1.0
r"""The Kalman filter's default observation noise :math:`\sigma^2`: its ridge is ``KALMAN_NOISE / KALMAN_PRIOR``."""


@float32_accumulation
def kalman(q, k, v, *, prior=KALMAN_PRIOR, noise=KALMAN_NOISE, drift=0.0, diagonal=False, initial_state=None,
           chunk_size=None):
    r"""The Kalman filter, recursive least squares: a delta rule whose gain comes from the store's uncertainty.

    The store :math:`S` is the posterior mean of a linear map from keys to values, and
    :math:`P \in \mathbb R^{d_k \times d_k}` the posterior covariance of each of its columns (Dayan and
    Kakade 2001; Kruschke 2008). Each pairing, with observation noise :math:`\sigma^2_t` (``noise``) and
    drift :math:`\delta_t` (``drift``), writes

    .. math::

        g_t = \frac{P_{t-1} k_t^\top}{\sigma^2_t + k_t P_{t-1} k_t^\top}, \qquad
        S_t = S_{t-1} + g_t (v_t - k_t S_{t-1}), \qquad
        P_t = P_{t-1} - g_t k_t P_{t-1} + \delta_t I,

    read after the write, :math:`o_t = q_t S_t`, like every rule. The prior is :math:`S_0 = 0` and
    :math:`P_0 = \mathrm{prior} \cdot I`; ``initial_state`` is None or a pair ``(S [..., d_k, d_v],
    P [..., d_k, d_k])`` as the rule returns it, with ``P`` symmetric positive definite (``prior`` then
    goes unused). The state returned is that pair, ``P`` with the drift of step ``T`` added: the prior of
    a next pairing. With ``drift = 0`` the filter is exactly recursive least squares with a ridge prior,
    :math:`P_t^{-1} = P_0^{-1} + \sum_{i \le t} k_i^\top k_i / \sigma^2_i` and
    :math:`S_t = P_t (P_0^{-1} S_0 + \sum_{i \le t} k_i^\top v_i / \sigma^2_i)`: with constant noise and
    :math:`S_0 = 0`, :math:`S_T = (K^\top K + (\sigma^2 / \mathrm{prior}) I)^{-1} K^\top V`. With
    ``drift > 0`` the weights are a random walk and old pairings count less and less. Through the
    covariance a pairing also moves the weights of keys that are absent from it: after compound AB+
    trials, A+ trials lower B's weight (backward blocking), which the delta rule never does.

    The default ``prior=1e3`` is nearly flat: on :math:`T` unit keys in general position in :math:`d_k`
    dimensions, :math:`K^\top K \approx (T / d_k) I`, so its ridge penalty :math:`\sigma^2 / \mathrm{prior}
    = 10^{-3}` moves the store from the least-squares one by about :math:`10^{-3} d_k / T` relative; yet the
    first write along a key, which cancels :math:`P` from 1e3 down to about :math:`\sigma^2 / \lVert k
    \rVert^2`, costs only about 3 of float32's 7 digits there.

    ``diagonal=True`` keeps only the variances, the diagonal of :math:`P`, after every step: a gain
    :math:`g_{t,i} = p_i k_{t,i} / (\sigma^2_t + \sum_j p_j k_{t,j}^2)` per key coordinate that falls as
    that coordinate is seen, as the associability of a stimulus falls with exposure (Mackintosh 1975;
    Pearce and Hall 1980). With one coordinate per stimulus, a pairing then never moves the weight of an
    absent stimulus; a single stimulus's trials keep :math:`P` diagonal, so on them the two filters agree.
    It runs recurrently only; the ``P`` returned is the diagonal matrix, and an ``initial_state`` ``P``
    must be diagonal.

    ``noise > 0`` and ``drift >= 0`` are numbers or one value per step ``[..., T]``; ``prior > 0`` is a
    number. ``chunk_size`` (``drift = 0`` only) runs the information form instead of the gain: each
    chunk's sums above are prefix sums, and each step's output one Cholesky factorisation and solve of
    order :math:`d_k`, in parallel over the chunk's steps. That is :math:`O(d_k^3)` work a step against the
    recurrence's :math:`O(d_k^2)`, but no loop over steps; ``P`` must then be positive definite to the
    dtype's precision.

    Example (a repeated unit pair with ``prior = noise``: :math:`S_t = t / (t + 1)`, :math:`P_t = 1 / (t + 1)`):
        >>> k = torch.ones(3, 1, dtype=torch.float64)
        >>> out, (state, cov) = kalman(k, k, k, prior=1.0)
        >>> [round(x, 12) for x in out.squeeze(-1).tolist()], round(cov.item(), 12)
        ([0.5, 0.666666666667, 0.75], 0.25)
    """
    state, cov = _check_pair("kalman", q, k, v, initial_state, chunk_size, "P",
                             lambda batch, d_k, d_v: (*batch, d_k, d_k), chunked=True)
    prior = _validate.finite_float("prior", prior, positive=True)
    noise = _per_step("noise", noise, q, strict=True)
    drift = _per_step("drift", drift, q)
    eye = torch.eye(q.shape[-1], dtype=q.dtype, device=q.device).expand(*state.shape[:-1], -1)
    if not isinstance(diagonal, bool):
        raise TypeError(f"diagonal must be True or False, got {diagonal!r}")
    if diagonal:
        if chunk_size is not None:
            raise ValueError("chunk_size must be None for diagonal=True: the diagonal filter runs recurrently only")
        if cov is not None and cov.device.type != "meta" and bool((cov - torch.diag_embed(cov.diagonal(0, -2, -1))).any()):
            raise ValueError("initial_state P must be diagonal for diagonal=True")
        return _kalman_diagonal(q, k, v, noise, drift, state, q.new_full(state.shape[:-1], prior) if cov is None else
                                cov.diagonal(0, -2, -1))
    if chunk_size is not None:
        if drift.device.type != "meta" and bool(drift.any()):
            raise ValueError("chunk_size needs drift = 0 (the information form has no drift); "
                             "use chunk_size=None for a drifting filter")
        return _kalman_information(q, k, v, noise, state, eye / prior if cov is None else None, cov, chunk_size)
    cov = prior * eye if cov is None else cov
    outputs = []
    for t in range(q.shape[-2]):
        kt = k[..., t, None, :]                                             # [..., 1, d_k]
        spread = cov @ kt.mT                                                # P k^T
        total = noise[..., t, None, None] + kt @ spread                     # sigma^2 + k P k^T
        state = state + spread @ (v[..., t, None, :] - kt @ state) / total
        cov = cov - spread @ spread.mT / total + drift[..., t, None, None] * eye   # exactly symmetric
        outputs.append((q[..., t, None, :] @ state).squeeze(-2))
    return torch.stack(outputs, dim=-2), (state, cov)


def _kalman_diagonal(q, k, v, noise, drift, state, variance):
    """The filter with a diagonal covariance, the variances ``[..., d_k]``: :math:`P` projected on its diagonal each step."""
    outputs = []
    for t in range(q.shape[-2]):
        kt = k[..., t, :]                                                   # [..., d_k]
        spread = variance * kt                                              # P k^T, P diagonal
        total = noise[..., t, None] + (spread * kt).sum(-1, keepdim=True)   # sigma^2 + k P k^T
        error = v[..., t, :] - (kt[..., None, :] @ state).squeeze(-2)       # [..., d_v]
        state = state + (spread / total)[..., :, None] * error[..., None, :]
        variance = variance - spread ** 2 / total + drift[..., t, None]     # the diagonal of the full update
        outputs.append((q[..., t, None, :] @ state).squeeze(-2))
    return torch.stack(outputs, dim=-2), (state, torch.diag_embed(variance))


def _kalman_information(q, k, v, noise, state, precision, cov, chunk_size: int):
    """Without drift, chunk by chunk: the precision :math:`A = P^{-1}` and :math:`B = A S` summed, :math:`S_t = A_t^{-1} B_t`.

    ``precision`` is the prior's :math:`A_0`, or None to invert the initial covariance ``cov``.
    """
    if precision is None:
        factor, info = torch.linalg.cholesky_ex(cov)
        if cov.device.type != "meta" and bool(info.any()):
            raise ValueError("initial_state P must be positive definite for chunk_size (the information form "
                             "inverts it); use chunk_size=None")
        precision = torch.cholesky_inverse(factor)
    vector = precision @ state                                              # B_0 = A_0 S_0
    outputs = []
    for start in range(0, q.shape[-2], chunk_size):
        steps = slice(start, start + chunk_size)
        keys, weight = k[..., steps, :, None], 1 / noise[..., steps, None, None]    # k_t^T, 1 / sigma^2_t
        precisions = precision[..., None, :, :] + (keys * weight * keys.mT).cumsum(-3)       # A_t, [..., C, d_k, d_k]
        vectors = vector[..., None, :, :] + (keys * weight * v[..., steps, None, :]).cumsum(-3)   # B_t
        factors = torch.linalg.cholesky(precisions)
        reads = torch.cholesky_solve(q[..., steps, :, None], factors)      # A_t^{-1} q_t^T: o_t = q_t A_t^{-1} B_t
        outputs.append((reads.mT @ vectors).squeeze(-2))
        precision, vector, factor = precisions[..., -1, :, :], vectors[..., -1, :, :], factors[..., -1, :, :]
    cov = torch.cholesky_inverse(factor)
    return torch.cat(outputs, dim=-2), (torch.cholesky_solve(vector, factor), (cov + cov.mT) / 2)


RULES = {"hebbian": hebbian, "decay": decay, "delta": delta, "delta_rectified": delta_rectified,
         "gated_delta": gated_delta, "oja": oja, "bcm": bcm, "kalman": kalman}
CHUNKWISE = ("hebbian", "decay", "delta", "gated_delta")
