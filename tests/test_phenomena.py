"""pavlov.phenomena: designs, stimuli, trial sequences and responses; the delta rule against the
Rescorla-Wagner model on every design; which phenomena the delta, Hebbian and decay rules reproduce, with the
indices their equations give; invariance under the choice of orthonormal stimuli; bad input.
"""

from __future__ import annotations

import math

import pytest
import torch
from conftest import DEVICE, EXACT, FLOAT_DTYPES, cases

from pavlov import phenomena as ph
from pavlov import theory

pytestmark = pytest.mark.usefixtures("one_thread")
F64 = {"device": DEVICE, "dtype": torch.float64}


# --- designs -------------------------------------------------------------------------------------

@pytest.mark.parametrize("design, phases", cases(
    ("one phase", "30 A+", [(30, [("A", True)])]),
    ("two phases", "30 A+ | 30 AB+", [(30, [("A", True)]), (30, [("AB", True)])]),
    ("alternation", "5 (A+, AX-)", [(5, [("A", True), ("AX", False)])]),
    ("spaces", "  2  A-  |3 (AB+ ,C-) ", [(2, [("A", False)]), (3, [("AB", True), ("C", False)])]),
    ("three letters, three phases", "1 ABC+ | 2 B- | 4 (C+, A-, AB+)",
     [(1, [("ABC", True)]), (2, [("B", False)]), (4, [("C", True), ("A", False), ("AB", True)])]),
))
def test_parse_design(design, phases):
    assert ph.parse_design(design) == phases


@pytest.mark.parametrize("design, error", cases(
    ("empty", "", ValueError),
    ("no trial count", "A+", ValueError),
    ("no stimulus", "30", ValueError),
    ("no outcome", "30 A", ValueError),
    ("zero trials", "0 A+", ValueError),
    ("negative trials", "-3 A+", ValueError),
    ("lower case stimulus", "30 a+", ValueError),
    ("unknown outcome", "30 A*", ValueError),
    ("count glued to stimulus", "30A+", ValueError),
    ("empty last phase", "30 A+ |", ValueError),
    ("empty middle phase", "30 A+ || 2 B-", ValueError),
    ("no comma in an alternation", "30 (A+ AX-)", ValueError),
    ("not a string", ["30 A+"], TypeError),
    ("bytes", b"30 A+", TypeError),
))
def test_parse_design_bad(design, error):
    with pytest.raises(error, match=r"\bdesign\b"):
        ph.parse_design(design)


@pytest.mark.parametrize("design", ["30 (A+", "30 A+)", "30 (A+, AX-"])
def test_parse_design_unbalanced_parentheses(design):
    with pytest.raises(ValueError, match=r"\bdesign\b"):
        ph.parse_design(design)


# --- stimuli, trials, responses --------------------------------------------------------------------

@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_stimuli_are_orthonormal_with_salience_as_squared_norm(dtype):
    salience = {"A": 0.25, "C": 3.0}
    cs = ph.stimuli("CAXA", 6, salience=salience, seed=3, device=DEVICE, dtype=dtype)
    assert list(cs) == ["A", "C", "X"]                                      # sorted, each letter once
    for x in cs.values():
        assert x.shape == (6,) and x.dtype == dtype and x.device.type == DEVICE.type
    gram = torch.stack(list(cs.values())) @ torch.stack(list(cs.values())).T
    expected = torch.diag(torch.tensor([0.25, 3.0, 1.0], dtype=dtype, device=DEVICE))
    # Householder QR is orthonormal to c d_key u with c of order 1; the scaled Gram entries sqrt(s_X s_Y) e_X.e_Y
    # multiply that by at most 3: 64 d_key u allows c up to 20
    assert torch.allclose(gram, expected, rtol=0, atol=64 * 6 * torch.finfo(dtype).eps)


def test_stimuli_reproducible_by_seed():
    assert all(torch.equal(a, b) for a, b in zip(ph.stimuli("AB", 4, seed=1, **F64).values(),
                                                  ph.stimuli("AB", 4, seed=1, **F64).values()))
    assert not torch.equal(ph.stimuli("AB", 4, seed=1, **F64)["A"], ph.stimuli("AB", 4, seed=2, **F64)["A"])


def test_trials_sequence():
    cs = ph.stimuli("ABC", 4, **F64)
    keys, values, ends = ph.trials("2 A+ | 1 (AB-, B+) | 1 C-", cs, us=2.0)
    rows = [cs["A"], cs["A"], cs["A"] + cs["B"], cs["B"], cs["C"]]
    assert torch.equal(keys, torch.stack(rows))
    assert values.shape == (5, 1) and values.squeeze(-1).tolist() == [2.0, 2.0, 0.0, 2.0, 0.0]
    assert ends == [2, 4, 5]
    assert keys.dtype == values.dtype == torch.float64 and values.device == keys.device


def test_responses_by_hand():
    cs = ph.stimuli("AB", 3, **F64)
    # delta, beta = 1/2, lambda = 1: the error halves each trial
    curve, ends = ph.responses("delta", "3 A+", "A", cs, beta=0.5)
    assert curve.tolist() == pytest.approx([0.5, 0.75, 0.875], rel=EXACT, abs=0)
    assert ends == [3]
    # Hebbian, alpha = 1, lambda = 2: A's strength grows by 2 a trial; B, orthogonal, reads nothing
    curve, _ = ph.responses("hebbian", "3 A+", "A", cs, us=2.0)
    assert curve.tolist() == pytest.approx([2.0, 4.0, 6.0], rel=EXACT, abs=0)
    curve, _ = ph.responses("hebbian", "3 A+", "B", cs, us=2.0)
    assert curve.abs().max() <= EXACT
    # the compound test sums its letters: after AB+ trials under Hebbian, A, B and AB read 1, 1, 2 per trial
    curve, _ = ph.responses("hebbian", "2 AB+", "AB", cs)
    assert curve.tolist() == pytest.approx([2.0, 4.0], rel=EXACT, abs=0)


# --- the delta rule is the Rescorla-Wagner model ------------------------------------------------

# With CS sqrt(s_X) e_X and w_X = e_X S, the delta rule gives w_X += beta sqrt(s_X) (lambda - sum_Y sqrt(s_Y) w_Y),
# so V_X = sqrt(s_X) w_X obeys V_X += s_X beta (lambda - sum_Y V_Y): Rescorla-Wagner, read out as the test's sum.
# Both run the same recursion, whose error factor 1 - beta sum s_Y lies in (-1, 1) here, so rounding does not
# grow: each response is off by a few units of 2**-53 times a few d_key = 8 products, far inside 1e-12.
RW = 1e-12
DESIGNS = cases(   # (case, design, test, beta, salience, us)
    ("acquisition", "20 A+", "A", 0.3, None, 1.0),
    ("blocking", "15 A+ | 15 AB+", "B", 0.2, None, 1.0),
    ("overshadowing by a salient B", "25 AB+", "A", 0.15, {"A": 0.5, "B": 2.0}, 1.0),
    ("inhibition, salient X", "20 (A+, AX-)", "X", 0.2, {"X": 1.5}, 1.0),
    ("compound test, US 3", "10 AB+ | 10 A- | 5 (B+, AC-)", "ABC", 0.1, {"C": 0.4}, 3.0),
    ("unequal saliences, big rate", "12 ABC+ | 6 C-", "AC", 0.4, {"A": 0.3, "B": 0.9, "C": 1.2}, 1.0),
)


@pytest.mark.parametrize("design, test, beta, salience, us", DESIGNS)
def test_delta_rule_is_rescorla_wagner(design, test, beta, salience, us):
    cs = ph.stimuli("ABCX", 8, salience=salience, seed=5, **F64)
    curve, _ = ph.responses("delta", design, test, cs, us=us, beta=beta)
    expected = ph.rescorla_wagner(design, test, beta=beta, salience=salience, us=us)
    assert len(expected) == len(curve)
    assert max(abs(a - b) for a, b in zip(expected, curve.tolist())) <= RW * us


@pytest.mark.parametrize("name", ph.PHENOMENA)
def test_delta_rule_is_rescorla_wagner_on_every_phenomenon(name):
    cs = ph.stimuli("ABCX", 8, **F64)
    for design, test in ph.phenomenon(name, 30).groups.values():
        curve, _ = ph.responses("delta", design, test, cs, beta=0.2)
        expected = ph.rescorla_wagner(design, test, beta=0.2)
        assert max(abs(a - b) for a, b in zip(expected, curve.tolist())) <= RW


def test_rescorla_wagner_by_hand():
    # A+ then AB+ with beta = 1/2: V_A = 1/2, 3/4; then the AB error 1/4 splits evenly, V_B = 1/8
    assert ph.rescorla_wagner("2 A+ | 1 AB+", "B", beta=0.5) == [0.0, 0.0, 0.125]
    # salience 2 doubles the step: V_A = 2 * 0.25 * 1 = 0.5
    assert ph.rescorla_wagner("1 A+", "A", beta=0.25, salience={"A": 2.0}) == [0.5]
    with pytest.raises(ValueError, match=r"\bbeta\b"):
        ph.rescorla_wagner("1 A+", "A", beta=-0.1)


# --- which rule reproduces which phenomenon ----------------------------------------------------

N = 30
REPRODUCED = {
    # delta (Rescorla-Wagner): everything but spontaneous recovery, since rest trials C- correct only, orthogonal to A, so A's extinguished strength stays where it was
    # along C, orthogonal to A, so A's extinguished strength stays where it was; and the Rescorla-Wagner
    # failures: A- pre-exposure leaves the error zero (no latent inhibition), X- trials extinguish the
    # inhibitor, and A+ trials never touch the absent B (no backward blocking); overexpectation holds
    "delta": {"acquisition", "extinction", "blocking", "overshadowing", "conditioned_inhibition", "overexpectation"},
    # Hebbian: a non-reinforced trial writes k^T 0 = 0, so no extinction, recovery or inhibition (X is
    # only ever paired with nothing); every reinforced trial adds the same amount whatever is already
    # predicted, so no blocking or overshadowing and a linear, not negatively accelerated, curve
    "hebbian": set(),
    # decay: the curve (1 - gamma^n) / (1 - gamma) levels off, but at 1 / (1 - gamma) = 10 times the US, not at
    # the US; A- and C- trials both only scale S by gamma, so extinction equals rest; reinforced writes ignore
    # what is predicted
    "decay": set(),
}
PARAMS = {"delta": {"beta": 0.2}, "hebbian": {"alpha": 1.0}, "decay": {"gamma": 0.9}}


def indices(rule, **kwargs):
    return {name: ph.phenomenon_index(name, rule, n=N, device=DEVICE, **PARAMS[rule], **kwargs)
            for name in ph.PHENOMENA}


@pytest.mark.parametrize("rule", list(REPRODUCED))
def test_phenomena_verdicts(rule):
    got = indices(rule)
    assert {name for name, (_, ok) in got.items() if ok} == REPRODUCED[rule]


def test_phenomena_indices_from_the_equations():
    # Each response is off by a few units of 2**-53 per trial over at most 2n = 60 trials, ~1e-14. An index
    # that is a ratio of responses keeps that relative error (EXACT); one that differences two responses
    # near 1 to leave x ~ 1e-3 (acquisition, extinction, blocking) divides it by x: 1e-10 covers ~1e-11
    delta, hebbian, decay = indices("delta"), indices("hebbian"), indices("decay")
    x = 0.8 ** N        # (1 - beta)^n: the delta rule's remaining error after n trials of one CS
    assert delta["acquisition"][0] == pytest.approx(x - x * x, rel=1e-10)            # r_2n - r_n, above 1 - r_2n
    assert delta["extinction"][0] == pytest.approx(x, rel=1e-10)                     # (1 - x) x / (1 - x)
    assert delta["blocking"][0] == pytest.approx(x, rel=1e-10)                       # B learns the leftover error x
    assert delta["overshadowing"][0] == pytest.approx((1 - 0.6 ** N) / 2 / (1 - x), rel=1e-10)
    assert abs(delta["spontaneous_recovery"][0]) <= EXACT
    assert hebbian["acquisition"][0] == pytest.approx(2 * N - 1, rel=EXACT)          # r_2n - 1 = 2n - 1
    for name in ("extinction", "blocking", "overshadowing"):
        assert hebbian[name][0] == pytest.approx(1.0, rel=EXACT)
    for name in ("spontaneous_recovery", "conditioned_inhibition"):
        assert abs(hebbian[name][0]) <= EXACT
    g = 0.9 ** N
    assert decay["acquisition"][0] == pytest.approx((1 - g * g) / 0.1 - 1, rel=1e-10)  # r_2n - 1, r_2n = (1 - g^2)/0.1
    assert decay["extinction"][0] == pytest.approx(1.0, rel=EXACT)
    # after n A+ the response is r; A- and C- each scale it by g = gamma^n: (g^2 r - g r) / r
    assert decay["spontaneous_recovery"][0] == pytest.approx(-g * (1 - g), rel=1e-10)


@pytest.mark.parametrize("rule, params", cases(
    ("delta", "delta", {"beta": 0.2}),
    ("delta_rectified", "delta_rectified", {"beta": 0.2}),
    ("hebbian", "hebbian", {"alpha": 0.5}),
    ("decay", "decay", {"gamma": 0.9}),
    ("gated_delta", "gated_delta", {"gamma": 0.95, "beta": 0.3}),
    ("oja", "oja", {"alpha": 0.2}),
    ("oja standard", "oja", {"alpha": 0.2, "form": "standard"}),
    ("bcm", "bcm", {"alpha": 0.2, "tau": 5.0}),
))
def test_phenomena_do_not_depend_on_the_stimulus_basis(rule, params):
    # Every rule writes k^T (...) with a scalar US: rotating all CS by R rotates S to R S, and the
    # response x S to (x R^T) (R S) = x S. Different seeds are different R, so only rounding (a few
    # units of 2**-53 per trial, contracted by each step) separates the indices
    for name in ph.PHENOMENA:
        first, second = (ph.phenomenon_index(name, rule, n=20, seed=seed, device=DEVICE, **params)[0]
                         for seed in (0, 7))
        assert first == second or abs(first - second) <= EXACT * max(1.0, abs(first)), name


def test_phenomena_table():
    table = ph.phenomena_table({"RW": {"rule": "delta", "beta": 0.2}, "Hebb": {"rule": "hebbian"}}, n=10, device=DEVICE)
    reproduced = table.reproduced()
    assert set(reproduced) == {"RW", "Hebb"} and set(reproduced["RW"]) == set(ph.PHENOMENA)
    assert reproduced["RW"]["blocking"] and not reproduced["Hebb"]["blocking"]
    assert "<table" in table._repr_html_() and "spontaneous recovery" in table._repr_html_()
    assert repr(table).count("\n") == 1
    assert "✗" not in repr(table) and "✗" in table._repr_html_()      # the PDF's monospaced font has ×, not ✗


# --- bad input -------------------------------------------------------------------------------------

CS = ph.stimuli("AB", 3, device="cpu", dtype=torch.float64)


@pytest.mark.parametrize("make, error, param", cases(
    ("stimuli: more letters than d_key", lambda: ph.stimuli("ABC", 2), ValueError, "d_key"),
    ("stimuli: d_key 0", lambda: ph.stimuli("A", 0), ValueError, "d_key"),
    ("stimuli: d_key float", lambda: ph.stimuli("A", 2.0), TypeError, "d_key"),
    ("stimuli: salience 0", lambda: ph.stimuli("AB", 2, salience={"A": 0.0}), ValueError, "salience"),
    ("stimuli: salience NaN", lambda: ph.stimuli("AB", 2, salience={"B": math.nan}), ValueError, "salience"),
    ("stimuli: salience a string", lambda: ph.stimuli("AB", 2, salience={"B": "1"}), TypeError, "salience"),
    ("stimuli: integer dtype", lambda: ph.stimuli("A", 2, dtype=torch.int64), TypeError, "dtype"),
    ("trials: unknown letter", lambda: ph.trials("2 AC+", CS), ValueError, "cs"),
    ("trials: bad design", lambda: ph.trials("2 A", CS), ValueError, "design"),
    ("trials: us NaN", lambda: ph.trials("2 A+", CS, us=math.nan), ValueError, "us"),
    ("responses: unknown rule", lambda: ph.responses("adam", "2 A+", "A", CS), ValueError, "rule"),
    ("responses: bad rate", lambda: ph.responses("delta", "2 A+", "A", CS, beta=-1.0), ValueError, "beta"),
    ("responses: missing rate", lambda: ph.responses("decay", "2 A+", "A", CS), TypeError, "gamma"),
    ("rescorla_wagner: bad design", lambda: ph.rescorla_wagner("A+", "A", beta=0.1), ValueError, "design"),
    ("rescorla_wagner: beta NaN", lambda: ph.rescorla_wagner("1 A+", "A", beta=math.nan), ValueError, "beta"),
    ("phenomenon_index: unknown name", lambda: ph.phenomenon_index("sensory_preconditioning", "delta", beta=0.1),
     ValueError, "name"),
    ("phenomenon_index: n 0", lambda: ph.phenomenon_index("blocking", "delta", n=0, beta=0.1), ValueError, "n"),
    ("phenomenon_index: d_key too small", lambda: ph.phenomenon_index("blocking", "delta", d_key=3, beta=0.1),
     ValueError, "d_key"),
))
def test_bad_input(make, error, param):
    with pytest.raises(error, match=rf"\b{param}\b"):
        make()


@pytest.mark.parametrize("test", ["Z", ""])
def test_responses_bad_test_stimulus(test):
    with pytest.raises(ValueError, match=r"\btest\b"):
        ph.responses("delta", "2 A+", test, CS, beta=0.5)


def test_normalised_compounds_share_the_us_by_one_over_root_two():
    # a unit compound (e_A + e_B)/sqrt 2 trained to lambda along its own direction: each stimulus gets
    # lambda/sqrt 2; each phase leaves (1 - beta)^n of its error, which bounds the deviation
    x, r = 0.8 ** N, 2 ** -0.5
    got = {name: ph.phenomenon_index(name, "delta", n=N, device=DEVICE, beta=0.2, normalise=True)[0]
           for name in ("blocking", "overshadowing", "overexpectation")}
    assert got["overshadowing"] == pytest.approx(r, rel=1e-12)
    assert abs(got["blocking"] - (1 - r)) <= x and abs(got["overexpectation"] - r) <= x * (1 + 1e-9)
    # with a single stimulus nothing changes: normalising a unit vector is the identity
    plain = ph.responses("delta", "3 A+", "A", ph.stimuli("A", 2, device=DEVICE, dtype=torch.float64), beta=0.5)
    unit = ph.responses("delta", "3 A+", "A", ph.stimuli("A", 2, device=DEVICE, dtype=torch.float64), beta=0.5,
                        normalise=True)
    assert torch.allclose(plain[0], unit[0], rtol=0, atol=1e-15)


def test_the_kalman_filter_is_least_squares_on_the_designs():
    # drift-free recursive least squares from the prior P_0 = 1e3 I, noise 1: ridge r = 1e-3 per stimulus
    r = 1e-3
    got = {name: ph.phenomenon_index(name, "kalman", n=N, device=DEVICE)[0] for name in ph.PHENOMENA}
    # 30 A+ and 30 A- average to half; its control keeps 30 / (30 + r)
    assert got["extinction"] == pytest.approx((N + r) / (2 * N + r), rel=1e-10)
    # 30 A- shrink A's precision: 3 A+ then give 3 / (33 + r) against 3 / (3 + r)
    assert got["latent_inhibition"] == pytest.approx((3 + r) / (33 + r), rel=1e-10)
    # AB+ and A+ in least squares: w_A = 1, w_B = 0 (to the ridge), where the control C+ leaves B at 1/2
    assert abs(got["backward_blocking"]) < 1e-3
    # an inhibitor presented alone: least squares over A+, AX-, X- gives w_X = -1/3 of its -1 before
    assert got["inhibitor_kept"] == pytest.approx(1 / 3, abs=1e-3)
    reproduced = {name for name in ph.PHENOMENA
                  if ph.phenomenon(name).reproduced(got[name])}
    assert reproduced == {"acquisition", "blocking", "overshadowing", "conditioned_inhibition", "latent_inhibition",
                          "backward_blocking", "overexpectation", "release_from_overshadowing",
                          "recovery_from_blocking"}


def test_no_rule_without_an_inhibitor_keeps_one():
    # rules that never drive X below zero have no inhibition to keep: the index is -inf, never reproduced
    for rule, params in (("hebbian", {"alpha": 1.0}), ("decay", {"gamma": 0.9})):
        index, ok = ph.phenomenon_index("inhibitor_kept", rule, n=N, device=DEVICE, **params)
        assert index == float("-inf") and not ok


def test_indices_match_their_closed_forms():
    # the delta rule is Rescorla-Wagner, the drift-free Kalman filter ridge regression (ridge 1e-3): both
    # to rounding, the Kalman filter's amplified by the first write's cancellation (1 / ridge)
    for name in ph.PHENOMENA:
        delta = ph.phenomenon_index(name, "delta", n=N, beta=0.2, device=DEVICE)[0]
        kalman = ph.phenomenon_index(name, "kalman", n=N, device=DEVICE)[0]
        assert abs(delta - theory.rescorla_wagner_index(name, n=N, beta=0.2)) <= 1e-12, name
        assert abs(kalman - theory.least_squares_index(name, n=N, ridge=1e-3)) <= 1e-9, name


def test_theory_names_the_phenomena_in_order():
    assert theory.PHENOMENON_NAMES == tuple(ph.PHENOMENA)


@pytest.mark.parametrize("rule, params", cases(
    ("delta", "delta", {"beta": 0.2}), ("kalman", "kalman", {"drift": 0.05}), ("hebbian", "hebbian", {"alpha": 0.1}),
))
def test_indices_of_a_rule_linear_in_the_us_do_not_depend_on_it(rule, params):
    for name in ph.PHENOMENA:
        one, two = (ph.phenomenon_index(name, rule, n=10, us=us, device=DEVICE, **params) for us in (1.0, 2.0))
        assert one[1] == two[1] and (one[0] == two[0] or abs(one[0] - two[0]) <= 1e-12 * max(1, abs(one[0]))), name


def test_oja_settles_at_the_reciprocal_of_the_us():
    # Oja's repeated pair converges to 1/lambda: it passes acquisition only at lambda = 1
    assert ph.phenomenon_index("acquisition", "oja", us=1.0, alpha=0.2, device=DEVICE)[1]
    index, ok = ph.phenomenon_index("acquisition", "oja", us=2.0, alpha=0.2, device=DEVICE)
    assert not ok and index == pytest.approx(0.75, abs=1e-6)               # |1/2 - 2| / 2


def test_the_rectified_delta_rule_keeps_the_inhibitor_and_the_diagonal_filter_revalues_nothing():
    kept, ok = ph.phenomenon_index("inhibitor_kept", "delta_rectified", n=N, beta=0.2, device=DEVICE)
    assert ok and kept == pytest.approx(1.0, abs=1e-12)
    for name in ("backward_blocking", "release_from_overshadowing", "recovery_from_blocking"):
        index, ok = ph.phenomenon_index(name, "kalman", n=N, drift=0.05, diagonal=True, elemental=True, device=DEVICE)
        assert not ok, name
    full = ph.phenomenon_index("latent_inhibition", "kalman", n=N, drift=0.05, device=DEVICE)[0]
    diagonal = ph.phenomenon_index("latent_inhibition", "kalman", n=N, drift=0.05, diagonal=True, elemental=True,
                                   device=DEVICE)[0]
    assert diagonal == pytest.approx(full, rel=1e-10)


@pytest.mark.parametrize("gamma", [1.0, 0.99, 0.95, 0.9])
@pytest.mark.parametrize("n", [5, 30])
def test_gated_blocking_index_is_its_closed_form(gamma, n):
    # A's lead over B decays as gamma^n during the compound trials; at gamma = 1 the Rescorla-Wagner index
    measured, _ = ph.phenomenon_index("blocking", "gated_delta", gamma=gamma, beta=0.2, n=n,
                                             device="cpu", dtype=torch.float64)
    assert measured == pytest.approx(theory.gated_blocking_index(gamma=gamma, beta=0.2, n=n), abs=1e-12)
    if gamma == 1.0:
        assert measured == pytest.approx(theory.rescorla_wagner_index("blocking", n=n, beta=0.2), abs=1e-12)


def test_degenerate_indices_are_shown_as_not_applicable():
    table = ph.PhenomenaTable({"r": {p: (float("-inf") if p == "inhibitor_kept" else float("inf")
                                                if p == "blocking" else 0.5, False) for p in ph.PHENOMENA}})
    assert "n/a" in repr(table) and "inf" not in repr(table) and "n/a" in table._repr_html_()
