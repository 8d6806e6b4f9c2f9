"""pavlov.theory, chapter 10: noisy cues (the gain of a kernel store, the nearest-key accuracy and the basin radius)
and the classical Hopfield network (the AGS retrieval overlap, the fraction of stored patterns that are fixed points).

Each closed form is checked against a direct Monte Carlo draw of the same quantity, with a tolerance of a few
standard errors, and at its limits; the chapter measures them through the package's stores and networks.
"""

from __future__ import annotations

import math

import pytest
import torch

from pavlov import hopfield, stores, theory

F64 = {"device": "cpu", "dtype": torch.float64}


def cue_cosines(d: int, sigma: float, samples: int, seed: int = 0) -> torch.Tensor:
    """Cosines of noisy cues (stores.noisy_cues) of unit keys with their keys, drawn directly."""
    gen = torch.Generator().manual_seed(seed)
    keys = torch.nn.functional.normalize(torch.randn(samples, d, generator=gen, **F64), dim=-1)
    return (stores.noisy_cues(keys, sigma, generator=gen) * keys).sum(-1)


@pytest.mark.parametrize("store, params", [("hebbian", {}), ("relu2", {}), ("polynomial", {"degree": 3}),
                                           ("softmax", {"beta": 4.0}), ("softmax", {"beta": 8.0})])
@pytest.mark.parametrize("d, sigma", [(16, 0.5), (32, 1.0)])
def test_noisy_cue_gain_is_the_mean_of_the_weight_ratio(store, params, d, sigma):
    c = cue_cosines(d, sigma, 200_000)
    if store == "softmax":
        ratio = torch.exp(2 * params["beta"] * (1 - c))
    else:
        ratio = c ** (-2 * {"hebbian": 1, "relu2": 2}.get(store, params.get("degree")))
    mean, se = ratio.mean().item(), ratio.std().item() / math.sqrt(len(ratio))
    assert abs(theory.noisy_cue_gain(d, sigma, store=store, **params) - mean) < 5 * se + 1e-12


def test_noisy_cue_gain_limits():
    assert theory.noisy_cue_gain(64, 0.0, store="softmax") == 1.0
    # large d: the Hebbian gain is 1 + sigma^2, the polynomial's (1 + sigma^2)^p
    assert theory.noisy_cue_gain(10**8, 0.7) == pytest.approx(1.49, rel=1e-6)
    assert theory.noisy_cue_gain(10**8, 0.7, store="polynomial", degree=3) == pytest.approx(1.49**3, rel=1e-6)
    assert theory.noisy_cue_gain(10**8, 0.7, store="relu") == theory.noisy_cue_gain(10**8, 0.7)
    # the gain grows with the noise, and the softmax's with beta
    assert theory.noisy_cue_gain(32, 0.5) < theory.noisy_cue_gain(32, 1.0)
    assert theory.noisy_cue_gain(32, 1.0, store="softmax", beta=2.0) < theory.noisy_cue_gain(32, 1.0, store="softmax",
                                                                                                   beta=4.0)


@pytest.mark.parametrize("store, params", [("hebbian", {}), ("softmax", {"beta": 6.0}), ("polynomial", {"degree": 3})])
def test_noisy_cue_isr_is_the_measured_mean(store, params):
    m = stores.measure_isr(store, 16, 12, trials=3000, seed=4, query_noise=0.8, **F64, **params)
    assert abs(m.mean - theory.noisy_cue_isr(store, 16, 12, 0.8, **params)) < 4 * m.se


def test_noisy_cue_isr_least_squares_approximation_at_low_noise():
    m = stores.measure_isr("least_squares", 64, 16, trials=1000, seed=5, query_noise=0.3, **F64)
    # an approximation: within a few per cent where it is meant to hold
    assert m.mean == pytest.approx(theory.noisy_cue_isr("least_squares", 64, 16, 0.3), rel=0.05)
    assert theory.noisy_cue_isr("least_squares", 64, 16, 0.0) == 0.0


@pytest.mark.parametrize("d, n, sigma", [(8, 256, 0.5), (16, 64, 1.0), (32, 1000, 1.2)])
def test_nearest_key_accuracy_by_monte_carlo(d, n, sigma):
    gen = torch.Generator().manual_seed(1)
    trials = 4_000_000 // n          # 4e6 keys
    keys = torch.nn.functional.normalize(torch.randn(trials, n, d, generator=gen, **F64), dim=-1)
    cue = stores.noisy_cues(keys[:, 0], sigma, generator=gen)
    landed = ((keys @ cue[:, :, None])[..., 0].argmax(-1) == 0).double()
    p = landed.mean().item()
    assert abs(theory.nearest_key_accuracy(d, n, sigma) - p) < 4 * math.sqrt(p * (1 - p) / trials) + 1e-3


def test_nearest_key_accuracy_limits_and_order():
    assert theory.nearest_key_accuracy(16, 1, 3.0) == 1.0
    assert theory.nearest_key_accuracy(16, 100, 0.0) == 1.0
    assert theory.nearest_key_accuracy(16, 4, 1e6) == pytest.approx(0.25, abs=2e-3)     # a random direction
    values = [theory.nearest_key_accuracy(32, 256, s) for s in (0.5, 1.0, 1.5)]
    assert values[0] > values[1] > values[2]
    assert theory.nearest_key_accuracy(32, 64, 1.0) > theory.nearest_key_accuracy(32, 4096, 1.0)


def test_basin_radius_inverts_the_accuracy():
    for d, n, delta in ((16, 64, 0.05), (32, 4096, 0.1)):
        radius = theory.basin_radius(d, n, delta=delta)
        assert theory.nearest_key_accuracy(d, n, radius * 0.999) >= 1 - delta
        assert theory.nearest_key_accuracy(d, n, radius * 1.001) < 1 - delta
    assert theory.basin_radius(16, 1) == math.inf
    assert theory.basin_radius(32, 64) > theory.basin_radius(32, 1024) > theory.basin_radius(16, 1024)


def test_hopfield_retrieval_overlap_solves_the_saddle_point_equations():
    assert theory.HOPFIELD_CRITICAL_LOAD == pytest.approx(0.1379, abs=1e-4)
    for load in (0.1, 0.13, 0.137):       # m below 1 - 1e-4, where erfinv is accurate
        m = theory.hopfield_retrieval_overlap(load)
        y = torch.special.erfinv(torch.tensor(m, dtype=torch.float64)).item()
        c = 2 * y * math.exp(-y * y) / (math.sqrt(math.pi) * m)       # C in terms of y (m = erf y)
        r = 1 / (1 - c) ** 2
        assert y == pytest.approx(m / math.sqrt(2 * load * r), rel=1e-6)
    assert math.isnan(theory.hopfield_retrieval_overlap(0.14))
    assert theory.hopfield_retrieval_overlap(0.0) == 1.0
    assert theory.hopfield_retrieval_overlap(0.05) > theory.hopfield_retrieval_overlap(0.13) > 0.967


def test_hopfield_stable_fraction_by_hand_and_against_the_network():
    # one pattern: always a fixed point; two patterns of N = 3: M = 2 signs, a flip needs S < -2: never
    assert theory.hopfield_stable_fraction(50, 1) == 1.0
    assert theory.hopfield_stable_fraction(3, 2) == 1.0
    assert theory.hopfield_stable_fraction(5, 2) == 1.0            # S >= -(N - 1): two patterns never flip a bit
    # N = 5, P = 3: M = 8 signs, a flip when S = 2B - 8 < -4, B <= 1: p = 9/256 per bit
    assert theory.hopfield_stable_fraction(5, 3) == pytest.approx((1 - 9 / 256) ** 5, rel=1e-12)
    gen = torch.Generator().manual_seed(2)
    patterns = torch.randint(0, 2, (600, 20, 200), generator=gen).double() * 2 - 1
    measured = hopfield.stable_fraction(patterns)
    # bits of one pattern fail together a little more often than independently: the product is a lower bound
    assert measured.mean().item() > theory.hopfield_stable_fraction(200, 20) - 3 * measured.std().item() / 600**0.5
    assert measured.mean().item() == pytest.approx(theory.hopfield_stable_fraction(200, 20), abs=0.05)


@pytest.mark.parametrize("n, p", [(100, 14), (200, 30), (400, 55)])
def test_hopfield_bit_flip_is_the_measured_rate_of_unstable_bits(n, p):
    gen = torch.Generator().manual_seed(n)
    unstable = (hopfield.aligned_fields(hopfield.random_patterns(400, p, n, generator=gen, **F64)) < 0).double()
    rate = unstable.mean(dim=(-1, -2))                              # one rate per independent network
    assert abs(rate.mean().item() - theory.hopfield_bit_flip(n, p)) < 5 * rate.std().item() / 20
    # aligned fields are (N - 1) + S, S of the parity of M = (P - 1)(N - 1)
    fields = hopfield.aligned_fields(hopfield.random_patterns(3, p, n, generator=gen, **F64))
    assert bool(((fields - (n - 1) - (p - 1) * (n - 1)) % 2 == 0).all())


def test_bayes_temperature_is_the_posterior_over_the_memory_meant():
    """The softmax at d / sigma^2 of an unrescaled cue's overlaps is Bayes' rule with Gaussian likelihoods."""
    gen = torch.Generator().manual_seed(5)
    d, n, sigma = 16, 10, 0.8
    keys = torch.nn.functional.normalize(torch.randn(n, d, generator=gen, **F64), dim=-1)
    cue = stores.noisy_cues(keys[3], sigma, generator=gen, renormalise=False)
    log_likelihood = -d * (cue - keys).pow(2).sum(-1) / (2 * sigma**2)
    posterior = torch.softmax(log_likelihood, 0)
    beta = theory.bayes_temperature(d, sigma)
    assert beta == d / sigma**2
    assert torch.allclose(torch.softmax(beta * keys @ cue, 0), posterior, atol=1e-12)
    assert theory.bayes_temperature(d, sigma, renormalised=True) == pytest.approx(beta * math.sqrt(1 + sigma**2))


def test_softmax_at_the_bayes_temperature_reads_with_the_least_squared_error():
    """Same stores and cues at a grid of temperatures: the error is least at d / sigma^2 (within the grid's step)."""
    d, n, sigma = 16, 64, 1.0
    betas = theory.bayes_temperature(d, sigma) * 2.0 ** torch.arange(-2, 2.5, 0.5)
    errors = [stores.measure_isr("softmax", d, n, trials=64, n_queries=16, query_noise=sigma, renormalise_cues=False,
                                 beta=float(b), seed=3, **F64).mse[0] for b in betas]
    assert int(torch.tensor(errors).argmin()) == 4


@pytest.mark.parametrize("d, n, sigma", [(32, 8, 0.5), (32, 24, 1.0)])
def test_linear_read_mse_against_a_direct_draw(d, n, sigma):
    hebbian = stores.measure_isr("hebbian", d, n, trials=400, query_noise=sigma, renormalise_cues=False, seed=1, **F64)
    mean, se = hebbian.mse
    assert abs(mean - theory.linear_read_mse("hebbian", d, n, sigma)) < 5 * se
    least = stores.measure_isr("least_squares", d, n, trials=400, query_noise=sigma, renormalise_cues=False, seed=1,
                               **F64)
    assert least.mse[0] == pytest.approx(theory.linear_read_mse("least_squares", d, n, sigma), rel=0.25)


def test_matched_ridge_minimises_the_expected_error_of_a_linear_read():
    """For fixed keys the expected error over the cue noise is the ridge objective: lambda = n sigma^2 / d wins."""
    gen = torch.Generator().manual_seed(2)
    d, n, sigma = 16, 12, 0.7
    keys = torch.nn.functional.normalize(torch.randn(n, d, generator=gen, **F64), dim=-1)
    values = torch.nn.functional.normalize(torch.randn(n, d, generator=gen, **F64), dim=-1)

    def expected_error(lam):
        w = stores.RidgeStore(keys, values, lam=lam).matrix
        return ((keys @ w - values).pow(2).sum() / n + sigma**2 / d * w.pow(2).sum()).item()

    best = theory.matched_ridge(d, n, sigma)
    assert best == n * sigma**2 / d
    assert all(expected_error(best) < expected_error(best * f) for f in (0.5, 0.9, 1.1, 2.0))
