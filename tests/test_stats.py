"""pavlov.stats: means with standard errors, relative errors."""

import math

import pytest
import torch

import pavlov as pv
from pavlov.stats import crossing, mean_and_se, ratio, relative_error, weighted_slope


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


def test_ratio_adds_relative_errors_in_quadrature():
    value, se = ratio((3.0, 0.3), (4.0, 0.4))          # 10% and 10%
    assert value == 0.75 and se == pytest.approx(0.75 * math.sqrt(0.02), rel=1e-15)
    assert ratio((2.0, 0.0), (8.0, 0.0)) == (0.25, 0.0)


def test_ratio_standard_error_matches_the_spread_of_ratios():
    gen = torch.Generator().manual_seed(0)
    a = 5.0 + 0.05 * torch.randn(20_000, generator=gen, dtype=torch.float64)
    b = 2.0 + 0.04 * torch.randn(20_000, generator=gen, dtype=torch.float64)
    _, se = ratio((5.0, 0.05), (2.0, 0.04))
    assert (a / b).std().item() == pytest.approx(se, rel=0.05)      # the spread's own s.e. is ~0.5%


@pytest.mark.parametrize("a, b, error, match", [
    ((0.0, 0.1), (1.0, 0.1), ValueError, "non-zero"), ((1.0, 0.1), (0.0, 0.1), ValueError, "non-zero"),
    ((1.0, -0.1), (1.0, 0.1), ValueError, "a's se"), ((1.0, 0.1), (math.nan, 0.1), ValueError, "b must be finite"),
    (("1", 0.1), (1.0, 0.1), TypeError, "a must be a real")])
def test_ratio_bad_input(a, b, error, match):
    with pytest.raises(error, match=match):
        ratio(a, b)


def test_crossing_interpolates_the_first_fall_below_the_level():
    curve = {8: (1.0, 0.1), 16: (0.8, 0.1), 32: (0.4, 0.1), 64: (0.1, 0.1), 128: (0.5, 0.1)}
    x, se = crossing(curve, 0.5)                          # between 16 and 32, three quarters of the way
    assert x == 28.0
    # the s.e. by propagating each point's: dx/dy_a = 16 (0.5 - 0.4)/0.4^2, dx/dy_b = 16 (0.8 - 0.5)/0.4^2
    assert se == pytest.approx(0.1 * math.hypot(16 * 0.1 / 0.16, 16 * 0.3 / 0.16), rel=1e-12)


def test_crossing_standard_error_matches_the_spread_of_crossings():
    gen = torch.Generator().manual_seed(1)
    ys = {1: 0.9, 2: 0.6, 3: 0.2}
    draws = [crossing({x: (y + 0.01 * torch.randn(1, generator=gen).item(), 0.01) for x, y in ys.items()}, 0.5)[0]
             for _ in range(4000)]
    _, se = crossing({x: (y, 0.01) for x, y in ys.items()}, 0.5)
    assert torch.tensor(draws).std().item() == pytest.approx(se, rel=0.05)


@pytest.mark.parametrize("curve, level, match", [
    ({1: (0.9, 0.1), 2: (0.8, 0.1)}, 0.5, "does not straddle"), ({1: (0.4, 0.1), 2: (0.3, 0.1)}, 0.5, "does not straddle"),
    ({1: (0.9, 0.1)}, 0.5, "at least two"), ([(1, 0.9)], 0.5, "dict")])
def test_crossing_bad_input(curve, level, match):
    with pytest.raises(ValueError, match=match):
        crossing(curve, level)


def test_a_crossing_fitted_through_a_window_is_the_interpolation_for_two_points_and_exact_on_a_line():
    two = {1.0: (1.0, 0.05), 2.0: (0.5, 0.05), 8.0: (0.1, 0.05)}
    assert crossing(two, 0.75, window=1.1) == pytest.approx(crossing(two, 0.75))
    # points on one line: the fit finds its crossing, and more points fix it better than the two around it
    line = {x: (1.2 - 0.01 * x, 0.01) for x in (40.0, 45.0, 49.0, 51.0, 54.0, 58.0)}
    fitted, se = crossing(line, 0.7, window=1.2)
    assert fitted == pytest.approx(50.0)
    assert se < crossing(line, 0.7)[1]
