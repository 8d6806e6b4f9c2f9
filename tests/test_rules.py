"""pavlov.rules: every write rule against its equation stepped by hand, the chunkwise form against the recurrent
form (outputs, final states and gradients), the rules' closed forms, dtype and device, and bad input; the Kalman
rule also against least squares and in backward blocking.
"""

from __future__ import annotations

import itertools

import pytest
import torch
import torch.nn.functional as F
from conftest import DEVICE, EXACT, FLOAT_DTYPES, PROPERTY, batch_shapes, cases, cpu, randn, rel_err, seeds, with_value
from hypothesis import given
from hypothesis import strategies as st

import pavlov as pv
from pavlov import phenomena, rules, theory

pytestmark = pytest.mark.usefixtures("one_thread")

# Recurrent against chunkwise, float64. The chunkwise form sums each output over a chunk's C <= 64 keys
# through exp(sum log gamma) decays and solves a unit lower-triangular system of order C, so one entry
# carries a few times C * d_k ~ 500 roundings, 500 u = 5.6e-14 of the magnitudes summed. With unit keys,
# beta in [0, 1] and gamma in (0, 1], every step of the recurrence is a contraction (I - beta k^T k has
# norm at most 1), so the errors of earlier steps are not amplified; the solve of the triangular
# system that encodes the same contractions has a growth factor bounded the same way. Gradients pass
# through twice as many operations. 1e-10 leaves more than two orders of magnitude above ~5e-13,
# while a misplaced decay or correction is an error of order 1.
CHUNKED = 1e-10
LINEAR = rules.CHUNKWISE
PAIRED = ("bcm", "kalman")          # rules whose state is a pair: (S, theta), (S, P)


def uniform(seed: int, *shape: int, low: float, high: float, dtype=torch.float64, device=DEVICE) -> torch.Tensor:
    """Entries uniform on [low, high) from a generator seeded with ``seed``."""
    draw = torch.rand(shape, generator=pv.generator(seed, device), dtype=dtype, device=device)
    return low + (high - low) * draw


def unit(seed: int, *shape: int, dtype=torch.float64, device=DEVICE) -> torch.Tensor:
    """Gaussian rows scaled to unit norm: keys that make every delta step a contraction."""
    return F.normalize(randn(seed, *shape, dtype=dtype, device=device), dim=-1)


# --- the reference: each rule's equation, one batch element and one step at a time --------------

def reference(name, q, k, v, params, initial_state=None):
    """Outputs ``o_t = q_t S_t`` and the final state from the equations in the docstring of :mod:`pavlov.rules`.

    ``name`` is a rule or ``oja_source`` / ``oja_standard``; ``params`` maps each rate to a number or a
    tensor broadcastable to ``[..., T]``, and holds ``tau`` for BCM and ``prior`` for the Kalman rule,
    whose second state ``theta`` is the covariance ``P``.
    """
    *batch, T, d_k = q.shape
    d_v = v.shape[-1]
    eye = torch.eye(d_k, dtype=q.dtype, device=q.device)
    outputs = q.new_zeros(*batch, T, d_v)
    states = q.new_zeros(*batch, d_k, d_v)
    thetas = q.new_zeros(*batch, *((d_k, d_k) if name == "kalman" else (d_v,)))

    def rate(key, b, t):
        value = params[key]
        return value.expand(*batch, T)[b + (t,)] if isinstance(value, torch.Tensor) else value

    for b in itertools.product(*map(range, batch)):
        if initial_state is None:
            S, theta = q.new_zeros(d_k, d_v), params["prior"] * eye if name == "kalman" else q.new_zeros(d_v)
        elif name in PAIRED:
            S, theta = initial_state[0][b], initial_state[1][b]
        else:
            S, theta = initial_state[b], None
        for t in range(T):
            kt, vt = k[b][t], v[b][t]
            write = torch.outer(kt, vt)                                            # k_t^T v_t
            if name == "hebbian":
                S = S + rate("alpha", b, t) * write
            elif name == "decay":
                S = rate("gamma", b, t) * S + write
            elif name == "delta":
                S = S + rate("beta", b, t) * torch.outer(kt, vt - kt @ S)
            elif name == "gated_delta":
                beta = rate("beta", b, t)
                S = rate("gamma", b, t) * (eye - beta * torch.outer(kt, kt)) @ S + beta * write
            elif name == "oja_source":
                S = S + rate("alpha", b, t) * (write - S @ torch.diag(vt ** 2))
            elif name == "oja_standard":
                S = S + rate("alpha", b, t) * (write - S @ torch.outer(vt, vt))
            elif name == "bcm":
                S = S + rate("alpha", b, t) * torch.outer(kt, vt * (vt - theta))
                theta = theta + (vt ** 2 - theta) / params["tau"]
            elif name == "kalman":                                                 # theta is P
                gain = theta @ kt / (rate("noise", b, t) + kt @ theta @ kt)
                S = S + torch.outer(gain, vt - kt @ S)
                theta = theta - torch.outer(gain, kt @ theta) + rate("drift", b, t) * eye
            outputs[b + (t,)] = q[b][t] @ S
        states[b] = S
        if name in PAIRED:
            thetas[b] = theta
    return outputs, ((states, thetas) if name in PAIRED else states)


def package(name, q, k, v, params, **kwargs):
    """The package's rule for a reference name."""
    if name.startswith("oja_"):
        return rules.oja(q, k, v, form=name[4:], **params, **kwargs)
    return rules.RULES[name](q, k, v, **params, **kwargs)


# Rates that keep every step a contraction for unit keys and values: alpha v_j^2 <= 0.8 < 2 for Oja
RATES = {"hebbian": {"alpha": (0.2, 1.5)}, "decay": {"gamma": (0.3, 1.0)}, "delta": {"beta": (0.1, 1.0)},
         "gated_delta": {"gamma": (0.3, 1.0), "beta": (0.1, 1.0)}, "oja_source": {"alpha": (0.1, 0.8)},
         "oja_standard": {"alpha": (0.1, 0.8)}, "bcm": {"alpha": (0.1, 0.8)},
         "kalman": {"noise": (0.5, 2.0), "drift": (0.0, 0.1)}}
NAMES = list(RATES)


def make_params(name, how, seed, batch, T, *, dtype=torch.float64, device=DEVICE, requires_grad=False):
    """Each rate of ``name`` as a number, a 0-d tensor, one value per step ``[T]`` or ``[*batch, T]``."""
    params = {}
    for i, (key, (low, high)) in enumerate(RATES[name].items()):
        shape = {"number": (), "0-d": (), "per-step": (T,), "per-step-batch": (*batch, T)}[how]
        value = uniform(seed + i, *shape, low=low, high=high, dtype=dtype, device=device)
        params[key] = value.item() if how == "number" else value.requires_grad_(requires_grad)
    if name == "bcm":
        params["tau"] = 3.0
    if name == "kalman":
        params["prior"] = 2.0
    return params


def make_state(name, seed, batch, d_k, d_v, *, dtype=torch.float64, device=DEVICE):
    state = randn(seed, *batch, d_k, d_v, dtype=dtype, device=device)
    if name == "bcm":   # the threshold is a running mean of squares: non-negative
        return state, uniform(seed + 1, *batch, d_v, low=0.0, high=1.0, dtype=dtype, device=device)
    if name == "kalman":   # a covariance: symmetric, eigenvalues in [1, 2)
        rotation = torch.linalg.qr(randn(seed + 1, *batch, d_k, d_k, dtype=dtype, device=device)).Q
        spread = uniform(seed + 2, *batch, 1, d_k, low=1.0, high=2.0, dtype=dtype, device=device)
        return state, (rotation * spread) @ rotation.mT
    return state


def make_inputs(seed, batch, T, d_k, d_v, *, dtype=torch.float64, device=DEVICE):
    """A query, unit keys and unit values (values unit so that Oja's forgetting is a contraction)."""
    return (randn(seed, *batch, T, d_k, dtype=dtype, device=device), unit(seed + 1, *batch, T, d_k, dtype=dtype,
            device=device), unit(seed + 2, *batch, T, d_v, dtype=dtype, device=device))


def assert_same(expected, got, tolerance):
    """Outputs and final state (BCM: the pair of state and threshold) agree to ``tolerance`` relative."""
    (out_e, state_e), (out_g, state_g) = expected, got
    assert out_g.shape == out_e.shape and rel_err(out_e, out_g) <= tolerance
    for e, g in zip(*((s if isinstance(s, tuple) else (s,)) for s in (state_e, state_g))):
        assert g.shape == e.shape and rel_err(e, g) <= tolerance


# --- every rule is its equation ----------------------------------------------------------------

@pytest.mark.parametrize("with_state", [False, True], ids=["zero-state", "initial-state"])
@pytest.mark.parametrize("how", ["number", "0-d", "per-step", "per-step-batch"])
@pytest.mark.parametrize("name", NAMES)
def test_rule_is_its_equation(name, how, with_state):
    # Float64 and at most T * d = 18 terms per entry, each step a contraction: the rules and the
    # reference round differently only in the order of a few short sums, well inside EXACT
    batch, T, d_k, d_v = (2, 3), 6, 3, 2
    q, k, v = make_inputs(10, batch, T, d_k, d_v)
    params = make_params(name, how, 20, batch, T)
    state = make_state(name, 30, batch, d_k, d_v) if with_state else None
    expected = reference(name, q, k, v, params, state)
    assert_same(expected, package(name, q, k, v, params, initial_state=state), EXACT)
    if name not in LINEAR:
        return
    for chunk_size in (1, 4, 6, 8):                 # the chunkwise form too, on the same reference
        assert_same(expected, package(name, q, k, v, params, initial_state=state, chunk_size=chunk_size), CHUNKED)


def test_rules_by_hand():
    one = torch.ones(3, 1, dtype=torch.float64, device=DEVICE)
    # Hebbian, alpha = 2: S = 2, 4, 6
    assert rules.hebbian(one, one, one, alpha=2.0)[0].squeeze(-1).tolist() == [2.0, 4.0, 6.0]
    # decay, gamma = 1/2 and v = 1: S = 1, 3/2, 7/4
    assert rules.decay(one, one, one, gamma=0.5)[0].squeeze(-1).tolist() == [1.0, 1.5, 1.75]
    # delta, beta = 1/2 and v = 1: S = 1/2, 3/4, 7/8 (halving the error each step)
    assert rules.delta(one, one, one, beta=0.5)[0].squeeze(-1).tolist() == [0.5, 0.75, 0.875]
    # gated delta, gamma = beta = 1/2: S = 1/2 (1 - 1/2) S + 1/2 = 1/2, 5/8, 21/32
    assert rules.gated_delta(one, one, one, gamma=0.5, beta=0.5)[0].squeeze(-1).tolist() == [0.5, 0.625, 0.65625]
    # Oja, alpha = 1/2, v = 1: S = S + (1 - S)/2, the same as the delta rule for a scalar unit pair
    assert rules.oja(one, one, one, alpha=0.5)[0].squeeze(-1).tolist() == [0.5, 0.75, 0.875]
    # BCM, alpha = 1, tau = 2: theta = 0, 1/2, 3/4 before each step, so S = 1, 3/2, 7/4
    assert rules.bcm(one, one, one, alpha=1.0, tau=2.0)[0].squeeze(-1).tolist() == [1.0, 1.5, 1.75]


def test_delta_is_gated_delta_without_decay():
    q, k, v = make_inputs(0, (2,), 9, 4, 3)
    beta = uniform(1, 2, 9, low=0.1, high=1.0)
    assert rel_err(rules.delta(q, k, v, beta=beta)[0], rules.gated_delta(q, k, v, gamma=1.0, beta=beta)[0]) <= EXACT


# --- recurrent against chunkwise ---------------------------------------------------------------

@PROPERTY
@given(data=st.data(), name=st.sampled_from(LINEAR), batch=batch_shapes, T=st.integers(1, 40),
       d_k=st.integers(1, 6), d_v=st.integers(1, 5), seed=seeds, with_state=st.booleans(),
       how=st.sampled_from(["number", "per-step", "per-step-batch"]))
def test_chunkwise_equals_recurrent(data, name, batch, T, d_k, d_v, seed, with_state, how):
    chunk_size = data.draw(st.integers(1, T + 8), label="chunk_size")
    q, k, v = make_inputs(seed, batch, T, d_k, d_v)
    params = make_params(name, how, seed + 3, batch, T)
    state = make_state(name, seed + 5, batch, d_k, d_v) if with_state else None
    recurrent = package(name, q, k, v, params, initial_state=state)
    assert_same(recurrent, package(name, q, k, v, params, initial_state=state, chunk_size=chunk_size), CHUNKED)


CHUNK_SIZES = [1, 4, 8, 37, 64]      # T = 37: sizes that divide it (1, 37), that do not (4, 8), and beyond it (64)


def loss_and_inputs(name, with_state, seed=0, batch=(2,), T=37, d_k=4, d_v=3):
    """Leaf tensors (inputs, per-step rates, initial state) and a fixed random linear loss of outputs and state."""
    q, k, v = make_inputs(seed, batch, T, d_k, d_v)
    params = make_params(name, "per-step-batch", seed + 3, batch, T, requires_grad=True)
    state = make_state(name, seed + 5, batch, d_k, d_v).requires_grad_(True) if with_state else None
    leaves = {"q": q.requires_grad_(True), "k": k.requires_grad_(True), "v": v.requires_grad_(True), **params}
    if with_state:
        leaves["initial_state"] = state
    weight_out, weight_state = randn(seed + 7, *batch, T, d_v), randn(seed + 8, *batch, d_k, d_v)

    def loss(**kwargs):
        out, final = package(name, q, k, v, params, initial_state=state, **kwargs)
        return (out * weight_out).sum() + (final * weight_state).sum(), out, final

    return leaves, loss


@pytest.mark.parametrize("with_state", [False, True], ids=["zero-state", "initial-state"])
@pytest.mark.parametrize("chunk_size", CHUNK_SIZES)
@pytest.mark.parametrize("name", LINEAR)
def test_chunkwise_gradients_equal_recurrent(name, chunk_size, with_state):
    leaves, loss = loss_and_inputs(name, with_state)
    value_r, out_r, state_r = loss()
    value_c, out_c, state_c = loss(chunk_size=chunk_size)
    assert_same((out_r, state_r), (out_c, state_c), CHUNKED)
    grads_r = torch.autograd.grad(value_r, list(leaves.values()))
    grads_c = torch.autograd.grad(value_c, list(leaves.values()))
    for key, g_r, g_c in zip(leaves, grads_r, grads_c):
        assert torch.isfinite(g_c).all(), key
        assert rel_err(g_r, g_c) <= CHUNKED, key


def zero_gammas(T: int) -> torch.Tensor:
    """Per-step gammas in [0.5, 1) with exact zeros at the first step, inside chunks and at chunk ends."""
    gamma = uniform(3, 2, T, low=0.5, high=1.0)
    gamma[0, 0] = gamma[0, 7] = gamma[1, 3] = gamma[1, 20] = gamma[:, 31] = 0.0
    return gamma


@pytest.mark.parametrize("chunk_size", CHUNK_SIZES)
@pytest.mark.parametrize("name", ["decay", "gated_delta"])
def test_zero_gamma_in_the_chunkwise_form(name, chunk_size):
    # gamma = 0 wipes the state: the chunkwise decays exp(sum log gamma) meet log 0 = -inf and must give 0
    q, k, v = make_inputs(1, (2,), 37, 4, 3)
    params = {"gamma": zero_gammas(37), **({"beta": 0.5} if name == "gated_delta" else {})}
    state = randn(2, 2, 4, 3)
    recurrent = package(name, q, k, v, params, initial_state=state)
    chunked = package(name, q, k, v, params, initial_state=state, chunk_size=chunk_size)
    assert torch.isfinite(chunked[0]).all() and torch.isfinite(chunked[1]).all()
    assert_same(recurrent, chunked, CHUNKED)
    # after a wipe at step 31 (0-based), the outputs no longer depend on the initial state
    later = package(name, q, k, v, params, initial_state=torch.zeros_like(state), chunk_size=chunk_size)
    assert torch.equal(chunked[0][..., 31:, :], later[0][..., 31:, :])
    # the gradients with respect to the inputs stay finite and equal too
    leaves = [x.clone().requires_grad_(True) for x in (q, k, v)]
    grads = [torch.autograd.grad(package(name, *leaves, params, initial_state=state, **kw)[0].sum(), leaves)
             for kw in ({}, {"chunk_size": chunk_size})]
    for g_r, g_c in zip(*grads):
        assert torch.isfinite(g_c).all() and rel_err(g_r, g_c) <= CHUNKED


@pytest.mark.parametrize("name", ["decay", "gated_delta"])
def test_zero_gamma_gradient_in_the_chunkwise_form(name):
    q, k, v = make_inputs(1, (2,), 37, 4, 3)
    gamma = zero_gammas(37).requires_grad_(True)
    params = {"gamma": gamma, **({"beta": 0.5} if name == "gated_delta" else {})}
    grads = [torch.autograd.grad(package(name, q, k, v, params, **kw)[0].sum(), gamma)[0]
             for kw in ({}, {"chunk_size": 8})]
    assert torch.isfinite(grads[1]).all() and rel_err(grads[0], grads[1]) <= CHUNKED


# --- dtype and device ----------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize("name, chunk_size", [(name, None) for name in NAMES] + [(name, 4) for name in LINEAR]
                         + [("kalman", 4)])
def test_dtype_and_device_follow_the_inputs(name, chunk_size, dtype):
    q, k, v = make_inputs(0, (2,), 7, 3, 2, dtype=dtype)
    params = make_params(name, "per-step", 5, (2,), 7, dtype=dtype)
    if name == "kalman" and chunk_size:
        params["drift"] = 0.0                       # the information form has no drift
    state = make_state(name, 9, (2,), 3, 2, dtype=dtype)
    out, final = package(name, q, k, v, params, initial_state=state, chunk_size=chunk_size)
    for x in (out, *(final if isinstance(final, tuple) else (final,))):
        assert x.dtype == dtype and x.device == q.device and torch.isfinite(x).all()
    assert out.shape == (2, 7, 2) and (final[0] if isinstance(final, tuple) else final).shape == (2, 3, 2)
    if dtype == torch.float32:
        # against the float64 reference: the ~500 roundings counted for CHUNKED, now of u = 2**-24 = 6e-8
        # each, bound the error by 3e-5, so 1e-4 still separates rounding from a wrong term
        expected = reference(name, *(x.double() for x in (q, k, v)),
                             {key: p.double() if isinstance(p, torch.Tensor) else p for key, p in params.items()},
                             tuple(s.double() for s in state) if isinstance(state, tuple) else state.double())
        assert_same(expected, (out, final), 1e-4)


# --- closed forms --------------------------------------------------------------------------------

@pytest.mark.parametrize("chunk_size", [None, 1, 3])
def test_delta_with_unit_key_and_beta_one_overwrites(chunk_size):
    # S' = (I - k^T k) S + k^T v: the key now recalls v exactly, and any x orthogonal to k recalls x S
    basis = torch.linalg.qr(randn(0, 4, 4))[0].T                  # rows orthonormal
    k = basis[[0, 0, 1]]                                          # k_0, then k_0 again, then k_1
    v = randn(1, 3, 2)
    state = randn(2, 4, 2)
    out, final = rules.delta(k, k, v, beta=1.0, initial_state=state, chunk_size=chunk_size)
    assert rel_err(v, out) <= EXACT                                # each key reads its newest value
    assert rel_err(basis[[0, 1]] @ final, v[[1, 2]]) <= EXACT       # k_0 overwritten by the second value
    assert rel_err(basis[2:] @ state, basis[2:] @ final) <= EXACT   # untouched directions keep the old state


@pytest.mark.parametrize("steps", [1, 7, 60, 600])
@pytest.mark.parametrize("form", rules.OJA_FORMS)
def test_oja_repeated_pair_matches_the_closed_form(form, steps):
    # Each step is S (1 - alpha v_j^2) + alpha k^T v_j per column: a contraction with factor 1 - alpha v_j^2
    # >= 0.8, so rounding errors of size u add up to at most u / (alpha v_j^2) ~ 20 u: EXACT holds
    k = torch.tensor([0.6, 0.0, 0.8], dtype=torch.float64, device=DEVICE)
    v = torch.tensor([0.5, 2.0, -1.0], dtype=torch.float64, device=DEVICE)
    alpha = 0.2 if form == "source" else 0.15           # alpha v_j^2 in {0.05, 0.8, 0.2}; alpha |v|^2 = 0.7875
    keys, values = k.expand(steps, 3), v.expand(steps, 3)
    _, state = rules.oja(keys, keys, values, alpha=alpha, form=form)
    assert rel_err(theory.oja_repeated_pair(k, v, alpha=alpha, steps=steps, form=form), state) <= EXACT
    if steps == 600:    # the slowest factor 0.95^600 = 4e-14 is below EXACT: the limit itself
        limit = theory.oja_repeated_pair(k, v, alpha=alpha, form=form)
        assert rel_err(limit, state) <= EXACT
        inverse = torch.outer(k, 1 / v) if form == "source" else torch.outer(k, v / v.pow(2).sum())
        assert rel_err(inverse, limit) <= EXACT             # source: k^T (1/v), read out as the reciprocal of the US


@pytest.mark.parametrize("alpha, tau", [(0.1, 5.0), (0.5, 1.0), (0.3, 12.5)])
def test_bcm_with_a_repeated_unit_us_converges_to_alpha_tau(alpha, tau):
    # theta_t = 1 - (1 - 1/tau)^t, so step t adds alpha (1 - theta_{t-1}) = alpha (1 - 1/tau)^(t-1) and
    # after N steps S = alpha tau (1 - (1 - 1/tau)^N) k^T: a geometric sum with limit alpha tau
    k = torch.tensor([0.6, 0.8], dtype=torch.float64, device=DEVICE)
    for steps in (1, 4, 400):
        keys, us = k.expand(steps, 2), torch.ones(steps, 1, dtype=torch.float64, device=DEVICE)
        _, (state, theta) = rules.bcm(keys, keys, us, alpha=alpha, tau=tau)
        kept = (1 - 1 / tau) ** steps
        assert rel_err(alpha * tau * (1 - kept) * k[:, None], state) <= EXACT
        assert abs(theta.item() - (1 - kept)) <= EXACT
    assert abs(state[:, 0] @ k - alpha * tau) <= EXACT * alpha * tau        # (1 - 1/12.5)^400 = 3e-15: the limit


# --- the Kalman rule -------------------------------------------------------------------------------

@PROPERTY
@given(data=st.data(), batch=batch_shapes, T=st.integers(1, 40), d_k=st.integers(1, 6), d_v=st.integers(1, 5),
       seed=seeds, with_state=st.booleans(), how=st.sampled_from(["number", "per-step", "per-step-batch"]))
def test_kalman_information_form_equals_the_filter(data, batch, T, d_k, d_v, seed, with_state, how):
    # Without drift, P_t^-1 and P_t^-1 S_t are sums; the chunkwise form solves them by Cholesky. Unit keys,
    # noise >= 1/2 and a prior covariance with eigenvalues in [1, 2] keep the precision's condition number
    # below (1 + T / 0.5) / (1/2) <= 162, so its solves lose at most ~2 digits on top of the T * d_k ~ 240
    # roundings counted for CHUNKED: ~1e-12 at worst, inside 1e-10
    chunk_size = data.draw(st.integers(1, T + 8), label="chunk_size")
    q, k, v = make_inputs(seed, batch, T, d_k, d_v)
    params = {**make_params("kalman", how, seed + 3, batch, T), "drift": 0.0}
    state = make_state("kalman", seed + 5, batch, d_k, d_v) if with_state else None
    recurrent = rules.kalman(q, k, v, **params, initial_state=state)
    assert_same(recurrent, rules.kalman(q, k, v, **params, initial_state=state, chunk_size=chunk_size), CHUNKED)


@pytest.mark.parametrize("chunk_size", CHUNK_SIZES)
def test_kalman_information_form_gradients(chunk_size):
    q, k, v = make_inputs(0, (2,), 37, 4, 3)
    noise = uniform(3, 2, 37, low=0.5, high=2.0)
    state, cov = make_state("kalman", 5, (2,), 4, 3)
    leaves = [x.requires_grad_(True) for x in (q, k, v, noise, state, cov)]
    weights = [randn(7 + i, *x.shape) for i, x in enumerate((q[..., :3], state, cov))]   # outputs, S, P

    def grads(**kwargs):
        out, final = rules.kalman(q, k, v, noise=noise, initial_state=(state, cov), **kwargs)
        loss = sum((w * x).sum() for w, x in zip(weights, (out, *final)))
        return torch.autograd.grad(loss, leaves)

    *grads_r, cov_r = grads()
    *grads_c, cov_c = grads(chunk_size=chunk_size)
    for g_r, g_c in zip(grads_r, grads_c):
        assert torch.isfinite(g_c).all() and rel_err(g_r, g_c) <= CHUNKED
    # the Cholesky factorisation reads one triangle of P and returns a symmetric gradient: compare the
    # symmetric parts, the only ones a covariance can move along
    assert rel_err(cov_r + cov_r.mT, cov_c + cov_c.mT) <= CHUNKED


@pytest.mark.parametrize("prior, noise", [(1.0, 1.0), (1e3, 1.0), (1e8, 0.5)])
def test_kalman_recalls_orthonormal_keys_after_one_write(prior, noise):
    # Each key is orthogonal to the earlier ones, along which alone P has shrunk: it meets P k^T = prior k^T,
    # a gain prior / (prior + noise) k^T, so one write recalls its value shrunk by that factor; P along
    # it becomes prior noise / (prior + noise), and a direction never written keeps S = 0 and P = prior.
    # Float64 throughout; P's entries cancel from the size of the prior, hence its tolerance EXACT * prior
    basis = torch.linalg.qr(randn(0, 5, 5)).Q.T                      # rows orthonormal
    v = randn(1, 4, 2)
    out, (state, cov) = rules.kalman(basis[:4], basis[:4], v, prior=prior, noise=noise)
    shrink = prior / (prior + noise)
    assert rel_err(shrink * v, out) <= EXACT                          # each read right after its write
    assert rel_err(shrink * v, basis[:4] @ state) <= EXACT            # every value at the end
    # near-exact for a flat prior: off by noise / (prior + noise) < noise / prior, and by rounding (at 1e8 the
    # two differ by 2.5e-17, less than float64 rounds the read)
    assert rel_err(v, out) <= noise / prior + EXACT
    assert float((basis[4] @ state).abs().max()) <= EXACT
    expected = torch.diag(torch.tensor([prior * noise / (prior + noise)] * 4 + [prior], dtype=torch.float64,
                                       device=DEVICE))
    assert float((basis @ cov @ basis.T - expected).abs().max()) <= EXACT * prior


@pytest.mark.parametrize("chunk_size", [None, 64])
@pytest.mark.parametrize("with_state", [False, True], ids=["zero-state", "initial-state"])
def test_kalman_ends_at_the_ridge_solution(with_state, chunk_size):
    # Without drift the filter is recursive least squares: after the whole stream S_T is the ridge solution
    # (K^T K + (noise / prior) I)^-1 (K^T V + (noise / prior) S_0), and P_T = noise (K^T K + (noise / prior) I)^-1.
    # Both forms damp earlier rounding (each step contracts the error of S along its key), so the error
    # stays that of a few steps, ~1e-15 at T = 2000: EXACT leaves orders of magnitude
    batch, T, d_k, d_v, noise, prior = (2,), 2000, 4, 3, 0.5, 1e3
    k = randn(0, *batch, T, d_k)
    v = k @ randn(1, *batch, d_k, d_v) + 0.3 * randn(2, *batch, T, d_v)      # a stationary, noisy stream
    eye = torch.eye(d_k, dtype=torch.float64, device=DEVICE)
    start = randn(3, *batch, d_k, d_v) if with_state else torch.zeros_like(v[..., :d_k, :])
    state = (start, prior * eye.expand(*batch, d_k, d_k)) if with_state else None
    _, (final, cov) = rules.kalman(k, k, v, prior=prior, noise=noise, initial_state=state, chunk_size=chunk_size)
    ridge = noise / prior
    assert rel_err(torch.linalg.solve(k.mT @ k + ridge * eye, k.mT @ v + ridge * start), final) <= EXACT
    assert rel_err(noise * torch.linalg.inv(k.mT @ k + ridge * eye), cov) <= EXACT
    if not with_state:
        # the default prior's ridge is negligible: K^T K ~ T I moves S from least squares by ~ ridge / T
        assert rel_err(torch.linalg.lstsq(k, v).solution, final) <= 2 * ridge / T


def test_kalman_backward_blocking_and_the_delta_rule():
    # After AB+ trials the filter knows A + B but not A - B: P has a negative A-B covariance (about
    # -prior / 2). A+ trials then raise A and, through that covariance, lower B (backward blocking). The
    # delta rule writes only along the trial's key, so with orthonormal A and B its B stays put
    cs = phenomena.stimuli("AB", 4, device=DEVICE, dtype=torch.float64)
    keys, us, (compound, _) = phenomena.trials("10 AB+ | 10 A+", cs)
    probe = cs["B"].expand_as(keys)                                   # B's response after every trial
    _, (_, cov) = rules.kalman(keys[:compound], keys[:compound], us[:compound])
    assert float(cs["A"] @ cov @ cs["B"]) < -0.4 * 1e3
    kalman_b = rules.kalman(probe, keys, us)[0].squeeze(-1)
    assert kalman_b[compound - 1] > 0.45                              # AB+ shares the US: B about 1/2
    assert bool((kalman_b[compound - 1:].diff() < 0).all()) and kalman_b[-1] < 0.01
    delta_b = rules.delta(probe, keys, us, beta=0.2)[0].squeeze(-1)
    assert delta_b[compound - 1] > 0.45
    assert float((delta_b[compound:] - delta_b[compound - 1]).abs().max()) <= EXACT


# --- bad input -----------------------------------------------------------------------------------

NAN, INF = float("nan"), float("inf")
Q, V = cpu(5, 3), cpu(5, 2)
BATCH_Q, BATCH_V = cpu(2, 5, 3), cpu(2, 5, 2)
CPU64 = {"dtype": torch.float64, "device": "cpu"}
STEPS = torch.full((5,), 0.5, **CPU64)


def call(rule, q=Q, k=None, v=V, **kwargs):
    """A call of ``rule`` with default inputs and rates, ``kwargs`` replacing them."""
    defaults = {"hebbian": {}, "decay": {"gamma": 0.9}, "delta": {"beta": 0.5}, "delta_rectified": {"beta": 0.5},
                "gated_delta": {"gamma": 0.9, "beta": 0.5},
                "oja": {"alpha": 0.1}, "bcm": {"alpha": 0.1, "tau": 2.0}, "kalman": {}}[rule]
    return lambda: rules.RULES[rule](q, q if k is None else k, v, **{**defaults, **kwargs})


BAD = cases(   # (case, call, error, parameter)
    ("gamma > 1", call("decay", gamma=1.5), ValueError, "gamma"),
    ("gamma < 0", call("gated_delta", gamma=-0.1), ValueError, "gamma"),
    ("gamma per step > 1", call("decay", gamma=with_value(STEPS, 1.01)), ValueError, "gamma"),
    ("gamma NaN", call("decay", gamma=NAN), ValueError, "gamma"),
    ("gamma per step NaN", call("gated_delta", gamma=with_value(STEPS, NAN)), ValueError, "gamma"),
    ("gamma a string", call("decay", gamma="0.9"), TypeError, "gamma"),
    ("alpha < 0", call("hebbian", alpha=-1.0), ValueError, "alpha"),
    ("alpha per step < 0", call("oja", alpha=with_value(STEPS, -0.1)), ValueError, "alpha"),
    ("alpha < 0 (bcm)", call("bcm", alpha=-0.1), ValueError, "alpha"),
    ("alpha inf", call("hebbian", alpha=INF), ValueError, "alpha"),
    ("beta < 0", call("delta", beta=-0.5), ValueError, "beta"),
    ("beta per step < 0", call("gated_delta", beta=with_value(STEPS, -1.0)), ValueError, "beta"),
    ("beta too short", call("delta", beta=STEPS[:4]), ValueError, "beta"),
    ("beta too long", call("delta", beta=torch.full((6,), 0.5, **CPU64)), ValueError, "beta"),
    ("alpha per batch, not per step", call("hebbian", q=BATCH_Q, v=BATCH_V,
                                           alpha=torch.ones(2, 1, **CPU64)), ValueError, "alpha"),
    ("gamma batch does not broadcast", call("decay", q=BATCH_Q, v=BATCH_V,
                                            gamma=torch.full((3, 5), 0.5, **CPU64)), ValueError, "gamma"),
    ("beta with more batch than q", call("delta", beta=torch.full((2, 5), 0.5, **CPU64)),
     ValueError, "beta"),
    ("beta float32", call("delta", beta=STEPS.float()), TypeError, "beta"),
    ("alpha int64", call("hebbian", alpha=torch.ones(5, dtype=torch.long, device="cpu")), TypeError, "alpha"),
    ("tau < 1", call("bcm", tau=0.5), ValueError, "tau"),
    ("tau NaN", call("bcm", tau=NAN), ValueError, "tau"),
    ("tau a string", call("bcm", tau="2"), TypeError, "tau"),
    ("unknown oja form", call("oja", form="subspace"), ValueError, "form"),
    ("chunk_size to oja", call("oja", chunk_size=4), ValueError, "chunk_size"),
    ("chunk_size to bcm", call("bcm", chunk_size=4), ValueError, "chunk_size"),
    *[(f"chunk_size 0 ({rule})", call(rule, chunk_size=0), ValueError, "chunk_size") for rule in LINEAR],
    ("chunk_size < 0", call("delta", chunk_size=-2), ValueError, "chunk_size"),
    ("chunk_size float", call("decay", chunk_size=4.0), TypeError, "chunk_size"),
    ("chunk_size bool", call("hebbian", chunk_size=True), TypeError, "chunk_size"),
    *[(f"initial_state shape ({rule})", call(rule, initial_state=cpu(2, 3)), ValueError, "initial_state")
      for rule in ("hebbian", "decay", "delta", "gated_delta", "oja")],
    ("initial_state without batch", call("delta", q=BATCH_Q, v=BATCH_V, initial_state=cpu(3, 2)),
     ValueError, "initial_state"),
    ("initial_state float32", call("decay", initial_state=cpu(3, 2, dtype=torch.float32)), TypeError, "initial_state"),
    ("initial_state NaN", call("gated_delta", initial_state=with_value(cpu(3, 2), NAN)), ValueError, "initial_state"),
    ("bcm initial_state not a pair", call("bcm", initial_state=cpu(3, 2)), TypeError, "initial_state"),
    ("bcm initial_state theta shape", call("bcm", initial_state=(cpu(3, 2), cpu(3))), ValueError, "initial_state"),
    ("bcm initial_state state shape", call("bcm", initial_state=(cpu(2, 3), cpu(2))), ValueError, "initial_state"),
    ("prior < 0", call("kalman", prior=-1.0), ValueError, "prior"),
    ("prior 0", call("kalman", prior=0.0), ValueError, "prior"),
    ("prior a tensor", call("kalman", prior=torch.tensor(1.0, **CPU64)), TypeError, "prior"),
    ("noise < 0", call("kalman", noise=-1.0), ValueError, "noise"),
    ("noise 0", call("kalman", noise=0.0), ValueError, "noise"),
    ("noise per step 0", call("kalman", noise=with_value(STEPS, 0.0)), ValueError, "noise"),
    ("noise too short", call("kalman", noise=STEPS[:4]), ValueError, "noise"),
    ("drift < 0", call("kalman", drift=-0.1), ValueError, "drift"),
    ("drift per step NaN", call("kalman", drift=with_value(STEPS, NAN)), ValueError, "drift"),
    ("chunk_size with drift", call("kalman", drift=0.1, chunk_size=4), ValueError, "chunk_size"),
    ("chunk_size 0 (kalman)", call("kalman", chunk_size=0), ValueError, "chunk_size"),
    ("kalman initial_state not a pair", call("kalman", initial_state=cpu(3, 2)), TypeError, "initial_state"),
    ("kalman initial_state P shape", call("kalman", initial_state=(cpu(3, 2), cpu(3, 2))), ValueError, "initial_state"),
    ("kalman initial_state S shape", call("kalman", initial_state=(cpu(2, 3), cpu(3, 3))), ValueError, "initial_state"),
    ("kalman initial_state P float32", call("kalman", initial_state=(cpu(3, 2), cpu(3, 3, dtype=torch.float32))),
     TypeError, "initial_state"),
    ("kalman initial_state P not positive definite", call("kalman", chunk_size=2,
     initial_state=(cpu(3, 2), -torch.eye(3, **CPU64))), ValueError, "initial_state"),
    *[(f"d_k of k differs ({rule})", call(rule, k=cpu(5, 4)), ValueError, "k") for rule in rules.RULES],
    ("T of k differs", call("delta", k=cpu(4, 3)), ValueError, "k"),
    ("T of v differs", call("decay", v=cpu(4, 2)), ValueError, "v"),
    ("batch of v differs", call("hebbian", q=BATCH_Q, v=cpu(3, 5, 2)), ValueError, "v"),
    ("q 1-D", call("delta", q=cpu(5), v=cpu(5)), ValueError, "q"),
    ("q int64", call("hebbian", q=Q.long()), TypeError, "q"),
    ("v int64", call("oja", v=V.long()), TypeError, "v"),
    ("k float32", call("gated_delta", k=Q.float()), TypeError, "k"),
    *[(f"NaN in q ({rule})", call(rule, q=with_value(Q, NAN)), ValueError, "q") for rule in rules.RULES],
    ("inf in k", call("delta", k=with_value(Q, INF)), ValueError, "k"),
    ("NaN in v", call("bcm", v=with_value(V, NAN)), ValueError, "v"),
    ("T = 0", call("hebbian", q=cpu(0, 3), v=cpu(0, 2)), ValueError, "q"),
)


@pytest.mark.parametrize("make, error, param", BAD)
def test_bad_input(make, error, param):
    with pytest.raises(error, match=rf"\b{param}\b"):
        make()


@pytest.mark.parametrize("make, error, param", cases(
    ("q an array (delta)", call("delta", q=Q.numpy(), k=Q), TypeError, "q"),
    ("q an array (hebbian)", call("hebbian", q=Q.numpy(), k=Q), TypeError, "q"),
    ("q a list (decay)", call("decay", q=Q.tolist(), k=Q), TypeError, "q"),
    ("q 1-D with a per-step beta", call("delta", q=cpu(5), v=cpu(5), beta=STEPS), ValueError, "q"),
))
def test_bad_input_checked_before_the_rates(make, error, param):
    with pytest.raises(error, match=rf"\b{param}\b"):
        make()


def test_rule_tables():
    assert set(rules.RULES) == {"hebbian", "decay", "delta", "delta_rectified", "gated_delta", "oja", "bcm", "kalman"}
    assert set(rules.CHUNKWISE) == {"hebbian", "decay", "delta", "gated_delta"}
    assert set(rules.OJA_FORMS) == {"source", "standard"}


def test_delta_rectified_is_delta_while_predictions_are_non_negative():
    # unit keys, values in [0, 1], beta <= 1: every prediction stays in [0, 1], so the ReLU never bites
    k = torch.nn.functional.normalize(cpu(40, 4).abs(), dim=-1)
    v = cpu(40, 2).abs().clamp(max=1.0)
    plain, rectified = rules.delta(k, k, v, beta=0.5), rules.delta_rectified(k, k, v, beta=0.5)
    assert torch.allclose(plain[0], rectified[0], rtol=0, atol=1e-14)


def test_delta_rectified_keeps_a_negative_prediction_unchanged_without_the_us():
    k = torch.eye(3, dtype=torch.float64)[[0, 1, 0]]
    state = torch.tensor([[-1.0], [2.0], [0.0]], dtype=torch.float64)
    out, final = rules.delta_rectified(k, k, torch.zeros(3, 1, dtype=torch.float64), beta=0.5, initial_state=state)
    assert out.squeeze(-1).tolist() == [-1.0, 1.0, -1.0] and final.squeeze(-1).tolist() == [-1.0, 1.0, 0.0]


@PROPERTY
@given(st.integers(0, 2**31 - 1), st.floats(0.0, 0.2))
def test_diagonal_kalman_is_the_full_filter_on_single_coordinates(seed, drift):
    # a key along one coordinate keeps a diagonal P diagonal: the two filters agree step by step
    g = torch.Generator().manual_seed(seed)
    k = torch.eye(4, dtype=torch.float64)[torch.randint(0, 4, (12,), generator=g)]
    v = torch.randn(12, 2, generator=g, dtype=torch.float64)
    full, diagonal = rules.kalman(k, k, v, drift=drift), rules.kalman(k, k, v, drift=drift, diagonal=True)
    assert torch.allclose(full[0], diagonal[0], rtol=1e-12, atol=1e-12)
    assert torch.allclose(full[1][1], diagonal[1][1], rtol=1e-12, atol=1e-12)


def test_diagonal_kalman_never_moves_an_absent_coordinate():
    # AB+ then A+: the full filter lowers B through the covariance, the diagonal one leaves it
    a, b = torch.eye(3, dtype=torch.float64)[:2]
    k = torch.stack([a + b] * 5 + [a] * 5)
    v = torch.ones(10, 1, dtype=torch.float64)
    q = b.expand(10, 3)
    full = rules.kalman(q, k, v, prior=1.0)[0].squeeze(-1)
    diagonal = rules.kalman(q, k, v, prior=1.0, diagonal=True)[0].squeeze(-1)
    assert full[-1] < full[4] - 0.1 and diagonal[-1] == diagonal[4]
