"""pavlov.conditioning: the Hebbian store, the response, the circuit, and its identity with linear attention.

The chapter-2 theorem is tested as a property: with f = phi, g = identity, alpha = 1 and
self-attention, the conditioning circuit equals causal linear attention in each of its three forms,
for any batch shape, length, chunk size, output norm, and with Katharopoulos et al.'s denominator.
"""

from __future__ import annotations

import math

import pytest
import torch
from conftest import (DEVICE, EXACT, FLOAT_DTYPES, PROPERTY, batch_shapes, cases, cpu, meta, randn, rel_err, seeds,
                      tensors, with_value)
from hypothesis import given
from hypothesis import strategies as st

from pavlov.attention import linear_attention
from pavlov.conditioning import ConditioningCircuit, condition, hebbian_store, respond
from pavlov.maps import FEATURE_MAPS, NORMS

F64 = {"dtype": torch.float64, "device": "cpu"}
pytestmark = pytest.mark.usefixtures("one_thread")


def tensor(rows) -> torch.Tensor:
    return torch.tensor(rows, **F64)


# --- hand-computed cases ----------------------------------------------------------------------

def test_hebbian_store_by_hand():
    # two pairings in d = 1: S = 1 * 3 + 2 * 4 = 11
    assert hebbian_store(tensor([[1.0], [2.0]]), tensor([[3.0], [4.0]])).tolist() == [[11.0]]
    assert hebbian_store(tensor([[1.0], [2.0]]), tensor([[3.0], [4.0]]), alpha=0.5).tolist() == [[5.5]]
    # orthogonal bells store each food in its own row: S = e_1^T [3] + e_2^T [4]
    assert hebbian_store(tensor([[1.0, 0.0], [0.0, 1.0]]), tensor([[3.0], [4.0]])).tolist() == [[3.0], [4.0]]
    # outer product of one pairing: S = [1, 2]^T [3, 5]
    assert hebbian_store(tensor([[1.0, 2.0]]), tensor([[3.0, 5.0]])).tolist() == [[3.0, 5.0], [6.0, 10.0]]
    # f acts on the CS, g on the US: relu([-1, 2]) = [0, 2]; exp(0) = 1, exp(log 3) = 3
    store = hebbian_store(tensor([[-1.0], [2.0]]), tensor([[0.0], [math.log(3.0)]]), f="relu", g="exp")
    assert store.item() == pytest.approx(2 * 3, rel=EXACT)


def test_respond_by_hand():
    store = tensor([[3.0], [4.0]])                    # d_k = 2, d_v = 1
    assert respond(store, tensor([[1.0, 1.0], [2.0, -1.0]])).tolist() == [[7.0], [2.0]]
    # f acts on the test stimulus: relu([2, -1]) = [2, 0] -> 6
    assert respond(store, tensor([[2.0, -1.0]]), f="relu").tolist() == [[6.0]]
    # the output norm: identity store, response [3, 4], RMS sqrt(12.5)
    out = respond(torch.eye(2, **F64), tensor([[3.0, 4.0]]), norm="rms", eps=0)
    assert torch.allclose(out, tensor([[3.0, 4.0]]) / math.sqrt(12.5), rtol=EXACT, atol=0)


def test_condition_by_hand():
    # T = 2, d = 1: o_1 = 1 * (3 * 5) = 15; o_2 = 2 * (3 * 5 + 4 * 6) = 78
    test, cs, us = tensor([[1.0], [2.0]]), tensor([[3.0], [4.0]]), tensor([[5.0], [6.0]])
    assert condition(test, cs, us).tolist() == [[15.0], [78.0]]
    assert condition(test, cs, us, alpha=2.0).tolist() == [[30.0], [156.0]]
    # the response at step 1 ignores the pairing made at step 2 (causality)
    assert condition(test, cs, tensor([[5.0], [1000.0]]))[0].tolist() == [15.0]


def test_circuit_by_hand():
    # d_model = 1, identity projections: the circuit is condition(x, x, x)
    one = tensor([[1.0]])
    x = tensor([[1.0], [2.0]])
    # o_1 = 1 * 1 * 1 = 1; o_2 = 2 * (1 * 1 + 2 * 2) = 10
    assert ConditioningCircuit(one, one, one)(x).tolist() == [[1.0], [10.0]]
    # W_V = 3 scales every value by 3
    assert ConditioningCircuit(one, one, 3 * one)(x).tolist() == [[3.0], [30.0]]


# --- strategies -------------------------------------------------------------------------------

@st.composite
def length_and_chunks(draw):
    """A length T in 1..40 and chunk sizes of every relation to T: 1, a divisor, a non-divisor, > T."""
    T = draw(st.integers(1, 40), label="T")
    chunks = {"one": 1,
              "divides": draw(st.sampled_from([c for c in range(1, T + 1) if T % c == 0]), label="divisor"),
              "larger_than_T": draw(st.integers(T + 1, T + 64), label="larger")}
    non_divisors = [c for c in range(2, T) if T % c]   # none for T <= 2
    if non_divisors:
        chunks["does_not_divide"] = draw(st.sampled_from(non_divisors), label="non-divisor")
    return T, chunks


def forms(chunks):
    """(name, keyword arguments) of every form of linear attention, the chunkwise one at each chunk size."""
    yield "recurrent", {"form": "recurrent"}
    yield "parallel", {"form": "parallel"}
    for kind, size in chunks.items():
        yield f"chunkwise, chunk_size={size} ({kind})", {"form": "chunkwise", "chunk_size": size}


def reference(test, cs, us, *, f, denominator, norm):
    """The circuit's output for linear attention's options: the theorem's right-hand side."""
    if not denominator:
        return condition(test, cs, us, f=f, norm=norm)
    if norm == "none":   # divide by z_t, the circuit's response to a US of ones
        return condition(test, cs, us, f=f) / condition(test, cs, torch.ones_like(us[..., :1]), f=f)
    # With eps = 0 the norms ignore the positive factor 1 / z_t (maps.py), so no division is needed.
    return condition(test, cs, us, f=f, norm=norm, eps=0)


def attention_options(data, denominator, norm):
    phi = data.draw(st.sampled_from(["elu+1", "exp"] if denominator else [*FEATURE_MAPS, torch.sigmoid]),
                    label="phi")
    # LayerNorm with eps = 0 is undefined for d_v = 1 (r - mean(r) = 0)
    min_dv = 2 if (denominator and norm == "layer") else 1
    return phi, min_dv, (0.0 if denominator else 1e-6)


def assert_every_form_matches(expected, q, k, v, chunks, **options):
    for name, form in forms(chunks):
        got = linear_attention(q, k, v, **form, **options)
        assert got.shape == expected.shape, name
        assert rel_err(expected, got) <= EXACT, name


# --- the theorem: the circuit is linear attention ---------------------------------------------

NORM_AND_DENOMINATOR = pytest.mark.parametrize("norm, denominator", [(n, d) for d in (False, True) for n in NORMS],
                                               ids=[f"{n}-{d}" for d in ("plain", "denominator") for n in NORMS])


@NORM_AND_DENOMINATOR
@PROPERTY
@given(data=st.data(), batch=batch_shapes, seed=seeds)
def test_condition_equals_linear_attention(norm, denominator, data, batch, seed):
    T, chunks = data.draw(length_and_chunks(), label="T, chunks")
    phi, min_dv, eps = attention_options(data, denominator, norm)
    d_k = data.draw(st.integers(1, 8), label="d_k")
    d_v = data.draw(st.integers(min_dv, 8), label="d_v")
    q, k, v = randn(seed, *batch, T, d_k), randn(seed + 1, *batch, T, d_k), randn(seed + 2, *batch, T, d_v)
    expected = reference(q, k, v, f=phi, denominator=denominator, norm=norm)
    assert expected.shape == (*batch, T, d_v)
    assert_every_form_matches(expected, q, k, v, chunks, feature_map=phi, denominator=denominator, norm=norm, eps=eps)


@NORM_AND_DENOMINATOR
@PROPERTY
@given(data=st.data(), batch=batch_shapes, seed=seeds)
def test_self_attention_circuit_equals_linear_attention(norm, denominator, data, batch, seed):
    T, chunks = data.draw(length_and_chunks(), label="T, chunks")
    phi, min_dv, eps = attention_options(data, denominator, norm)
    d_model = data.draw(st.integers(1, 8), label="d_model")
    d_k = data.draw(st.integers(1, 8), label="d_k")
    d_v = data.draw(st.integers(min_dv, 8), label="d_v")
    W_Q, W_K, W_V = randn(seed, d_model, d_k), randn(seed + 1, d_model, d_k), randn(seed + 2, d_model, d_v)
    x = randn(seed + 3, *batch, T, d_model)
    # f = phi, g = identity, alpha = 1
    circuit = ConditioningCircuit(W_Q, W_K, W_V, f=phi, g="identity", alpha=1.0, norm=norm, eps=eps)
    expected = circuit(x)
    if denominator and norm == "none":   # z_t: the response to a US of ones
        expected = expected / condition(x @ W_Q, x @ W_K, torch.ones_like(x[..., :1]), f=phi)
    assert expected.shape == (*batch, T, d_v)
    assert_every_form_matches(expected, x @ W_Q, x @ W_K, x @ W_V, chunks, feature_map=phi,
                              denominator=denominator, norm=norm, eps=eps)


# --- the definitions agree with each other ----------------------------------------------------

@PROPERTY
@given(batch=batch_shapes, T=st.integers(1, 12), d_k=st.integers(1, 6), d_v=st.integers(1, 6), seed=seeds,
       f=st.sampled_from(sorted(FEATURE_MAPS)), g=st.sampled_from(sorted(FEATURE_MAPS)),
       alpha=st.floats(-3, 3, allow_nan=False), norm=st.sampled_from(NORMS))
def test_condition_is_store_then_respond(batch, T, d_k, d_v, seed, f, g, alpha, norm):
    # o_i = Norm(f(test_i) S_i) with S_i the Hebbian store of the first i pairings
    test, cs, us = randn(seed, *batch, T, d_k), randn(seed + 1, *batch, T, d_k), randn(seed + 2, *batch, T, d_v)
    out = condition(test, cs, us, f=f, g=g, alpha=alpha, norm=norm)
    for i in range(T):
        store = hebbian_store(cs[..., :i + 1, :], us[..., :i + 1, :], f=f, g=g, alpha=alpha)
        step = respond(store, test[..., i:i + 1, :], f=f, norm=norm)
        assert rel_err(step[..., 0, :], out[..., i, :]) <= EXACT


@PROPERTY
@given(batch=batch_shapes, n=st.integers(1, 20), d_k=st.integers(1, 6), d_v=st.integers(1, 6), seed=seeds,
       alpha=st.floats(-3, 3, allow_nan=False))
def test_hebbian_store_is_a_sum_of_outer_products(batch, n, d_k, d_v, seed, alpha):
    cs, us = randn(seed, *batch, n, d_k), randn(seed + 1, *batch, n, d_v)
    expected = alpha * sum(torch.einsum("...k,...v->...kv", cs[..., j, :], us[..., j, :]) for j in range(n))
    assert rel_err(expected, hebbian_store(cs, us, alpha=alpha)) <= EXACT


@PROPERTY
@given(T=st.integers(1, 10), d_model=st.integers(1, 5), d_k=st.integers(1, 5), d_v=st.integers(1, 5), seed=seeds,
       norm=st.sampled_from(NORMS))
def test_circuit_cross_attention(T, d_model, d_k, d_v, seed, norm):
    W_Q, W_K, W_V = randn(seed, d_model, d_k), randn(seed + 1, d_model, d_k), randn(seed + 2, d_model, d_v)
    x, y, z = (randn(seed + i, T, d_model) for i in (3, 4, 5))
    circuit = ConditioningCircuit(W_Q, W_K, W_V, f="elu+1", g="tanh", alpha=0.5, norm=norm)
    expected = condition(x @ W_Q, y @ W_K, z @ W_V, f="elu+1", g="tanh", alpha=0.5, norm=norm)
    assert rel_err(expected, circuit(x, y, z)) <= EXACT
    # z defaults to y (the US comes with the CS), and y to x (self-attention)
    assert torch.equal(circuit(x, y), circuit(x, y, y))
    assert torch.equal(circuit(x), circuit(x, x, x))


@PROPERTY
@given(T=st.integers(1, 10), d=st.integers(2, 6), seed=seeds, log_alpha=st.floats(-5, 5),
       norm=st.sampled_from(["rms", "layer"]))
def test_positive_learning_rate_cancels_in_the_norms(T, d, seed, log_alpha, norm):
    test, cs, us = randn(seed, T, d), randn(seed + 1, T, d), randn(seed + 2, T, d)
    alpha = math.exp(log_alpha)
    assert rel_err(condition(test, cs, us, norm=norm, eps=0),
                   condition(test, cs, us, alpha=alpha, norm=norm, eps=0)) <= EXACT


# --- dtype and device -------------------------------------------------------------------------

def _circuit(x, d_k=3, d_v=2):
    """A circuit whose projections are on ``x``'s device, in its dtype."""
    make, d_model = tensors(x.device, x.dtype), x.shape[-1]
    return ConditioningCircuit(make(7, d_model, d_k), make(8, d_model, d_k), make(9, d_model, d_v), f="elu+1",
                               norm="layer")


CALLS = {
    "hebbian_store": lambda a, b, c: hebbian_store(a, c, f="elu+1", g="tanh", alpha=0.5),
    "respond": lambda a, b, c: respond(a[..., :3, :], b, f="relu", norm="rms"),
    "condition": lambda a, b, c: condition(a, b, c, f="elu+1", norm="layer"),
    "ConditioningCircuit": lambda a, b, c: _circuit(a)(a),
}


@pytest.mark.parametrize("device", [str(DEVICE), "meta"])
@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize("name", list(CALLS))
def test_dtype_and_device_preserved(name, dtype, device):
    make = tensors(device, dtype)
    a, b, c = make(0, 2, 5, 3), make(1, 2, 5, 3), make(2, 2, 5, 4)
    out = CALLS[name](a, b, c)
    assert out.dtype == dtype and out.device.type == torch.device(device).type
    if device != "meta":
        assert torch.isfinite(out).all()


# --- bad input --------------------------------------------------------------------------------

NAN, INF = float("nan"), float("inf")


BAD_STORE = cases(   # (case, cs, us, keyword arguments, error, parameter)
    ("cs is 1-D", cpu(5), cpu(5, 2), {}, ValueError, "cs"),
    ("n of us differs", cpu(5, 3), cpu(4, 2), {}, ValueError, "us"),
    ("batch of us differs", cpu(2, 5, 3), cpu(3, 5, 2), {}, ValueError, "cs"),
    ("us has no batch", cpu(2, 5, 3), cpu(5, 2), {}, ValueError, "cs"),
    ("NaN in cs", with_value(cpu(5, 3), NAN), cpu(5, 2), {}, ValueError, "cs"),
    ("inf in us", cpu(5, 3), with_value(cpu(5, 2), INF), {}, ValueError, "us"),
    ("us float32", cpu(5, 3), cpu(5, 2, dtype=torch.float32), {}, TypeError, "us"),
    ("us on meta", cpu(5, 3), meta(5, 2), {}, ValueError, "us"),
    ("cs is a list", cpu(5, 3).tolist(), cpu(5, 2), {}, TypeError, "cs"),
    ("cs is int64", cpu(5, 3).long(), cpu(5, 2), {}, TypeError, "cs"),
    ("alpha NaN", cpu(5, 3), cpu(5, 2), {"alpha": NAN}, ValueError, "alpha"),
    ("alpha inf", cpu(5, 3), cpu(5, 2), {"alpha": INF}, ValueError, "alpha"),
    ("alpha str", cpu(5, 3), cpu(5, 2), {"alpha": "1"}, TypeError, "alpha"),
    ("unknown f", cpu(5, 3), cpu(5, 2), {"f": "softmax"}, ValueError, "f"),
    ("unknown g", cpu(5, 3), cpu(5, 2), {"g": "gelu"}, ValueError, "g"),
    ("n=0", cpu(0, 3), cpu(0, 2), {}, ValueError, "cs"),
    ("d_k=0", cpu(5, 0), cpu(5, 2), {}, ValueError, "cs"),
    ("d_v=0", cpu(5, 3), cpu(5, 0), {}, ValueError, "us"),
)


@pytest.mark.parametrize("cs, us, kwargs, error, param", BAD_STORE)
def test_hebbian_store_bad_input(cs, us, kwargs, error, param):
    with pytest.raises(error, match=rf"\b{param}\b"):
        hebbian_store(cs, us, **kwargs)


BAD_RESPOND = cases(   # (case, store, test, keyword arguments, error, parameter)
    ("store is 1-D", cpu(3), cpu(4, 3), {}, ValueError, "store"),
    ("d_k of test differs", cpu(3, 2), cpu(4, 5), {}, ValueError, "test"),
    ("batches do not broadcast", cpu(2, 3, 2), cpu(3, 4, 3), {}, ValueError, "store|test"),
    ("inf in store", with_value(cpu(3, 2), INF), cpu(4, 3), {}, ValueError, "store"),
    ("NaN in test", cpu(3, 2), with_value(cpu(4, 3), NAN), {}, ValueError, "test"),
    ("test float32", cpu(3, 2), cpu(4, 3, dtype=torch.float32), {}, TypeError, "test"),
    ("test on meta", cpu(3, 2), meta(4, 3), {}, ValueError, "test"),
    ("unknown norm", cpu(3, 2), cpu(4, 3), {"norm": "batch"}, ValueError, "norm"),
    ("unknown f", cpu(3, 2), cpu(4, 3), {"f": "sigmoid"}, ValueError, "f"),
    ("eps < 0", cpu(3, 2), cpu(4, 3), {"eps": -1.0}, ValueError, "eps"),
    ("eps NaN", cpu(3, 2), cpu(4, 3), {"eps": NAN}, ValueError, "eps"),
    ("m=0", cpu(3, 2), cpu(0, 3), {}, ValueError, "test"),
    ("d_k=0", cpu(0, 2), cpu(4, 0), {}, ValueError, "store"),
    ("d_v=0", cpu(3, 0), cpu(4, 3), {}, ValueError, "store"),
)


@pytest.mark.parametrize("store, test, kwargs, error, param", BAD_RESPOND)
def test_respond_bad_input(store, test, kwargs, error, param):
    with pytest.raises(error, match=rf"\b({param})\b"):
        respond(store, test, **kwargs)


BAD_CONDITION = cases(   # (case, test, cs, us, keyword arguments, error, parameter)
    ("test is 1-D", cpu(5), cpu(5), cpu(5), {}, ValueError, "test"),
    ("d_k of test differs", cpu(5, 4), cpu(5, 3), cpu(5, 2), {}, ValueError, "test"),
    ("T of test differs", cpu(4, 3), cpu(5, 3), cpu(5, 2), {}, ValueError, "test"),
    ("T of us differs", cpu(5, 3), cpu(5, 3), cpu(4, 2), {}, ValueError, "us"),
    ("batch of us differs", cpu(2, 5, 3), cpu(2, 5, 3), cpu(3, 5, 2), {}, ValueError, "us"),
    ("NaN in test", with_value(cpu(5, 3), NAN), cpu(5, 3), cpu(5, 2), {}, ValueError, "test"),
    ("inf in cs", cpu(5, 3), with_value(cpu(5, 3), INF), cpu(5, 2), {}, ValueError, "cs"),
    ("-inf in us", cpu(5, 3), cpu(5, 3), with_value(cpu(5, 2), -INF), {}, ValueError, "us"),
    ("cs float32", cpu(5, 3), cpu(5, 3, dtype=torch.float32), cpu(5, 2), {}, TypeError, "cs"),
    ("us on meta", cpu(5, 3), cpu(5, 3), meta(5, 2), {}, ValueError, "us"),
    ("unknown f", cpu(5, 3), cpu(5, 3), cpu(5, 2), {"f": "gelu"}, ValueError, "f"),
    ("unknown g", cpu(5, 3), cpu(5, 3), cpu(5, 2), {"g": "gelu"}, ValueError, "g"),
    ("unknown norm", cpu(5, 3), cpu(5, 3), cpu(5, 2), {"norm": "group"}, ValueError, "norm"),
    ("alpha NaN", cpu(5, 3), cpu(5, 3), cpu(5, 2), {"alpha": NAN}, ValueError, "alpha"),
    ("eps inf", cpu(5, 3), cpu(5, 3), cpu(5, 2), {"eps": INF}, ValueError, "eps"),
    ("T=0", cpu(0, 3), cpu(0, 3), cpu(0, 2), {}, ValueError, "test"),
    ("d_k=0", cpu(5, 0), cpu(5, 0), cpu(5, 2), {}, ValueError, "test"),
    ("d_v=0", cpu(5, 3), cpu(5, 3), cpu(5, 0), {}, ValueError, "us"),
)


@pytest.mark.parametrize("test, cs, us, kwargs, error, param", BAD_CONDITION)
def test_condition_bad_input(test, cs, us, kwargs, error, param):
    with pytest.raises(error, match=rf"\b{param}\b"):
        condition(test, cs, us, **kwargs)


W = {"W_Q": cpu(4, 3), "W_K": cpu(4, 3), "W_V": cpu(4, 2)}

BAD_CIRCUIT = cases(   # (case, overrides of the projections and options, error, parameter)
    ("W_Q is 1-D", {"W_Q": cpu(4)}, ValueError, "W_Q"),
    ("W_V is 3-D", {"W_V": cpu(2, 4, 2)}, ValueError, "W_V"),
    ("d_model of W_K differs", {"W_K": cpu(5, 3)}, ValueError, "W_K"),
    ("d_model of W_V differs", {"W_V": cpu(5, 2)}, ValueError, "W_V"),
    ("d_k of W_K differs", {"W_K": cpu(4, 2)}, ValueError, "W_K"),
    ("NaN in W_Q", {"W_Q": with_value(cpu(4, 3), NAN)}, ValueError, "W_Q"),
    ("inf in W_V", {"W_V": with_value(cpu(4, 2), INF)}, ValueError, "W_V"),
    ("W_K float32", {"W_K": cpu(4, 3, dtype=torch.float32)}, TypeError, "W_K"),
    ("W_V on meta", {"W_V": meta(4, 2)}, ValueError, "W_V"),
    ("W_Q is an array", {"W_Q": cpu(4, 3).numpy()}, TypeError, "W_Q"),
    ("unknown norm", {"norm": "batch"}, ValueError, "norm"),
    ("unknown f", {"f": "softmax"}, ValueError, "f"),
    ("unknown g", {"g": "softmax"}, ValueError, "g"),
    ("alpha NaN", {"alpha": NAN}, ValueError, "alpha"),
    ("eps < 0", {"eps": -1.0}, ValueError, "eps"),
    ("d_model=0", {"W_Q": cpu(0, 3), "W_K": cpu(0, 3), "W_V": cpu(0, 2)}, ValueError, "W_Q"),
    ("d_k=0", {"W_Q": cpu(4, 0), "W_K": cpu(4, 0)}, ValueError, "W_Q"),
    ("d_v=0", {"W_V": cpu(4, 0)}, ValueError, "W_V"),
)


@pytest.mark.parametrize("overrides, error, param", BAD_CIRCUIT)
def test_circuit_bad_construction(overrides, error, param):
    with pytest.raises(error, match=rf"\b{param}\b"):
        circuit = ConditioningCircuit(**{**W, **overrides})
        circuit(cpu(5, circuit.W_Q.shape[0]))   # options may be checked when the circuit runs


BAD_CALL = cases(   # (case, x, y, z, error, parameter)
    ("x is 1-D", cpu(5), None, None, ValueError, "x"),
    ("d_model of x differs", cpu(5, 3), None, None, ValueError, "x"),
    ("d_model of y differs", cpu(5, 4), cpu(5, 3), None, ValueError, "y"),
    ("d_model of z differs", cpu(5, 4), cpu(5, 4), cpu(5, 5), ValueError, "z"),
    ("T of y differs from x", cpu(5, 4), cpu(6, 4), None, ValueError, "y"),
    ("batch of y differs from x", cpu(2, 5, 4), cpu(3, 5, 4), None, ValueError, "y"),
    ("T of z differs from y", cpu(5, 4), cpu(5, 4), cpu(6, 4), ValueError, "z"),
    ("NaN in x", with_value(cpu(5, 4), NAN), None, None, ValueError, "x"),
    ("inf in y", cpu(5, 4), with_value(cpu(5, 4), INF), None, ValueError, "y"),
    ("x float32", cpu(5, 4, dtype=torch.float32), None, None, TypeError, "x"),
    ("x on meta", meta(5, 4), None, None, ValueError, "x"),
    ("y on meta", cpu(5, 4), meta(5, 4), None, ValueError, "y"),
    ("T=0", cpu(0, 4), None, None, ValueError, "x"),
)


@pytest.mark.parametrize("x, y, z, error, param", BAD_CALL)
def test_circuit_bad_call(x, y, z, error, param):
    with pytest.raises(error, match=rf"\b{param}\b"):
        ConditioningCircuit(**W)(x, y, z)
