"""pavlov.stores.erase and the erasure closed forms of pavlov.theory: erasing one association from a
least-squares store with the delta, anti-Hebbian and Kalman rules, and the collateral damage.

Exact identities in float64 (the residual of a full delta step, the Kalman rule's untouched others below
capacity, anti-Hebbian equal to the delta rule there) are checked to rounding; the measured means against
the closed forms within five standard errors (``pavlov.claims.tolerance``) plus rounding.
"""

from __future__ import annotations

import math

import pytest
import torch
from conftest import DEVICE, cases

from pavlov import stores, theory
from pavlov.claims import tolerance

pytestmark = pytest.mark.usefixtures("one_thread")
F64 = {"device": DEVICE, "dtype": torch.float64}
ROUNDING = 1e-9      # float64 solves of well-conditioned 16 x 16 key sets lose far fewer than 7 of 16 digits
D = 16


def erase(rule, n, overlap=None, trials=2000, seed=0, **params):
    return stores.erase(rule, D, n, trials=trials, overlap=overlap, seed=seed, **F64, **params)


def within(measured, se, predicted) -> bool:
    return abs(measured - predicted) <= tolerance(se) + ROUNDING


# --- the keys ------------------------------------------------------------------------------------

@pytest.mark.parametrize("overlap", [0.1, 0.3, 0.8])
def test_overlapping_keys_are_unit_with_mean_cosine_overlap(overlap):
    gen = torch.Generator(DEVICE).manual_seed(0)
    keys = stores._overlapping_keys(400, 8, D, overlap, gen, DEVICE, torch.float64)
    assert torch.allclose(keys.norm(dim=-1), torch.ones(400, 8, **F64), atol=1e-12)
    pairs = torch.triu_indices(8, 8, 1, device=DEVICE)
    cosines = (keys @ keys.mT)[:, pairs[0], pairs[1]].mean(-1)          # one mean per trial: its pairs share c
    squares = (keys @ keys.mT)[:, pairs[0], pairs[1]].pow(2).mean(-1)
    mean, square = theory.key_overlap_moments(D, overlap)
    for x, predicted in ((cosines, mean), (squares, square)):
        assert within(x.mean().item(), (x.std() / math.sqrt(len(x))).item(), predicted)


# --- exact identities ------------------------------------------------------------------------------

@pytest.mark.parametrize("n", [2, 5, 16])
@pytest.mark.parametrize("overlap", [None, 0.3])
def test_anti_hebbian_is_the_delta_rule_below_capacity(n, overlap):
    # k_t S0 = v_t for n <= d: writing -k_t^T (k_t S0) and -k_t^T v_t is one write
    delta, anti = erase("delta_zero", n, overlap, trials=50), erase("anti_hebbian", n, overlap, trials=50)
    for a, b in zip(delta, anti):
        assert a == pytest.approx(b, abs=ROUNDING)


@pytest.mark.parametrize("n", [2, 8, 16])
@pytest.mark.parametrize("overlap", [None, 0.3])
@pytest.mark.parametrize("noise, steps", [(1.0, 1), (0.5, 3), (1e-3, 1)])
def test_kalman_erases_only_the_target_below_capacity(n, overlap, noise, steps):
    e = erase("kalman", n, overlap, trials=50, noise=noise, steps=steps)
    assert e.residual == pytest.approx(noise / (noise + steps), abs=ROUNDING) and e.residual_se <= ROUNDING
    assert abs(e.damage) <= ROUNDING and e.change <= ROUNDING ** 2


def test_kalman_ridge_moves_the_others_a_little():
    # P = (K^T K + ridge I)^-1: k_i P k_t^T = -ridge [(G + ridge)^-1]_it, so the change falls as ridge^2
    # while ridge is well below the keys' Gram eigenvalues (about (1 - sqrt(8/16))^2 = 0.09 at the least)
    small, large = (erase("kalman", 8, trials=50, ridge=r).change for r in (1e-6, 1e-4))
    assert 0 < small < large and large / small == pytest.approx(1e4, rel=0.01)


@pytest.mark.parametrize("beta, steps", [(1.0, 1), (0.5, 2), (0.3, 4)])
def test_delta_zero_leaves_one_minus_c_of_the_target(beta, steps):
    e = erase("delta_zero", 8, trials=50, beta=beta, steps=steps)
    assert e.residual == pytest.approx((1 - beta) ** steps, abs=ROUNDING) and e.residual_se <= ROUNDING


# --- measured against the closed forms ---------------------------------------------------------------

RULES = cases(("delta_zero", "delta_zero", {}), ("delta_zero-partial", "delta_zero", {"beta": 0.5, "steps": 2}),
              ("delta_neutral", "delta_neutral", {}), ("delta_neutral-partial", "delta_neutral", {"beta": 0.7}),
              ("anti_hebbian", "anti_hebbian", {}), ("anti_hebbian-half", "anti_hebbian", {"alpha": 0.5}),
              ("kalman", "kalman", {}), ("kalman-sure", "kalman", {"noise": 0.1, "steps": 2}),
              ("retrain", "retrain", {}), ("downdate", "downdate", {}))
FORMS = {"residual": theory.erasure_residual, "damage": theory.erasure_damage, "change": theory.erasure_change}


def holds(form, rule, n) -> bool:
    """Where a closed form is derived: every n for the anti-Hebbian rule and the delta rules' residual and damage."""
    return n <= D or rule == "anti_hebbian" or (rule != "kalman" and form != "change")


@pytest.mark.parametrize("n", [4, 16, 40])
@pytest.mark.parametrize("overlap", [None, 0.3])
@pytest.mark.parametrize("rule, params", RULES)
def test_erasure_matches_its_closed_forms(rule, params, n, overlap):
    e = erase(rule, n, overlap, seed=n, **params)
    for name, form in FORMS.items():
        if holds(name, rule, n):
            predicted = form(rule, D, n, overlap=overlap, **params)
            assert within(getattr(e, name), getattr(e, f"{name}_se"), predicted), (name, getattr(e, name), predicted)
        else:
            with pytest.raises(ValueError, match="n_memories"):
                form(rule, D, n, overlap=overlap, **params)


@pytest.mark.parametrize("n", [24, 40])
@pytest.mark.parametrize("overlap", [None, 0.3])
def test_certain_kalman_erasure_beyond_capacity_is_constrained_least_squares(n, overlap):
    # noise -> 0: k_t S = 0 exactly, and the others lose (1 - P_tt)/(n - 1) each way; noise 1e-9 is that limit
    # to about 1e-9 / P_tt, far inside the trials' spread
    e = erase("kalman", n, overlap, seed=n, noise=1e-9)
    assert abs(e.residual) <= 1e-6
    for name in ("damage", "change"):
        predicted = FORMS[name]("kalman", D, n, overlap=overlap, noise=0.0)
        assert predicted == pytest.approx((1 - D / n) / (n - 1))
        assert within(getattr(e, name), getattr(e, f"{name}_se"), predicted)


def test_closed_forms_by_hand():
    # d = 16, n = 32: h = 1/2; delta_zero one step: damage (1 - h)/(n - 1) = 1/62
    assert theory.erasure_damage("delta_zero", 16, 32) == pytest.approx(1 / 62)
    assert theory.erasure_residual("delta_zero", 16, 32, beta=0.5) == pytest.approx(0.25)
    assert theory.erasure_residual("anti_hebbian", 16, 32, alpha=0.5) == pytest.approx(0.0)
    # overlap 0.5, d = 5: m2 = 1/4 + 1/16; delta_neutral at n = 4 scales it by 4/3
    assert theory.erasure_change("delta_neutral", 5, 4, overlap=0.5) == pytest.approx(5 / 16 * 4 / 3)
    assert theory.erasure_damage("delta_neutral", 5, 4, overlap=0.5) == pytest.approx(-0.5 / 3)
    assert theory.erasure_residual("kalman", 16, 8, noise=3.0, steps=1) == pytest.approx(0.75)
    assert theory.erasure_change("kalman", 16, 16) == theory.erasure_damage("kalman", 16, 16) == 0.0


# --- the retrained store and the Hebbian store ------------------------------------------------------

@pytest.mark.parametrize("n", [5, 16, 40])
def test_anti_hebbian_is_exact_unlearning_on_the_hebbian_store(n):
    # S0 - k_t^T v_t is the Hebbian store written without the pair: no gap, to rounding, in every trial
    anti, retrained = (erase(rule, n, trials=50, store="hebbian") for rule in ("anti_hebbian", "retrain"))
    assert anti.gap <= ROUNDING ** 2 and anti.gap_se <= ROUNDING ** 2
    for a, b in zip(anti[:-1], retrained[:-1]):
        assert a == pytest.approx(b, abs=ROUNDING)


@pytest.mark.parametrize("n", [4, 16, 40])
@pytest.mark.parametrize("rule, params", cases(("anti_hebbian", "anti_hebbian", {}),
                                               ("anti_hebbian-half", "anti_hebbian", {"alpha": 0.5}),
                                               ("delta_zero", "delta_zero", {}),
                                               ("delta_zero-partial", "delta_zero", {"beta": 0.5, "steps": 2}),
                                               ("retrain", "retrain", {})))
def test_hebbian_erasure_matches_its_closed_forms(rule, params, n):
    e = erase(rule, n, seed=n, store="hebbian", **params)
    for name, predicted in theory.hebbian_erasure(rule, D, n, **params).items():
        assert within(getattr(e, name), getattr(e, f"{name}_se"), predicted), (name, getattr(e, name), predicted)


@pytest.mark.parametrize("rule", ["delta_zero", "delta_neutral", "anti_hebbian", "kalman"])
@pytest.mark.parametrize("overlap", [None, 0.3])
def test_below_capacity_error_and_gap_are_the_change(rule, overlap):
    # S0 and the retrained least-squares store both recall the others exactly: error and gap are the move itself
    e = erase(rule, 8, overlap, trials=50)
    assert e.error == pytest.approx(e.change, abs=ROUNDING) and e.gap == pytest.approx(e.change, abs=ROUNDING)


def test_kalman_needs_the_least_squares_store():
    for rule in ("kalman", "downdate"):
        with pytest.raises(ValueError, match="store"):
            erase(rule, 8, store="hebbian")


@pytest.mark.parametrize("n", [2, 5, 16, 31, 33, 40, 64])
@pytest.mark.parametrize("overlap", [None, 0.3])
def test_downdate_is_the_retrained_store(n, overlap):
    # one rank-one write lands on the store written without the pair, below capacity and beyond: the same
    # draws (one seed) give the same target read-out, and the others' read-outs differ by rounding
    down, retrained = (erase(rule, n, overlap, trials=20, seed=n) for rule in ("downdate", "retrain"))
    assert down.gap <= 1e6 * ROUNDING ** 2 and theory.downdate_gap(D, n, overlap=overlap) == 0.0
    for a, b in zip(down[:-1], retrained[:-1]):
        assert a == pytest.approx(b, abs=1e3 * ROUNDING)


# --- determinism, devices and dtypes -----------------------------------------------------------------

def test_same_seed_same_result_and_fresh_seed_recorded():
    assert erase("delta_neutral", 6, 0.3, trials=20, seed=3) == erase("delta_neutral", 6, 0.3, trials=20, seed=3)
    fresh = stores.erase("delta_zero", D, 6, trials=20, seed=None, **F64)
    assert fresh == erase("delta_zero", 6, trials=20, seed=fresh.seed)


@pytest.mark.parametrize("rule", list(stores.ERASE_RULES))
def test_float32_matches_the_closed_forms(rule):
    e = stores.erase(rule, D, 8, trials=2000, overlap=0.3, seed=1, device=DEVICE, dtype=torch.float32)
    for name, form in FORMS.items():
        assert abs(getattr(e, name) - form(rule, D, 8, overlap=0.3)) <= tolerance(getattr(e, f"{name}_se")) + 1e-5


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
@pytest.mark.parametrize("rule", list(stores.ERASE_RULES))
def test_half_precisions_agree_with_float32(rule, dtype):
    # both draw in float32 (pavlov.stimuli), so these are the same memories rounded, and the means agree
    # to the dtype's precision, not merely to the trials' spread
    reference, low = (stores.erase(rule, D, 8, trials=200, overlap=0.3, seed=0, device=DEVICE, dtype=x)
                      for x in (torch.float32, dtype))
    scale = {torch.float16: 5e-4, torch.bfloat16: 5e-3}[dtype]
    for name in ("residual", "damage", "change"):
        assert getattr(low, name) == pytest.approx(getattr(reference, name), abs=scale)
