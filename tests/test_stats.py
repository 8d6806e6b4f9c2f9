"""pavlov.stats: means with standard errors, relative errors."""

import math

import pytest
import torch

import pavlov as pv
from pavlov.stats import mean_and_se, relative_error, weighted_slope


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_mean_and_se_by_hand(dtype):
    x = torch.tensor([[1.0, 10.0], [2.0, 10.0], [3.0, 10.0], [4.0, 10.0]], dtype=dtype)
    mean, se = mean_and_se(x, dim=0)
    assert mean.dtype == dtype and se.dtype == dtype
    torch.testing.assert_close(mean, torch.tensor([2.5, 10.0], dtype=dtype))
    # sample s.d. of 1..4 is sqrt(5/3); over sqrt(4)
    torch.testing.assert_close(se, torch.tensor([math.sqrt(5 / 3) / 2, 0.0], dtype=dtype))


def test_mean_and_se_on_meta():
    mean, se = mean_and_se(torch.empty(5, 3, device="meta"), dim=-1)
    assert mean.shape == se.shape == (5,) and se.device.type == "meta"


def test_standard_error_matches_spread_of_means():
    """Over many batches, the s.d. of batch means equals the standard error (within 5 of its own s.e.)."""
    x = pv.random_stimuli(2000, 50, 1, kind="gaussian", generator=pv.generator(0, "cpu"), device="cpu",
                          dtype=torch.float64)[..., 0]                 # (2000 batches, 50 trials), N(0, 1)
    means, ses = mean_and_se(x, dim=1)
    spread = means.std()
    # the s.d. of 2000 normal draws has relative s.e. 1/sqrt(2 * 1999)
    assert abs(spread / ses.mean() - 1) <= 5 / math.sqrt(2 * 1999)


@pytest.mark.parametrize("x, dim, error, match", [
    ([1.0, 2.0], 0, TypeError, "x"),
    (torch.tensor([1.0]), 0, ValueError, "at least 2 trials"),
    (torch.ones(3, 2), 2, ValueError, "dim"),
    (torch.tensor([1.0, float("nan")]), 0, ValueError, "x"),
    (torch.tensor([1, 2]), 0, TypeError, "x"),
])
def test_mean_and_se_bad_input(x, dim, error, match):
    with pytest.raises(error, match=match):
        mean_and_se(x, dim)


def test_relative_error_values():
    ref = torch.tensor([3.0, 4.0], dtype=torch.float64)
    assert relative_error(ref, ref) == 0.0
    assert relative_error(ref, 2 * ref) == pytest.approx(1.0)
    assert relative_error(torch.zeros(2), torch.zeros(2)) == 0.0
    assert relative_error(torch.zeros(2), torch.ones(2)) == math.inf


@pytest.mark.parametrize("ref, x, error, match", [
    (torch.ones(2), torch.ones(3), ValueError, "shape"),
    (torch.ones(2), torch.ones(2, device="meta"), ValueError, "reference"),
    (torch.ones(2), [1.0, 1.0], TypeError, "x"),
])
def test_relative_error_bad_input(ref, x, error, match):
    with pytest.raises(error, match=match):
        relative_error(ref, x)


def test_weighted_slope_is_the_line_and_its_standard_error():
    # points on a line: its slope; with equal errors s the slope's error is s / sqrt(sum (x - mean x)^2)
    slope, se = weighted_slope([1, 2, 3, 4], [2.5, 4.5, 6.5, 8.5], [0.2] * 4)
    assert slope == pytest.approx(2.0) and se == pytest.approx(0.2 / math.sqrt(5.0))
    # a point with a hundred times the error barely moves the line
    slope, _ = weighted_slope([1, 2, 3, 4], [2.5, 4.5, 6.5, 0.0], [0.2, 0.2, 0.2, 20.0])
    assert slope == pytest.approx(2.0, abs=0.01)
