"""pavlov.attention: the three forms of causal linear attention against a direct sum, and softmax attention."""

from __future__ import annotations

import functools
import math

import pytest
import torch
from conftest import (DEVICE, EXACT, FLOAT_DTYPES, PROPERTY, batch_shapes, cases, cpu, meta, randn, rel_err, seeds,
                      tensors, with_value)
from hypothesis import given
from hypothesis import strategies as st

from pavlov.attention import FORMS, linear_attention, softmax_attention
from pavlov.maps import FEATURE_MAPS, NORMS, feature_map, output_norm

pytestmark = pytest.mark.usefixtures("one_thread")
F64 = {"dtype": torch.float64, "device": "cpu"}


def tensor(rows) -> torch.Tensor:
    return torch.tensor(rows, **F64)


# --- references: the definitions, one step and one term at a time ------------------------------

def direct_linear_attention(q, k, v, *, phi, denominator, norm, eps):
    """o_t = Norm(sum_{j<=t} (phi(q_t) . phi(k_j)) v_j / z_t), z_t = sum_{j<=t} phi(q_t) . phi(k_j)."""
    phi = feature_map(phi)
    q, k = phi(q), phi(k)
    outputs = []
    for t in range(q.shape[-2]):
        weights = (q[..., t, None, :] * k[..., :t + 1, :]).sum(-1)            # (..., t+1)
        r = (weights[..., None] * v[..., :t + 1, :]).sum(-2)                  # (..., d_v)
        outputs.append(r / weights.sum(-1, keepdim=True) if denominator else r)
    return output_norm(torch.stack(outputs, dim=-2), norm, eps)


def direct_softmax_attention(q, k, v, *, causal, scale):
    """o_t = sum_j w_tj v_j with w_t = softmax_j(scale q_t . k_j) over j <= t (causal) or all j."""
    T = q.shape[-2]
    outputs = []
    for t in range(T):
        keys = t + 1 if causal else T
        logits = scale * (q[..., t, None, :] * k[..., :keys, :]).sum(-1)       # (..., keys)
        w = torch.exp(logits - logits.max(dim=-1, keepdim=True).values)
        outputs.append(((w / w.sum(-1, keepdim=True))[..., None] * v[..., :keys, :]).sum(-2))
    return torch.stack(outputs, dim=-2)


# --- hand-computed cases ----------------------------------------------------------------------

Q, K, V = tensor([[1.0], [2.0]]), tensor([[3.0], [4.0]]), tensor([[5.0], [6.0]])


@pytest.mark.parametrize("form", FORMS)
@pytest.mark.parametrize("chunk_size", [1, 2, 3])
def test_linear_attention_by_hand(form, chunk_size):
    # T = 2, d = 1: r_1 = 1 * 3 * 5 = 15, r_2 = 2 * (3 * 5 + 4 * 6) = 78
    assert linear_attention(Q, K, V, form=form, chunk_size=chunk_size).tolist() == [[15.0], [78.0]]
    # with the denominator: z_1 = 1 * 3 = 3, z_2 = 2 * (3 + 4) = 14, so o = [5, 78 / 14]
    out = linear_attention(Q, K, V, form=form, chunk_size=chunk_size, denominator=True)
    assert torch.allclose(out, tensor([[5.0], [78 / 14]]), rtol=EXACT, atol=0)
    # phi = relu zeroes a negative key: r_2 = 2 * (0 + 4 * 6) = 48
    out = linear_attention(Q, tensor([[-3.0], [4.0]]), V, form=form, chunk_size=chunk_size, feature_map="relu")
    assert out.tolist() == [[0.0], [48.0]]


def test_linear_attention_is_causal():
    # changing the last value changes only the last output
    later = linear_attention(Q, K, tensor([[5.0], [1e3]]))
    assert later[0].tolist() == [15.0] and later[1].item() != 78.0


def test_softmax_attention_by_hand():
    v = tensor([[2.0, 0.0], [4.0, 8.0]])
    zeros = tensor([[0.0], [0.0]])
    # equal logits: the first output sees only v_1; the second averages v_1 and v_2
    assert softmax_attention(zeros, zeros, v).tolist() == [[2.0, 0.0], [3.0, 4.0]]
    # without the mask both outputs average
    assert softmax_attention(zeros, zeros, v, causal=False).tolist() == [[3.0, 4.0], [3.0, 4.0]]
    # logits 0 and ln 3 (scale 1): weights 1/4 and 3/4 -> [0.5 + 3, 0 + 6]
    out = softmax_attention(tensor([[1.0], [1.0]]), tensor([[0.0], [math.log(3.0)]]), v, scale=1.0)
    assert torch.allclose(out, tensor([[2.0, 0.0], [3.5, 6.0]]), rtol=EXACT, atol=0)


def test_softmax_default_scale_is_one_over_sqrt_dk():
    q, k, v = randn(0, 6, 4), randn(1, 6, 4), randn(2, 6, 3)
    assert torch.equal(softmax_attention(q, k, v), softmax_attention(q, k, v, scale=1 / math.sqrt(4)))


def test_softmax_averages_values():
    # the weights are a probability distribution: a constant value comes back unchanged
    q, k = randn(0, 2, 7, 5), randn(1, 2, 7, 5)
    v = torch.full((2, 7, 3), 2.5, **F64)
    assert torch.allclose(softmax_attention(q, k, v), v, rtol=EXACT, atol=0)


# --- properties: each form is the direct sum ---------------------------------------------------

@pytest.mark.parametrize("form", FORMS)
@PROPERTY
@given(data=st.data(), batch=batch_shapes, T=st.integers(1, 40), d_k=st.integers(1, 8), seed=seeds,
       norm=st.sampled_from(NORMS), denominator=st.booleans())
def test_linear_attention_equals_direct_sum(form, data, batch, T, d_k, seed, norm, denominator):
    d_v = data.draw(st.integers(1, 8), label="d_v")
    chunk_size = data.draw(st.integers(1, T + 8), label="chunk_size")
    phi = data.draw(st.sampled_from(["elu+1", "exp"] if denominator else sorted(FEATURE_MAPS)), label="phi")
    q, k, v = randn(seed, *batch, T, d_k), randn(seed + 1, *batch, T, d_k), randn(seed + 2, *batch, T, d_v)
    expected = direct_linear_attention(q, k, v, phi=phi, denominator=denominator, norm=norm, eps=1e-6)
    got = linear_attention(q, k, v, form=form, chunk_size=chunk_size, feature_map=phi, denominator=denominator,
                           norm=norm)
    assert got.shape == (*batch, T, d_v)
    assert rel_err(expected, got) <= EXACT


@PROPERTY
@given(batch=batch_shapes, T=st.integers(1, 16), d_k=st.integers(1, 8), d_v=st.integers(1, 8), seed=seeds,
       causal=st.booleans(), scale=st.one_of(st.none(), st.floats(1e-3, 10.0)))
def test_softmax_attention_equals_direct_loop(batch, T, d_k, d_v, seed, causal, scale):
    q, k, v = randn(seed, *batch, T, d_k), randn(seed + 1, *batch, T, d_k), randn(seed + 2, *batch, T, d_v)
    expected = direct_softmax_attention(q, k, v, causal=causal, scale=1 / math.sqrt(d_k) if scale is None else scale)
    got = softmax_attention(q, k, v, causal=causal, scale=scale)
    assert got.shape == (*batch, T, d_v)
    assert rel_err(expected, got) <= EXACT


# --- dtype and device -------------------------------------------------------------------------

CALLS = {f"linear_attention-{form}-{'denominator' if den else 'plain'}":
         functools.partial(linear_attention, form=form, chunk_size=2, feature_map="elu+1", denominator=den, norm="rms")
         for form in FORMS for den in (False, True)}
CALLS["softmax_attention-causal"] = lambda q, k, v: softmax_attention(q, k, v)
CALLS["softmax_attention-full"] = lambda q, k, v: softmax_attention(q, k, v, causal=False, scale=2.0)


@pytest.mark.parametrize("device", [str(DEVICE), "meta"])
@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize("name", list(CALLS))
def test_dtype_and_device_preserved(name, dtype, device):
    make = tensors(device, dtype)
    q, k, v = make(0, 2, 5, 3), make(1, 2, 5, 3), make(2, 2, 5, 4)
    out = CALLS[name](q, k, v)
    assert out.shape == (2, 5, 4) and out.dtype == dtype and out.device.type == torch.device(device).type
    if device != "meta":
        assert torch.isfinite(out).all()


# --- bad input --------------------------------------------------------------------------------

NAN, INF = float("nan"), float("inf")


BAD_QKV = cases(   # (case, q, k, v, error, parameter): shared by both attentions
    ("q is 1-D", cpu(5), cpu(5), cpu(5), ValueError, "q"),
    ("d_k of k differs", cpu(5, 3), cpu(5, 4), cpu(5, 2), ValueError, "k"),
    ("T of k differs", cpu(5, 3), cpu(4, 3), cpu(5, 2), ValueError, "k"),
    ("T of v differs", cpu(5, 3), cpu(5, 3), cpu(4, 2), ValueError, "v"),
    ("batch of v differs", cpu(2, 5, 3), cpu(2, 5, 3), cpu(3, 5, 2), ValueError, "v"),
    ("batch of k differs", cpu(2, 5, 3), cpu(3, 5, 3), cpu(2, 5, 2), ValueError, "k"),
    ("NaN in q", with_value(cpu(5, 3), NAN), cpu(5, 3), cpu(5, 2), ValueError, "q"),
    ("inf in k", cpu(5, 3), with_value(cpu(5, 3), INF), cpu(5, 2), ValueError, "k"),
    ("-inf in v", cpu(5, 3), cpu(5, 3), with_value(cpu(5, 2), -INF), ValueError, "v"),
    ("k float32", cpu(5, 3), cpu(5, 3, dtype=torch.float32), cpu(5, 2), TypeError, "k"),
    ("v float16", cpu(5, 3), cpu(5, 3), cpu(5, 2, dtype=torch.float16), TypeError, "v"),
    ("k on meta", cpu(5, 3), meta(5, 3), cpu(5, 2), ValueError, "k"),
    ("v on cpu, q on meta", meta(5, 3), meta(5, 3), cpu(5, 2), ValueError, "v"),
    ("q is an array", cpu(5, 3).numpy(), cpu(5, 3), cpu(5, 2), TypeError, "q"),
    ("v is int64", cpu(5, 3), cpu(5, 3), cpu(5, 2).long(), TypeError, "v"),
    ("T=0", cpu(0, 3), cpu(0, 3), cpu(0, 2), ValueError, "q"),
    ("d_k=0", cpu(5, 0), cpu(5, 0), cpu(5, 2), ValueError, "q"),
    ("d_v=0", cpu(5, 3), cpu(5, 3), cpu(5, 0), ValueError, "v"),
)


@pytest.mark.parametrize("form", FORMS)
@pytest.mark.parametrize("q, k, v, error, param", BAD_QKV)
def test_linear_attention_bad_tensors(q, k, v, error, param, form):
    with pytest.raises(error, match=rf"\b{param}\b"):
        linear_attention(q, k, v, form=form)


@pytest.mark.parametrize("q, k, v, error, param", BAD_QKV)
def test_softmax_attention_bad_tensors(q, k, v, error, param):
    with pytest.raises(error, match=rf"\b{param}\b"):
        softmax_attention(q, k, v)


@pytest.mark.parametrize("kwargs, error, param", cases(
    ("unknown form", {"form": "fused"}, ValueError, "form"),
    ("form is case-sensitive", {"form": "Recurrent"}, ValueError, "form"),
    ("unknown feature map", {"feature_map": "softmax"}, ValueError, "feature_map"),
    ("unknown norm", {"norm": "batch"}, ValueError, "norm"),
    ("chunk_size=0", {"chunk_size": 0}, ValueError, "chunk_size"),
    ("chunk_size<0", {"chunk_size": -4}, ValueError, "chunk_size"),
    ("chunk_size float", {"chunk_size": 2.0}, TypeError, "chunk_size"),
    ("chunk_size bool", {"chunk_size": True}, TypeError, "chunk_size"),
    ("denominator int", {"denominator": 1}, TypeError, "denominator"),
    ("denominator str", {"denominator": "yes"}, TypeError, "denominator"),
    ("eps<0", {"eps": -1e-6}, ValueError, "eps"),
    ("eps NaN", {"eps": NAN}, ValueError, "eps"),
    ("eps inf", {"eps": INF}, ValueError, "eps"),
))
def test_linear_attention_bad_options(kwargs, error, param):
    with pytest.raises(error, match=rf"\b{param}\b"):
        linear_attention(cpu(5, 3), cpu(5, 3), cpu(5, 2), **kwargs)


@pytest.mark.parametrize("kwargs, error, param", cases(
    ("causal int", {"causal": 1}, TypeError, "causal"),
    ("causal str", {"causal": "no"}, TypeError, "causal"),
    ("scale=0", {"scale": 0.0}, ValueError, "scale"),
    ("scale<0", {"scale": -1.0}, ValueError, "scale"),
    ("scale NaN", {"scale": NAN}, ValueError, "scale"),
    ("scale inf", {"scale": INF}, ValueError, "scale"),
    ("scale str", {"scale": "1"}, TypeError, "scale"),
))
def test_softmax_attention_bad_options(kwargs, error, param):
    with pytest.raises(error, match=rf"\b{param}\b"):
        softmax_attention(cpu(5, 3), cpu(5, 3), cpu(5, 2), **kwargs)


@pytest.mark.parametrize("phi", ["identity", "relu", "tanh"])
def test_denominator_with_a_non_positive_feature_map_is_refused(phi):
    """A feature map that lets z_t <= 0 would divide by zero or flip signs: a clear error instead."""
    q = -torch.ones(1, 4, 3, dtype=torch.float64)
    k = torch.ones(1, 4, 3, dtype=torch.float64)
    with pytest.raises(ValueError, match="denominator"):
        linear_attention(q, k, k, feature_map=phi, denominator=True)
