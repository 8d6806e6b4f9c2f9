"""pavlov.theory, chapter 2: the operation counts against hand counts and against the products the
attention forms actually execute, the norm-rescaling formula against the norms, and the rounding scale.

The measurements use the package's attention and norms (this test may import them; ``pavlov.theory``
itself may not). Identities in float64 are checked to ``EXACT`` (see conftest).
"""

from __future__ import annotations

import math

import pytest
import torch
from conftest import DEVICE, EXACT, randn

from pavlov import theory, timing
from pavlov.attention import linear_attention
from pavlov.maps import output_norm

pytestmark = pytest.mark.usefixtures("one_thread")


# --- attention_cost ---------------------------------------------------------------------------

def test_attention_cost_by_hand():
    assert theory.attention_cost("recurrent", 10, 3, 5) == 2 * 10 * 3 * 5
    assert theory.attention_cost("parallel", 10, 3, 5) == 100 * 8
    # chunks of 4, 4 and 2 steps: 2 T d_k d_v + (d_k + d_v)(16 + 16 + 4)
    assert theory.attention_cost("chunkwise", 10, 3, 5, chunk_size=4) == 300 + 8 * 36


@pytest.mark.parametrize("T", [1, 7, 64, 100])
def test_chunkwise_cost_limits(T):
    d_k, d_v = 6, 4
    recurrent, parallel = (theory.attention_cost(f, T, d_k, d_v) for f in ("recurrent", "parallel"))
    # one chunk holding the whole sequence: the state read-out and update plus the parallel form
    assert theory.attention_cost("chunkwise", T, d_k, d_v, chunk_size=T) == recurrent + parallel
    assert theory.attention_cost("chunkwise", T, d_k, d_v, chunk_size=T + 5) == recurrent + parallel
    # chunks of one step: the parallel part is one product per step
    assert theory.attention_cost("chunkwise", T, d_k, d_v, chunk_size=1) == recurrent + T * (d_k + d_v)


def test_attention_cost_scaling_in_T():
    cost = theory.attention_cost
    assert cost("parallel", 2048, 64, 64) == 4 * cost("parallel", 1024, 64, 64)
    assert cost("recurrent", 2048, 64, 64) == 2 * cost("recurrent", 1024, 64, 64)
    assert cost("chunkwise", 2048, 64, 64, 64) == 2 * cost("chunkwise", 1024, 64, 64, 64)
    # any T: between the recurrent count and the linear bound 2 T d_k d_v + (d_k + d_v) T C
    for T in (1, 63, 65, 1000, 2000):
        assert cost("recurrent", T, 64, 32) < cost("chunkwise", T, 64, 32, 64) <= cost("recurrent", T, 64, 32) + 96 * T * 64


@pytest.mark.parametrize("form", theory.ATTENTION_FORMS)
@pytest.mark.parametrize("T, chunk_size", [(1, 1), (10, 4), (12, 4), (33, 8), (5, 9)])
def test_attention_cost_counts_the_products_the_forms_execute(form, T, chunk_size):
    # the multiply-adds of every matrix product the code dispatches, counted on shapes alone
    batch, d_k, d_v = 3, 5, 7
    products = timing.multiply_adds(linear_attention, ((batch, T, d_k), (batch, T, d_k), (batch, T, d_v)),
                                    form=form, chunk_size=chunk_size)
    assert products == batch * theory.attention_cost(form, T, d_k, d_v, chunk_size)


def test_attention_cost_validates():
    with pytest.raises(ValueError, match="form"):
        theory.attention_cost("quadratic", 10, 4, 4)
    with pytest.raises(ValueError, match="T"):
        theory.attention_cost("parallel", 0, 4, 4)
    with pytest.raises(TypeError, match="d_k"):
        theory.attention_cost("parallel", 10, 4.0, 4)
    with pytest.raises(ValueError, match="d_v"):
        theory.attention_cost("parallel", 10, 4, -1)
    with pytest.raises(ValueError, match="chunk_size"):
        theory.attention_cost("chunkwise", 10, 4, 4, chunk_size=0)


# --- norm_rescaling_change --------------------------------------------------------------------

def test_norm_rescaling_change_special_cases():
    assert theory.norm_rescaling_change(7.0, 0.0, 0.3) == 0.0          # eps = 0: invariant
    assert theory.norm_rescaling_change(1.0, 1e-3, 0.3) == 0.0         # no rescaling
    # first order in eps: (eps / 2m) |1 - s^-2|
    assert math.isclose(theory.norm_rescaling_change(10.0, 1e-9, 0.5), 1e-9 / 1.0 * 0.99, rel_tol=1e-6)
    # a tiny scale collapses the response: the change tends to one
    assert theory.norm_rescaling_change(1e-8, 1e-3, 1.0) > 0.99


@pytest.mark.parametrize("norm", ["rms", "layer"])
@pytest.mark.parametrize("scale", [1e-3, 0.2, 3.0, 1e4])
@pytest.mark.parametrize("eps", [0.0, 1e-6, 0.1])
def test_norm_rescaling_change_matches_the_norms(norm, scale, eps):
    r = randn(3, 50, 6)                                                   # rows of varied size
    centred = r - r.mean(-1, keepdim=True) if norm == "layer" else r
    mean_square = centred.pow(2).mean(-1)                                 # (50,)
    base, scaled = output_norm(r, norm, eps), output_norm(scale * r, norm, eps)
    measured = (scaled - base).norm(dim=-1) / base.norm(dim=-1)
    predicted = torch.tensor([theory.norm_rescaling_change(scale, eps, m) for m in mean_square.tolist()],
                             dtype=r.dtype, device=r.device)
    assert (measured - predicted).abs().max().item() <= EXACT


def test_norm_rescaling_change_validates():
    with pytest.raises(ValueError, match="scale"):
        theory.norm_rescaling_change(-1.0, 1e-6, 1.0)                  # a negative scale flips the sign
    with pytest.raises(ValueError, match="eps"):
        theory.norm_rescaling_change(2.0, -1e-6, 1.0)
    with pytest.raises(ValueError, match="mean_square"):
        theory.norm_rescaling_change(2.0, 1e-6, 0.0)
    with pytest.raises(TypeError, match="scale"):
        theory.norm_rescaling_change("2", 1e-6, 1.0)


# --- rounding_scale ---------------------------------------------------------------------------

def test_rounding_scale_values():
    assert theory.rounding_scale(1) == 2.0**-53
    assert theory.rounding_scale(8, "float32") == 8 * 2.0**-24
    assert theory.rounding_scale(3, torch.float64) == theory.rounding_scale(3, "float64")
    assert theory.rounding_scale(4, torch.bfloat16) == 4 * 2.0**-8


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_rounding_scale_is_the_unit_roundoff(dtype):
    u = theory.rounding_scale(1, dtype)
    one = torch.ones((), dtype=dtype, device=DEVICE)
    assert (one + 2 * u) > one and (one + u) == one                    # 1 + u rounds back to 1 (ties to even)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_rounding_scale_bounds_a_long_random_sum(dtype):
    x = randn(4, 20, 4096)                                              # 20 sums of n = 4096 random-sign terms
    exact, rounded = x.sum(-1), x.to(dtype).cumsum(-1)[..., -1].double()   # cumsum: strictly sequential
    relative = ((rounded - exact).pow(2).mean().sqrt() / exact.pow(2).mean().sqrt()).item()
    assert relative <= theory.rounding_scale(4096, dtype)


def test_rounding_scale_validates():
    with pytest.raises(ValueError, match="precision"):
        theory.rounding_scale(10, "float8")
    with pytest.raises(ValueError, match="depth"):
        theory.rounding_scale(0)
    with pytest.raises(TypeError, match="depth"):
        theory.rounding_scale(1.5)
