"""pavlov.theory, chapter 4: the sphere moments and moment generating function against independent
high-precision references (mpmath), the stores' closed forms against hand values, limits and seeded
measurements of the stores, and the softmax temperature scalings.

Measurements use the package's stores (this test may import them; ``pavlov.theory`` itself may not) and
are checked to 5 standard errors over trials (``pavlov.claims.tolerance``), with fixed seeds.
"""

from __future__ import annotations

import math

import mpmath
import pytest
import torch

from pavlov import claims, stores, theory

pytestmark = pytest.mark.usefixtures("one_thread")
STORES = {"hebbian": {}, "least_squares": {}, "relu": {}, "relu2": {}, "polynomial": {"degree": 3},
          "softmax": {"beta": 2.0}}


# --- the sphere's overlap: moments and moment generating function ------------------------------

@pytest.mark.parametrize("d", [1, 2, 3, 8, 64, 1000])
@pytest.mark.parametrize("p", [1, 2, 3, 7])
def test_sphere_overlap_moment_is_the_beta_moment(d, p):
    # c^2 ~ Beta(1/2, (d-1)/2): E c^2p = Gamma(p + 1/2) Gamma(d/2) / (Gamma(1/2) Gamma(p + d/2))
    exact = mpmath.gamma(p + 0.5) * mpmath.gamma(d / 2) / (mpmath.gamma(0.5) * mpmath.gamma(p + d / 2))
    assert theory.sphere_overlap_moment(d, p) == pytest.approx(float(exact), rel=1e-13)


def test_sphere_overlap_moment_by_hand():
    assert theory.sphere_overlap_moment(64, 1) == 1 / 64                        # chapter 1's 1/d
    assert theory.sphere_overlap_moment(64, 2) == pytest.approx(3 / (64 * 66), rel=1e-15)
    assert theory.sphere_overlap_moment(1, 5) == 1.0                            # S^0 = {-1, 1}


@pytest.mark.parametrize("d", [1, 2, 3, 8, 16, 64, 257])
@pytest.mark.parametrize("t", [1e-3, 0.5, 4.0, 16.0, 100.0, 2000.0])
def test_log_mgf_is_the_bessel_form(d, t):
    # M_d(t) = Gamma(d/2) (t/2)^(1 - d/2) I_(d/2 - 1)(t), in 30 digits
    mpmath.mp.dps = 30
    half = mpmath.mpf(t) / 2
    exact = mpmath.loggamma(d / 2) + (1 - d / 2) * mpmath.log(half) + mpmath.log(mpmath.besseli(d / 2 - 1, 2 * half))
    assert theory.log_sphere_overlap_mgf(d, t) == pytest.approx(float(exact), rel=1e-12, abs=1e-14)


def test_log_mgf_limits():
    assert theory.log_sphere_overlap_mgf(64, 0.0) == 0.0
    assert theory.log_sphere_overlap_mgf(10, -3.0) == theory.log_sphere_overlap_mgf(10, 3.0)   # c is symmetric
    assert theory.log_sphere_overlap_mgf(1, 3.0) == pytest.approx(math.log(math.cosh(3.0)), rel=1e-14)
    # small t: log M = t^2 / (2d) + O(t^4), the Gaussian approximation's leading term
    assert theory.log_sphere_overlap_mgf(64, 1e-3) == pytest.approx(1e-6 / 128, rel=1e-6)
    # large d at fixed t^2 / d: the fourth cumulant -6 / (d^2 (d + 2)) gives the first correction
    d, t = 10_000, 200.0
    assert theory.log_sphere_overlap_mgf(d, t) == pytest.approx(t**2 / (2 * d) - t**4 / (4 * d**2 * (d + 2)), rel=1e-6)


# --- the closed forms by hand --------------------------------------------------------------------

@pytest.mark.parametrize("d, n", [(8, 17), (64, 129), (64, 1000)])
def test_kernel_store_formulas_by_hand(d, n):
    assert theory.isr("relu", d, n) == pytest.approx((n - 1) / (2 * d), rel=1e-14)
    assert theory.isr("relu2", d, n) == pytest.approx(3 * (n - 1) / (2 * d * (d + 2)), rel=1e-14)
    assert theory.isr("polynomial", d, n, degree=2) == pytest.approx(3 * (n - 1) / (d * (d + 2)), rel=1e-14)
    assert theory.isr("relu", d, n, keys="gaussian") == pytest.approx((n - 1) / (2 * (d - 2)), rel=1e-14)
    assert theory.isr("relu2", d, n, keys="gaussian") == pytest.approx(3 * (n - 1) / (2 * (d - 2) * (d - 4)), rel=1e-14)
    for keys in ("sphere", "gaussian"):   # degree 1 is the Hebbian store
        assert theory.isr("polynomial", d, n, keys=keys, degree=1) == pytest.approx(theory.isr("hebbian", d, n, keys=keys))


def test_gaussian_keys_need_enough_dimensions():
    assert theory.isr("relu2", 4, 10, keys="gaussian") == math.inf             # E R^-2 needs d > 4
    assert theory.isr("polynomial", 6, 10, keys="gaussian", degree=3) == math.inf
    assert theory.isr("polynomial", 7, 10, keys="gaussian", degree=3) < math.inf
    assert theory.isr("relu2", 4, 1, keys="gaussian") == 0.0                   # but one memory has no interference


def test_least_squares_formula():
    assert theory.isr("least_squares", 64, 64) == 0.0 == theory.isr("least_squares", 64, 10, keys="gaussian")
    assert theory.isr("least_squares", 64, 128, keys="gaussian") == 64 / 62
    assert theory.isr("least_squares", 64, 128) == 1.0                          # the approximation (n - d) / d
    assert theory.capacity("least_squares", 64, keys="gaussian") == 126         # 2d - 2
    assert theory.capacity("least_squares", 64) == 128


def test_capacities_by_hand():
    assert theory.capacity("relu", 64) == 129                                   # 1 + 2d
    assert theory.capacity("relu2", 64) == 1 + math.floor(2 * 64 * 66 / 3)      # 1 + 2d(d+2)/3
    assert theory.capacity("polynomial", 16, degree=3) == 1 + math.floor(16 * 18 * 20 / 15)
    assert theory.capacity("softmax", 64, beta=8.0) > 2**20                      # over a million
    assert theory.capacity("softmax", 64) == theory.capacity("softmax", 64, beta=8.0)   # beta = sqrt(d)


def test_softmax_formula_for_gaussian_keys_and_the_approximation():
    d, n, beta = 16, 100, 3.0
    assert theory.isr("softmax", d, n, keys="gaussian", beta=beta) == pytest.approx(
        (n - 1) * (1 + 4 * beta * (d - beta) / d**2) ** (-d / 2), rel=1e-14)
    assert theory.gaussian_overlap_isr("softmax", d, n, beta=beta) == pytest.approx(
        (n - 1) * math.exp(-2 * beta + 2 * beta**2 / d), rel=1e-14)
    # the optimum of both at beta = d / 2: capacities 1 + 2^(d/2) (Gaussian keys) and 1 + e^(d/2)
    assert theory.capacity("softmax", d, keys="gaussian", beta=d / 2) == 1 + 2 ** (d // 2)
    assert theory.isr("softmax", d, n, keys="gaussian", beta=1.3 * d) == math.inf   # beyond d (1 + sqrt 2) / 2
    assert theory.gaussian_overlap_isr("softmax", 64, 2, beta=32.0) == math.exp(-32.0)


def test_gaussian_overlap_approximation_of_each_store():
    d, n = 32, 100
    assert theory.gaussian_overlap_isr("hebbian", d, n) == pytest.approx(theory.isr("hebbian", d, n))   # exact there
    assert theory.gaussian_overlap_isr("relu", d, n) == pytest.approx((n - 1) / (2 * d))
    assert theory.gaussian_overlap_isr("relu2", d, n) == pytest.approx(3 * (n - 1) / (2 * d**2))
    assert theory.gaussian_overlap_isr("polynomial", d, n, degree=3) == pytest.approx(15 * (n - 1) / d**3)
    assert theory.gaussian_overlap_isr("least_squares", d, n) == theory.isr("least_squares", d, n)
    # the approximation's error for degree p: the factor prod_k (1 + 2k / d)
    ratio = theory.gaussian_overlap_isr("polynomial", d, n, degree=3) / theory.isr("polynomial", d, n, degree=3)
    assert ratio == pytest.approx((1 + 2 / d) * (1 + 4 / d), rel=1e-14)


@pytest.mark.parametrize("d", [2, 8, 64])
def test_sphere_softmax_isr_falls_with_beta_without_end(d):
    # e^(-t) M_d(t) = E e^(t (c - 1)) falls monotonically: no finite optimum in beta on the sphere,
    # and for large beta it falls as beta^(-(d - 1)/2), the density of c near 1
    betas = [0.1 * 1.5**k for k in range(30)]
    values = [theory.isr("softmax", d, 1000, beta=b) for b in betas]
    assert all(b < a for a, b in zip(values, values[1:]))
    tail = math.log(values[-1] / values[-2]) / math.log(betas[-1] / betas[-2])
    assert tail == pytest.approx(-(d - 1) / 2, rel=0.05)


@pytest.mark.parametrize("store, params", [("hebbian", {}), ("relu", {}), ("relu2", {}),
                                           ("polynomial", {"degree": 3}), ("softmax", {"beta": 8.0})])
def test_the_crossing_is_where_the_linear_mean_isr_reaches_one(store, params):
    n = theory.isr_crossing(store, 64, **params)
    # the mean ISR is linear in n, so it is 1 at the crossing, and the capacity is its integer part
    assert theory.isr(store, 64, round(n), **params) == pytest.approx(1.0, abs=1 / n)
    assert theory.capacity(store, 64, **params) == math.floor(n)


def test_capacity_handles_astronomical_capacities():
    assert theory.capacity("softmax", 16, beta=100.0) > 10**11      # bisection over Python integers
    assert theory.isr("softmax", 16, 10**320, beta=1.0) == math.inf  # beyond float64: infinite, not an error


@pytest.mark.parametrize("d, beta", [(64, 45.0), (64, 64.0), (128, 32.0), (128, 64.0)])
def test_capacity_beyond_the_count_limit_is_infinite(d, beta):
    # chapter 5's explorer at large beta: the crossing lies beyond 2^62 memories, so capacity says inf
    assert theory.isr_crossing("softmax", d, beta=beta) > theory.COUNT_LIMIT
    assert theory.capacity("softmax", d, beta=beta) == math.inf
    assert f"{theory.capacity('softmax', d, beta=beta):,}" == "inf"     # the explorer's title


@pytest.mark.parametrize("d, beta", [(32, 85.0), (64, 36.0), (128, 26.5)])
def test_capacity_just_below_the_count_limit_is_still_counted(d, beta):
    n = theory.capacity("softmax", d, beta=beta)
    assert isinstance(n, int) and 2**61 < n < theory.COUNT_LIMIT
    assert n == pytest.approx(theory.isr_crossing("softmax", d, beta=beta), rel=1e-9)


def test_capacity_count_limit_for_any_store():
    # (n - 1) / 2^20 <= threshold: n <= 2^61 + 1 is counted, n <= 2^62 + 1 is beyond the limit
    assert theory.capacity("hebbian", 2**20, threshold=2.0**41) < theory.COUNT_LIMIT
    assert theory.capacity("hebbian", 2**20, threshold=2.0**42) == math.inf
    assert theory.capacity("hebbian", 64) == 65                       # small capacities stay exact integers


# --- the formulas against seeded measurements of the stores --------------------------------------

@pytest.mark.parametrize("keys", ["sphere", "gaussian"])
@pytest.mark.parametrize("store", sorted(STORES))
def test_formulas_match_the_stores(store, keys):
    d, n = 16, 40
    m = stores.measure_isr(store, d, n, trials=800, keys=keys, seed=1, device="cpu", dtype=torch.float64,
                           **STORES[store])
    if store == "least_squares" and keys == "sphere":
        # not exact on the sphere: the measurement lies between the approximation and the Gaussian keys' value
        assert theory.isr(store, d, n) < m.mean < theory.isr(store, d, n, keys="gaussian")
    else:
        assert abs(m.mean - theory.isr(store, d, n, keys=keys, **STORES[store])) <= claims.tolerance(m.se)


@pytest.mark.parametrize("n", [20, 200, 2000])
def test_target_wins_probability_matches_the_softmax_store(n):
    d, trials = 16, 64
    keys, values = stores.random_memories(trials, n, d, keys="gaussian", seed=n, device="cpu", dtype=torch.float64)
    queries = min(n, 50)
    wins = stores.build("softmax", keys, values).strongest(keys[:, :queries]) == torch.arange(queries)
    per_trial = wins.double().mean(-1)
    se = per_trial.std().item() / math.sqrt(trials)
    assert abs(per_trial.mean().item() - theory.target_wins_probability(d, n, keys="gaussian")) <= claims.tolerance(se)


def test_target_wins_probability_limits():
    assert theory.target_wins_probability(8, 10**9) == 1.0                      # the sphere: always
    assert theory.target_wins_probability(8, 1, keys="gaussian") == 1.0
    p = [theory.target_wins_probability(8, n, keys="gaussian") for n in (2, 10, 100, 1000)]
    assert all(b < a for a, b in zip(p, p[1:])) and 0 < p[-1] < p[0] < 1
    # two memories: P(z < chi_d) for z standard normal, by quadrature in mpmath
    d = 8
    chi = lambda x: x ** (d - 1) * mpmath.exp(-x**2 / 2) / (2 ** (d / 2 - 1) * mpmath.gamma(d / 2))
    exact = mpmath.quad(lambda x: chi(x) * mpmath.ncdf(x), [0, mpmath.inf])
    assert p[0] == pytest.approx(float(exact), rel=1e-9)


# --- the temperature that holds the ISR, and the models' scalings --------------------------------

@pytest.mark.parametrize("keys", ["sphere", "gaussian", "gaussian_overlap"])
@pytest.mark.parametrize("d, n, target", [(64, 2**20, 1.0), (64, 2**12, 1e-3), (16, 500, 0.5)])
def test_softmax_beta_for_isr_reaches_the_target(keys, d, n, target):
    beta = theory.softmax_beta_for_isr(d, n, target, keys=keys)
    if beta == math.inf:
        assert keys != "sphere"
        return
    reached = (theory.gaussian_overlap_isr("softmax", d, n, beta=beta) if keys == "gaussian_overlap"
               else theory.isr("softmax", d, n, keys=keys, beta=beta))
    assert reached == pytest.approx(target, rel=1e-9)
    assert beta <= d / 2 or keys == "sphere"     # the smaller root, where the ISR still falls


def test_softmax_beta_for_isr_limits():
    assert theory.softmax_beta_for_isr(64, 2, 1.0) == 0.0                        # n - 1 <= target: nothing to do
    assert theory.softmax_beta_for_isr(8, 10**6, 1e-3, keys="gaussian_overlap") == math.inf   # beyond e^(d/2)
    assert theory.softmax_beta_for_isr(8, 10**6, 1e-3) < math.inf                # the sphere reaches any target
    # log M growth: L << d gives beta ~ L / 2 + L^2 / (4 d)
    L = math.log(10**4 - 1)
    assert theory.softmax_beta_for_isr(10**6, 10**4, keys="gaussian_overlap") == pytest.approx(L / 2 + L**2 / 4e6, rel=1e-6)


def test_logn_and_yarn_scalings():
    assert theory.logn_scaled_beta(8.0, 512, 1024) == 8.0 == theory.yarn_scaled_beta(8.0, 512, 1024)
    assert theory.logn_scaled_beta(8.0, 2**20, 2**10) == pytest.approx(16.0)
    assert theory.yarn_scaled_beta(8.0, 2**10 * 100, 2**10) == pytest.approx(8.0 * (1 + 0.1 * math.log(100)) ** 2)


# --- bad arguments -------------------------------------------------------------------------------

@pytest.mark.parametrize("call, error, param", [
    (lambda: theory.isr("softmax", 16, 10, beta=0.0), ValueError, "beta"),
    (lambda: theory.isr("softmax", 16, 10, beta=-2.0), ValueError, "beta"),
    (lambda: theory.isr("softmax", 16, 10, beta=math.inf), ValueError, "beta"),
    (lambda: theory.isr("polynomial", 16, 10, degree=0), ValueError, "degree"),
    (lambda: theory.isr("polynomial", 16, 10, degree=2.5), TypeError, "degree"),
    (lambda: theory.isr("polynomial", 16, 10), TypeError, "degree"),
    (lambda: theory.isr("mlp", 16, 10), ValueError, "store"),
    (lambda: theory.isr("relu", 16, 10, beta=1.0), TypeError, "beta"),
    (lambda: theory.isr("relu", 16, 10, keys="gaussian_overlap"), ValueError, "keys"),
    (lambda: theory.capacity("softmax", 16, beta=0.0), ValueError, "beta"),
    (lambda: theory.capacity("polynomial", 16, degree=0), ValueError, "degree"),
    (lambda: theory.gaussian_overlap_isr("mlp", 16, 10), ValueError, "store"),
    (lambda: theory.gaussian_overlap_isr("softmax", 16, 10, beta=0.0), ValueError, "beta"),
    (lambda: theory.sphere_overlap_moment(16, 0), ValueError, "p"),
    (lambda: theory.log_sphere_overlap_mgf(16, math.nan), ValueError, "t"),
    (lambda: theory.target_wins_probability(16, 10, keys="cube"), ValueError, "keys"),
    (lambda: theory.softmax_beta_for_isr(16, 10, 0.0), ValueError, "target_isr"),
    (lambda: theory.softmax_beta_for_isr(16, 10, keys="cube"), ValueError, "keys"),
    (lambda: theory.logn_scaled_beta(8.0, 100, 1), ValueError, "n_train"),
    (lambda: theory.logn_scaled_beta(0.0, 100, 10), ValueError, "beta"),
    (lambda: theory.yarn_scaled_beta(8.0, 0, 10), ValueError, "n"),
])
def test_bad_arguments(call, error, param):
    with pytest.raises(error, match=param):
        call()


@pytest.mark.parametrize("d", [4, 8, 16, 64])
def test_the_gaussian_key_softmax_isr_is_infinite_beyond_its_first_moment_limit(d):
    limit = theory.softmax_moment_limit(d, 1)
    assert math.isfinite(theory.isr("softmax", d, 8, keys="gaussian", beta=limit * 0.999))
    assert theory.isr("softmax", d, 8, keys="gaussian", beta=limit * 1.001) == math.inf
    # the p-th moment's limit is the first one's over p
    assert theory.softmax_moment_limit(d, 2) == pytest.approx(limit / 2)
