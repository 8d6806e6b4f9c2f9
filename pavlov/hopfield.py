r"""Hopfield networks: the classical binary network, its dense generalisation and the modern continuous one.

A Hopfield network stores :math:`P` patterns :math:`\xi_\mu \in \{-1, +1\}^N` (the rows of ``patterns``
``[..., P, N]``) and retrieves one from a corrupted cue ``[..., Q, N]`` by descending an energy:

* :func:`classical_recall` (Hopfield 1982): Hebbian weights with zero diagonal, quadratic energy,

  .. math::

      W = \frac1N \sum_\mu \xi_\mu^\top \xi_\mu - \frac PN I, \qquad E(s) = -\tfrac12\, s W s^\top,

  and asynchronous updates :math:`s_i \leftarrow \mathrm{sgn}(h_i)` with the field :math:`h = s W`. No flip
  raises :math:`E`, so every cue settles in a fixed point. Random patterns lie near fixed points up to
  about :math:`P = 0.14 N`, and most are exactly fixed points below about :math:`N / (2 \ln N)`
  (:func:`stable_fraction` counts them). :func:`synchronous_recall` updates every neuron at once instead, from the
  patterns themselves (the same :math:`P N` numbers as a store of them), and may cycle.
* :func:`dense_recall` (Krotov and Hopfield 2016): :math:`E(s) = -\sum_\mu F(\xi_\mu \cdot s)` with
  :math:`F(x) = x^p`, and
  :math:`s_i \leftarrow \mathrm{sgn} \sum_\mu [F(\xi_\mu \cdot s^{i+}) - F(\xi_\mu \cdot s^{i-})]`,
  :math:`s^{i\pm}` being :math:`s` with :math:`s_i = \pm 1`. Its capacity grows as :math:`N^{p-1}`; with
  :math:`p = 2` the sum is :math:`4 N h_i`, and the update is the classical network's.
* :func:`modern_retrieve` (Ramsauer et al. 2021): continuous states and
  :math:`\xi \leftarrow \mathrm{softmax}(\beta\, \xi X^\top)\, X`, one step of which is softmax attention
  with the patterns :math:`X` as keys and values (:class:`pavlov.stores.SoftmaxStore`).

:func:`pass_flops` counts the operations of one pass of each network over one cue, for comparing them at equal
storage.

Both binary networks sweep the :math:`N` neurons in a random order, one permutation per sweep drawn from
``generator`` and shared by every cue and batch element, and keep :math:`s_i` when its sum is 0. They
keep the fields (:math:`N h`) or overlaps (:math:`\xi_\mu \cdot s`) of every cue and update them when a
neuron flips, so a sweep is :math:`N` vectorised steps. These are integers, exact in floating point below
:math:`2^{24}` (float32; half inputs run in float32) or :math:`2^{53}` (float64). A cue stops when a sweep
changes nothing (it is then a fixed point) and all stop once every cue has.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import torch

from . import _validate
from ._precision import accumulator
from .runtime import resolve


class RecallResult(NamedTuple):
    """The result of a binary recall: ``states`` ``[..., Q, N]`` (±1, in the cues' dtype); ``sweeps`` (long
    ``[..., Q]``), the sweeps each cue ran, the last, unchanging one counted (``max_sweeps`` when it never settled);
    ``converged`` (bool ``[..., Q]``), whether it settled in a fixed point."""

    states: torch.Tensor
    sweeps: torch.Tensor
    converged: torch.Tensor


def random_patterns(*shape: int, generator: torch.Generator | None = None, device=None,
                    dtype=None) -> torch.Tensor:
    """Independent patterns of ``shape`` (``..., P, N``) with entries -1 and +1, each with probability 1/2.

    >>> random_patterns(2, 5, 16, generator=torch.Generator().manual_seed(0)).abs().eq(1).all().item()
    True
    """
    shape = tuple(_validate.positive_int("shape", size) for size in shape)
    if len(shape) < 2:
        raise ValueError(f"shape must have at least two sizes (patterns, neurons), got {shape}")
    device, dtype = resolve(device, dtype)
    _validate.generator("generator", generator, device)
    bits = torch.randint(0, 2, shape, generator=generator, device=device)
    return (2 * bits - 1).to(dtype)


def flip_bits(patterns: torch.Tensor, fraction: float, *, generator: torch.Generator | None = None) -> torch.Tensor:
    """Cues from ``patterns`` (±1): each bit flipped independently with probability ``fraction``.

    A cue with a fraction :math:`f` of its bits flipped has overlap :math:`1 - 2f` with its pattern on
    average.

    >>> round(flip_bits(torch.ones(1, 1000), 0.1, generator=torch.Generator().manual_seed(0)).mean().item(), 3)
    0.8
    """
    _spins("patterns", patterns)
    fraction = _validate.finite_float("fraction", fraction, nonnegative=True)
    if fraction > 1:
        raise ValueError(f"fraction must lie in [0, 1], got {fraction}")
    _validate.generator("generator", generator, patterns.device)
    flips = torch.rand(patterns.shape, generator=generator, device=patterns.device) < fraction
    return torch.where(flips, -patterns, patterns)


def _spins(name: str, x) -> torch.Tensor:
    _validate.tensor(name, x, min_dim=2)
    if x.device.type != "meta" and not bool((x.abs() == 1).all()):
        raise ValueError(f"{name} must have entries -1 and +1 only")
    return x


def _pair(first: str, a, second: str, b) -> torch.Size:
    """Check ``a`` ``[..., P, N]`` and ``b`` ``[..., Q, N]`` of one device and dtype; return their batch shape."""
    _validate.same_device_dtype(**{first: a, second: b})
    _validate.shape(second, b, (a.shape[-1],), against=f"the last dimension {a.shape[-1]} of {first}")
    try:
        return torch.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    except RuntimeError:
        raise ValueError(f"the batch shape {tuple(b.shape[:-2])} of {second} does not broadcast with that of {first}, "
                         f"{tuple(a.shape[:-2])}") from None


def _start(patterns, cues, max_sweeps, generator):
    """Checked inputs in the working dtype: the patterns and a fresh state ``[batch..., Q, N]`` from the cues."""
    batch = _pair("patterns", _spins("patterns", patterns), "cues", _spins("cues", cues))
    _validate.positive_int("max_sweeps", max_sweeps)
    _validate.generator("generator", generator, cues.device)
    work = accumulator(cues.dtype)
    return patterns.to(work), cues.to(work).expand(*batch, *cues.shape[-2:]).clone()


def _sweep(state: torch.Tensor, max_sweeps: int, generator, flip) -> RecallResult:
    """Asynchronous sweeps of ``state`` ``[..., Q, N]``, in place.

    ``flip(i, active)`` updates neuron ``i`` of the cues where ``active`` (1.0, else 0.0) and returns where it
    changed. The classical and dense networks share this loop, so one seed gives them one order.
    """
    settled = torch.zeros(state.shape[:-1], dtype=torch.bool, device=state.device)
    sweeps = torch.zeros(state.shape[:-1], dtype=torch.long, device=state.device)
    for _ in range(max_sweeps):
        order = torch.randperm(state.shape[-1], generator=generator, device=state.device)
        active, changed = (~settled).to(state.dtype), torch.zeros_like(settled)
        for i in order.tolist():
            changed |= flip(i, active)
        sweeps += ~settled
        settled |= ~changed
        if bool(settled.all()):
            break
    return RecallResult(state, sweeps, settled)


def _set(state: torch.Tensor, i: int, drive: torch.Tensor, active: torch.Tensor) -> torch.Tensor:
    """Set neuron ``i`` to the sign of ``drive`` (unchanged where it is 0); return the change, 0 or ±2."""
    spin = state[..., i]
    step = (torch.where(drive == 0, spin, drive.sign()) - spin) * active
    state[..., i] += step
    return step


def classical_recall(patterns: torch.Tensor, cues: torch.Tensor, *, max_sweeps: int = 100,
                     generator: torch.Generator | None = None) -> RecallResult:
    """Recall from ``cues`` ``[..., Q, N]`` in the classical network storing ``patterns`` ``[..., P, N]`` (both ±1).

    Runs at most ``max_sweeps`` asynchronous sweeps, in orders drawn from ``generator`` (on the cues'
    device); the batch shapes broadcast. Returns a :class:`RecallResult`.

    >>> pattern = torch.tensor([[1.0, -1.0, 1.0, 1.0, -1.0, -1.0, 1.0, -1.0]])
    >>> cue = pattern * torch.tensor([-1.0, -1.0, 1, 1, 1, 1, 1, 1])                 # two bits flipped
    >>> result = classical_recall(pattern, cue, generator=torch.Generator().manual_seed(0))
    >>> torch.equal(result.states, pattern), result.sweeps.tolist(), result.converged.tolist()
    (True, [2], [True])
    """
    xi, state = _start(patterns, cues, max_sweeps, generator)
    weights = xi.transpose(-1, -2) @ xi                          # N W: integers
    weights.diagonal(dim1=-2, dim2=-1).zero_()
    fields = state @ weights                                     # N h of every cue

    def flip(i, active):
        step = _set(state, i, fields[..., i], active)
        fields.addcmul_(step.unsqueeze(-1), weights[..., i, :].unsqueeze(-2))       # W is symmetric
        return step != 0

    states, sweeps, converged = _sweep(state, max_sweeps, generator, flip)
    return RecallResult(states.to(cues.dtype), sweeps, converged)


def synchronous_recall(patterns: torch.Tensor, cues: torch.Tensor, *, max_sweeps: int = 100) -> RecallResult:
    """Recall from ``cues`` ``[..., Q, N]`` in the classical network of ``patterns`` ``[..., P, N]`` (both ±1), updating
    every neuron at once: :math:`s \\leftarrow \\mathrm{sgn}(s W)`, a neuron with a zero field kept.

    The fields are computed from the patterns, :math:`N h = (s \\Xi^\\top) \\Xi - P s`, so the network keeps the same
    :math:`P N` numbers as a store of the patterns. Unlike :func:`classical_recall`, synchronous updates need not lower
    the energy and may end in a cycle of two states; a cue that reaches no fixed point within ``max_sweeps`` updates
    has ``converged`` False. Returns a :class:`RecallResult` (``sweeps`` counts the updates, the last, unchanging
    one included).

    >>> pattern = torch.tensor([[1.0, -1.0, 1.0, 1.0, -1.0, -1.0, 1.0, -1.0]])
    >>> result = synchronous_recall(pattern, pattern * torch.tensor([-1.0, -1.0, 1, 1, 1, 1, 1, 1]))
    >>> torch.equal(result.states, pattern), result.sweeps.tolist(), result.converged.tolist()
    (True, [2], [True])
    """
    xi, state = _start(patterns, cues, max_sweeps, None)
    settled = torch.zeros(state.shape[:-1], dtype=torch.bool, device=state.device)
    sweeps = torch.zeros(state.shape[:-1], dtype=torch.long, device=state.device)
    for _ in range(max_sweeps):
        fields = (state @ xi.transpose(-1, -2)) @ xi - xi.shape[-2] * state
        following = torch.where(fields == 0, state, fields.sign())
        following = torch.where(settled.unsqueeze(-1), state, following)
        sweeps += ~settled
        settled |= (following == state).all(-1)
        state = following
        if bool(settled.all()):
            break
    return RecallResult(state.to(cues.dtype), sweeps, settled)


PASS_FLOPS = {"synchronous": 4, "asynchronous": 4, "dense": 9, "modern": 4}
"""The floating-point operations of one pass of each network over one cue, in units of :math:`P N` (see
:func:`pass_flops`)."""


def pass_flops(network: str, n_patterns: int, n_neurons: int) -> float:
    """The floating-point operations of one pass of ``network`` over one cue, with ``n_patterns`` patterns of
    ``n_neurons`` entries kept as they are (:math:`P N` numbers in every network).

    * ``"synchronous"``: the overlaps :math:`s \\Xi^\\top` (:math:`2PN`) and the fields from them (:math:`2PN`).
    * ``"asynchronous"``: a sweep of :math:`N` neurons, each reading its field from the :math:`P` overlaps
      (:math:`2P`) and, counted as if it flipped, updating them (:math:`2P`): :math:`4PN` at most.
    * ``"dense"`` (degree 3): each neuron forms :math:`\\sum_\\mu 2 \\xi_{\\mu i} (3 r_\\mu^2 + 1)` from the overlaps
      without it (:math:`7P`) and updates them (:math:`2P`): :math:`9PN`.
    * ``"modern"``: one softmax attention step, the scores (:math:`2PN`), their softmax (:math:`3P`) and the read
      (:math:`2PN`).

    >>> pass_flops("modern", 64, 100), pass_flops("asynchronous", 64, 100)
    (25792.0, 25600.0)
    """
    if network not in PASS_FLOPS:
        raise ValueError(f"network must be one of {sorted(PASS_FLOPS)}, got {network!r}")
    n_patterns = _validate.positive_int("n_patterns", n_patterns)
    n_neurons = _validate.positive_int("n_neurons", n_neurons)
    return float(PASS_FLOPS[network] * n_patterns * n_neurons + (3 * n_patterns if network == "modern" else 0))


def aligned_fields(patterns: torch.Tensor) -> torch.Tensor:
    """Each stored bit's field times the bit, :math:`N h_i \\xi_i`, ``[..., P, N]``, in the classical network of ``patterns``.

    An integer, :math:`(N - 1) + S` with :math:`S` the crosstalk of the other patterns; the bit is stable when it is
    :math:`\\ge 0` (a zero field keeps it, as in :func:`classical_recall`).

    >>> aligned_fields(torch.tensor([[1.0, 1.0, 1.0, 1.0], [1.0, -1.0, 1.0, -1.0]]))    # orthogonal: S = -1
    tensor([[2., 2., 2., 2.],
            [2., 2., 2., 2.]])
    """
    xi = _spins("patterns", patterns).to(accumulator(patterns.dtype))
    fields = (xi @ xi.transpose(-1, -2)) @ xi - xi.shape[-2] * xi      # N h = xi (xi^T xi - P I), per pattern
    return (fields * xi).to(patterns.dtype)


def stable_fraction(patterns: torch.Tensor) -> torch.Tensor:
    """The fraction ``[...]`` of ``patterns`` ``[..., P, N]`` (±1) that are fixed points of the classical network.

    A pattern is stable when no bit's field has the opposite sign, :math:`h_i \\xi_i \\ge 0` for every
    :math:`i` (:func:`aligned_fields`): a zero field counts as stable, as :func:`classical_recall` leaves that bit
    unchanged.

    >>> stable_fraction(torch.tensor([[1.0, 1.0, 1.0, 1.0], [1.0, -1.0, 1.0, -1.0]]))    # orthogonal
    tensor(1.)
    """
    return (aligned_fields(patterns) >= 0).all(-1).to(patterns.dtype).mean(-1)


def _power(x: torch.Tensor, degree: int) -> torch.Tensor:
    """``x ** degree`` by repeated products, exact for integers while they are representable."""
    result = x
    for _ in range(degree - 1):
        result = result * x
    return result


def dense_recall(patterns: torch.Tensor, cues: torch.Tensor, *, degree: int, max_sweeps: int = 100,
                 generator: torch.Generator | None = None) -> RecallResult:
    """Recall from ``cues`` ``[..., Q, N]`` in the dense memory of energy :math:`-\\sum_\\mu (\\xi_\\mu \\cdot s)^p`.

    ``patterns`` ``[..., P, N]`` and ``cues`` are ±1, ``degree`` :math:`p \\ge 2`. Each neuron's update uses the
    overlaps without it, :math:`r_\\mu = \\xi_\\mu \\cdot s - \\xi_{\\mu i} s_i`:
    :math:`s_i \\leftarrow \\mathrm{sgn} \\sum_\\mu [(r_\\mu + \\xi_{\\mu i})^p - (r_\\mu - \\xi_{\\mu i})^p]`. The sums
    reach :math:`P (N + 1)^p`, exact in float64 below :math:`2^{53}`: use float64. Sweeps, orders and the
    result are as in :func:`classical_recall`, which ``degree=2`` reproduces exactly.

    >>> pattern = torch.tensor([[1.0, -1.0, 1.0, 1.0, -1.0, -1.0, 1.0, -1.0]], dtype=torch.float64)
    >>> cue = -pattern.clone(); cue[0, :5] *= -1                          # three bits flipped
    >>> result = dense_recall(pattern, cue, degree=3, generator=torch.Generator().manual_seed(0))
    >>> torch.equal(result.states, pattern), result.converged.tolist()
    (True, [True])
    """
    _validate.positive_int("degree", degree)
    if degree < 2:
        raise ValueError(f"degree must be at least 2, got {degree}")
    xi, state = _start(patterns, cues, max_sweeps, generator)
    if math.log(xi.shape[-2]) + degree * math.log(xi.shape[-1] + 1) >= math.log(torch.finfo(xi.dtype).max):
        raise ValueError(f"degree {degree} overflows {xi.dtype}: the energies reach P (N + 1)^degree")
    overlaps = state @ xi.transpose(-1, -2)                              # [..., Q, P]

    def flip(i, active):
        column = xi[..., :, i].unsqueeze(-2)                             # xi_{mu i}, [..., 1, P]
        rest = overlaps - column * state[..., i, None]
        drive = (_power(rest + column, degree) - _power(rest - column, degree)).sum(-1)
        step = _set(state, i, drive, active)
        overlaps.addcmul_(step.unsqueeze(-1), column)
        return step != 0

    states, sweeps, converged = _sweep(state, max_sweeps, generator, flip)
    return RecallResult(states.to(cues.dtype), sweeps, converged)


def modern_retrieve(cues: torch.Tensor, patterns: torch.Tensor, *, beta: float, steps: int = 1) -> torch.Tensor:
    """The state ``[..., Q, d]`` of the modern Hopfield network after ``steps`` updates from ``cues`` ``[..., Q, d]``.

    Each update is :math:`\\xi \\leftarrow \\mathrm{softmax}(\\beta\\, \\xi X^\\top)\\, X` with ``patterns`` :math:`X`
    ``[..., n, d]`` (a numerically stable softmax, no renormalisation between steps), so one step is softmax
    attention with queries ``cues``, keys and values ``patterns`` and scale ``beta``. Half inputs run in float32.

    >>> patterns = torch.eye(3, dtype=torch.float64)
    >>> modern_retrieve(torch.tensor([[0.9, 0.2, 0.1]], dtype=torch.float64), patterns, beta=50.0).round(decimals=6)
    tensor([[1., 0., 0.]], dtype=torch.float64)
    """
    _validate.tensor("cues", cues, min_dim=2)
    _validate.tensor("patterns", patterns, min_dim=2)
    _pair("cues", cues, "patterns", patterns)
    beta = _validate.finite_float("beta", beta, positive=True)
    _validate.positive_int("steps", steps)
    work = accumulator(cues.dtype)
    state, xi = cues.to(work), patterns.to(work)
    for _ in range(steps):
        state = torch.softmax(beta * (state @ xi.transpose(-1, -2)), dim=-1) @ xi
    return state.to(cues.dtype)
