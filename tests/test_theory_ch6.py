"""pavlov.theory, chapter 6: the stacked error, its union bound, the source's bound and the bound's optimal
head count, at hand-computed points, against their defining properties and against a count of failures.
"""

from __future__ import annotations

import math

import pytest
from conftest import DEVICE

import pavlov as pv
from pavlov import stacking, theory


def test_stacked_error_by_hand():
    assert theory.stacked_error(0.5, heads=2, layers=3) == 1 - 0.75**3            # 0.578125
    assert theory.stacked_error(0.1, heads=1, layers=1) == pytest.approx(0.1, rel=1e-15)
    assert theory.stacked_error(0.2, heads=3, layers=2) == pytest.approx(1 - (1 - 0.008) ** 2, rel=1e-15)
    assert theory.stacked_error(0.0, heads=2, layers=5) == 0.0
    assert theory.stacked_error(1.0, heads=4, layers=2) == 1.0


def test_stacked_error_bound_by_hand():
    assert theory.stacked_error_bound(0.5, heads=2, layers=3) == 0.75
    assert theory.stacked_error_bound(2.0, heads=3, layers=4) == 32.0                # vacuous: above 1
    assert theory.source_error_bound(4, 8, heads=2, layers=3) == 0.75                # 3 (1/2)^2
    assert theory.source_error_bound(3, 16, heads=1, layers=1) == 3 / 16
    assert theory.source_error_bound(16, 8, heads=2, layers=1) == 4.0


@pytest.mark.parametrize("p", [1e-6, 0.01, 0.3, 0.9])
@pytest.mark.parametrize("heads", [1, 2, 5])
def test_exact_expression_below_its_union_bound_and_close_when_small(p, heads):
    for layers in (1, 2, 10, 100):
        exact = theory.stacked_error(p, heads=heads, layers=layers)
        bound = theory.stacked_error_bound(p, heads=heads, layers=layers)
        assert exact <= bound * (1 + 1e-12)
        # 1 - (1 - x)^L >= L x - L (L - 1) x^2 / 2 (Bonferroni): the gap is second order in x = p^H. The
        # computed gap also carries the rounding of both values, a few units u = 2^-53 of the bound
        x = p**heads
        assert bound - exact <= layers * (layers - 1) * x * x / 2 + 8 * 2.0**-53 * bound
    errors = [theory.stacked_error(p, heads=heads, layers=L) for L in range(1, 20)]
    assert errors == sorted(errors)                                                  # grows with depth


def test_stacked_error_is_accurate_for_tiny_failures():
    # 1 - (1 - 1e-20)^3 = 3e-20: computed with log1p / expm1, not lost to rounding
    assert theory.stacked_error(1e-10, heads=2, layers=3) == pytest.approx(3e-20, rel=1e-12)


def test_bound_optimal_heads_by_hand_and_at_the_minimum():
    assert theory.bound_optimal_heads(16, 3) == 16 / (3 * math.e)
    width, n = 64, 2
    h_star = theory.bound_optimal_heads(width, n)

    def bound(h):       # L (n H / D)^H with L = 1, for real H
        return (n * h / width) ** h

    assert bound(h_star) == pytest.approx(math.exp(-width / (math.e * n)), rel=1e-12)
    for step in (1e-3, 0.1, 1.0):
        assert bound(h_star) < bound(h_star - step) and bound(h_star) < bound(h_star + step)


def test_source_bound_matches_the_optimum_at_integer_heads():
    # D = 48, n = 6: H* = 48 / (6 e) = 2.94; among the divisors of 48 the bound is least at H = 3
    divisors = [h for h in range(1, 49) if 48 % h == 0]
    best = min(divisors, key=lambda h: theory.source_error_bound(6, 48 // h, heads=h, layers=1))
    assert best == 3 == round(theory.bound_optimal_heads(48, 6))


def test_oracle_chain_error_matches_the_exact_expression():
    # the any-head readout: chain error 1 - (1 - p^H)^L with the measured p, within five standard errors
    m = stacking.measure_chain(8, 8, heads=2, layers=6, trials=6_000, readout="any", seed=11, device=DEVICE)
    p, _ = m.head_error()
    error, se = m.chain_error()
    assert abs(error - theory.stacked_error(p, heads=2, layers=6)) < pv.claims.tolerance(se)


@pytest.mark.parametrize("function, args, error, name", [
    (theory.stacked_error, (1.5,), ValueError, "head_failure"),
    (theory.stacked_error, (-0.1,), ValueError, "head_failure"),
    (theory.stacked_error, (math.nan,), ValueError, "head_failure"),
    (theory.stacked_error_bound, (-1.0,), ValueError, "head_failure"),
    (theory.stacked_error_bound, ("0.5",), TypeError, "head_failure"),
])
def test_error_functions_reject_bad_probabilities(function, args, error, name):
    with pytest.raises(error, match=name):
        function(*args, heads=2, layers=3)


@pytest.mark.parametrize("kwargs, error, name", [
    (dict(heads=0, layers=3), ValueError, "heads"),
    (dict(heads=2, layers=0), ValueError, "layers"),
    (dict(heads=2.0, layers=3), TypeError, "heads"),
    (dict(heads=2, layers=True), TypeError, "layers"),
])
def test_error_functions_reject_bad_sizes(kwargs, error, name):
    for function in (theory.stacked_error, theory.stacked_error_bound):
        with pytest.raises(error, match=name):
            function(0.5, **kwargs)
    with pytest.raises(error, match=name):
        theory.source_error_bound(4, 8, **kwargs)


def test_source_bound_and_optimum_reject_bad_sizes():
    with pytest.raises(ValueError, match="d_key"):
        theory.source_error_bound(4, 0, heads=1, layers=1)
    with pytest.raises(TypeError, match="n_memories"):
        theory.source_error_bound(4.0, 8, heads=1, layers=1)
    with pytest.raises(ValueError, match="width"):
        theory.bound_optimal_heads(0, 3)
    with pytest.raises(ValueError, match="n_memories"):
        theory.bound_optimal_heads(16, -3)
