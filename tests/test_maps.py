"""pavlov.maps: feature maps and output normalisations."""

from __future__ import annotations

import math

import pytest
import torch
from conftest import EXACT, FLOAT_DTYPES, PROPERTY, batch_shapes, cases, meta, randn, rel_err, seeds
from hypothesis import given
from hypothesis import strategies as st

from pavlov import maps
from pavlov.maps import FEATURE_MAPS, NORMS, elu_plus_one, feature_map, identity, output_norm

F64 = {"dtype": torch.float64, "device": "cpu"}


# --- feature maps -----------------------------------------------------------------------------

def test_identity_returns_its_input():
    x = torch.tensor([-1.5, 0.0, 2.0], **F64)
    assert identity(x) is x


def test_elu_plus_one_by_hand():
    x = torch.tensor([-2.0, -0.5, 0.0, 0.5, 3.0], **F64)
    # elu(x) + 1 = x + 1 for x > 0 and exp(x) for x <= 0
    expected = torch.tensor([math.exp(-2.0), math.exp(-0.5), 1.0, 1.5, 4.0], **F64)
    assert torch.allclose(elu_plus_one(x), expected, rtol=EXACT, atol=0)


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_elu_plus_one_is_positive_and_accurate_for_negative_inputs(dtype):
    # For x <= 0, elu(x) + 1 = exp(x): positive wherever exp(x) is representable (a normal number),
    # which the denominator of linear attention relies on, and accurate to a few ulps there.
    lowest = math.log(torch.finfo(dtype).tiny)
    x = torch.linspace(lowest, 0.0, 2001, dtype=dtype, device="cpu")
    y = elu_plus_one(x)
    assert (y > 0).all(), f"elu+1 is 0 for x <= {x[y <= 0].max().item():.3g}"
    exact = torch.exp(x.double())
    assert ((y.double() - exact).abs() / exact).max().item() <= 4 * torch.finfo(dtype).eps


@pytest.mark.parametrize("name", sorted(FEATURE_MAPS))
@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_feature_maps_keep_dtype_and_device(name, dtype):
    x = randn(1, 4, 3, dtype=dtype)
    y = FEATURE_MAPS[name](x)
    assert y.dtype == dtype and y.device == x.device and y.shape == x.shape
    m = FEATURE_MAPS[name](meta(4, 3, dtype=dtype))
    assert m.device.type == "meta" and m.dtype == dtype and m.shape == (4, 3)


def test_feature_map_lookup():
    assert feature_map(None) is identity
    for name, fn in FEATURE_MAPS.items():
        assert feature_map(name) is fn
    custom = torch.sigmoid
    assert feature_map(custom) is custom


@pytest.mark.parametrize("value", ["elu", "softmax", "ELU+1", "", 3, [1]])
@pytest.mark.parametrize("parameter", ["feature_map", "f", "g"])
def test_feature_map_unknown_names_the_callers_parameter(value, parameter):
    with pytest.raises(ValueError, match=f"^{parameter} must be one of"):
        feature_map(value, parameter=parameter)


# --- output norms -----------------------------------------------------------------------------

def test_output_norm_none_is_the_identity():
    r = randn(2, 5, 4)
    assert output_norm(r, "none") is r
    assert output_norm(r) is r


def test_output_norm_by_hand():
    r = torch.tensor([[3.0, 4.0], [1.0, 3.0]], **F64)
    # rms: divide by sqrt(mean of squares) = sqrt(12.5) and sqrt(5)
    rms = torch.tensor([[3 / math.sqrt(12.5), 4 / math.sqrt(12.5)], [1 / math.sqrt(5), 3 / math.sqrt(5)]], **F64)
    assert torch.allclose(output_norm(r, "rms", eps=0), rms, rtol=EXACT, atol=0)
    # layer: subtract the mean (3.5, 2), divide by the standard deviation (0.5, 1)
    layer = torch.tensor([[-1.0, 1.0], [-1.0, 1.0]], **F64)
    assert torch.allclose(output_norm(r, "layer", eps=0), layer, rtol=EXACT, atol=0)
    # eps enters under the square root: [1, 1] with eps = 1 gives 1 / sqrt(2)
    ones = torch.ones(1, 2, **F64)
    assert torch.allclose(output_norm(ones, "rms", eps=1.0), ones / math.sqrt(2), rtol=EXACT, atol=0)


def test_output_norm_zero_vector_stays_zero():
    zero = torch.zeros(2, 3, **F64)
    assert torch.equal(output_norm(zero, "rms"), zero)
    assert torch.equal(output_norm(zero, "layer"), zero)


@PROPERTY
@given(batch=batch_shapes, d=st.integers(2, 16), seed=seeds)
def test_output_norm_moments(batch, d, seed):
    r = randn(seed, *batch, d)
    rms = output_norm(r, "rms", eps=0)
    assert torch.allclose(rms.pow(2).mean(-1), torch.ones(batch, dtype=r.dtype, device=r.device), rtol=EXACT, atol=0)
    layer = output_norm(r, "layer", eps=0)
    zeros = torch.zeros(batch, dtype=r.dtype, device=r.device)
    assert torch.allclose(layer.mean(-1), zeros, rtol=0, atol=d * EXACT)
    assert torch.allclose(layer.pow(2).mean(-1), torch.ones_like(zeros), rtol=EXACT, atol=0)


@PROPERTY
@given(batch=batch_shapes, d=st.integers(2, 16), seed=seeds, log_c=st.floats(-20, 20),
       norm=st.sampled_from(["rms", "layer"]))
def test_output_norm_invariant_to_positive_scale(batch, d, seed, log_c, norm):
    # With eps = 0 both norms ignore a positive factor: the fact chapter 2 uses for the denominator.
    r = randn(seed, *batch, d)
    c = math.exp(log_c)
    assert rel_err(output_norm(r, norm, eps=0), output_norm(c * r, norm, eps=0)) <= EXACT


@pytest.mark.parametrize("norm", NORMS)
@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_output_norm_keeps_dtype_and_device(norm, dtype):
    r = randn(3, 2, 5, 4, dtype=dtype)
    out = output_norm(r, norm)
    assert out.dtype == dtype and out.device == r.device and out.shape == r.shape
    m = output_norm(meta(2, 5, 4, dtype=dtype), norm)
    assert m.device.type == "meta" and m.dtype == dtype and m.shape == (2, 5, 4)


NAN = float("nan")
INF = float("inf")


def _r(values=(1.0, 2.0), dtype=torch.float64):
    return torch.tensor([list(values)], dtype=dtype, device="cpu")


@pytest.mark.parametrize("args, kwargs, error, param", cases(
    ("unknown norm", (_r(), "batch"), {}, ValueError, "norm"),
    ("norm is case-sensitive", (_r(), "RMS"), {}, ValueError, "norm"),
    ("norm None", (_r(), None), {}, ValueError, "norm"),
    ("eps<0", (_r(), "rms"), {"eps": -1e-6}, ValueError, "eps"),
    ("eps NaN", (_r(), "rms"), {"eps": NAN}, ValueError, "eps"),
    ("eps inf", (_r(), "layer"), {"eps": INF}, ValueError, "eps"),
    ("eps str", (_r(), "rms"), {"eps": "1e-6"}, TypeError, "eps"),
    ("NaN in r", (_r((NAN, 1.0)), "rms"), {}, ValueError, "r"),
    ("inf in r", (_r((INF, 1.0)), "none"), {}, ValueError, "r"),
    ("r is a list", ([1.0, 2.0], "rms"), {}, TypeError, "r"),
    ("r is int64", (torch.tensor([[1, 2]], device="cpu"), "rms"), {}, TypeError, "r"),
    ("d_v=0", (torch.zeros(3, 0, dtype=torch.float64, device="cpu"), "rms"), {}, ValueError, "r"),
))
def test_output_norm_bad_input_names_the_parameter(args, kwargs, error, param):
    with pytest.raises(error, match=rf"\b{param}\b"):
        output_norm(*args, **kwargs)


def test_norms_listed():
    assert maps.NORMS == ("none", "rms", "layer")
