"""Bad input to every public function of the package raises a ValueError or TypeError naming the parameter.

One table, :data:`CASES`: each row calls a public function, class or method with valid arguments
(:data:`VALID`) except the ones it overrides, and expects a ``ValueError`` or ``TypeError`` whose
message names the offending parameter as a word. Rows are made by kind (:func:`spec`): a floating
tensor turned into a list, integers, NaN, infinity, too few dimensions, no entries, another device
(``meta``) or half precision beside float64; a size that is zero, negative, a float or a string; a
real that is NaN, infinite, a string or out of its range; an unknown option name. Each function adds
the shape mismatches and special cases of its own. :func:`test_every_public_callable_has_a_case`
checks that no public callable is missing from the table unless it is exempt (:data:`EXEMPT`, with
the reason), and :func:`test_valid_arguments_run` that the valid arguments are valid, so that no row
passes on an error its valid arguments raise anyway.

A row that does not hold yet is a strict xfail whose reason says what is missing: once the package
refuses that input, the row fails until its mark is removed.
"""

from __future__ import annotations

import importlib
import inspect
import math
import pkgutil
import re
from collections.abc import Callable

import pytest
import torch
from conftest import cpu, with_value

import pavlov
from pavlov import (attention, batched, book, channel, claims, conditioning, drift, facts, hopfield, icl, induction, maps,
                    mqar,
                    phenomena, rules, runtime, stacking, stats, stimuli, stores, theory, timing)

F64 = {"device": "cpu", "dtype": torch.float64}
LONG = {"device": "cpu", "dtype": torch.long}
NAN, INF = math.nan, math.inf
MISSING = object()          # an override that leaves the argument out

VALID: dict[Callable, Callable[[], dict]] = {}
"""Valid keyword arguments of each callable in the table, made afresh for every call."""

CASES: list = []


def t(*shape: int) -> torch.Tensor:
    """A seeded float64 tensor on the CPU (the other tensors of a row may be on ``meta``)."""
    return cpu(*shape)


def name_of(fn) -> str:
    """``module.qualname`` of a public callable, without the package prefix."""
    return f"{fn.__module__.removeprefix('pavlov.')}.{fn.__qualname__}"


def bad(fn, override: dict, param: str, kind: str, *, xfail: str | None = None):
    """One row: ``fn`` with its valid arguments, ``override`` replacing some; the error must name ``param``."""
    marks = [pytest.mark.xfail(strict=True, reason=xfail)] if xfail else []
    return pytest.param(fn, override, param, id=f"{name_of(fn)}-{param}-{kind}", marks=marks)


def each(fn, param: str, values, *, xfail: str | None = None) -> list:
    """Rows giving ``param`` each of ``values``, pairs ``(value, kind)``."""
    return [bad(fn, {param: value}, param, kind, xfail=xfail) for value, kind in values]


def tensor_rows(fn, params: dict[str, int], *, finite: bool = True, mix: bool = True, reference: bool = True) -> list:
    """Rows for floating tensor arguments ``{name: min_dim}``.

    With ``reference``, the first tensor is the one the others are compared with, so a device or dtype
    mismatch names another and it gets no such rows; a method's tensors are compared with its instance's.
    """
    rows = []
    for i, (param, min_dim) in enumerate(params.items()):
        x = VALID[fn]()[param]
        kinds = [(x.tolist(), "list"), (x.long(), "int64"), (x[(0,) * (x.dim() - min_dim + 1)], "rank"),
                 (x[..., :0], "empty")]
        if finite:
            kinds += [(with_value(x, NAN), "nan"), (with_value(x, -INF), "inf")]
        if mix and (i > 0 or not reference):
            kinds += [(x.to("meta"), "meta-device"), (x.half(), "float16")]
        rows += each(fn, param, kinds)
    return rows


def spec(fn, valid: Callable[[], dict], *, tensors: dict[str, int] | None = None, ints=(), reals=(), positive=(),
         nonnegative=(), probabilities=(), options=(), finite: bool = True, mix: bool = True,
         reference: bool = True) -> None:
    """Register ``fn``'s valid arguments and add the rows of each kind of argument it takes."""
    VALID[fn] = valid
    rows = tensor_rows(fn, tensors, finite=finite, mix=mix, reference=reference) if tensors else []
    for p in ints:
        rows += each(fn, p, ((0, "zero"), (-3, "negative"), (2.0, "float"), ("2", "str")))
    for p in (*reals, *positive, *nonnegative, *probabilities):
        rows += each(fn, p, ((NAN, "nan"), (INF, "inf"), ("1", "str")))
    for p in (*positive, *nonnegative, *probabilities):
        rows += each(fn, p, ((-0.5, "negative"),))
    for p in positive:
        rows += each(fn, p, ((0.0, "zero"),))
    for p in probabilities:
        rows += each(fn, p, ((1.5, "above-one"),))
    for p in options:
        rows += each(fn, p, (("nonsense", "unknown"),))
    CASES.extend(rows)


def call(fn, kwargs: dict):
    """Call ``fn`` with keyword arguments; a var-positional one (``*shape``) is passed by position."""
    kwargs = {k: v for k, v in kwargs.items() if v is not MISSING}
    star = [p.name for p in inspect.signature(fn).parameters.values() if p.kind is p.VAR_POSITIONAL]
    args = kwargs.pop(star[0], ()) if star else ()
    return fn(*args, **kwargs)


# --- runtime ---

spec(runtime.seed_for, lambda: {"seed": 0})
CASES += each(runtime.seed_for, "seed", ((-1, "negative"), (1.5, "float")))
spec(runtime.generator, lambda: {"seed": 0, "device": "cpu"})
CASES += each(runtime.generator, "seed", ((-1, "negative"), (1.5, "float"), (True, "bool"), (2**64, "too-large"),
                                          ("0", "str")))
CASES += each(runtime.generator, "device", (("nonsense", "unknown"),))
spec(runtime.device_of, lambda: {"device": "cpu"})
CASES += each(runtime.device_of, "device", (("nonsense", "unknown"), (1.5, "float")))
spec(runtime.device_name, lambda: {"device": "cpu"})
CASES += each(runtime.device_name, "device", (("nonsense", "unknown"), (1.5, "float")))
spec(runtime.seed_or_fresh, lambda: {"seed": 0})
CASES += each(runtime.seed_or_fresh, "seed", ((-1, "negative"), (1.5, "float"), ("0", "str")))
spec(runtime.resolve, lambda: {"device": "cpu", "dtype": torch.float64})
CASES += each(runtime.resolve, "dtype", ((torch.int64, "int64"), (torch.bool, "bool"), ("float32", "str"),
                                         (torch.complex64, "complex")))
CASES += each(runtime.resolve, "device", (("nonsense", "unknown"),))

# --- claims ---

spec(claims.tolerance, lambda: {"standard_error": 0.1, "z": 5.0}, nonnegative=("standard_error",), positive=("z",))
CASES += each(claims.tolerance, "standard_error", ((t(2), "two-element-tensor"),
                                                   (torch.tensor([NAN], **F64), "nan-tensor")))
spec(claims.check, lambda: {"claim_id": "ch0.bad_input", "statement": "One is one.", "measured": 1.0,
                            "predicted": 1.0, "tolerance": 0.1, "source": "arithmetic"},
     nonnegative=("tolerance",), options=("relation",))
CASES += each(claims.check, "claim_id", (("bad", "no-chapter"), ("CH0.X", "upper-case"), (5, "int"),
                                         ("ch0.", "no-name")))
for p in ("statement", "source"):
    CASES += each(claims.check, p, (("", "empty"), ("  ", "blank"), (5, "int")))
for p in ("measured", "predicted"):
    CASES += each(claims.check, p, ((NAN, "nan"), ("x", "str"), ([1.0], "list"), (t(2), "two-element-tensor"),
                                    (None, "none")))
CASES += each(claims.check, "alternative", (("rival", "str"), (("rival",), "one-element"),
                                            (("", 2.0), "empty-description"), (("rival", NAN), "nan-value"),
                                            (["rival", 2.0], "list")))
spec(claims.largest_z, lambda: {"m": 10, "z": 5.0, "dof": 7}, ints=("m", "dof"), positive=("z",))
spec(claims.load_records, lambda: {})
CASES += each(claims.load_records, "directory", ((5, "int"),))   # a missing directory is empty, not an error
spec(claims.executed_records, lambda: {"notebooks": []})
CASES += each(claims.executed_records, "notebooks", (("ch1.ipynb", "str"), (5, "int")))
spec(claims.anchor, lambda: {"claim_id": "ch2.forms_agree"})
CASES += each(claims.anchor, "claim_id", (("bad", "no-chapter"), (5, "int")))
spec(claims.requirement, lambda: {"record": {"relation": "close", "predicted": 1.0, "tolerance": 0.1}})
CASES += each(claims.requirement, "record", (({"relation": "close"}, "incomplete"), (5, "int")))
CASES += [bad(claims.requirement, {"record": {"relation": "near", "predicted": 1.0, "tolerance": 0.1}}, "relation",
              "unknown"),
          bad(claims.requirement, {"record": {"relation": "close", "predicted": 1.0, "tolerance": -1.0}}, "tolerance",
              "negative")]
spec(claims.table, lambda: {"chapter": "ch2"})
CASES += each(claims.table, "chapter", (("2", "no-prefix"), (2, "int"), ("ch", "no-number")))

# --- stimuli, stats, maps ---

spec(stimuli.random_stimuli, lambda: {"shape": (2, 3), "kind": "sphere", **F64}, options=("kind",))
CASES += each(stimuli.random_stimuli, "shape", (((), "empty"), ((0, 3), "zero"), ((-1, 3), "negative"),
                                                ((2.0, 3), "float"), (("2", 3), "str")))
CASES += [bad(stimuli.random_stimuli, {"generator": "abc"}, "generator", "str"),
          bad(stimuli.random_stimuli, {"generator": torch.Generator("cpu"), "device": "meta"}, "generator",
              "other-device")]
CASES += each(stimuli.random_stimuli, "dtype", ((torch.int64, "int64"), ("float32", "str")))

spec(stats.mean_and_se, lambda: {"x": t(4, 3), "dim": 0}, tensors={"x": 1})
CASES += each(stats.mean_and_se, "dim", ((2, "out-of-range"), (-3, "negative-out-of-range"), (0.0, "float"),
                                         ("0", "str"), (True, "bool")))
CASES += each(stats.mean_and_se, "x", ((t(1, 3), "one-trial"),))
# NaN and infinity are measured, not refused; mixed dtypes are compared in float64
spec(stats.relative_error, lambda: {"reference": t(4, 3), "x": t(4, 3)}, tensors={"reference": 1, "x": 1},
     finite=False, mix=False)
CASES += each(stats.relative_error, "x", ((t(4, 2), "shape-mismatch"), (t(4, 3).to("meta"), "meta-device")))
spec(stats.weighted_slope, lambda: {"x": [0.0, 1.0, 2.0], "y": [1.0, 3.0, 5.0], "se": [0.1, 0.1, 0.1]})
CASES += each(stats.weighted_slope, "se", (([0.1, 0.0, 0.1], "zero"), ([0.1, -1.0, 0.1], "negative"),
                                           ([0.1, NAN, 0.1], "nan"), ([0.1, 0.1], "short")))
CASES += each(stats.weighted_slope, "x", (([0.0], "one-point"), ([[0.0, 1.0, 2.0]], "2-d")))
spec(book.numbered, lambda: {"text": "Proposition ch3-mean"})
spec(book.t4_seconds, lambda: {"run": next(r for r in book.work() if "ops" in r)})
CASES += [bad(book.t4_seconds, {"run": {"chapter": "ch1"}}, "run", "no-tally"), bad(book.t4_seconds, {"run": 3}, "run", "int")]
CASES += [bad(book.numbered, {"text": 3}, "text", "int"), bad(book.numbered, {"text": None}, "text", "none")]
spec(stats.ratio, lambda: {"a": (6.0, 0.3), "b": (2.0, 0.1)})
CASES += each(stats.ratio, "a", (((0.0, 0.1), "zero"), ((NAN, 0.1), "nan"), (("6", 0.1), "str")))
CASES += each(stats.ratio, "b", (((0.0, 0.1), "zero"), ((2.0, -0.1), "negative-se")))
spec(stats.crossing, lambda: {"curve": {1: (0.9, 0.1), 2: (0.6, 0.1), 3: (0.3, 0.1)}, "level": 0.5})
CASES += each(stats.crossing, "level", ((NAN, "nan"), (0.95, "above-the-curve"), (0.1, "below-the-curve")))
CASES += each(stats.crossing, "curve", (({1: (0.9, 0.1)}, "one-point"), ([(1, 0.9)], "list")))
CASES += each(stats.crossing, "window", ((1.0, "not-above-one"), (NAN, "nan"), ("2", "str")))
spec(stats.search, lambda: {"measure": lambda n: 1.0 if n < 40 else 0.0, "start": 10, "level": 0.9, "past": 0.5,
                             "ratio": 2.0, "limit": 8}, ints=("limit",), reals=("level", "past"), positive=("start", "ratio"))
CASES += each(stats.search, "past", ((0.95, "above-level"),))
CASES += each(stats.search, "ratio", ((1.0, "one"), (0.5, "below-one")))
CASES += [bad(stats.search, {"measure": lambda n: 0.0}, "start", "never-holds"),
          bad(stats.search, {"measure": lambda n: 1.0}, "limit", "never-falls")]
spec(stats.golden_section_min, lambda: {"f": lambda x: (x - 0.3) ** 2, "low": 0.0, "high": 1.0},
     ints=("iterations",), reals=("low", "high"))
CASES += each(stats.golden_section_min, "f", ((0.3, "not-callable"),))
CASES += each(stats.golden_section_min, "low", ((1.0, "equal-to-high"), (2.0, "above-high")))

spec(maps.output_norm, lambda: {"r": t(4, 3), "norm": "rms", "eps": 1e-6}, tensors={"r": 1},
     nonnegative=("eps",), options=("norm",))
spec(maps.elu_plus_one, lambda: {"x": t(4, 3)})
CASES += each(maps.elu_plus_one, "x", (([0.5, -1.0], "list"), (t(3).long(), "int64")))
spec(maps.feature_map, lambda: {"name_or_fn": "relu", "parameter": "phi"})
# feature_map's messages name the argument by its caller's name for it, `parameter`
CASES += [bad(maps.feature_map, {"name_or_fn": v}, "phi", kind) for v, kind in (("nonsense", "unknown"), (3, "int"))]

# --- attention ---


def qkv() -> dict:
    return {"q": t(2, 5, 3), "k": t(2, 5, 3), "v": t(2, 5, 2)}


QKV_DIMS = {"q": 2, "k": 2, "v": 2}


def sequence_rows(fn) -> list:
    """Queries, keys and values that do not fit together."""
    return (each(fn, "k", ((t(3, 5, 3), "batch-mismatch"), (t(2, 5, 4), "d_k-mismatch"), (t(2, 4, 3), "T-mismatch")))
            + each(fn, "v", ((t(2, 4, 2), "T-mismatch"), (t(3, 5, 2), "batch-mismatch"))))


spec(attention.linear_attention, qkv, tensors=QKV_DIMS, ints=("chunk_size",), nonnegative=("eps",),
     options=("form", "feature_map", "norm"))
CASES += sequence_rows(attention.linear_attention)
CASES += each(attention.linear_attention, "denominator", (("yes", "str"), (True, "nonpositive-normaliser")))
spec(attention.softmax_attention, qkv, tensors=QKV_DIMS, positive=("scale",))
CASES += sequence_rows(attention.softmax_attention) + each(attention.softmax_attention, "causal", ((1, "int"),))

# --- conditioning ---

spec(conditioning.hebbian_store, lambda: {"cs": t(2, 5, 3), "us": t(2, 5, 2), "alpha": 0.5},
     tensors={"cs": 2, "us": 2}, reals=("alpha",), options=("f", "g"))
CASES += each(conditioning.hebbian_store, "us", ((t(2, 4, 2), "n-mismatch"), (t(3, 5, 2), "batch-mismatch")))
spec(conditioning.respond, lambda: {"store": t(2, 3, 2), "test": t(2, 4, 3), "norm": "rms"},
     tensors={"store": 2, "test": 2}, nonnegative=("eps",), options=("f", "norm"))
CASES += each(conditioning.respond, "test", ((t(2, 4, 2), "d_k-mismatch"), (t(3, 4, 3), "batch-mismatch")))
spec(conditioning.condition, lambda: {"test": t(2, 5, 3), "cs": t(2, 5, 3), "us": t(2, 5, 2), "norm": "layer"},
     tensors={"test": 2, "cs": 2, "us": 2}, reals=("alpha",), nonnegative=("eps",), options=("f", "g", "norm"))
CASES += each(conditioning.condition, "cs", ((t(2, 5, 4), "d_k-mismatch"),))
CASES += each(conditioning.condition, "us", ((t(2, 4, 2), "T-mismatch"),))
spec(conditioning.acquisition, lambda: {"test": t(4, 3), "cs": t(2, 5, 3), "us": t(2, 5, 2)},
     tensors={"test": 2, "cs": 2, "us": 2}, reals=("alpha",), nonnegative=("eps",), options=("f", "g", "norm"))
CASES += each(conditioning.acquisition, "test", ((t(4, 2), "d_k-mismatch"), (t(3, 4, 3), "batch-mismatch")))
CASES += each(conditioning.acquisition, "us", ((t(2, 4, 2), "n-mismatch"), (t(3, 5, 2), "batch-mismatch")))
spec(conditioning.ConditioningCircuit, lambda: {"W_Q": t(4, 3), "W_K": t(4, 3), "W_V": t(4, 2)},
     tensors={"W_Q": 2, "W_K": 2, "W_V": 2}, reals=("alpha",), nonnegative=("eps",), options=("f", "g", "norm"))
CASES += each(conditioning.ConditioningCircuit, "W_Q", ((t(1, 4, 3), "rank-3"),))
CASES += each(conditioning.ConditioningCircuit, "W_K", ((t(5, 3), "d_model-mismatch"), (t(4, 2), "d_k-mismatch")))
CASES += each(conditioning.ConditioningCircuit, "W_V", ((t(5, 2), "d_model-mismatch"),))
CIRCUIT_CALL = conditioning.ConditioningCircuit.__call__
spec(CIRCUIT_CALL, lambda: {"self": conditioning.ConditioningCircuit(t(4, 3), t(4, 3), t(4, 2)), "x": t(2, 5, 4)},
     tensors={"x": 2}, reference=False)
CASES += each(CIRCUIT_CALL, "x", ((t(2, 5, 3), "d_model-mismatch"),))
CASES += each(CIRCUIT_CALL, "y", ((t(2, 5, 3), "d_model-mismatch"), (t(2, 6, 4), "T-mismatch"),
                                  (t(2, 5, 4).to("meta"), "meta-device")))
CASES += each(CIRCUIT_CALL, "z", ((t(2, 6, 4), "T-mismatch"),))
spec(conditioning.response_strength, lambda: {"response": t(4, 2), "us": t(4, 2)}, tensors={"response": 1, "us": 1})
CASES += each(conditioning.response_strength, "us", ((t(4, 3), "d_v-mismatch"), (torch.zeros(2, **F64), "zero-vector")))
spec(conditioning.generalisation_tests,
     lambda: {"cs": t(2, 3), "similarity": [1.0, 0.5], "generator": runtime.generator(0, "cpu")}, tensors={"cs": 1})
CASES += each(conditioning.generalisation_tests, "cs", ((t(2, 1), "d-one"), (torch.zeros(2, 3, **F64), "zero-vector")))
CASES += each(conditioning.generalisation_tests, "similarity", (
    ([1.5], "above-one"), ([-1.5], "below-minus-one"), ([], "empty"), ([NAN], "nan"), (["a"], "str-entry"),
    (0.5, "number"), (t(2, 2), "matrix"), (torch.tensor([True]), "bool-tensor"),
    (torch.tensor([NAN], **F64), "nan-tensor")))
CASES += each(conditioning.generalisation_tests, "generator", (("abc", "str"), (0, "int")))
spec(conditioning.store_from_pairings, lambda: {"cs": t(3, 2), "us": t(2, 2), "counts": [[1, 0], [0, 2], [0, 0]]},
     tensors={"cs": 2, "us": 2}, reals=("alpha",), options=("f", "g"))
CASES += each(conditioning.store_from_pairings, "counts", (
    (torch.ones(3, 2, **F64), "float-tensor"), (torch.ones(3, 2, dtype=torch.bool), "bool-tensor"),
    ([[1, 0]], "too-few-rows"), ([[1], [0], [0]], "too-few-columns"), ([[-1, 0], [0, 0], [0, 0]], "negative"),
    ([[1.5, 0], [0, 0], [0, 0]], "float-entry"), ([[True, 0], [0, 0], [0, 0]], "bool-entry"), (3, "int"),
    ([[1, 0], 5, [0, 0]], "int-row"), ("abc", "str")))
CASES.append(bad(conditioning.store_from_pairings, {"counts": [[0, 0]] * 3, "alpha": NAN}, "alpha", "nan-no-pairing"))

# --- rules ---

RATES = {rules.hebbian: {"alpha": 0.5}, rules.decay: {"gamma": 0.9}, rules.delta: {"beta": 0.5},
         rules.delta_rectified: {"beta": 0.5},
         rules.gated_delta: {"gamma": 0.9, "beta": 0.5}, rules.oja: {"alpha": 0.1},
         rules.bcm: {"alpha": 0.1, "tau": 5.0}, rules.kalman: {"noise": 0.5, "drift": 0.1}}
for rule, rates in RATES.items():
    chunked = rule in (rules.hebbian, rules.decay, rules.delta, rules.gated_delta, rules.kalman)
    rate_names = [p for p in rates if p != "tau"]
    spec(rule, lambda rates=rates: {**qkv(), **rates}, tensors=QKV_DIMS, ints=("chunk_size",) if chunked else (),
         nonnegative=[p for p in rate_names if p != "gamma"], probabilities=[p for p in rate_names if p == "gamma"])
    CASES += sequence_rows(rule)
    for p in rate_names:
        steps = torch.full((2, 5), rates[p], **F64)         # one rate per step
        CASES += each(rule, p, ((steps[:, :4], "T-mismatch"), (torch.full((3, 5), rates[p], **F64), "batch-mismatch"),
                                (steps.to("meta"), "meta-device"), (steps.long(), "int64"), (steps.float(), "float32"),
                                (with_value(steps, NAN), "nan-step"), (-steps, "negative-steps")))
        if inspect.signature(rule).parameters[p].default is inspect.Parameter.empty:
            CASES += each(rule, p, ((MISSING, "missing"),))
    if not chunked:
        CASES += each(rule, "chunk_size", ((4, "recurrent-only"),))
    if rule not in (rules.bcm, rules.kalman):     # their states are pairs
        state = t(2, 3, 2)
        CASES += each(rule, "initial_state", (
            (state.tolist(), "list"), (t(2, 3, 3), "shape"), (t(3, 2), "no-batch"), (state.to("meta"), "meta-device"),
            (state.half(), "float16"), (with_value(state, NAN), "nan"), (state.long(), "int64")))
spec(rules.oja, VALID[rules.oja], options=("form",))
spec(rules.bcm, VALID[rules.bcm], reals=("tau",))
CASES += each(rules.bcm, "tau", ((0.5, "below-one"),))
STATE, THETA = t(2, 3, 2), torch.zeros(2, 2, **F64)
CASES += each(rules.bcm, "initial_state", (
    (STATE, "not-a-pair"), ((STATE,), "one-element"), ((t(2, 3, 3), THETA), "state-shape"),
    ((STATE, THETA - 1), "negative-theta"), ((STATE, THETA[0]), "theta-shape"),
    ((STATE, THETA.to("meta")), "theta-meta"), ((STATE, THETA.tolist()), "theta-list"),
    ((STATE, with_value(THETA, NAN)), "theta-nan")))
spec(rules.kalman, VALID[rules.kalman], positive=("prior",))
COV = torch.eye(3, **F64).expand(2, 3, 3)
CASES += each(rules.kalman, "noise", ((0.0, "zero"), (with_value(torch.full((2, 5), 0.5, **F64), 0.0), "zero-step")))
CASES += each(rules.kalman, "prior", ((torch.tensor(1.0, **F64), "tensor"),))
CASES += each(rules.kalman, "chunk_size", ((4, "with-drift"),))
CASES += each(rules.kalman, "initial_state", (
    (STATE, "not-a-pair"), ((STATE,), "one-element"), ((t(2, 3, 3), COV), "state-shape"), ((STATE, COV[0]), "P-shape"),
    ((STATE, COV.to("meta")), "P-meta"), ((STATE, COV.tolist()), "P-list"), ((STATE, with_value(COV, NAN)), "P-nan"),
    ((STATE, COV.float()), "P-float32")))
CASES.append(bad(rules.kalman, {"initial_state": (STATE, -COV), "drift": 0.0, "chunk_size": 2}, "initial_state",
                 "P-not-positive-definite"))
CASES += each(rules.kalman, "diagonal", (("yes", "string"), (1, "int")))
CASES.append(bad(rules.kalman, {"diagonal": True, "drift": 0.0, "chunk_size": 2}, "chunk_size", "diagonal"))
CASES.append(bad(rules.kalman, {"diagonal": True, "initial_state": (STATE, COV + 0.1)}, "initial_state",
                 "P-not-diagonal"))

# --- drift ---

spec(drift.concept_drift, lambda: {"rule": "delta", "n_pairs": 2, "d": 4, "epochs_before": 1, "epochs_after": 1,
                                   "trials": 2, "seed": 0, **F64, "beta": 1.0},
     ints=("n_pairs", "d", "epochs_before", "epochs_after", "trials"), nonnegative=("beta",), options=("rule",))
CASES += each(drift.concept_drift, "seed", ((-1, "negative"), (1.5, "float")))
CASES += each(drift.concept_drift, "dtype", ((torch.int64, "int64"),))
CASES += [bad(drift.concept_drift, {"beta": MISSING}, "beta", "missing"),
          bad(drift.concept_drift, {"rule": "hebbian"}, "beta", "foreign-parameter")]
spec(drift.isr_by_age, lambda: {"gamma": 0.9, "d": 4, "length": 6, "trials": 2, "ages": 3, "seed": 0, **F64},
     ints=("d", "length", "trials", "ages"), positive=("gamma",))
CASES += [bad(drift.isr_by_age, {"rule": "delta"}, "rule", "unknown"),
          bad(drift.isr_by_age, {"beta": 0.5}, "beta", "foreign-parameter"),
          bad(drift.isr_by_age, {"rule": "gated_delta"}, "beta", "missing"),
          bad(drift.isr_by_age, {"rule": "gated_delta", "beta": -0.5}, "beta", "negative")]
CASES += (each(drift.isr_by_age, "gamma", ((1.5, "above-one"),))
          + each(drift.isr_by_age, "ages", ((7, "above-length"),))
          + each(drift.isr_by_age, "seed", ((-1, "negative"),))
          + each(drift.isr_by_age, "dtype", ((torch.int64, "int64"),)))
spec(drift.Drift.recovery, lambda: {"self": drift.Drift(t(2, 3).abs(), t(2, 3).abs(), 1, 0), "fraction": 0.9},
     probabilities=("fraction",))
CASES += each(drift.Drift.recovery, "fraction", ((0.0, "zero"),))

# --- stores ---


def memories() -> dict:
    return {"keys": t(2, 5, 3), "values": t(2, 5, 2)}


MEMORY_DIMS = {"keys": 2, "values": 2}


def memory_rows(fn) -> list:
    return each(fn, "values", ((t(2, 4, 2), "n-mismatch"), (t(3, 5, 2), "batch-mismatch")))


for store in (stores.HebbianStore, stores.LeastSquaresStore):
    spec(store, memories, tensors=MEMORY_DIMS)
    CASES += memory_rows(store)
for store in (stores.KernelStore, stores.ReluStore, stores.SquaredReluStore):
    spec(store, lambda: {**memories(), "chunk_size": 2}, tensors=MEMORY_DIMS, ints=("chunk_size",))
    CASES += memory_rows(store)
spec(stores.PolynomialStore, lambda: {**memories(), "degree": 2}, tensors=MEMORY_DIMS, ints=("degree", "chunk_size"))
CASES += memory_rows(stores.PolynomialStore) + each(stores.PolynomialStore, "degree", ((MISSING, "missing"),))
spec(stores.SoftmaxStore, lambda: {**memories(), "beta": 2.0}, tensors=MEMORY_DIMS, ints=("chunk_size",),
     positive=("beta",))
CASES += memory_rows(stores.SoftmaxStore)
spec(stores.RidgeStore, lambda: {**memories(), "lam": 0.5}, tensors=MEMORY_DIMS, positive=("lam",))
CASES += memory_rows(stores.RidgeStore) + each(stores.RidgeStore, "lam", ((MISSING, "missing"),))


def read_rows(fn, store, targets: bool = True) -> list:
    """A store's read with queries and targets that do not fit it."""
    spec(fn, lambda: {"self": store(**memories()), "queries": t(2, 4, 3),
                      **({"targets": torch.zeros(2, 4, **LONG)} if targets else {})},
         tensors={"queries": 2}, reference=False)
    rows = each(fn, "queries", ((t(2, 4, 2), "d_k-mismatch"),))
    if targets:
        rows += each(fn, "targets", (
            (torch.zeros(2, 4, **F64), "float"), ([[0] * 4] * 2, "list"), (None, "none"),
            (torch.zeros(2, 3, **LONG), "shape"), (torch.full((2, 4), 5, **LONG), "out-of-range"),
            (torch.full((2, 4), -1, **LONG), "negative")))
    return rows


CASES += read_rows(stores.HebbianStore.read, stores.HebbianStore)
CASES += read_rows(stores.KernelStore.read, stores.ReluStore)
CASES += read_rows(stores.SoftmaxStore.read, stores.SoftmaxStore)
CASES += read_rows(stores.KernelStore.strongest, stores.SquaredReluStore, targets=False)
spec(stores.MatrixStore, lambda: {"matrix": t(2, 3, 2), "keys": t(2, 2, 3), "values": t(2, 2, 2)},
     tensors={"keys": 2, "values": 2, "matrix": 2})
CASES += (each(stores.MatrixStore, "matrix", ((t(2, 2, 2), "d_k-mismatch"), (t(2, 3, 3), "d_v-mismatch")))
          + each(stores.MatrixStore, "values", ((t(2, 3, 2), "n-mismatch"),)))
CASES.append(bad(stores.MatrixStore, {"keys": t(2, 3, 3), "values": t(2, 3, 2)}, "values", "more-than-d_v"))
spec(stores.MatrixStore.read, lambda: {"self": stores.MatrixStore(t(2, 3, 2), t(2, 2, 3), t(2, 2, 2)),
                                       "queries": t(2, 4, 3), "targets": torch.zeros(2, 4, **LONG)},
     tensors={"queries": 2}, reference=False)
CASES += each(stores.MatrixStore.read, "queries", ((t(2, 4, 2), "d_k-mismatch"),))
CASES += each(stores.MatrixStore.read, "targets", ((torch.zeros(2, 4, **F64), "float"),
                                                   (torch.full((2, 4), 2, **LONG), "out-of-range")))
spec(stores.chunk_length, lambda: {"n_memories": 10, "rows": 4, "chunk_size": 3},
     ints=("n_memories", "rows", "chunk_size"))
spec(stores.trial_blocks, lambda: {"trials": 5, "trial_elements": 10, "budget": 100},
     ints=("trials", "trial_elements", "budget"))
spec(stores.build, lambda: {"store": "softmax", **memories(), "beta": 2.0}, tensors=MEMORY_DIMS, positive=("beta",),
     options=("store",))
CASES += [bad(stores.build, {"foo": 1}, "foo", "unknown-parameter"),
          bad(stores.build, {"store": "hebbian"}, "beta", "foreign-parameter")]
spec(stores.random_memories, lambda: {"trials": 2, "n_memories": 3, "d_key": 4, "d_value": 2, "keys": "sphere",
                                      "seed": 0, **F64},
     ints=("trials", "n_memories", "d_key", "d_value"), options=("keys",))
CASES += each(stores.random_memories, "seed", ((-1, "negative"), (MISSING, "missing")))
CASES += each(stores.random_memories, "dtype", ((torch.int64, "int64"),))
spec(stores.interference_to_signal, lambda: {"memory": stores.HebbianStore(**memories()), "n_queries": 3},
     ints=("n_queries",), nonnegative=("query_noise",))
CASES += each(stores.interference_to_signal, "candidates", ((t(2, 4, 2), "fewer-than-stored"), (t(2, 9, 2), "other-values"),
                                                           ([1.0], "list")))
spec(stores.linear_read_isr, lambda: {"keys": t(2, 5, 3), "read": t(2, 3, 5)})
CASES += each(stores.linear_read_isr, "keys", (([1.0, 2.0], "list"), (t(3), "one-dimensional")))
CASES += each(stores.linear_read_isr, "read", ((t(2, 5, 3), "transposed"), ([1.0], "list")))
spec(stores.optimal_linear_read, lambda: {"keys": t(2, 5, 3)}, ints=("steps",))
CASES += each(stores.optimal_linear_read, "keys", ((torch.ones(5, 3, dtype=torch.int64), "int64"),))
spec(stores.noisy_cues, lambda: {"keys": t(2, 5, 3), "sigma": 0.5}, nonnegative=("sigma",))
CASES += each(stores.noisy_cues, "keys", (([1.0, 2.0], "list"), (torch.ones(3, dtype=torch.int64), "int64")))
CASES += each(stores.noisy_cues, "renormalise", (("yes", "str"), (1, "int")))
CASES += each(stores.interference_to_signal, "n_queries", ((6, "above-n_memories"),))
CASES += each(stores.interference_to_signal, "memory", ((t(2, 5, 3), "tensor"), ("hebbian", "name")))
CASES += [bad(stores.interference_to_signal, {"n_queries": MISSING, "queries": t(2, 2)}, "queries", "no-batch"),
          bad(stores.interference_to_signal, {"n_queries": MISSING, "queries": t(2, 6, 3)}, "queries", "above-n"),
          bad(stores.interference_to_signal, {"n_queries": MISSING, "queries": t(2, 2, 4)}, "queries", "d_k"),
          bad(stores.interference_to_signal, {"queries": t(2, 2, 3)}, "queries", "with-n_queries")]
spec(stores.measure_isr, lambda: {"store": "hebbian", "d_key": 4, "n_memories": 3, "trials": 2, "seed": 0, **F64},
     ints=("d_key", "n_memories", "trials", "n_queries", "d_value"), options=("store", "keys"),
     nonnegative=("query_noise",))
CASES += (each(stores.measure_isr, "trials", ((1, "one-trial"),))
          + each(stores.measure_isr, "n_queries", ((4, "above-n_memories"),))
          + each(stores.measure_isr, "seed", ((-1, "negative"),))
          + each(stores.measure_isr, "dtype", ((torch.int64, "int64"),))
          + each(stores.measure_isr, "renormalise_cues", (("no", "str"),)))
CASES += [bad(stores.measure_isr, {"store": "softmax", "beta": -1.0}, "beta", "negative"),
          bad(stores.measure_isr, {"foo": 1}, "foo", "unknown-parameter")]
spec(stores.measure_capacity, lambda: {"store": "hebbian", "d_key": 4, "around": 6.0, "trials": 2, "seed": 0, **F64},
     positive=("around", "spread", "threshold"), ints=("d_key", "n_queries"), options=("store",))
CASES += (each(stores.measure_capacity, "spread", ((1.0, "one"),))
          + each(stores.measure_capacity, "trials", ((1, "one-trial"),))
          + each(stores.measure_capacity, "seed", ((-1, "negative"),)))
CASES += each(stores.erase, "store", (("linear", "unknown"),))
CASES.append(bad(stores.erase, {"rule": "kalman", "store": "hebbian"}, "store", "kalman-on-hebbian"))
CASES.append(bad(stores.erase, {"rule": "downdate", "store": "hebbian"}, "store", "downdate-on-hebbian"))
spec(theory.hebbian_erasure, lambda: {"rule": "delta_zero", "d_key": 4, "n_memories": 3, "beta": 0.5, "steps": 2},
     ints=("d_key", "n_memories", "steps"), nonnegative=("beta",), options=("rule",))
CASES += [bad(theory.hebbian_erasure, {"n_memories": 1}, "n_memories", "one"),
          bad(theory.hebbian_erasure, {"rule": "retrain"}, "beta", "foreign-parameter")]
spec(stores.erase, lambda: {"rule": "delta_zero", "d_key": 4, "n_memories": 3, "trials": 2, "seed": 0, **F64},
     ints=("d_key", "n_memories", "trials"), options=("rule",))
CASES += (each(stores.erase, "n_memories", ((1, "one"),)) + each(stores.erase, "trials", ((1, "one-trial"),))
          + each(stores.erase, "target", ((3, "above-n_memories"), (-1, "negative"), (1.5, "float"), (True, "bool")))
          + each(stores.erase, "overlap", ((0.0, "zero"), (1.0, "one"), (NAN, "nan"), ("0.3", "str")))
          + each(stores.erase, "seed", ((-1, "negative"),)) + each(stores.erase, "dtype", ((torch.int64, "int64"),)))
CASES += [bad(stores.erase, {"d_key": 1, "overlap": 0.3}, "d_key", "one-with-overlap"),
          bad(stores.erase, {"alpha": 1.0}, "alpha", "foreign-parameter"),
          bad(stores.erase, {"foo": 1}, "foo", "unknown-parameter"),
          bad(stores.erase, {"beta": -0.5}, "beta", "negative"), bad(stores.erase, {"beta": NAN}, "beta", "nan"),
          bad(stores.erase, {"steps": 0}, "steps", "zero"), bad(stores.erase, {"steps": 1.5}, "steps", "float"),
          bad(stores.erase, {"rule": "anti_hebbian", "alpha": -1.0}, "alpha", "negative"),
          bad(stores.erase, {"rule": "kalman", "noise": 0.0}, "noise", "zero"),
          bad(stores.erase, {"rule": "kalman", "ridge": -1.0}, "ridge", "negative"),
          bad(stores.erase, {"rule": "kalman", "ridge": INF}, "ridge", "inf")]

# --- stacking ---


def weights() -> dict:
    return {"W_Q": t(2, 2, 6, 3), "W_K": t(2, 2, 6, 3), "W_V": t(2, 2, 6, 3), "W_O": t(2, 2, 3, 6)}


STACK = stacking.ConditioningStack
spec(STACK, weights, tensors={"W_Q": 4, "W_K": 4, "W_V": 4, "W_O": 4}, nonnegative=("eps",),
     options=("feature_map", "norm"))
CASES += (each(STACK, "W_Q", ((t(1, 2, 2, 6, 3), "rank-5"),)) + each(STACK, "W_K", ((t(2, 2, 6, 4), "shape-mismatch"),))
          + each(STACK, "W_V", ((t(2, 2, 5, 3), "d_model-mismatch"), (t(2, 1, 6, 3), "heads-mismatch")))
          + each(STACK, "W_O", ((t(2, 2, 3, 5), "d_model-mismatch"), (t(2, 2, 4, 6), "d_v-mismatch"))))
spec(STACK.random, lambda: {"layers": 2, "heads": 2, "d_model": 6, "d_k": 3, "generator": runtime.generator(0, "cpu"),
                            **F64},
     ints=("layers", "heads", "d_model", "d_k", "d_v"), nonnegative=("eps",), options=("norm", "feature_map"))
CASES += [bad(STACK.random, {"generator": "abc"}, "generator", "str"),
          bad(STACK.random, {"device": "meta"}, "generator", "other-device"),
          bad(STACK.random, {"dtype": torch.int64}, "dtype", "int64")]
for method in (STACK.head_responses, STACK.layer):
    spec(method, lambda: {"self": STACK(**weights()), "x": t(2, 5, 6), "layer": 0}, tensors={"x": 2},
         reference=False)
    CASES += each(method, "x", ((t(2, 5, 5), "d_model-mismatch"),))
    CASES += each(method, "layer", ((2, "out-of-range"), (-1, "negative"), (0.0, "float"), (True, "bool"),
                                    ("0", "str")))
spec(STACK.__call__, lambda: {"self": STACK(**weights()), "x": t(2, 5, 6)}, tensors={"x": 2}, reference=False)
CASES += each(STACK.__call__, "x", ((t(2, 5, 5), "d_model-mismatch"),))


def chain() -> dict:
    return {"codes": stacking.chain_codes(2, 3, 4, heads=2, layers=2, seed=0, **F64), "start": torch.zeros(2, **LONG)}


def code_rows(fn) -> list:
    """Codes without a key and a value per hop, or with a dimension too many."""
    return each(fn, "codes", ((chain()["codes"][:, :, :1], "one-role"), (chain()["codes"][None], "rank-7")))


def chain_rows(fn) -> list:
    """Codes and start items that do not make a chain."""
    return code_rows(fn) + each(fn, "start", (
        (torch.zeros(2, **F64), "float"), ([0, 0], "list"), (None, "none"), (torch.zeros(3, **LONG), "batch-mismatch"),
        (torch.zeros(2, 1, **LONG), "rank-2"), (torch.zeros(2, **LONG).to("meta"), "meta-device"),
        (torch.full((2,), 3, **LONG), "out-of-range"), (torch.full((2,), -1, **LONG), "negative")))


spec(stacking.run_chain, chain, tensors={"codes": 6}, options=("readout",))
CASES += chain_rows(stacking.run_chain)
spec(stacking.reference_chain, chain, tensors={"codes": 6}, options=("readout",))
CASES += chain_rows(stacking.reference_chain)
spec(stacking.chain_sequence, chain, tensors={"codes": 6})
CASES += chain_rows(stacking.chain_sequence)
spec(stacking.chain_stack, lambda: {"codes": chain()["codes"]}, tensors={"codes": 6})
CASES += code_rows(stacking.chain_stack)
spec(stacking.chain_codes, lambda: {"trials": 2, "n_memories": 3, "d_key": 4, "heads": 2, "layers": 2, "seed": 0,
                                    **F64},
     ints=("trials", "n_memories", "d_key", "heads", "layers"))
CASES += [bad(stacking.chain_codes, {"generator": runtime.generator(0, "cpu")}, "seed", "seed-and-generator"),
          bad(stacking.chain_codes, {"seed": None}, "seed", "neither"),
          bad(stacking.chain_codes, {"seed": None, "generator": "abc"}, "generator", "str"),
          bad(stacking.chain_codes, {"seed": -1}, "seed", "negative"),
          bad(stacking.chain_codes, {"dtype": torch.int64}, "dtype", "int64")]
spec(stacking.measure_chain, lambda: {"n_memories": 3, "d_key": 4, "heads": 2, "layers": 2, "trials": 2, "seed": 0,
                                      **F64},
     ints=("n_memories", "d_key", "heads", "layers", "trials"), options=("readout",))
CASES += (each(stacking.measure_chain, "d_key", ((1, "one"),))
          + each(stacking.measure_chain, "trials", ((1, "one-trial"),))
          + each(stacking.measure_chain, "seed", ((-1, "negative"),))
          + each(stacking.measure_chain, "dtype", ((torch.int64, "int64"),))
          + each(stacking.measure_chain, "cleanup", ((1, "int"), ("no", "str"))))
CASES += [bad(stacking.measure_chain, {"cleanup": False, "n_memories": 5}, "n_memories", "above-d_key-without-cleanup"),
          bad(stacking.measure_chain, {"cleanup": False, "readout": "any"}, "readout", "any-without-cleanup")]
FAILED = torch.zeros(2, 2, 2, dtype=torch.bool)
spec(stacking.ChainMeasurement.chain_error,
     lambda: {"self": stacking.ChainMeasurement(FAILED, FAILED[..., 0], "sum", 0), "layers": 1}, ints=("layers",))
CASES += each(stacking.ChainMeasurement.chain_error, "layers", ((3, "above-measured"),))
spec(stacking.head_margins, lambda: {"n_memories": 3, "d_key": 4, "trials": 2, "seed": 0, **F64},
     ints=("n_memories", "d_key", "trials"))
CASES += each(stacking.head_margins, "n_memories", ((1, "one"),))
CASES += each(stacking.head_margins, "seed", ((-1, "negative"), (MISSING, "missing")))
spec(stacking.cramer_rate, lambda: {"margins": t(4, 3) + 1.0, "iterations": 10}, tensors={"margins": 2},
     ints=("iterations",))
CASES += each(stacking.cramer_rate, "margins", ((t(2, 4, 3), "rank-3"), (t(1, 3), "one-trial"),
                                                (t(4, 3).abs() - 2.0 * t(4, 3).abs().max(), "negative-mean")))

# --- theory ---

spec(theory.sphere_overlap_moments, lambda: {"d": 4}, ints=("d",))
spec(theory.acquisition_moments,
     lambda: {"n": 3.0, "alpha": 0.5, "d": 4, "sigma": 0.1, "test_sigma": 0.1, "cs_sq_norm": 1.0},
     nonnegative=("n", "sigma", "test_sigma", "cs_sq_norm"), reals=("alpha",), ints=("d",))
spec(theory.normalised_strength, lambda: {"d_v": 4, "us_norm": 1.0}, ints=("d_v",), positive=("us_norm",))
spec(theory.generalisation_moments,
     lambda: {"c": 0.5, "alpha": 1.0, "d": 4, "trained": 1, "same_us": [1], "other_us": [2]},
     reals=("alpha",), ints=("d",))
CASES += each(theory.generalisation_moments, "c", ((1.5, "above-one"), (-1.5, "below-minus-one"), (NAN, "nan"),
                                                   ("x", "str")))
CASES += each(theory.generalisation_moments, "trained", ((-1, "negative"), (1.5, "float"), (True, "bool")))
for p in ("same_us", "other_us"):
    CASES += each(theory.generalisation_moments, p, (([-1], "negative"), ([NAN], "nan"), (["1"], "str-entry"),
                                                     (3, "int")))
spec(theory.attention_cost, lambda: {"form": "chunkwise", "T": 10, "d_k": 4, "d_v": 4, "chunk_size": 3},
     ints=("T", "d_k", "d_v", "chunk_size"), options=("form",))
spec(theory.norm_rescaling_change, lambda: {"scale": 2.0, "eps": 1e-6, "mean_square": 1.0},
     positive=("scale", "mean_square"), nonnegative=("eps",))
spec(theory.rounding_scale, lambda: {"depth": 10, "precision": "float32"}, ints=("depth",), options=("precision",))
CASES += each(theory.rounding_scale, "precision", ((torch.int64, "int64"),))
STORE_NAMES = {"options": ("store", "keys"), "ints": ("d_key", "n_memories")}
spec(theory.isr, lambda: {"store": "softmax", "d_key": 4, "n_memories": 3, "beta": 2.0}, positive=("beta",),
     **STORE_NAMES)
CASES += [bad(theory.isr, {"store": "polynomial", "beta": MISSING}, "degree", "missing"),
          bad(theory.isr, {"store": "polynomial", "beta": MISSING, "degree": 0}, "degree", "zero"),
          bad(theory.isr, {"store": "hebbian"}, "beta", "foreign-parameter")]
spec(theory.isr_variance, lambda: {"store": "hebbian", "d_key": 4, "n_memories": 3}, **STORE_NAMES)
CASES += each(theory.isr_variance, "store", (("softmax", "no-variance"),))
spec(theory.capacity, lambda: {"store": "softmax", "d_key": 4, "beta": 2.0}, positive=("threshold", "beta"),
     options=("store", "keys"), ints=("d_key",))
spec(theory.linear_isr_bound, lambda: {"d_key": 4, "n_memories": 8}, ints=("d_key", "n_memories"))
spec(theory.softmax_moment_limit, lambda: {"d_key": 8, "moment": 2}, ints=("d_key", "moment"))
spec(theory.isr_crossing, lambda: {"store": "softmax", "d_key": 4, "beta": 2.0}, positive=("beta",),
     options=("store", "keys"), ints=("d_key",))
CASES += each(theory.isr_crossing, "store", (("least_squares", "not-linear"),))
spec(theory.all_within_probability, lambda: {"store": "hebbian", "d_key": 8, "n_memories": 3},
     positive=("threshold",), options=("store", "keys", "method"), ints=("d_key", "n_memories"))
spec(theory.worst_case_capacity, lambda: {"store": "hebbian", "d_key": 8, "delta": 0.1, "method": "markov"},
     probabilities=("delta",), positive=("threshold",), options=("store", "keys", "method"), ints=("d_key",))
CASES += each(theory.worst_case_capacity, "delta", ((0.0, "zero"), (1.0, "one")))
spec(theory.hebbian_decoding_accuracy, lambda: {"d_key": 8, "n_memories": 3}, ints=("d_key", "n_memories"))
spec(theory.recall_accuracy, lambda: {"n_memories": 3, "key_overlap": 0.1, "value_overlap": 0.1, "n_values": 5},
     ints=("n_memories", "n_values"), probabilities=("key_overlap", "value_overlap"))
CASES += each(theory.recall_accuracy, "key_overlap", ((0.0, "zero"),))
CASES += each(theory.recall_accuracy, "n_values", ((2, "below-n_memories"),))
spec(theory.welch_bound, lambda: {"n_vectors": 8, "dim": 4}, ints=("n_vectors", "dim"))
spec(theory.hebbian_accuracy_capacity, lambda: {"d_key": 8, "accuracy": 0.9}, ints=("d_key",),
     probabilities=("accuracy",))
CASES += each(theory.hebbian_accuracy_capacity, "accuracy", ((0.0, "zero"), (1.0, "one")))
spec(theory.sphere_overlap_moment, lambda: {"d": 4, "p": 2}, ints=("d", "p"))
spec(theory.log_sphere_overlap_mgf, lambda: {"d": 4, "t": 2.0}, ints=("d",), reals=("t",))
spec(theory.gaussian_overlap_isr, lambda: {"store": "softmax", "d_key": 8, "n_memories": 3, "beta": 2.0},
     options=("store",), ints=("d_key", "n_memories"), positive=("beta",))
CASES.append(bad(theory.gaussian_overlap_isr, {"store": "polynomial", "beta": MISSING}, "degree", "missing"))
spec(theory.target_wins_probability, lambda: {"d_key": 8, "n_memories": 3, "keys": "gaussian"},
     ints=("d_key", "n_memories"), options=("keys",))
spec(theory.softmax_beta_for_isr, lambda: {"d_key": 8, "n_memories": 5, "target_isr": 1.0},
     ints=("d_key", "n_memories"), positive=("target_isr",), options=("keys",))
for fn in (theory.logn_scaled_beta, theory.yarn_scaled_beta):
    spec(fn, lambda: {"beta": 2.0, "n": 64, "n_train": 16}, positive=("beta",), ints=("n", "n_train"))
CASES += each(theory.logn_scaled_beta, "n_train", ((1, "one"),))
for fn in (theory.stacked_error, theory.stacked_error_bound):   # the bound alone takes n / d_k > 1
    spec(fn, lambda: {"head_failure": 0.1, "heads": 2, "layers": 3}, ints=("heads", "layers"),
         **{"probabilities" if fn is theory.stacked_error else "nonnegative": ("head_failure",)})
spec(theory.source_error_bound, lambda: {"n_memories": 3, "d_key": 8, "heads": 2, "layers": 3},
     ints=("n_memories", "d_key", "heads", "layers"))
spec(theory.bound_optimal_heads, lambda: {"width": 16, "n_memories": 3}, ints=("width", "n_memories"))
spec(theory.decay_isr, lambda: {"age": 2, "gamma": 0.9, "d": 8, "length": 10}, probabilities=("gamma",),
     ints=("d", "length"))
CASES += each(theory.decay_isr, "age", ((-1, "negative"), (1.5, "float"), (True, "bool"), ("2", "str")))
CASES += [bad(theory.decay_isr, {"gamma": 0.0}, "gamma", "zero"),
          bad(theory.decay_isr, {"gamma": 1.0, "length": None}, "length", "endless-hebbian")]
spec(theory.decay_horizon, lambda: {"gamma": 0.9, "d": 8, "length": 10}, probabilities=("gamma",), ints=("d", "length"))
CASES += each(theory.decay_horizon, "gamma", ((1.0, "one"), (0.0, "zero")))
spec(theory.optimal_decay, lambda: {"d": 8}, ints=("d",))
CASES += each(theory.optimal_decay, "exact", (("yes", "string"), (1, "int")))
CASES += each(theory.optimal_decay, "threshold", ((0.0, "zero"), (-1.0, "negative"), (NAN, "nan")))
CASES += each(theory.decay_horizon, "threshold", ((0.0, "zero"), (INF, "inf")))
spec(theory.hebbian_drift, lambda: {"epochs_old": 3, "epochs_new": 4, "n_pairs": 2, "d": 8},
     nonnegative=("epochs_old", "epochs_new"), ints=("n_pairs", "d"))
spec(theory.oja_repeated_pair, lambda: {"k": t(3), "v": t(2), "alpha": 0.1, "steps": 5},
     tensors={"k": 1, "v": 1}, positive=("alpha",), options=("form",))
CASES += each(theory.oja_repeated_pair, "k", ((t(2, 3), "matrix"),)) + each(theory.oja_repeated_pair, "v",
                                                                           ((t(2, 2), "matrix"),))
CASES += each(theory.oja_repeated_pair, "steps", ((-1, "negative"), (1.5, "float"), ("5", "str")))
spec(theory.stream_signal, lambda: {"age": 2, "gamma": 0.9, "d": 8, "beta": 0.5}, probabilities=("gamma",),
     ints=("d",), positive=("beta",))
CASES += each(theory.stream_signal, "age", ((-1, "negative"), (1.5, "float"))) + each(theory.stream_signal, "beta",
                                                                                     ((2.5, "above-two"),))
spec(theory.delta_isr, lambda: {"age": 2, "d": 8}, ints=("d",))
CASES += each(theory.delta_isr, "d", ((1, "one"),)) + each(theory.delta_isr, "age", ((-1, "negative"),))
spec(theory.delta_horizon, lambda: {"d": 8}, ints=("d",))
CASES += each(theory.delta_horizon, "d", ((1, "one"),))
spec(theory.oja_fixed_point, lambda: {"keys": t(3, 4), "values": t(3, 2), "alpha": 0.1, "steps": 5},
     tensors={"keys": 2, "values": 2}, positive=("alpha",), options=("form",))
CASES += each(theory.oja_fixed_point, "steps", ((-1, "negative"), (1.5, "float")))
spec(theory.key_overlap_moments, lambda: {"d_key": 4, "overlap": 0.3}, ints=("d_key",))
CASES += each(theory.key_overlap_moments, "overlap", ((0.0, "zero"), (1.0, "one"), (NAN, "nan"), ("0.3", "str")))
CASES.append(bad(theory.key_overlap_moments, {"d_key": 1}, "d_key", "one-with-overlap"))
spec(theory.noisy_cue_gain, lambda: {"d_key": 4, "sigma": 0.5, "store": "softmax", "beta": 2.0},
     ints=("d_key",), nonnegative=("sigma",), positive=("beta",), options=("store",))
CASES += [bad(theory.noisy_cue_gain, {"store": "polynomial", "beta": MISSING}, "degree", "missing"),
          bad(theory.noisy_cue_gain, {"store": "polynomial", "beta": MISSING, "degree": 0}, "degree", "zero"),
          bad(theory.noisy_cue_gain, {"store": "hebbian"}, "beta", "foreign-parameter"),
          bad(theory.noisy_cue_gain, {"d_key": 1}, "d_key", "one-for-softmax")]
spec(theory.noisy_cue_isr, lambda: {"store": "softmax", "d_key": 4, "n_memories": 3, "sigma": 0.5, "beta": 2.0},
     ints=("d_key", "n_memories"), nonnegative=("sigma",), positive=("beta",), options=("store",))
CASES += [bad(theory.noisy_cue_isr, {"store": "least_squares", "beta": MISSING, "d_key": 8, "n_memories": 7},
              "n_memories", "near-d_key"),
          bad(theory.noisy_cue_isr, {"store": "least_squares", "d_key": 8}, "beta", "foreign-parameter")]
spec(theory.nearest_key_accuracy, lambda: {"d_key": 4, "n_memories": 3, "sigma": 0.5}, ints=("d_key", "n_memories"),
     nonnegative=("sigma",))
CASES.append(bad(theory.nearest_key_accuracy, {"d_key": 2}, "d_key", "two"))
spec(theory.bayes_temperature, lambda: {"d_key": 4, "sigma": 0.5}, ints=("d_key",), positive=("sigma",))
CASES += each(theory.bayes_temperature, "renormalised", (("yes", "str"), (None, "none")))
spec(theory.matched_ridge, lambda: {"d_key": 4, "n_memories": 3, "sigma": 0.5}, ints=("d_key", "n_memories"),
     positive=("sigma",))
spec(theory.linear_read_mse, lambda: {"store": "hebbian", "d_key": 8, "n_memories": 3, "sigma": 0.5},
     ints=("d_key", "n_memories"), nonnegative=("sigma",), options=("store",))
CASES.append(bad(theory.linear_read_mse, {"store": "least_squares", "n_memories": 7}, "n_memories", "near-d_key"))
spec(theory.basin_radius, lambda: {"d_key": 4, "n_memories": 3, "delta": 0.1}, ints=("d_key", "n_memories"),
     probabilities=("delta",))
CASES += each(theory.basin_radius, "delta", ((0.0, "zero"), (1.0, "one"), (0.7, "below-chance")))
spec(theory.hopfield_retrieval_overlap, lambda: {"load": 0.1}, nonnegative=("load",))
spec(theory.hopfield_stable_fraction, lambda: {"n_neurons": 10, "n_patterns": 3}, ints=("n_neurons", "n_patterns"))
spec(theory.hopfield_bit_flip, lambda: {"n_neurons": 10, "n_patterns": 3}, ints=("n_neurons", "n_patterns"))
for fn in (theory.rescorla_wagner_index, theory.least_squares_index):
    spec(fn, lambda: {"name": "blocking", "n": 5}, ints=("n",), options=("name",))
CASES += each(theory.rescorla_wagner_index, "beta", ((0.0, "zero"), (0.5, "half"), (NAN, "nan"), ("0.2", "str")))
CASES += each(theory.least_squares_index, "ridge", ((0.0, "zero"), (-1.0, "negative"), (INF, "inf")))
spec(theory.modern_retrieval_weight, lambda: {"n_patterns": 64, "d": 32, "beta": 8.0}, ints=("n_patterns", "d"),
     positive=("beta",))
CASES += each(theory.modern_retrieval_weight, "n_patterns", ((1, "one"),))
spec(theory.modern_critical_beta, lambda: {"n_patterns": 64, "d": 32}, ints=("n_patterns", "d"))
for fn in (theory.erasure_residual, theory.erasure_damage, theory.erasure_change):
    spec(fn, lambda: {"rule": "delta_zero", "d_key": 4, "n_memories": 3, "overlap": 0.3, "beta": 0.5, "steps": 2},
         ints=("d_key", "n_memories", "steps"), nonnegative=("beta",), options=("rule",))
    CASES += each(fn, "n_memories", ((1, "one"),)) + each(fn, "overlap", ((1.0, "one"), (0.0, "zero")))
    CASES += [bad(fn, {"rule": "kalman", "beta": MISSING, "n_memories": 5}, "n_memories", "beyond-d_key"),
              bad(fn, {"rule": "kalman", "beta": MISSING, "noise": -1.0}, "noise", "negative"),
              bad(fn, {"rule": "anti_hebbian", "beta": MISSING, "steps": MISSING, "alpha": -1.0}, "alpha", "negative"),
              bad(fn, {"foo": 1}, "foo", "unknown-parameter"),
              bad(fn, {"rule": "kalman", "beta": MISSING, "ridge": 0.0}, "ridge", "foreign-parameter")]
CASES.append(bad(theory.erasure_change, {"n_memories": 5}, "n_memories", "beyond-d_key-delta"))
spec(theory.gated_blocking_index, lambda: {"gamma": 0.95, "beta": 0.2, "n": 30}, ints=("n",), probabilities=("gamma",))
CASES += each(theory.gated_blocking_index, "beta", ((0.5, "half"), (0.0, "zero"), (NAN, "nan")))
CASES += each(theory.gated_blocking_index, "gamma", ((0.0, "zero"),))
spec(theory.downdate_gap, lambda: {"d_key": 4, "n_memories": 6, "overlap": 0.3}, ints=("d_key", "n_memories"))
CASES += each(theory.downdate_gap, "n_memories", ((1, "one"),)) + each(theory.downdate_gap, "overlap", ((1.0, "one"),))
for fn in (theory.retrieval_bits, theory.bits_per_number):
    spec(fn, lambda: {"store": "softmax", "d_key": 4, "n_memories": 3, "d_value": 2, "beta": 2.0}, positive=("beta",),
         options=("store", "keys"), ints=("d_key", "n_memories", "d_value"))
    CASES += [bad(fn, {"store": "polynomial", "beta": MISSING}, "degree", "missing"),
              bad(fn, {"store": "hebbian"}, "beta", "foreign-parameter")]
spec(theory.stored_numbers, lambda: {"store": "softmax", "d_key": 4, "n_memories": 3, "d_value": 2},
     options=("store",), ints=("d_key", "n_memories", "d_value"))
spec(theory.optimal_load, lambda: {"store": "softmax", "d_key": 4, "d_value": 2, "n_max": 64, "beta": 2.0},
     positive=("beta",), options=("store", "keys"), ints=("d_key", "d_value", "n_max"))
CASES += [bad(theory.optimal_load, {"n_max": 1}, "n_max", "one"),
          bad(theory.optimal_load, {"store": "least_squares", "beta": MISSING, "n_max": 4}, "n_max", "noiseless"),
          bad(theory.optimal_load, {"store": "polynomial", "beta": MISSING}, "degree", "missing"),
          bad(theory.optimal_load, {"store": "hebbian"}, "beta", "foreign-parameter")]

# --- phenomena ---


def cs_ab() -> dict:
    return phenomena.stimuli("AB", 2, **F64)


DESIGNS = ((5, "int"), ("2 A", "no-us"), ("0 A+", "zero-trials"), ("", "empty"), ("2 a+", "lower-case"),
           ("2 A+ |", "empty-phase"), ("A+", "no-count"), ("2 (A+ AX-)", "no-comma"))
SALIENCES = (({"A": 0.0}, "zero"), ({"A": -1.0}, "negative"), ({"A": NAN}, "nan"), ({"A": INF}, "inf"),
             ({"A": "1"}, "str"), ([2.0], "list"), (2.0, "number"))


def stimulus_rows(fn) -> list:
    """Conditioned stimuli that are not one kind of vector."""
    a = cs_ab()["A"]
    return each(fn, "cs", (
        ({"A": a}, "missing-letter"), ([a, a], "list"), ({"A": a.tolist(), "B": a.tolist()}, "list-vectors"),
        ({"A": a, "B": t(3)}, "dimension-mismatch"), ({"A": a, "B": with_value(a, NAN)}, "nan"),
        ({"A": a.long(), "B": a.long()}, "int64"), ({"A": a, "B": a.to("meta")}, "meta-device"),
        ({"A": a, "B": a.half()}, "float16"), ({"A": t(2, 2), "B": t(2, 2)}, "matrices")))


spec(phenomena.parse_design, lambda: {"design": "2 A+ | 1 (A+, AX-)"})
CASES += each(phenomena.parse_design, "design", DESIGNS)
spec(phenomena.stimuli, lambda: {"letters": "AB", "d_key": 3, "salience": {"A": 2.0}, "seed": 0, **F64},
     ints=("d_key",))
CASES += [bad(phenomena.stimuli, {"letters": "ABCD"}, "d_key", "too-many-letters")]
CASES += each(phenomena.stimuli, "letters", ((5, "int"), (["A"], "list")))
CASES += each(phenomena.stimuli, "seed", ((-1, "negative"),))
CASES += each(phenomena.stimuli, "dtype", ((torch.int64, "int64"),))
CASES += each(phenomena.stimuli, "salience", (*SALIENCES, ({"Z": 2.0}, "unknown-letter")))
spec(phenomena.trials, lambda: {"design": "2 A+ | 1 AB-", "cs": cs_ab(), "us": 1.0}, reals=("us",))
CASES += each(phenomena.trials, "design", DESIGNS[:3]) + stimulus_rows(phenomena.trials)
CASES += each(phenomena.trials, "normalise", (("yes", "string"), (1, "int")))
spec(phenomena.responses, lambda: {"rule": "delta", "design": "2 A+ | 1 AB-", "test": "A", "cs": cs_ab(), "beta": 0.5},
     reals=("us",), nonnegative=("beta",), options=("rule",))
CASES += each(phenomena.responses, "test", (("Z", "unknown-letter"), ("", "empty"), (5, "int")))
CASES += each(phenomena.responses, "design", DESIGNS[:3]) + stimulus_rows(phenomena.responses)
CASES += each(phenomena.responses, "beta", ((MISSING, "missing"),))
CASES += each(phenomena.responses, "normalise", (("yes", "string"),))
spec(phenomena.rescorla_wagner, lambda: {"design": "2 A+ | 1 AB+", "test": "B", "beta": 0.5, "salience": {"A": 2.0}},
     nonnegative=("beta",), reals=("us",))
CASES += each(phenomena.rescorla_wagner, "design", DESIGNS[:3])
CASES += each(phenomena.rescorla_wagner, "test", (("", "empty"), (5, "int"), (["B"], "list")))
CASES += each(phenomena.rescorla_wagner, "salience", SALIENCES)
spec(phenomena.phenomenon, lambda: {"name": "blocking", "n": 5, "us": 2.0}, ints=("n",), reals=("us",),
     options=("name",))
CASES += each(phenomena.phenomenon, "us", ((0.0, "zero"),))
CASES += each(phenomena.stimuli, "elemental", (("yes", "string"), (1, "int")))
spec(phenomena.phenomenon_index,
     lambda: {"name": "blocking", "rule": "delta", "n": 2, "d_key": 4, **F64, "beta": 0.2},
     ints=("n",), nonnegative=("beta",), options=("name", "rule"))
CASES += (each(phenomena.phenomenon_index, "d_key", ((3, "too-few-dimensions"),))
          + each(phenomena.phenomenon_index, "seed", ((-1, "negative"),))
          + each(phenomena.phenomenon_index, "beta", ((MISSING, "missing"),))
          + each(phenomena.phenomenon_index, "dtype", ((torch.int64, "int64"),))
          + each(phenomena.phenomenon_index, "us", ((0.0, "zero"), (NAN, "nan")))
          + each(phenomena.phenomenon_index, "elemental", (("yes", "string"),)))
spec(phenomena.phenomena_table, lambda: {"settings": {"delta": {"rule": "delta", "beta": 0.2}}, "n": 2, **F64},
     ints=("n",))
CASES += each(phenomena.phenomena_table, "settings", (
    ([("delta", {"rule": "delta"})], "list"), ({"delta": {"beta": 0.2}}, "no-rule"),
    ({"delta": {"rule": "nonsense"}}, "unknown-rule"), ({"delta": 5}, "not-a-mapping"), ("delta", "str")))
CASES.append(bad(phenomena.phenomena_table, {"settings": {"delta": {"rule": "delta"}}}, "beta", "missing"))

# --- timing ---

for fn, first in ((timing.time_calls, {"calls": {"nothing": lambda: None}}), (timing.time_call, {"fn": lambda: None})):
    spec(fn, lambda first=first: {**first, "repeats": 1, "warmup": 0, "device": "cpu"}, ints=("repeats",),
         nonnegative=("min_time",))
    CASES += each(fn, "warmup", ((-1, "negative"), (1.5, "float"), ("1", "str")))
    CASES += each(fn, "device", ((5, "int"), ("nonsense", "unknown")))
    CASES.append(bad(fn, {"min_time": 0.1}, "warmup", "min_time-without-warmup"))
CASES += each(timing.time_calls, "calls", (({}, "empty"), ([lambda: None], "list"), ({"five": 5}, "not-callable"),
                                           (lambda: None, "callable")))
CASES += each(timing.time_call, "fn", ((5, "int"), ({"f": lambda: None}, "mapping")))
spec(timing.multiply_adds, lambda: {"fn": torch.matmul, "shapes": ((2, 3), (3, 2))})
CASES += each(timing.multiply_adds, "fn", ((5, "int"), ("matmul", "str")))
CASES += each(timing.multiply_adds, "shapes", (((), "empty"), ([(2, 3)], "list"), (((2, 0),), "zero"),
                                               (((2, 3.0),), "float"), (((2, True),), "bool"), ((2, 3), "flat")))

# --- mqar ---

VOCAB = mqar.Vocabulary(4, 4)
SMALL = {"layer": "delta", "d_key": 4, "d_model": 8}


def model():
    return mqar.build(VOCAB, seed=0, device="cpu", **SMALL)


spec(mqar.Vocabulary, lambda: {"n_keys": 4, "n_values": 4}, ints=("n_keys", "n_values"))
spec(mqar.mqar, lambda: {"batch": 2, "n_pairs": 2, "vocab": VOCAB, "length": 8, "seed": 0, "device": "cpu"},
     ints=("batch", "n_pairs", "length"), options=("placement",))
CASES += (each(mqar.mqar, "n_pairs", ((5, "above-n_keys"),)) + each(mqar.mqar, "length", ((5, "too-short"),))
          + each(mqar.mqar, "vocab", (((4, 4), "tuple"),)) + each(mqar.mqar, "seed", ((-1, "negative"),)))
spec(mqar.MemoryLayer, lambda: {"layer": "delta", "d_model": 8, "d_key": 4, "d_value": 4}, options=("layer",))
for p in ("d_model", "d_key", "d_value"):
    CASES += each(mqar.MemoryLayer, p, ((0, "zero"), (-3, "negative"), (2.0, "float")))
spec(mqar.Model, lambda: {"vocab": VOCAB, **SMALL}, ints=("d_key", "d_value", "d_model", "layers"),
     options=("layer",))
CASES += each(mqar.Model, "vocab", (((4, 4), "tuple"),))
spec(mqar.build, lambda: {"vocab": VOCAB, "seed": 0, "device": "cpu", **SMALL}, ints=("d_key", "d_model"),
     options=("layer",))
CASES += each(mqar.build, "seed", ((-1, "negative"), (1.5, "float")))
CASES.append(bad(mqar.build, {"foo": 1}, "foo", "unknown-parameter"))
CASES += each(mqar.build, "vocab", (((4, 4), "tuple"),))
spec(mqar.loss_and_accuracy,
     lambda: {"model": model(), **dict(zip(("tokens", "labels"), mqar.mqar(2, 2, vocab=VOCAB, device="cpu")))})
CASES += (each(mqar.loss_and_accuracy, "model", (("x", "str"),))
          + each(mqar.loss_and_accuracy, "tokens", ((torch.zeros(2, 6, **F64), "float"),))
          + each(mqar.loss_and_accuracy, "labels", ((torch.zeros(2, 5, **LONG), "shape"),)))
spec(mqar.train, lambda: {"vocab": VOCAB, "pairs": (2,), "steps": 1, "batch": 2, "seed": 0, "device": "cpu", **SMALL},
     ints=("steps", "batch"), positive=("lr",), nonnegative=("weight_decay",), options=("layer",))
CASES += each(mqar.train, "pairs", (((), "empty"),)) + each(mqar.train, "seed", ((-1, "negative"),))
CASES += (each(mqar.train, "pairs", (((5,), "above-n_keys"),))
          + each(mqar.train, "pairs", ((2, "int"),)))
spec(mqar.train_together, lambda: {"vocab": VOCAB, "pairs": (2,), "steps": 1, "batch": 2, "seeds": (0, 1),
                                   "device": "cpu", **SMALL},
     ints=("steps", "batch"), positive=("lr",), nonnegative=("weight_decay",), options=("layer",))
CASES += each(mqar.train_together, "seeds", (((), "empty"), (3, "int"), ("01", "str"), ((0, -1), "negative")))
CASES += each(mqar.train_together, "pairs", (((5,), "above-n_keys"),))
CASES += each(mqar.loss_and_accuracy, "tokens", ((torch.zeros(3, 2, 6, **LONG), "stacked-for-one-model"),))
spec(batched.stack, lambda: {"models": [model(), model()]})
CASES += each(batched.stack, "models", ((model(), "one-module"), ([], "empty"), ([model(), 3], "not-modules"),
                                        ([model(), mqar.build(VOCAB, seed=0, device="cpu", layer="delta", d_key=4,
                                                              d_model=16)], "two-architectures")))
spec(batched.per_model, lambda: {"parameter": torch.ones(3), "x": torch.ones(3, 2, 5), "dims": 0})
CASES += (each(batched.per_model, "parameter", (([1.0], "list"), (torch.ones(3, 2), "too-many-axes")))
          + each(batched.per_model, "x", ((1.0, "float"),)) + each(batched.per_model, "dims", ((-1, "negative"), (0.5, "float"))))
spec(batched.unstack, lambda: {"stacked": batched.stack([model(), model()])})
CASES += each(batched.unstack, "stacked", (("x", "str"), (model(), "not-stacked")))
spec(mqar.accuracy, lambda: {"model": model(), "n_pairs": 2, "sequences": 4, "seed": 0}, ints=("n_pairs",))
CASES += each(mqar.accuracy, "n_pairs", ((5, "above-n_keys"),)) + each(mqar.accuracy, "seed", ((-1, "negative"),))
CASES += (each(mqar.accuracy, "sequences", ((0, "zero"),))
          + each(mqar.accuracy, "model", (("x", "str"),)))
spec(mqar.geometry, lambda: {"model": model()})
CASES += each(mqar.geometry, "model", (("x", "str"),))
spec(mqar.experiment, lambda: {"vocab": VOCAB, "layers": ["delta"], "d_keys": [4], "train_pairs": [2],
                               "test_pairs": [2], "steps": 1, "sequences": 4, "device": "cpu", "d_model": 8,
                               "batch": 2})
CASES += each(mqar.experiment, "steps", ((0, "zero"),))
CASES += [bad(mqar.experiment, {p: v}, p, kind) for p, v, kind in (
    ("layers", ["nonsense"], "unknown"), ("layers", "delta", "str"), ("d_keys", [0], "zero"), ("seeds", 0, "zero"),
    ("sequences", 0, "zero"), ("train_pairs", [], "empty"), ("test_pairs", [0], "zero"))]
RUN = mqar.Run("delta", 4, 0, {2: torch.ones(4, **F64)}, mqar.Geometry(t(2, 2), t(2, 2)), [1.0], None)
spec(mqar.accuracy_curve, lambda: {"runs": [RUN], "layer": "delta", "d_key": 4})
CASES += (each(mqar.accuracy_curve, "runs", (([], "empty"),))
          + each(mqar.accuracy_curve, "layer", (("softmax", "absent"),))
          + each(mqar.accuracy_curve, "d_key", ((8, "absent"),)))
CASES += each(mqar.accuracy_curve, "runs", ((5, "int"),))
spec(mqar.collapse_point, lambda: {"pairs": [8, 16, 32], "accuracies": [0.9, 0.6, 0.3], "level": 0.5})
CASES += [bad(mqar.collapse_point, {p: v}, p, kind) for p, v, kind in (
    ("level", NAN, "nan"), ("level", 1.5, "above-one"), ("accuracies", [0.9, 0.6], "length-mismatch"),
    ("pairs", [], "empty"), ("pairs", [8, 0, 32], "zero"))]

# --- icl ---

ICL_TASK = icl.Task(classes=8, dim=8, labels=4, pairs=4, bursty=2, device="cpu")


def icl_model():
    return icl.build(ICL_TASK, seed=0)


spec(icl.Task, lambda: {"classes": 8, "dim": 8, "labels": 4, "pairs": 4, "bursty": 2, "device": "cpu"},
     ints=("classes", "labels", "dim", "pairs"), nonnegative=("noise", "zipf"))
CASES += (each(icl.Task, "classes", ((1, "one"),))
          + [bad(icl.Task, {"classes": 2, "bursty": 1}, "classes", "too-few-for-the-groups")]
          + each(icl.Task, "labels", ((1, "one"),))
          + each(icl.Task, "bursty", ((5, "above-pairs"), (-1, "negative"), (1.5, "float"), (True, "bool")))
          + each(icl.Task, "seed", ((-1, "negative"),)) + each(icl.Task, "device", (("nonsense", "unknown"),)))
spec(icl.sequences, lambda: {"task": ICL_TASK, "count": 2, "seed": 0}, ints=("count",), options=("kind",))
CASES += (each(icl.sequences, "bursty", ((5, "above-pairs"), (-1, "negative"), (1.5, "float")))
          + each(icl.sequences, "task", (("x", "str"),)) + each(icl.sequences, "seed", ((-1, "negative"),)))
spec(icl.Model, lambda: {"dim": 8, "length": 9, "labels": 4}, ints=("dim", "length", "labels", "layers", "heads"))
CASES += each(icl.Model, "heads", ((3, "not-dividing"),))
spec(icl.Model.forward, lambda: {"self": icl_model(), "inputs": torch.zeros(2, 9, 8)})
CASES += (each(icl.Model.forward, "inputs", ((torch.zeros(2, 9, 8, **LONG), "int64"), ([[0.0] * 8] * 9, "list"),
                                             (torch.zeros(2, 7, 8), "too-short")))
          + each(icl.Model.forward, "ablate", (([(2, 0)], "layer-out-of-range"), (5, "int"), ([(0, 1)], "head"))))
spec(icl.build, lambda: {"task": ICL_TASK, "seed": 0}, ints=("layers",))
CASES += (each(icl.build, "seed", ((-1, "negative"), (1.5, "float")))
          + [bad(icl.build, {"foo": 1}, "foo", "unknown-parameter")])
for fn in (icl.accuracy, icl.head_mass, icl.conflict):
    spec(fn, lambda fn=fn: {"model": icl_model(), "task": ICL_TASK, "count": 2}
         | {icl.accuracy: {"kind": "in_context"}, icl.conflict: {"shown": 2}}.get(fn, {}), ints=("count",))
    CASES += (each(fn, "model", (("x", "str"), (batched.stack([icl_model(), icl_model()]), "stack")))
              + each(fn, "task", (("x", "str"), (icl.Task(classes=8, dim=16, labels=4, pairs=4, device="cpu"),
                                                  "other-width"))))
CASES += (each(icl.accuracy, "kind", (("nonsense", "unknown"),))
          + each(icl.accuracy, "ablate", (([(2, 0)], "layer-out-of-range"),))
          + each(icl.conflict, "shown", ((5, "above-pairs"), (-1, "negative"), (1.5, "float"))))
spec(icl.train_together, lambda: {"tasks": ICL_TASK, "steps": 1, "seeds": (0, 1), "batch": 2, "every": 1, "tests": 2},
     ints=("steps", "batch", "every", "tests"), positive=("lr",), nonnegative=("weight_decay",))
CASES += (each(icl.train_together, "seeds", (((), "empty"), (3, "int"), ((0, -1), "negative")))
          + each(icl.train_together, "tasks", (("x", "str"), ([ICL_TASK], "one-for-two-seeds"),
                                               ([ICL_TASK, icl.Task(classes=8, dim=16, labels=4, pairs=4,
                                                                    device="cpu")], "two-widths")))
          + [bad(icl.train_together, {"foo": 1}, "foo", "unknown-parameter")])

# --- induction ---

TASK = induction.Task(vocab=8, n_triggers=2, length=8, device="cpu")


def transformer(layers: int = 2, frozen: bool = True, mlp: bool = False):
    return induction.build(8, 8, seed=0, d_model=8, layers=layers, heads=1, frozen=frozen, mlp=mlp, device="cpu")


NOT_A_MODEL = (("x", "str"), (transformer(frozen=False), "not-frozen"), (transformer(1), "one-layer"))
spec(induction.Task, lambda: {"vocab": 8, "n_triggers": 2, "length": 8, "device": "cpu"},
     ints=("vocab", "n_triggers", "length"), positive=("concentration",), probabilities=("trigger_mass", "held_out"))
CASES += (each(induction.Task, "n_triggers", ((8, "at-vocab"),)) + each(induction.Task, "vocab", ((1, "one"),))
          + each(induction.Task, "held_out", ((1.0, "every-output"),))
          + each(induction.Task, "fixed_triggers", ((1, "int"),))
          + each(induction.Task, "length", ((1, "one"),)) + each(induction.Task, "seed", ((-1, "negative"),))
          + each(induction.Task, "device", (("nonsense", "unknown"),)))
spec(induction.sequences, lambda: {"task": TASK, "batch": 2, "seed": 0}, ints=("batch", "n_triggers"),
     options=("outputs",))
CASES += (each(induction.sequences, "n_triggers", ((3, "above-task"),))
          + each(induction.sequences, "outputs", (("held_out", "none-held-out"),))
          + each(induction.sequences, "task", (("x", "str"), ((8, 2, 8), "tuple")))
          + each(induction.sequences, "seed", ((-1, "negative"),)))
spec(induction.Attention, lambda: {"d_model": 8, "heads": 2}, ints=("heads",))
CASES += each(induction.Attention, "heads", ((3, "not-dividing"),))
spec(induction.Transformer, lambda: {"vocab": 8, "length": 8, "d_model": 8},
     ints=("vocab", "length", "d_model", "layers", "heads"))
CASES += (each(induction.Transformer, "vocab", ((1, "one"),)) + each(induction.Transformer, "heads", ((3, "not-dividing"),))
          + each(induction.Transformer, "mlp", (("yes", "str"), (1, "int")))
          + each(induction.Transformer, "frozen", (("yes", "str"), (1, "int")))
          + each(induction.Transformer, "shift", (("yes", "str"), (1, "int"))))
spec(induction.Transformer.forward, lambda: {"self": transformer(), "tokens": torch.zeros(2, 8, **LONG)})
CASES += each(induction.Transformer.forward, "tokens", ((torch.zeros(2, 8, **F64), "float"), ([[0] * 8], "list"),
                                                        (torch.zeros(2, 9, **LONG), "too-long")))
CASES += each(induction.Transformer.forward, "ablate", (([(2, 0)], "layer-out-of-range"), (5, "int")))
spec(induction.build, lambda: {"vocab": 8, "length": 8, "seed": 0, "device": "cpu", "d_model": 8},
     ints=("vocab", "length", "d_model", "layers"))
CASES += (each(induction.build, "seed", ((-1, "negative"), (1.5, "float")))
          + each(induction.build, "device", (("nonsense", "unknown"),))
          + [bad(induction.build, {"foo": 1}, "foo", "unknown-parameter")])
spec(induction.train_together, lambda: {"task": TASK, "steps": 1, "seeds": (0, 1), "batch": 2, "every": 1, "d_model": 8},
     ints=("steps", "batch", "every"), positive=("lr",))
CASES += (each(induction.train_together, "seeds", (((), "empty"), (3, "int"), ("01", "str"), ((0, -1), "negative"),
                                                   ((0, 1.5), "float")))
          + each(induction.train_together, "task", (("x", "str"),))
          + [bad(induction.train_together, {"foo": 1}, "foo", "unknown-parameter")])
for fn in (induction.memory_recall, induction.memory_isr):
    spec(fn, lambda: {"model": transformer(), "task": TASK})
    CASES += each(fn, "model", NOT_A_MODEL) + each(fn, "task", (("x", "str"),))
CASES += each(induction.memory_isr, "draws", ((0, "zero"), (1.5, "float")))
spec(induction.evaluate, lambda: {"model": transformer(), "task": TASK, "count": 2}, ints=("count", "n_triggers"))
CASES += (each(induction.evaluate, "ablate", ((5, "int"), ("ab", "str"), ([(2, 0)], "layer-out-of-range"),
                                              ([(0, 1)], "head-out-of-range"), ([(0, 0, 0)], "triple"),
                                              ([(True, 0)], "bool")))
          + each(induction.evaluate, "cut_previous", ((5, "int"), ([(2, 0)], "layer-out-of-range"),
                                                      ([(0, 1)], "head-out-of-range")))
          + each(induction.evaluate, "only_previous", ((5, "int"), ([(2, 0)], "layer-out-of-range")))
          + each(induction.evaluate, "outputs", (("nonsense", "unknown"), ("held_out", "none-held-out")))
          + each(induction.evaluate, "model", NOT_A_MODEL[:1]) + each(induction.evaluate, "task", (("x", "str"),))
          + each(induction.evaluate, "seed", ((-1, "negative"),)))
spec(induction.attention_maps, lambda: {"model": transformer(), "tokens": torch.zeros(8, **LONG)})
CASES += (each(induction.attention_maps, "tokens", ((torch.zeros(2, 8, **LONG), "batch"), (torch.zeros(8, **F64), "float"),
                                                    ([0] * 8, "list"), (torch.zeros(9, **LONG), "too-long")))
          + each(induction.attention_maps, "model", NOT_A_MODEL[:1]))
spec(induction.head_scores, lambda: {"model": transformer(), "task": TASK, "count": 2}, ints=("count",))
CASES += (each(induction.head_scores, "model", NOT_A_MODEL[:1]) + each(induction.head_scores, "task", (("x", "str"),))
          + each(induction.head_scores, "outputs", (("nonsense", "unknown"),)))
spec(induction.induction_reading, lambda: {"model": transformer(), "task": TASK, "count": 2},
     ints=("count", "n_triggers"))
CASES += (each(induction.induction_reading, "model", NOT_A_MODEL[:1] + NOT_A_MODEL[2:])
          + each(induction.induction_reading, "task", (("x", "str"),))
          + each(induction.induction_reading, "n_triggers", ((3, "above-task"),)))
spec(induction.output_gradient, lambda: {"model": transformer(mlp=True), "tokens": torch.zeros(2, 8, **LONG)})
CASES += (each(induction.output_gradient, "model", NOT_A_MODEL[:1] + ((transformer(), "no-mlp"),))
          + each(induction.output_gradient, "tokens", ((torch.zeros(2, 8, **F64), "float"),
                                                       (torch.zeros(2, 9, **LONG), "too-long"))))

# --- channel ---

spec(channel.read_weights, lambda: {"memory": "hebbian", "keys": t(2, 5, 3)}, tensors={"keys": 2},
     options=("memory",))
CASES += [bad(channel.read_weights, {"memory": "softmax", "beta": -1.0}, "beta", "negative"),
          bad(channel.read_weights, {"memory": "decay"}, "gamma", "missing"),
          bad(channel.read_weights, {"memory": "delta", "beta": NAN}, "beta", "nan")]
spec(channel.read_isr, lambda: {"weights": t(2, 4, 4)}, tensors={"weights": 2})
CASES += each(channel.read_isr, "weights", ((t(2, 4, 3), "not-square"),))
spec(channel.read_bits, lambda: {"isr": t(2, 4).abs(), "d_value": 3}, ints=("d_value",))
CASES += each(channel.read_bits, "isr", (([1.0], "list"), (torch.ones(2, dtype=torch.int64), "int64"),
                                         (-t(2, 4).abs(), "negative"), (with_value(t(2, 4).abs(), NAN), "nan")))
spec(channel.measure_bits, lambda: {"memory": "hebbian", "d_key": 4, "n_memories": 3, "trials": 2, "seed": 0, **F64},
     ints=("d_key", "n_memories", "trials", "d_value", "number_bits"), options=("memory", "keys"))
spec(channel.quantised_isr, lambda: {"memory": "hebbian", "keys": t(2, 5, 3).abs() + 0.1,
                                     "weights": t(2, 5, 5).abs() + 0.1, "number_bits": 4},
     ints=("number_bits",), options=("memory",))
spec(theory.hebbian_bits_slope, lambda: {"d_key": 4}, ints=("d_key",))
spec(theory.quantisation_noise, lambda: {"number_bits": 4}, ints=("number_bits",))
spec(theory.quantised_pair_bits, lambda: {"number_bits": 4, "d_key": 4, "d_value": 2},
     ints=("number_bits", "d_key", "d_value"))
spec(theory.hopfield_one_step_bits, lambda: {"alpha": 0.1}, positive=("alpha",))
CASES += (each(channel.measure_bits, "trials", ((1, "one-trial"),))
          + each(channel.measure_bits, "n_memories", ((1, "one"),))
          + each(channel.measure_bits, "seed", ((-1, "negative"),)))
CASES += [bad(channel.measure_bits, {"memory": "softmax", "beta": -1.0}, "beta", "negative"),
          bad(channel.measure_bits, {"foo": 1}, "foo", "unknown-parameter")]
spec(channel.decode_codebook, lambda: {"memory": "hebbian", "d_key": 4, "n_memories": 3, "codebook_bits": 2,
                                      "trials": 2, "seed": 0, **F64},
     ints=("d_key", "n_memories", "codebook_bits", "trials", "d_value"), options=("memory",))
CASES += (each(channel.decode_codebook, "trials", ((1, "one-trial"),))
          + each(channel.decode_codebook, "n_memories", ((1, "one"),))
          + each(channel.decode_codebook, "codebook_bits", ((25, "too-large"),)))
CASES.append(bad(channel.decode_codebook, {"memory": "softmax", "beta": -1.0}, "beta", "negative"))
spec(theory.binary_channel_bits, lambda: {"flip": 0.1}, probabilities=("flip",))
spec(theory.hebbian_read_bits, lambda: {"d_key": 4, "n_memories": 3, "d_value": 2},
     ints=("d_key", "n_memories", "d_value"))
CASES += each(theory.hebbian_read_bits, "n_memories", ((1, "one"),))
spec(theory.decay_retrieval_bits, lambda: {"gamma": 0.9, "d": 4, "length": 5, "d_value": 2},
     ints=("d", "length", "d_value"), probabilities=("gamma",))
CASES += each(theory.decay_retrieval_bits, "gamma", ((0.0, "zero"),))

# --- facts ---


def fact_pairs() -> dict:
    return {"keys": t(2, 5, 4), "values": t(2, 5, 4)}


def fact_layer() -> facts.FactLayer:
    return batched.stack([facts.FactLayer(4, hidden=8, heads=2) for _ in range(2)]).double()


def fact_table() -> tuple:
    return facts.fact_table(2, 3, 2, 4, 4, seed=0, **F64)


spec(facts.unit_vectors, lambda: {"models": 2, "n": 3, "d": 4, "seed": 0, **F64}, ints=("models", "n", "d"))
spec(facts.scores, lambda: {"memory": t(2, 4, 4), "queries": t(2, 3, 4), "vocabulary": t(2, 5, 4)},
     tensors={"memory": 3, "queries": 3, "vocabulary": 3}, finite=False)
CASES += (each(facts.scores, "queries", ((t(2, 3, 5), "width-mismatch"), (t(3, 3, 4), "models-mismatch")))
          + each(facts.scores, "vocabulary", ((t(2, 5, 3), "width-mismatch"),)))
spec(facts.recall, lambda: {"memory": t(2, 4, 4), "queries": t(2, 3, 4), "vocabulary": t(2, 5, 4)})
CASES += each(facts.recall, "answers", ((torch.zeros(3), "float"), (torch.zeros(4, dtype=torch.long), "length")))
spec(facts.train, lambda: {**fact_pairs(), "steps": 1}, ints=("steps",), positive=("lr",))
CASES += each(facts.train, "values", ((t(2, 4, 4), "count-mismatch"), (t(5, 4), "rank")))
spec(facts.write, lambda: {"method": "hebbian", **fact_pairs()}, options=("method",))
CASES += [bad(facts.write, {"steps": 3}, "training", "not-trained")]
spec(facts.likelihood_bits, lambda: {"memory": t(2, 4, 4), **fact_pairs()})
CASES += each(facts.likelihood_bits, "values", ((t(2, 4, 4), "count-mismatch"),))
spec(facts.permutation_bits, lambda: {"n_facts": 3, "accuracy": 0.9}, ints=("n_facts",),
     probabilities=("accuracy",))
spec(facts.fact_bits, lambda: {"n_facts": 3, "accuracy": 0.9, "vocabulary": 8}, ints=("n_facts", "vocabulary"),
     probabilities=("accuracy",))
CASES += each(facts.fact_bits, "vocabulary", ((1, "one"),))
spec(facts.quantise, lambda: {"weights": t(2, 4, 4), "bits": 8}, ints=("bits",))
CASES += each(facts.quantise, "bits", ((1, "one"),)) + each(facts.quantise, "weights", (([1.0], "list"),))
spec(facts.edit_target, lambda: {"memory": t(2, 4, 4), "key": t(2, 4), "vocabulary": t(2, 5, 4), "new": 1, "steps": 2},
     ints=("steps",), positive=("lr", "margin"))
CASES += each(facts.edit_target, "new", ((5, "out-of-range"), (-1, "negative"), (True, "bool"), (1.0, "float")))
spec(facts.edit, lambda: {"method": "rome", "memory": t(2, 4, 4), "key": t(2, 4), "target": t(2, 4), "keys": t(2, 5, 4)},
     nonnegative=("ridge",), options=("method",))
CASES += (each(facts.edit, "key", ((t(3, 4), "models-mismatch"), (t(2, 2, 4), "rank")))
          + each(facts.edit, "target", ((t(3, 4), "models-mismatch"),)) + each(facts.edit, "keys", ((None, "missing"),)))


def outcome_args() -> dict:
    return {"memory": t(2, 4, 4), "keys": t(2, 5, 4), "vocabulary": t(2, 6, 4), "fact": 0, "new": 5,
            "before": torch.zeros(2, 5, dtype=torch.long), "noise": t(2, 3, 4)}


spec(facts.edit_outcome, outcome_args)
CASES += (each(facts.edit_outcome, "fact", ((5, "out-of-range"), (True, "bool")))
          + each(facts.edit_outcome, "new", ((6, "out-of-range"), (-1, "negative")))
          + each(facts.edit_outcome, "before", ((torch.zeros(2, 4, dtype=torch.long), "shape"), ([0], "list")))
          + each(facts.edit_outcome, "noise", ((t(3, 4), "rank"),)))
spec(facts.flip_strength, lambda: {"read": t(2, 4), "direction": t(2, 4), "vocabulary": t(2, 5, 4), "new": 1})
CASES += (each(facts.flip_strength, "new", ((5, "out-of-range"), (True, "bool")))
          + each(facts.flip_strength, "read", ((t(3, 4), "models-mismatch"), (t(2, 3), "width-mismatch")))
          + each(facts.flip_strength, "direction", ((t(2, 2, 4), "rank"),)))
spec(facts.init_layers, lambda: {"tokens": t(2, 3, 2, 4), "hidden": 8, "heads": 2})
CASES += (each(facts.init_layers, "tokens", ((t(2, 3, 3, 4), "not-pairs"),))
          + each(facts.init_layers, "seed", ((-1, "negative"), (True, "bool"))))
spec(facts.FactLayer, lambda: {"d": 4, "hidden": 8, "heads": 2}, ints=("d", "heads"))
CASES += (each(facts.FactLayer, "hidden", ((-1, "negative"), (2.0, "float"), (True, "bool")))
          + each(facts.FactLayer, "heads", ((3, "not-dividing"),)))
spec(facts.fact_table, lambda: {"models": 2, "subjects": 3, "relations": 2, "attributes": 4, "d": 4, "seed": 0, **F64},
     ints=("models", "subjects", "relations", "attributes", "d"))
CASES += each(facts.fact_table, "attributes", ((1, "one"),))


def layer_args() -> dict:
    tokens, vocabulary, answers = fact_table()
    return {"tokens": tokens, "vocabulary": vocabulary, "answers": answers}


spec(facts.train_layers, lambda: {**layer_args(), "hidden": 8, "heads": 2, "steps": 1}, ints=("steps",),
     positive=("lr",))
CASES += (each(facts.train_layers, "tokens", ((t(2, 6, 3, 4), "three-tokens"), ([1.0], "list"), (t(6, 2, 4), "rank")))
          + each(facts.train_layers, "vocabulary", ((t(2, 4, 3), "width-mismatch"), (t(3, 4, 4), "models-mismatch")))
          + each(facts.train_layers, "answers", ((torch.zeros(2, 6), "float"), (torch.full((2, 6), 4), "out-of-range"),
                                                 (torch.zeros(2, 5, dtype=torch.long), "shape")))
          + each(facts.train_layers, "seed", ((-1, "negative"), (1.5, "float")))
          + each(facts.train_layers, "hidden", ((-1, "negative"),)))
spec(facts.layer_recall, lambda: {"layer": fact_layer(), **layer_args()})
spec(facts.quantise_layer, lambda: {"layer": fact_layer(), "bits": 8}, ints=("bits",))
CASES += each(facts.quantise_layer, "layer", (("x", "str"),)) + each(facts.quantise_layer, "bits", ((1, "one"),))
CASES += (each(facts.layer_recall, "layer", (("x", "str"),))
          + each(facts.layer_recall, "answers", ((torch.full((2, 6), -1), "negative"),)))
spec(facts.parameter_count, lambda: {"d": 4, "hidden": 8}, ints=("d",))
CASES += each(facts.parameter_count, "hidden", ((-1, "negative"), (2.0, "float")))
spec(facts.key_value_neurons, lambda: {"layer": fact_layer(), **layer_args(), "relations": 2}, ints=("relations",))
CASES += (each(facts.key_value_neurons, "relations", ((4, "not-dividing"), (1, "one")))
          + each(facts.key_value_neurons, "layer", ((batched.stack([facts.FactLayer(4, hidden=0, heads=2)] * 2).double(),
                                                      "no-mlp"), (3, "int"))))

NO_MLP = batched.stack([facts.FactLayer(4, hidden=0, heads=2)] * 2).double()
spec(facts.layer_edit, lambda: {"method": "rome", "layer": fact_layer(), "tokens": fact_table()[0], "fact": 1,
                                "target": t(2, 4)}, options=("method",))
CASES += (each(facts.layer_edit, "layer", ((NO_MLP, "no-mlp"), ("x", "str")))
          + each(facts.layer_edit, "fact", ((6, "out-of-range"), (True, "bool")))
          + each(facts.layer_edit, "tokens", ((t(2, 6, 4), "rank"),)))


def layer_outcome_args() -> dict:
    tokens, vocabulary, _ = fact_table()
    return {"layer": fact_layer(), "tokens": tokens, "vocabulary": vocabulary, "fact": 0, "new": 3,
            "before": torch.zeros(2, 6, dtype=torch.long), "noise": t(2, 3, 2, 4)}


spec(facts.layer_edit_outcome, layer_outcome_args)
CASES += (each(facts.layer_edit_outcome, "fact", ((6, "out-of-range"), (True, "bool")))
          + each(facts.layer_edit_outcome, "new", ((4, "out-of-range"), (-1, "negative")))
          + each(facts.layer_edit_outcome, "before", ((torch.zeros(2, 5, dtype=torch.long), "shape"),))
          + each(facts.layer_edit_outcome, "noise", ((t(2, 3, 4), "rank"), (t(2, 3, 3, 4), "not-pairs")))
          + each(facts.layer_edit_outcome, "layer", (("x", "str"),)))
CASES += each(facts.edit_target, "offset", ((t(2, 3), "width-mismatch"),))

spec(facts.unit_ablations, lambda: {"layer": fact_layer(), **layer_args()})
CASES += (each(facts.unit_ablations, "layer", ((batched.stack([facts.FactLayer(4, hidden=0, heads=2)] * 2).double(),
                                                "no-mlp"), (3, "int")))
          + each(facts.unit_ablations, "seed", ((-1, "negative"), (0.5, "float"))))

# --- hopfield ---


def spins(*shape: int) -> torch.Tensor:
    """Seeded ±1 entries in float64 on the CPU."""
    return t(*shape).sign()


def recall_args() -> dict:
    return {"patterns": spins(2, 3, 8), "cues": spins(2, 4, 8), "generator": torch.Generator("cpu").manual_seed(0)}


SPIN_DIMS = {"patterns": 2, "cues": 2}
NOT_SPINS = ((t(2, 3, 8), "not-spins"), (with_value(spins(2, 3, 8), 0.0), "zero-entry"),
             (2 * spins(2, 3, 8), "twos"))
for fn, extra in ((hopfield.classical_recall, {}), (hopfield.dense_recall, {"degree": 3})):
    spec(fn, lambda extra=extra: {**recall_args(), **extra}, tensors=SPIN_DIMS, ints=("max_sweeps", *extra))
    CASES += each(fn, "patterns", NOT_SPINS) + each(fn, "cues", NOT_SPINS[:2])
    CASES += each(fn, "cues", ((spins(2, 4, 7), "N-mismatch"), (spins(3, 4, 8), "batch-mismatch")))
    CASES += each(fn, "generator", (("abc", "str"), (0, "int")))
    CASES.append(bad(fn, {"patterns": spins(2, 3, 8).to("meta"), "cues": spins(2, 4, 8).to("meta")}, "generator",
                     "other-device"))
CASES += each(hopfield.dense_recall, "degree", ((1, "one"), (True, "bool"), (MISSING, "missing"), (400, "overflow")))
spec(hopfield.synchronous_recall, lambda: {"patterns": spins(2, 3, 8), "cues": spins(2, 4, 8)}, tensors=SPIN_DIMS,
     ints=("max_sweeps",))
CASES += each(hopfield.synchronous_recall, "patterns", NOT_SPINS) + each(hopfield.synchronous_recall, "cues", NOT_SPINS[:2])
CASES += each(hopfield.synchronous_recall, "cues", ((spins(2, 4, 7), "N-mismatch"), (spins(3, 4, 8), "batch-mismatch")))
spec(hopfield.pass_flops, lambda: {"network": "modern", "n_patterns": 3, "n_neurons": 8}, ints=("n_patterns", "n_neurons"))
CASES += each(hopfield.pass_flops, "network", (("classical", "unknown"), (MISSING, "missing")))
spec(hopfield.random_patterns, lambda: {"shape": (2, 3, 8), **F64})
CASES += each(hopfield.random_patterns, "shape", (((8,), "one-size"), ((0, 3), "zero"), ((2.0, 3), "float"),
                                                  (("2", 3), "str")))
CASES += [bad(hopfield.random_patterns, {"generator": "abc"}, "generator", "str"),
          bad(hopfield.random_patterns, {"generator": torch.Generator("cpu"), "device": "meta"}, "generator",
              "other-device")]
spec(hopfield.flip_bits, lambda: {"patterns": spins(2, 3, 8), "fraction": 0.1}, tensors={"patterns": 2},
     probabilities=("fraction",))
CASES += each(hopfield.flip_bits, "patterns", NOT_SPINS) + each(hopfield.flip_bits, "generator", (("abc", "str"),))
spec(hopfield.aligned_fields, lambda: {"patterns": spins(2, 3, 8)}, tensors={"patterns": 2})
CASES += each(hopfield.aligned_fields, "patterns", NOT_SPINS)
spec(hopfield.stable_fraction, lambda: {"patterns": spins(2, 3, 8)}, tensors={"patterns": 2})
CASES += each(hopfield.stable_fraction, "patterns", NOT_SPINS)
spec(hopfield.modern_retrieve, lambda: {"cues": t(2, 4, 8), "patterns": t(2, 3, 8), "beta": 2.0},
     tensors={"cues": 2, "patterns": 2}, positive=("beta",), ints=("steps",))
CASES += each(hopfield.modern_retrieve, "patterns", ((t(2, 3, 7), "d-mismatch"), (t(3, 3, 8), "batch-mismatch")))
CASES += each(hopfield.modern_retrieve, "beta", ((MISSING, "missing"),))

# --- the tests ---

PLANNED_CASES = 2000
"""The table's size when written: a smaller table has lost rows."""

EXEMPT = {
    # no arguments
    "runtime.default_device": "no arguments", "runtime.scale": "no arguments", "runtime.run_info": "no arguments",
    "runtime.setup": "no arguments", "runtime.resources": "no arguments", "runtime.keep_freed_memory": "no arguments", "claims.records_dir": "no arguments", "runtime.building_book": "no arguments",
    "claims.verdict": "formats a Claim, which check made from checked arguments",
    "claims.rules_out": "reads a distance that check computed, infinite included (an alternative at tolerance 0)",
    "book.scales": "no arguments", "book.labels": "no arguments", "book.repository": "no arguments",
    "book.chapters": "no arguments", "book.benchmarks": "no arguments", "book.budget": "no arguments", "book.full_scale": "no arguments", "book.work": "no arguments",
    # nothing to refuse
    "runtime.by_scale": "returns one of its two arguments, whatever they are",
    "runtime.progress": "passes its iterable through (with tqdm's bar unless PAVLOV_PROGRESS=0)",
    "maps.identity": "returns its argument",
    # plain data classes: results, checked by the functions that make them
    "claims.Claim": "data class", "claims.ClaimTable": "display of checked records", "drift.Drift": "data class",
    "stores.IsrMeasurement": "data class", "stores.CapacityMeasurement": "data class", "stores.Erasure": "data class",
    "stacking.ChainRun": "data class", "stacking.ChainMeasurement": "data class", "stacking.CramerRate": "data class",
    "timing.Timing": "data class", "hopfield.RecallResult": "data class", "channel.BitsMeasurement": "data class",
    "channel.CodebookMeasurement": "data class",
    "batched.Linear": "torch's layer (torch checks its sizes)", "batched.LayerNorm": "torch's layer (torch checks its sizes)",
    "batched.Embedding": "torch's layer (torch checks its sizes)",
    "batched.linear": "batched.Linear's product, torch's F.linear or bmm (torch checks the sizes)",
    "mqar.Trained": "data class", "induction.Trained": "data class", "icl.Trained": "data class", "mqar.Geometry": "data class", "mqar.Run": "data class",
    "phenomena.Phenomenon": "data class", "phenomena.PhenomenaTable": "display of phenomenon_index's results",
}
"""Public callables with no row, and why; every other one defined in a module of the package has rows."""
EXEMPT_MODULES = {"plotting": "figures and their style, not computation", "diagrams": "concept diagrams, not computation"}


def public_callables() -> list[str]:
    """``module.name`` of every public function and class defined in a module of the package."""
    names = []
    for info in pkgutil.iter_modules(pavlov.__path__):
        if info.name.startswith("_") or info.name in EXEMPT_MODULES:
            continue
        module = importlib.import_module(f"pavlov.{info.name}")
        names += [f"{info.name}.{name}" for name, obj in vars(module).items()
                  if not name.startswith("_") and callable(obj) and getattr(obj, "__module__", None) == module.__name__]
    return names


COVERED = sorted({name_of(case.values[0]) for case in CASES})


@pytest.fixture(scope="module", autouse=True)
def claims_elsewhere(tmp_path_factory):
    """Claim records of the valid calls of ``claims.check`` go to one temporary folder, not ``_build/``."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("PAVLOV_CLAIMS_DIR", str(tmp_path_factory.mktemp("claims")))
        yield


@pytest.mark.parametrize("fn, override, param", CASES)
def test_bad_input_names_the_parameter(fn, override, param, one_thread):
    with pytest.raises((ValueError, TypeError), match=rf"\b{re.escape(param)}\b"):
        call(fn, {**VALID[fn](), **override})


@pytest.mark.parametrize("fn", list(VALID), ids=name_of)
def test_valid_arguments_run(fn, one_thread):
    call(fn, VALID[fn]())


def test_every_public_callable_has_a_case():
    public = public_callables()
    missing = sorted(set(public) - set(COVERED) - set(EXEMPT))
    assert not missing, f"public callables without a bad-input case: {missing}"
    stale = sorted(set(EXEMPT) - set(public))
    assert not stale, f"exemptions for names that are not public callables: {stale}"
    both = sorted(set(EXEMPT) & set(COVERED))
    assert not both, f"exempt yet in the table: {both}"


def test_case_ids_are_unique():
    ids = [case.id for case in CASES]
    assert len(ids) == len(set(ids)), sorted({i for i in ids if ids.count(i) > 1})


@pytest.mark.parametrize("count", [len(CASES)], ids=[f"{len(CASES)}-cases-over-{len(COVERED)}-callables"])
def test_table_size(count, record_property):
    record_property("bad_input_cases", count)
    record_property("bad_input_callables", len(COVERED))
    print(f"bad-input cases: {count} over {len(COVERED)} functions, classes and methods")
    assert count >= PLANNED_CASES
