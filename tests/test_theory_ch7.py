"""pavlov.theory, chapter 7: the decay rule's ISR by age, its horizon and the optimal decay; the Hebbian store under
drift; Oja's rule on a repeated pair. Hand-computed points, the defining properties, the asymptotics, bad input.

The measured counterparts (drift runs, decay streams, the rules themselves) are checked against these
closed forms in ``test_drift.py`` and ``test_rules.py``.
"""

from __future__ import annotations

import math

import pytest
import torch
from conftest import DEVICE, EXACT, cases, cpu

from pavlov import theory

F64 = {"device": DEVICE, "dtype": torch.float64}


# --- the decay rule's ISR by age ---------------------------------------------------------------

def test_decay_isr_by_hand():
    # gamma = 1/2, d = 4, T = 2: G = 1 + 1/4 = 5/4, ISR(a) = G / (d gamma^(2a)) - 1/d
    assert theory.decay_isr(0, gamma=0.5, d=4, length=2) == 5 / 16 - 1 / 4
    assert theory.decay_isr(1, gamma=0.5, d=4, length=2) == 5 / 4 - 1 / 4
    # an endless stream: G = 1 / (1 - gamma^2) = 4/3 at gamma = 1/2
    assert theory.decay_isr(0, gamma=0.5, d=4) == pytest.approx(1 / 3 - 1 / 4, rel=EXACT)
    # gamma = 1 is the Hebbian store: (T - 1) / d for every age
    for age in (0, 5, 64):
        assert theory.decay_isr(age, gamma=1.0, d=64, length=65) == pytest.approx(1.0, rel=EXACT)
        assert theory.decay_isr(age, gamma=1.0, d=10, length=31) == pytest.approx(3.0, rel=EXACT)


@pytest.mark.parametrize("gamma", [0.3, 0.9, 0.999])
def test_decay_isr_grows_by_one_over_gamma_squared_per_age(gamma):
    # ISR(a) + 1/d = G / (d gamma^(2a)); a few roundings each, so EXACT
    d = 16
    for length in (None, 40):
        shifted = [theory.decay_isr(a, gamma=gamma, d=d, length=length) + 1 / d for a in range(10)]
        for a in range(9):
            assert shifted[a + 1] == pytest.approx(shifted[a] / gamma**2, rel=EXACT)


def test_decay_isr_of_a_long_stream_is_the_endless_one():
    # gamma^(2T) = 0.9^2000 underflows far below 2**-53: the finite sum is the geometric series' limit
    for age in (0, 7):
        assert theory.decay_isr(age, gamma=0.9, d=8, length=1000) == pytest.approx(
            theory.decay_isr(age, gamma=0.9, d=8), rel=EXACT)


GRID = [(gamma, d, length) for gamma in (0.5, 0.9, 0.97, 0.993) for d in (8, 64, 512) for length in (None, 30, 1000)]


@pytest.mark.parametrize("gamma, d, length", GRID)
def test_decay_horizon_is_where_isr_crosses_one(gamma, d, length):
    horizon = theory.decay_horizon(gamma=gamma, d=d, length=length)
    if horizon < 0:                                              # no pair is read with ISR <= 1, not even the last
        assert theory.decay_isr(0, gamma=gamma, d=d, length=length) > 1
        return
    age = math.floor(horizon)
    # Exact comparisons are safe away from an integer horizon: at a distance f from one, ISR + 1/d differs
    # from (d + 1)/d by a factor gamma^(2f), 1 - 2 f ln(1/gamma) > 1e-8 relative here, far above the few
    # roundings (~1e-15) of each side
    assert min(horizon - age, age + 1 - horizon) > 1e-6
    assert theory.decay_isr(age, gamma=gamma, d=d, length=length) <= 1 < theory.decay_isr(age + 1, gamma=gamma, d=d,
                                                                                           length=length)


@pytest.mark.parametrize("threshold", [0.25, 0.5, 2.0, 4.0])
@pytest.mark.parametrize("gamma, d", [(0.9, 8), (0.97, 64), (0.993, 64)])
def test_decay_horizon_at_a_threshold_is_where_isr_crosses_it(gamma, d, threshold):
    horizon = theory.decay_horizon(gamma=gamma, d=d, threshold=threshold)
    age = math.floor(horizon)
    if horizon < 0:
        assert theory.decay_isr(0, gamma=gamma, d=d) > threshold
        return
    assert theory.decay_isr(age, gamma=gamma, d=d) <= threshold < theory.decay_isr(age + 1, gamma=gamma, d=d)


@pytest.mark.parametrize("threshold", [0.5, 2.0, 4.0])
def test_optimal_decay_at_a_threshold(threshold):
    # the optimum (theta d + 1)/e - 1/2 + O(1/d), and no gamma nearby does better
    gamma, horizon = theory.optimal_decay(256, exact=True, threshold=threshold)
    assert horizon == pytest.approx((threshold * 256 + 1) / math.e - 0.5, abs=1 / 64)
    for other in (gamma - 1e-3, gamma + 1e-3):
        assert theory.decay_horizon(gamma=other, d=256, threshold=threshold) < horizon
    assert theory.optimal_decay(256, threshold=threshold)[1] == pytest.approx((threshold * 256 + 1) / math.e)


def test_decay_horizon_by_hand():
    # endless stream, gamma^2 = 1/2: G = 2 and the horizon ln((1 + 1/d) d / G) / ln 2 is log2((d + 1) / 2)
    gamma = 2 ** -0.5
    assert theory.decay_horizon(gamma=gamma, d=7) == pytest.approx(math.log2(8 / 2), rel=EXACT)   # log2(4) = 2
    assert theory.decay_horizon(gamma=gamma, d=1) == pytest.approx(0.0, abs=EXACT)               # only the last


# --- the optimal decay -------------------------------------------------------------------------

@pytest.mark.parametrize("d", [256, 1024, 4096])
def test_optimal_decay_maximises_the_horizon(d):
    r"""The grid maximum of the exact horizon sits where optimal_decay puts it, up to the expansion's next order.

    optimal_decay keeps the leading order of h(eps) = ln((d+1) eps (2 - eps)) / (-2 ln(1 - eps)) in eps = 1 - gamma,
    ln(2 (d+1) eps) / (2 eps), peaking at eps* = e / (2 (d+1)) with h* = (d+1)/e. The next order,
    2h = (L - eps/2)(1 - eps/2) / eps + O(eps) with L = ln(2 (d+1) eps), is L / eps - L/2 - 1/2: its maximum
    lies at L = 1 - eps/2, i.e. eps = eps* (1 - eps*/2 + ...), and equals 1/eps* - 1, so the exact best
    horizon is h* - 1/2 + O(eps*) with eps* = 1.36 / d. The gap is O(1) in a horizon of order d: the
    asymptotic optimum is right to O(1/d) relative.
    """
    gamma_star, h_star = theory.optimal_decay(d)
    eps_star = 1 - gamma_star
    step = 1e-4                                                   # relative spacing of the grid in eps
    eps = (eps_star * torch.exp(step * torch.arange(-5000, 5001, dtype=torch.float64, device="cpu"))).tolist()
    horizons = [theory.decay_horizon(gamma=1 - e, d=d) for e in eps]
    best = max(range(len(eps)), key=horizons.__getitem__)
    assert 0 < best < len(eps) - 1                                # an interior maximum, not an edge of the grid
    assert abs(h_star - horizons[best] - 0.5) <= eps_star        # gap 1/2, remainder O(eps*) with coefficient < 1
    assert abs(eps[best] / eps_star - 1) <= eps_star + step      # the argmax moves by -eps*/2 relative
    assert h_star == (d + 1) / math.e and gamma_star == 1 - math.e / (2 * (d + 1))


def test_optimal_decay_gap_shrinks_like_one_over_d():
    # |(h* - h(gamma*)) - 1/2| = O(1/d): at gamma* itself the exact horizon is h* - 1/2 + O(eps*) as well
    gaps = []
    for d in (64, 256, 1024):
        gamma, h_star = theory.optimal_decay(d)
        gaps.append(abs(h_star - theory.decay_horizon(gamma=gamma, d=d) - 0.5))
    assert gaps[0] > gaps[1] > gaps[2] and gaps[2] <= math.e / (2 * 1025)


# --- the Hebbian store under drift -------------------------------------------------------------

def test_hebbian_drift_by_hand():
    assert theory.hebbian_drift(3, 4, n_pairs=1, d=8) == (4.0, 25.0, 25.0)
    # (e_1^2 + e_2^2)(1 + (n - 1)/d) = 4 * 2 and n (e_1^2 + e_2^2) = 20 after 2 old epochs, none new
    assert theory.hebbian_drift(2, 0, n_pairs=5, d=4) == (0.0, 8.0, 20.0)


@pytest.mark.parametrize("rho", [0.5, 0.9, 0.99])
def test_hebbian_drift_regains_rho_at_the_stated_epoch(rho):
    # quality e_2 / sqrt((e_1^2 + e_2^2)(1 + (n-1)/d)) over its value before the change, 1 / sqrt(1 + (n-1)/d),
    # is e_2 / sqrt(e_1^2 + e_2^2): rho exactly when e_2 = e_1 rho / sqrt(1 - rho^2) (real epochs allowed)
    e_old, n, d = 5.0, 10, 32
    e_new = e_old * rho / math.sqrt(1 - rho**2)
    signal, power, _ = theory.hebbian_drift(e_old, e_new, n_pairs=n, d=d)
    before, power_before, _ = theory.hebbian_drift(0.0, e_old, n_pairs=n, d=d)
    assert (signal / math.sqrt(power)) / (before / math.sqrt(power_before)) == pytest.approx(rho, rel=EXACT)


# --- Oja's rule on a repeated pair ----------------------------------------------------------------

def oja_steps(k, v, alpha, steps, form):
    """S_N by iterating the rule on plain Python numbers, S <- S + alpha (k^T v - S diag(v^2) or S v^T v)."""
    S = [[0.0] * len(v) for _ in k]
    for _ in range(steps):
        forget = [[S[i][j] * v[j] ** 2 if form == "source" else sum(S[i][m] * v[m] for m in range(len(v))) * v[j]
                   for j in range(len(v))] for i in range(len(k))]
        S = [[S[i][j] + alpha * (k[i] * v[j] - forget[i][j]) for j in range(len(v))] for i in range(len(k))]
    return S


@pytest.mark.parametrize("form", ["source", "standard"])
@pytest.mark.parametrize("steps", [0, 1, 2, 9])
def test_oja_repeated_pair_is_the_iterated_rule(form, steps):
    # a contraction per column (|1 - alpha v_j^2| < 1): a few roundings per step, EXACT
    k, v, alpha = [0.6, -0.8, 0.0], [0.5, 2.0, -1.0], 0.15
    got = theory.oja_repeated_pair(torch.tensor(k, **F64), torch.tensor(v, **F64), alpha=alpha, steps=steps, form=form)
    expected = torch.tensor(oja_steps(k, v, alpha, steps, form), **F64)
    assert got.shape == (3, 3)
    assert torch.allclose(got, expected, rtol=EXACT, atol=EXACT)


def test_oja_repeated_pair_limits():
    k, v = torch.tensor([0.6, 0.8], **F64), torch.tensor([0.5, 2.0, 0.0], **F64)
    source = theory.oja_repeated_pair(k, v, alpha=0.1)
    # the source's form: k^T (1/v) on the non-zero components, a zero column where v_j = 0; read out with k
    # (|k| = 1) it returns 1/v, the reciprocal of the US
    assert torch.allclose(source, torch.tensor([[1.2, 0.3, 0.0], [1.6, 0.4, 0.0]], **F64), rtol=EXACT, atol=0)
    assert torch.allclose(k @ source, torch.tensor([2.0, 0.5, 0.0], **F64), rtol=EXACT, atol=EXACT)
    # the standard form: k^T v / |v|^2, read out as v / |v|^2
    standard = theory.oja_repeated_pair(k, v, alpha=0.1, form="standard")
    assert torch.allclose(k @ standard, v / 4.25, rtol=EXACT, atol=EXACT)
    # the finite-step stores approach the limits
    for form, limit in (("source", source), ("standard", standard)):
        far = theory.oja_repeated_pair(k, v, alpha=0.1, steps=2000, form=form)   # 0.975^2000 = 1e-22
        assert torch.allclose(far, limit, rtol=EXACT, atol=0)
    # a one-dimensional US: the two forms coincide
    one = torch.tensor([1.5], **F64)
    assert torch.equal(theory.oja_repeated_pair(k, one, alpha=0.2, steps=3),
                       theory.oja_repeated_pair(k, one, alpha=0.2, steps=3, form="standard"))


@pytest.mark.parametrize("form", ["source", "standard"])
def test_oja_fixed_point_is_the_mean_recursion(form):
    # the mean store after N steps of one uniformly drawn pair: E S <- E S (I - alpha D) + alpha B, iterated by hand
    gen = torch.Generator(DEVICE).manual_seed(0)
    keys = torch.randn(3, 5, generator=gen, device=DEVICE, dtype=torch.float64)
    values = torch.randn(3, 4, generator=gen, device=DEVICE, dtype=torch.float64)
    alpha, n = 0.05, 3
    rate = torch.diag(values.pow(2).sum(0)) if form == "source" else values.mT @ values
    mean = torch.zeros(5, 4, **F64)
    for _ in range(40):
        mean = mean - alpha * mean @ rate / n + alpha * keys.mT @ values / n
    got = theory.oja_fixed_point(keys, values, form=form, alpha=alpha, steps=40)
    assert torch.allclose(got, mean, rtol=1e-12, atol=1e-12)
    limit = theory.oja_fixed_point(keys, values, form=form)
    assert torch.allclose(theory.oja_fixed_point(keys, values, form=form, alpha=alpha, steps=20000), limit,
                          rtol=1e-9, atol=1e-12)


def test_oja_fixed_point_one_pair_and_the_standard_form_is_still():
    k, v = torch.tensor([[0.6, 0.8]], **F64), torch.tensor([[0.5, 2.0, -1.0]], **F64)
    for form in ("source", "standard"):
        assert torch.allclose(theory.oja_fixed_point(k, v, form=form),
                              theory.oja_repeated_pair(k[0], v[0], alpha=0.1, form=form), rtol=EXACT, atol=EXACT)
    # standard form, n <= d_v independent USs: S* v_i^T = k_i^T, so every single write leaves S* where it is
    gen = torch.Generator(DEVICE).manual_seed(1)
    keys, values = (torch.randn(3, d, generator=gen, device=DEVICE, dtype=torch.float64) for d in (6, 5))
    limit = theory.oja_fixed_point(keys, values, form="standard")
    for key, value in zip(keys, values):
        step = torch.outer(key, value) - limit @ torch.outer(value, value)
        assert step.abs().max() <= 1e-12


@pytest.mark.parametrize("d", [2, 8, 64])
def test_delta_isr_and_horizon(d):
    rho = 1 - 1 / d
    assert theory.stream_signal(5, gamma=1.0, d=d, beta=1.0) == pytest.approx(rho ** 5)
    assert theory.stream_signal(5, gamma=0.9, d=d) == pytest.approx(0.9 ** 5)
    assert theory.stream_signal(3, gamma=0.9, d=d, beta=0.5) == pytest.approx(0.5 * (0.9 * (1 - 0.5 / d)) ** 3)
    assert theory.delta_isr(0, d=d) == 0.0
    assert theory.delta_isr(7, d=d) == pytest.approx(rho ** -14 - 1)
    horizon = theory.delta_horizon(d)
    assert rho ** (-2 * horizon) == pytest.approx(2.0)           # ISR = 1 there
    if d == 64:
        assert horizon < theory.optimal_decay(64, exact=True)[1]    # shorter than the best decay's


# --- bad input -----------------------------------------------------------------------------------

@pytest.mark.parametrize("make, error, param", cases(
    ("decay_isr: age < 0", lambda: theory.decay_isr(-1, gamma=0.9, d=8), ValueError, "age"),
    ("decay_isr: age float", lambda: theory.decay_isr(1.0, gamma=0.9, d=8), ValueError, "age"),
    ("decay_isr: age bool", lambda: theory.decay_isr(True, gamma=0.9, d=8), ValueError, "age"),
    ("decay_isr: gamma > 1", lambda: theory.decay_isr(0, gamma=1.2, d=8), ValueError, "gamma"),
    ("decay_isr: gamma 0", lambda: theory.decay_isr(0, gamma=0.0, d=8), ValueError, "gamma"),
    ("decay_isr: gamma NaN", lambda: theory.decay_isr(0, gamma=math.nan, d=8), ValueError, "gamma"),
    ("decay_isr: gamma a string", lambda: theory.decay_isr(0, gamma="0.9", d=8), TypeError, "gamma"),
    ("decay_isr: d 0", lambda: theory.decay_isr(0, gamma=0.9, d=0), ValueError, "d"),
    ("decay_isr: d float", lambda: theory.decay_isr(0, gamma=0.9, d=8.0), TypeError, "d"),
    ("decay_isr: length 0", lambda: theory.decay_isr(0, gamma=0.9, d=8, length=0), ValueError, "length"),
    ("decay_isr: gamma 1, no length", lambda: theory.decay_isr(0, gamma=1.0, d=8), ValueError, "length"),
    ("decay_horizon: gamma 1", lambda: theory.decay_horizon(gamma=1.0, d=8, length=10), ValueError, "gamma"),
    ("decay_horizon: gamma > 1", lambda: theory.decay_horizon(gamma=1.5, d=8), ValueError, "gamma"),
    ("decay_horizon: d < 0", lambda: theory.decay_horizon(gamma=0.9, d=-1), ValueError, "d"),
    ("optimal_decay: d 0", lambda: theory.optimal_decay(0), ValueError, "d"),
    ("optimal_decay: d bool", lambda: theory.optimal_decay(True), TypeError, "d"),
    ("oja_repeated_pair: unknown form", lambda: theory.oja_repeated_pair(cpu(2), cpu(2), alpha=0.1,
                                                                         form="subspace"), ValueError, "form"),
))
def test_bad_input(make, error, param):
    with pytest.raises(error, match=rf"\b{param}\b"):
        make()


@pytest.mark.parametrize("make, error, param", [
    pytest.param(lambda: theory.decay_horizon(gamma=0.9, d=0), ValueError, "d", id="decay_horizon: d 0"),
    pytest.param(lambda: theory.hebbian_drift(-1, 2, n_pairs=3, d=4), ValueError, "epochs_old",
                 id="hebbian_drift: epochs_old < 0"),
    pytest.param(lambda: theory.hebbian_drift(1, 2, n_pairs=0, d=4), ValueError, "n_pairs",
                 id="hebbian_drift: n_pairs 0"),
    pytest.param(lambda: theory.hebbian_drift(1, 2, n_pairs=3, d=0), ValueError, "d", id="hebbian_drift: d 0"),
    pytest.param(lambda: theory.oja_fixed_point(cpu(2, 2), cpu(3, 2), alpha=0.1, steps=3), ValueError, "pairs",
                 id="oja_fixed_point: pairs differ"),
    pytest.param(lambda: theory.oja_fixed_point(cpu(2, 2), cpu(2, 2), alpha=0.1), TypeError, "steps",
                 id="oja_fixed_point: alpha without steps"),
    pytest.param(lambda: theory.delta_isr(2, d=1), ValueError, "d", id="delta_isr: d = 1"),
    pytest.param(lambda: theory.stream_signal(2, gamma=1.0, d=4, beta=2.5), ValueError, "beta",
                 id="stream_signal: beta above 2"),
    pytest.param(lambda: theory.oja_repeated_pair(cpu(2), cpu(2), alpha=0.1, steps=-1), ValueError,
                 "steps", id="oja_repeated_pair: steps < 0"),
    pytest.param(lambda: theory.oja_repeated_pair(cpu(2), cpu(2), alpha=-0.1), ValueError, "alpha",
                 id="oja_repeated_pair: alpha < 0"),
    pytest.param(lambda: theory.oja_repeated_pair([1.0, 0.0], [0.5, 2.0], alpha=0.1), TypeError, "k",
                 id="oja_repeated_pair: lists"),
])
def test_bad_input_of_the_closed_forms(make, error, param):
    with pytest.raises(error, match=rf"\b{param}\b"):
        make()
