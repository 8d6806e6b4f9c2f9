"""pavlov.theory, chapter 3: the ISR's exact moments, the capacities, the worst-case bounds and the
decoding accuracy, against exact special cases, against each other, and against measurements.

The measurements use the package's stores (this test may import them; ``pavlov.theory`` itself may
not). Statistical checks allow five standard errors (``pavlov.claims.tolerance``) estimated from the
samples; rigorous bounds are checked in the direction they hold, with the same allowance.
"""

from __future__ import annotations

import itertools
import math

import pytest
import torch
from conftest import DEVICE, PROPERTY, cases
from hypothesis import given
from hypothesis import strategies as st

import pavlov as pv
from pavlov import stores, theory
from pavlov.claims import tolerance

pytestmark = pytest.mark.usefixtures("one_thread")
KEYS = theory.KEY_ENSEMBLES


def measure(d, n, keys, trials, seed):
    return stores.measure_isr("hebbian", d, n, trials=trials, keys=keys, seed=seed, device=DEVICE, dtype=torch.float64)


def within(measured, se, predicted) -> bool:
    return abs(measured - predicted) <= tolerance(se)


# --- exact values and special cases -------------------------------------------------------------

def test_isr_values():
    assert theory.isr("hebbian", 64, 65) == 1.0
    assert theory.isr("hebbian", 64, 33) == 0.5
    assert theory.isr("hebbian", 66, 65, keys="gaussian") == 1.0          # (n - 1) / (d - 2)
    assert theory.isr("hebbian", 2, 5, keys="gaussian") == math.inf       # E 1/chi^2_2 diverges
    for keys, d in itertools.product(KEYS, (1, 2, 64)):                   # one memory: no crosstalk, any d
        assert theory.isr("hebbian", d, 1, keys=keys) == 0.0
        assert theory.isr_variance("hebbian", d, 1, keys=keys) == 0.0


def test_isr_variance_values():
    d, m = 64, 63
    assert theory.isr_variance("hebbian", d, m + 1) == pytest.approx(2 * m * (d - 1) / (d**2 * (d + 2)) + 2 * m * (m - 1) / d**3)
    gaussian = (m * m + 2 * m + 2 * m * (m - 1) / d) / ((d - 2) * (d - 4)) - (m / (d - 2)) ** 2
    assert theory.isr_variance("hebbian", d, m + 1, keys="gaussian") == pytest.approx(gaussian)
    assert theory.isr_variance("hebbian", 4, 3, keys="gaussian") == math.inf   # E 1/(chi^2_4)^2 diverges
    # n = 2 on the sphere: ISR = c^2 with c one coordinate of a unit vector, Var = E c^4 - (E c^2)^2
    assert theory.isr_variance("hebbian", d, 2) == pytest.approx(3 / (d * (d + 2)) - 1 / d**2)


@pytest.mark.parametrize("m", [1, 2, 3, 6, 9])
def test_isr_moments_in_one_dimension_by_enumeration(m):
    # d = 1: keys and values are +-1, so ISR = (sum_i s_i)^2 with m independent fair signs s_i = c_i v_i
    sums = [sum(signs) for signs in itertools.product((-1, 1), repeat=m)]
    mean = sum(s**2 for s in sums) / len(sums)
    variance = sum(s**4 for s in sums) / len(sums) - mean**2
    assert theory.isr("hebbian", 1, m + 1) == mean
    assert theory.isr_variance("hebbian", 1, m + 1) == pytest.approx(variance, abs=1e-12)


# --- the moments against measurement --------------------------------------------------------------

@pytest.mark.parametrize("keys", KEYS)
@pytest.mark.parametrize("d, n", [(16, 8), (16, 40), (48, 48)])
def test_isr_mean_and_variance_match_measurement(keys, d, n):
    # d >= 16: the variance's estimate needs a finite fourth moment, E (chi^2_d)^-4 < inf for d > 8
    m = measure(d, n, keys, trials=800, seed=d + n)
    assert within(m.mean, m.se, theory.isr("hebbian", d, n, keys=keys))
    squared = (m.values - m.values.mean()).pow(2).mean(-1)          # per store: queries share it
    variance, variance_se = pv.stats.mean_and_se(squared)
    assert within(variance.item(), variance_se.item(), theory.isr_variance("hebbian", d, n, keys=keys))


@pytest.mark.parametrize("keys, other", [("sphere", "gaussian"), ("gaussian", "sphere")])
def test_measurement_tells_the_ensembles_apart(keys, other):
    # the check above has power: at d = 8 the two formulas differ by 2/(d-2) = 33%, many standard errors
    m = measure(8, 16, keys, trials=800, seed=5)
    assert not within(m.mean, m.se, theory.isr("hebbian", 8, 16, keys=other))


# --- capacity -------------------------------------------------------------------------------------

@PROPERTY
@given(d=st.integers(1, 400), snr=st.sampled_from([0.25, 0.5, 1.0, 2.0, 3.0, 4.0, 10.0]))
def test_capacity_is_the_sources_average_case_form(d, snr):
    assert theory.capacity("hebbian", d, threshold=1 / snr) == math.floor(1 + d / snr + 1e-9)
    expected = math.floor(1 + (d - 2) / snr + 1e-9) if d > 2 else 1        # one memory never interferes
    assert theory.capacity("hebbian", d, threshold=1 / snr, keys="gaussian") == expected


@PROPERTY
@given(d=st.integers(1, 60), threshold=st.floats(0.01, 5.0), keys=st.sampled_from(KEYS))
def test_capacity_bisection_equals_a_linear_scan(d, threshold, keys):
    scan = 0
    while theory.isr("hebbian", d, scan + 1, keys=keys) <= threshold:
        scan += 1
    assert theory.capacity("hebbian", d, threshold=threshold, keys=keys) == scan


# --- the worst case -------------------------------------------------------------------------------

@PROPERTY
@given(d=st.integers(8, 300), n=st.integers(1, 400), eps=st.floats(0.1, 3.0), keys=st.sampled_from(KEYS))
def test_the_bounds_bracket_the_gamma_approximation(d, n, eps, keys):
    # the bounds hold for every distribution with the given moments, the gamma one included
    p = {method: theory.all_within_probability("hebbian", d, n, threshold=eps, keys=keys, method=method)
         for method in theory.WORST_CASE_METHODS}
    slack = 1e-12
    assert 0.0 <= p["markov"] <= p["gamma"] + slack and p["cantelli"] <= p["gamma"] + slack
    assert p["gamma"] <= p["paley_zygmund"] + slack <= 1.0 + slack


@pytest.mark.parametrize("d", [16, 100, 1000, 12345])
@pytest.mark.parametrize("eps, delta", [(1.0, 0.1), (0.5, 0.01)])
def test_markov_capacity_is_the_sources_bound(d, eps, delta):
    brute = max(n for n in range(1, 1000) if n * (n - 1) <= eps * delta * d)
    assert theory.worst_case_capacity("hebbian", d, threshold=eps, delta=delta, method="markov") == brute
    assert abs(brute - math.sqrt(eps * delta * d)) <= 1                       # n < sqrt(eps delta d), to one memory


@pytest.mark.parametrize("eps, delta", [(1.0, 0.1), (0.5, 0.05)])
def test_worst_case_bounds_are_linear_with_the_theorems_slopes(eps, delta):
    low, high = 0.0, eps                                  # rho_delta: 2 rho^2 (1 + rho) = delta (eps - rho)^2
    for _ in range(60):
        middle = (low + high) / 2
        low, high = (middle, high) if 2 * middle**2 * (1 + middle) < delta * (eps - middle) ** 2 else (low, middle)
    d = 10**6                                             # corrections are O(1/d)
    cantelli = theory.worst_case_capacity("hebbian", d, threshold=eps, delta=delta, method="cantelli")
    upper = theory.worst_case_capacity("hebbian", d, threshold=eps, delta=delta, method="paley_zygmund")
    assert cantelli / d == pytest.approx(low, rel=1e-3)
    assert upper / d == pytest.approx(eps / (1 - math.sqrt(delta)), rel=1e-3)


def test_an_upper_bound_that_never_fails_has_no_capacity():
    # d = 1: the Paley-Zygmund bound tends to 2 / (d + 2) = 2/3 >= 1 - delta for every n when delta = 1/2
    with pytest.raises(ValueError, match="no largest n"):
        theory.worst_case_capacity("hebbian", 1, delta=0.5, method="paley_zygmund")


def test_gamma_approximation_is_the_moment_matched_gamma():
    d, n, eps = 32, 20, 0.9
    mean, variance = theory.isr("hebbian", d, n), theory.isr_variance("hebbian", d, n)
    shape, scale = mean**2 / variance, variance / mean
    x = torch.linspace(0.0, eps, 200_001, dtype=torch.float64)
    log_density = (shape - 1) * torch.log(x[1:]) - x[1:] / scale - math.lgamma(shape) - shape * math.log(scale)
    cdf = torch.trapezoid(log_density.exp(), x[1:]).item()          # the density vanishes at 0 for shape > 1
    assert shape > 2
    expected = cdf**n
    assert theory.all_within_probability("hebbian", d, n, threshold=eps) == pytest.approx(expected, rel=1e-5)
    assert theory.all_within_probability("hebbian", d, 1, threshold=eps) == 1.0


@pytest.mark.parametrize("keys", KEYS)
def test_measured_worst_case_respects_the_bounds(keys):
    d, eps, trials = 32, 1.0, 1_000
    for i, n in enumerate((3, 6, 10, 14, 18, 24)):
        m = measure(d, n, keys, trials=trials, seed=100 + i)
        p, se = (x.item() for x in pv.stats.mean_and_se((m.values <= eps).all(-1).double()))
        # the binomial s.e. with the proportion kept off 0 and 1, where a sample's s.e. vanishes: five of
        # these, 5 / trials, exceed the rule-of-three bound 3 / trials on a rate never observed
        kept = min(max(p, 1 / trials), 1 - 1 / trials)
        se = max(se, math.sqrt(kept * (1 - kept) / trials))
        bound = {method: theory.all_within_probability("hebbian", d, n, threshold=eps, keys=keys, method=method)
                 for method in ("markov", "cantelli", "paley_zygmund")}
        assert p >= max(bound["markov"], bound["cantelli"]) - tolerance(se)
        assert p <= bound["paley_zygmund"] + tolerance(se)


# --- decoding accuracy ----------------------------------------------------------------------------

def test_decoding_accuracy_special_cases_and_monotone():
    assert theory.hebbian_decoding_accuracy(64, 1) == 1.0
    values = [theory.hebbian_decoding_accuracy(32, n) for n in (2, 8, 32, 128, 512)]
    assert all(a > b for a, b in zip(values, values[1:])) and 0.0 < values[-1] < values[0] < 1.0


def test_decoding_accuracy_integrates_its_gaussian_model():
    # draw the model itself: independent Gaussians with the remark's variances
    d, n, samples = 24, 60, 100_000
    sd_target, sd_other = math.sqrt((n - 1) / d**2), math.sqrt((2 * d + n - 2) / d**2)
    gen = pv.generator(0, "cpu")
    target = 1 + sd_target * torch.randn(samples, generator=gen, dtype=torch.float64)
    others = sd_other * torch.randn(samples, n - 1, generator=gen, dtype=torch.float64)
    wins = (target > others.max(-1).values).double()
    rate, se = pv.stats.mean_and_se(wins)
    assert within(rate.item(), se.item(), theory.hebbian_decoding_accuracy(d, n))


@pytest.mark.parametrize("d, n", [(16, 10), (32, 80)])
def test_decoding_remarks_moments_are_exact(d, n):
    keys, values = stores.random_memories(2_000, n, d, seed=d, device=DEVICE, dtype=torch.float64)
    retrieved, _ = stores.build("hebbian", keys, values).read(keys[:, :1], torch.zeros(2_000, 1, dtype=torch.long, device=DEVICE))
    scores = (retrieved @ values.transpose(-1, -2))[:, 0]                # r(k_0) . v_l: (trials, n)
    for samples, predicted in ((scores[:, 0] - 1, (n - 1) / d**2), (scores[:, 1], 2 / d + (n - 2) / d**2)):
        second, se = pv.stats.mean_and_se(samples.pow(2))
        assert within(second.item(), se.item(), predicted)
        mean, mean_se = pv.stats.mean_and_se(samples)
        assert within(mean.item(), mean_se.item(), 0.0)


@pytest.mark.parametrize("d", [8, 32, 64])
def test_accuracy_capacity_is_where_the_accuracy_falls_below(d):
    n = theory.hebbian_accuracy_capacity(d, accuracy=0.9)
    assert theory.hebbian_decoding_accuracy(d, n) >= 0.9 > theory.hebbian_decoding_accuracy(d, n + 1)


def test_accuracy_capacity_grows_faster_than_d():
    # the remark: about d^2 / (2 ln n) once n >> d
    caps = [theory.hebbian_accuracy_capacity(d) for d in (64, 128, 256)]
    assert caps[1] > 3 * caps[0] and caps[2] > 3 * caps[1]
    assert caps[2] > theory.capacity("hebbian", 256)


# --- bad input ------------------------------------------------------------------------------------

BAD = cases(   # (case, function, positional, keyword arguments, error, parameter)
    ("isr: unknown store", theory.isr, ("outer", 8, 4), {}, ValueError, "store"),
    ("isr: d_key = 0", theory.isr, ("hebbian", 0, 4), {}, ValueError, "d_key"),
    ("isr: n_memories = 0", theory.isr, ("hebbian", 8, 0), {}, ValueError, "n_memories"),
    ("isr: n_memories float", theory.isr, ("hebbian", 8, 4.0), {}, TypeError, "n_memories"),
    ("isr: unknown keys", theory.isr, ("hebbian", 8, 4), {"keys": "cube"}, ValueError, "keys"),
    ("variance: unknown store", theory.isr_variance, ("outer", 8, 4), {}, ValueError, "store"),
    ("variance: d_key negative", theory.isr_variance, ("hebbian", -8, 4), {}, ValueError, "d_key"),
    ("capacity: unknown store", theory.capacity, ("outer", 8), {}, ValueError, "store"),
    ("capacity: d_key = 0", theory.capacity, ("hebbian", 0), {}, ValueError, "d_key"),
    ("capacity: threshold = 0", theory.capacity, ("hebbian", 8), {"threshold": 0.0}, ValueError, "threshold"),
    ("capacity: threshold < 0", theory.capacity, ("hebbian", 8), {"threshold": -1.0}, ValueError, "threshold"),
    ("capacity: threshold inf", theory.capacity, ("hebbian", 8), {"threshold": math.inf}, ValueError, "threshold"),
    ("capacity: threshold str", theory.capacity, ("hebbian", 8), {"threshold": "1"}, TypeError, "threshold"),
    ("capacity: unknown keys", theory.capacity, ("hebbian", 8), {"keys": "cube"}, ValueError, "keys"),
    ("all within: unknown method", theory.all_within_probability, ("hebbian", 8, 4), {"method": "chernoff"}, ValueError, "method"),
    ("all within: threshold = 0", theory.all_within_probability, ("hebbian", 8, 4), {"threshold": 0.0}, ValueError, "threshold"),
    ("all within: n_memories = 0", theory.all_within_probability, ("hebbian", 8, 0), {}, ValueError, "n_memories"),
    ("all within: gamma, infinite variance", theory.all_within_probability, ("hebbian", 4, 3), {"keys": "gaussian"}, ValueError, "variance"),
    ("worst case: delta = 0", theory.worst_case_capacity, ("hebbian", 8), {"delta": 0.0}, ValueError, "delta"),
    ("worst case: delta = 1", theory.worst_case_capacity, ("hebbian", 8), {"delta": 1.0}, ValueError, "delta"),
    ("worst case: threshold < 0", theory.worst_case_capacity, ("hebbian", 8), {"threshold": -1.0}, ValueError, "threshold"),
    ("worst case: unknown store", theory.worst_case_capacity, ("outer", 8), {}, ValueError, "store"),
    ("accuracy: d_key = 0", theory.hebbian_decoding_accuracy, (0, 4), {}, ValueError, "d_key"),
    ("accuracy: n_memories bool", theory.hebbian_decoding_accuracy, (8, True), {}, TypeError, "n_memories"),
    ("accuracy capacity: accuracy = 1", theory.hebbian_accuracy_capacity, (8,), {"accuracy": 1.0}, ValueError, "accuracy"),
    ("accuracy capacity: accuracy = 0", theory.hebbian_accuracy_capacity, (8,), {"accuracy": 0.0}, ValueError, "accuracy"),
)


@pytest.mark.parametrize("function, args, kwargs, error, param", BAD)
def test_bad_input(function, args, kwargs, error, param):
    with pytest.raises(error, match=rf"\b{param}\b"):
        function(*args, **kwargs)
