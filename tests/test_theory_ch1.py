"""pavlov.theory, chapter 1: exact special cases, and every prediction against a Monte Carlo measurement.

The measurements use the package's circuit (this test may import it; ``pavlov.theory`` itself may not).
Statistical checks allow five standard errors (``pavlov.claims.tolerance``) estimated from the samples.
"""

from __future__ import annotations

import math

import pytest
import torch
from conftest import DEVICE

import pavlov as pv
from pavlov import theory
from pavlov.claims import tolerance
from pavlov.conditioning import acquisition, generalisation_tests, respond, response_strength, store_from_pairings


def close_in_mean(samples: torch.Tensor, predicted: float) -> bool:
    """``|mean - predicted| <= 5 s.e.`` over the first dimension."""
    se = samples.std().item() / math.sqrt(samples.shape[0])
    return abs(samples.mean().item() - predicted) <= tolerance(se)


# --- exact special cases ----------------------------------------------------------------------

def test_sphere_overlap_moments_values():
    assert theory.sphere_overlap_moments(1) == (0.0, 1.0)      # d = 1: the overlap is +-1
    assert theory.sphere_overlap_moments(64) == (0.0, 1 / 64)


def test_acquisition_moments_special_cases():
    assert theory.acquisition_moments(0, alpha=0.5, d=8, sigma=1.0, test_sigma=1.0) == (0.0, 0.0)
    assert theory.acquisition_moments(7, alpha=0.5, d=8, sigma=0.0) == (3.5, 0.0)   # noiseless: alpha n |b|^2
    assert theory.acquisition_moments(2, alpha=1.0, d=4, sigma=0.0, cs_sq_norm=9.0)[0] == 18.0
    # without test noise the spread grows as sqrt(n); with it, as n for large n
    sd = [theory.acquisition_moments(n, alpha=1.0, d=16, sigma=1.0)[1] for n in (1, 4)]
    assert math.isclose(sd[1] / sd[0], 2.0)
    sd = [theory.acquisition_moments(n, alpha=1.0, d=16, sigma=1.0, test_sigma=1.0)[1] for n in (1000, 2000)]
    assert math.isclose(sd[1] / sd[0], 2.0, rel_tol=1e-3)
    # the sd scales with |alpha|, the mean with alpha
    a, b = (theory.acquisition_moments(3, alpha=x, d=16, sigma=0.5, test_sigma=0.2) for x in (1.0, -2.0))
    assert math.isclose(b[0], -2 * a[0]) and math.isclose(b[1], 2 * a[1])


def test_normalised_strength_values():
    assert theory.normalised_strength(64) == 8.0
    assert theory.normalised_strength(16, us_norm=2.0) == 2.0


def test_generalisation_moments_special_cases():
    assert theory.generalisation_moments(0.3, alpha=2.0, d=10) == (0.6, 0.0)          # nothing else stored
    assert theory.generalisation_moments(-1.0, alpha=1.0, d=10, trained=3)[0] == -3.0
    # counts enter squared: m pairings of one CS add m times the same overlap
    sd = theory.generalisation_moments(0.0, alpha=1.0, d=10, same_us=[2], other_us=[3])[1]
    assert math.isclose(sd**2, 4 / 10 + 9 / 100)


# --- predictions against measurements ---------------------------------------------------------

def test_sphere_overlap_moments_measured():
    d, n = 12, 40_000
    x = pv.random_stimuli(n, 2, d, generator=pv.generator(0, DEVICE), device=DEVICE, dtype=torch.float64)
    overlap = (x[:, 0] * x[:, 1]).sum(-1)
    mean, var = theory.sphere_overlap_moments(d)
    assert close_in_mean(overlap, mean)
    assert close_in_mean(overlap.pow(2), var)


@pytest.mark.parametrize("sigma, test_sigma", [(0.8, 0.8), (1.0, 0.0), (0.5, 1.5)])
def test_acquisition_moments_measured(sigma, test_sigma):
    # Non-unit CS and US: the strength divides by |us|^2, the mean carries |b|^2.
    d, trials, T = 10, 40_000, 6
    gen = pv.generator(1, DEVICE)
    make = lambda *shape, kind="sphere": pv.random_stimuli(*shape, d, kind=kind, generator=gen, device=DEVICE,
                                                          dtype=torch.float64)
    bell, food = 1.5 * make(trials, 1), 3.0 * make(trials, 1)                    # (trials, 1, d)
    pairings = bell + sigma * make(trials, T, kind="gaussian")
    test = bell + test_sigma * make(trials, 1, kind="gaussian")
    curve = response_strength(acquisition(test, pairings, food.expand(trials, T, d), alpha=0.7)[..., 0, :], food)
    for n in range(1, T + 1):
        mean, sd = theory.acquisition_moments(n, alpha=0.7, d=d, sigma=sigma, test_sigma=test_sigma, cs_sq_norm=2.25)
        s = curve[:, n - 1]
        assert close_in_mean(s, mean)
        assert close_in_mean((s - s.mean()).pow(2), sd**2)


def test_normalised_strength_measured():
    d, trials, T = 9, 200, 5
    gen = pv.generator(2, DEVICE)
    bell = pv.random_stimuli(trials, 1, d, generator=gen, device=DEVICE, dtype=torch.float64)
    food = 2.5 * pv.random_stimuli(trials, 1, d, generator=gen, device=DEVICE, dtype=torch.float64)
    out = acquisition(bell, bell.expand(trials, T, d), food.expand(trials, T, d), alpha=0.3, norm="rms", eps=0.0)
    strength = response_strength(out[..., 0, :], food)
    assert (strength - theory.normalised_strength(d, us_norm=2.5)).abs().max().item() <= 1e-12


def test_generalisation_moments_measured():
    # bell-food once; tone-food twice; light-shock three times: Var = alpha^2 (4/d + 9/d^2)
    d, trials, alpha = 16, 40_000, 0.5
    gen = pv.generator(3, DEVICE)
    cs = pv.random_stimuli(trials, 3, d, generator=gen, device=DEVICE, dtype=torch.float64)   # bell, light, tone
    us = pv.random_stimuli(trials, 2, d, generator=gen, device=DEVICE, dtype=torch.float64)   # food, shock
    similarity = [-0.5, 0.0, 0.8]
    tests = generalisation_tests(cs[:, 0], similarity, generator=gen)
    store = store_from_pairings(cs, us, [[1, 0], [0, 3], [2, 0]], alpha=alpha)
    s = response_strength(respond(store, tests), us[:, :1])                                    # (trials, 3)
    for i, c in enumerate(similarity):
        mean, sd = theory.generalisation_moments(c, alpha=alpha, d=d, same_us=[2], other_us=[3])
        assert close_in_mean(s[:, i], mean)
        assert close_in_mean((s[:, i] - mean).pow(2), sd**2)


# --- bad input --------------------------------------------------------------------------------

BAD = [   # (function, kwargs, error, parameter)
    (theory.sphere_overlap_moments, {"d": 0}, ValueError, "d"),
    (theory.sphere_overlap_moments, {"d": 2.0}, TypeError, "d"),
    (theory.acquisition_moments, {"n": -1, "alpha": 1.0, "d": 4, "sigma": 1.0}, ValueError, "n"),
    (theory.acquisition_moments, {"n": float("inf"), "alpha": 1.0, "d": 4, "sigma": 1.0}, ValueError, "n"),
    (theory.acquisition_moments, {"n": 1, "alpha": "1", "d": 4, "sigma": 1.0}, TypeError, "alpha"),
    (theory.acquisition_moments, {"n": 1, "alpha": 1.0, "d": 0, "sigma": 1.0}, ValueError, "d"),
    (theory.acquisition_moments, {"n": 1, "alpha": 1.0, "d": 4, "sigma": -1.0}, ValueError, "sigma"),
    (theory.acquisition_moments, {"n": 1, "alpha": 1.0, "d": 4, "sigma": 1.0, "test_sigma": -0.1}, ValueError, "test_sigma"),
    (theory.acquisition_moments, {"n": 1, "alpha": 1.0, "d": 4, "sigma": 1.0, "cs_sq_norm": -1.0}, ValueError, "cs_sq_norm"),
    (theory.normalised_strength, {"d_v": 0}, ValueError, "d_v"),
    (theory.normalised_strength, {"d_v": 4, "us_norm": 0.0}, ValueError, "us_norm"),
    (theory.generalisation_moments, {"c": 1.5, "alpha": 1.0, "d": 4}, ValueError, "c"),
    (theory.generalisation_moments, {"c": float("nan"), "alpha": 1.0, "d": 4}, ValueError, "c"),
    (theory.generalisation_moments, {"c": 0.5, "alpha": 1.0, "d": 4, "trained": -1}, ValueError, "trained"),
    (theory.generalisation_moments, {"c": 0.5, "alpha": 1.0, "d": 4, "trained": True}, TypeError, "trained"),
    (theory.generalisation_moments, {"c": 0.5, "alpha": 1.0, "d": 4, "same_us": [-1]}, ValueError, "same_us"),
    (theory.generalisation_moments, {"c": 0.5, "alpha": 1.0, "d": 4, "other_us": ["2"]}, TypeError, "other_us"),
]


@pytest.mark.parametrize("function, kwargs, error, param", BAD)
def test_bad_input(function, kwargs, error, param):
    with pytest.raises(error, match=rf"\b{param}\b"):
        function(**kwargs)
