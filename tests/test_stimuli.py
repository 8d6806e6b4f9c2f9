"""pavlov.stimuli.random_stimuli: shapes, the two ensembles' moments, determinism, dtypes, devices."""

from __future__ import annotations

import math

import pytest
import torch

import pavlov as pv
from pavlov.claims import tolerance

KINDS = ("sphere", "gaussian")
N, D = 20_000, 16     # samples and dimension for the moment checks: float64, a few milliseconds


def draw(*shape, kind="sphere", seed=0, dtype=torch.float64, device="cpu"):
    return pv.random_stimuli(*shape, kind=kind, generator=pv.generator(seed, device), device=device, dtype=dtype)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("shape", [(5,), (3, 5), (2, 3, 5), (2, 1, 3, 5)])
def test_shape(kind, shape):
    assert draw(*shape, kind=kind).shape == shape


def test_shape_as_one_sequence():
    assert pv.random_stimuli((2, 3, 4), device="cpu").shape == (2, 3, 4)
    assert pv.random_stimuli([2, 3], device="cpu").shape == (2, 3)
    assert pv.random_stimuli(torch.Size([4, 3]), device="cpu").shape == (4, 3)


def test_defaults_are_package_device_and_float32():
    x = pv.random_stimuli(3, 4)
    assert x.device.type == pv.default_device().type and x.dtype == torch.float32


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float32, torch.float64])
@pytest.mark.parametrize("kind", KINDS)
def test_dtype_preserved(kind, dtype):
    x = draw(50, 8, kind=kind, dtype=dtype)
    assert x.dtype == dtype and x.device == torch.device("cpu")
    assert torch.isfinite(x).all()


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float32, torch.float64])
@pytest.mark.parametrize("d", [1, 2, 16, 256])
def test_sphere_has_unit_norms(d, dtype):
    x = draw(200, d, kind="sphere", dtype=dtype)
    # Normalising in the drawing precision (at least float32) costs about (d + 2) ulps of the norm;
    # rounding to a narrower output dtype adds one ulp of that dtype.
    draw_dtype = torch.promote_types(dtype, torch.float32)
    bound = torch.finfo(dtype).eps + (d + 2) * torch.finfo(draw_dtype).eps
    norms = torch.linalg.vector_norm(x.double(), dim=-1)
    assert (norms - 1).abs().max().item() <= bound


def test_gaussian_mean_squared_norm_is_one():
    # ||k||^2 = sum of d squares of N(0, 1/d) entries: mean 1, variance 2/d.
    sq = draw(N, D, kind="gaussian").pow(2).sum(-1)
    se = math.sqrt(2 / D / N)
    assert abs(sq.mean().item() - 1) <= tolerance(se)


def test_gaussian_norms_are_not_all_one():
    # The two ensembles must differ: a gaussian stimulus has a random norm (sd sqrt(2/d)).
    norms = torch.linalg.vector_norm(draw(N, D, kind="gaussian"), dim=-1)
    assert norms.std().item() > 0.1


# Var(o^2) for the overlap o = k . q of two independent stimuli, where E o^2 = 1/d:
#   sphere   (o is one coordinate of a uniform unit vector): E o^4 = 3 / (d (d + 2));
#   gaussian (o = sum of d products of N(0, 1/d) entries):  E o^4 = (3 d + 6) / d^3.
OVERLAP_FOURTH_MOMENT = {"sphere": lambda d: 3 / (d * (d + 2)), "gaussian": lambda d: (3 * d + 6) / d**3}


@pytest.mark.parametrize("kind", KINDS)
def test_overlap_has_mean_zero_and_variance_one_over_d(kind):
    k = draw(N, D, kind=kind, seed=1)
    q = draw(N, D, kind=kind, seed=2)
    overlap = (k * q).sum(-1)
    # the mean: E o = 0, Var o = 1/d
    assert abs(overlap.mean().item()) <= tolerance(math.sqrt(1 / D / N))
    # the variance about the known mean 0: E o^2 = 1/d
    var_o2 = OVERLAP_FOURTH_MOMENT[kind](D) - 1 / D**2
    assert abs(overlap.pow(2).mean().item() - 1 / D) <= tolerance(math.sqrt(var_o2 / N))


@pytest.mark.parametrize("kind", KINDS)
def test_same_seed_same_stimuli(kind):
    assert torch.equal(draw(4, 10, 8, kind=kind, seed=3), draw(4, 10, 8, kind=kind, seed=3))


@pytest.mark.parametrize("kind", KINDS)
def test_different_seeds_differ(kind):
    a, b = draw(10, 8, kind=kind, seed=3), draw(10, 8, kind=kind, seed=4)
    assert not torch.isin(a, b).any()


def test_generator_advances():
    g = pv.generator(5, "cpu")
    a = pv.random_stimuli(10, 8, generator=g, device="cpu")
    b = pv.random_stimuli(10, 8, generator=g, device="cpu")
    assert not torch.equal(a, b)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_meta_device(kind, dtype):
    # torch draws on the meta device (shapes only), so stimuli can be planned without memory.
    x = pv.random_stimuli(2, 5, 4, kind=kind, device="meta", dtype=dtype)
    assert x.device.type == "meta" and x.shape == (2, 5, 4) and x.dtype == dtype


def test_generator_device_must_match():
    with pytest.raises(ValueError, match="generator"):
        pv.random_stimuli(5, 4, generator=pv.generator(0, "cpu"), device="meta")


@pytest.mark.parametrize("shape, kwargs, error, param", [
    ((0, 4), {}, ValueError, r"shape\[0\]"),             # non-positive sizes
    ((3, -1), {}, ValueError, r"shape\[1\]"),
    ((3, 2.0), {}, TypeError, r"shape\[1\]"),
    ((True, 4), {}, TypeError, r"shape\[0\]"),
    ((), {}, ValueError, "shape"),
    (((),), {}, ValueError, "shape"),
    ((3, 4), {"kind": "uniform"}, ValueError, "kind"),   # unknown option
    ((3, 4), {"kind": "Sphere"}, ValueError, "kind"),
    ((3, 4), {"dtype": torch.int64}, TypeError, "dtype"),
    ((3, 4), {"dtype": torch.bool}, TypeError, "dtype"),
])
def test_bad_input_names_the_parameter(shape, kwargs, error, param):
    with pytest.raises(error, match=param):
        pv.random_stimuli(*shape, device="cpu", **kwargs)
