"""Small statistics used by every chapter: means with standard errors, relative errors, weighted slopes, ratios and
crossings of estimates."""

from __future__ import annotations

import math

import numpy as np
import torch

from . import _validate


def mean_and_se(x: torch.Tensor, dim: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    r"""The mean of ``x`` over the trials in ``dim`` and its standard error :math:`s / \sqrt{n}`.

    Args:
        x: measurements, with independent trials along ``dim`` (at least two).
        dim: the trial dimension.

    Returns:
        ``(mean, standard_error)``, each of ``x``'s shape without ``dim``.

    >>> mean, se = mean_and_se(torch.tensor([1.0, 2.0, 3.0, 4.0]))   # 2.5, 0.6455
    """
    _validate.tensor("x", x)
    if isinstance(dim, bool) or not isinstance(dim, int) or not -x.dim() <= dim < x.dim():
        raise ValueError(f"dim must be an int in [{-x.dim()}, {x.dim()}), got {dim!r}")
    n = x.shape[dim]
    if n < 2:
        raise ValueError(f"x needs at least 2 trials along dim {dim} for a standard error, got {n}")
    return x.mean(dim), x.std(dim) / math.sqrt(n)


def relative_error(reference: torch.Tensor, x: torch.Tensor) -> float:
    r"""``rms(reference - x) / rms(reference)``, the error measure of flash-linear-attention's tests.

    Two all-zero tensors agree exactly (0); a non-zero ``x`` against a zero reference is ``inf``.
    Accumulates in float64 whatever the inputs' dtype.
    """
    _validate.tensor("reference", reference, finite=False)
    _validate.tensor("x", x, finite=False)
    if reference.shape != x.shape:
        raise ValueError(f"x must have the shape of reference {tuple(reference.shape)}, got {tuple(x.shape)}")
    if reference.device != x.device:
        raise ValueError(f"x is on {x.device} but reference is on {reference.device}")
    err = (reference.double() - x.double()).pow(2).mean().sqrt().item()
    size = reference.double().pow(2).mean().sqrt().item()
    return err / size if size > 0 else (0.0 if err == 0 else math.inf)


def weighted_slope(x, y, se) -> tuple[float, float]:
    r"""The slope of the least-squares line through ``(x, y)`` weighted by :math:`1/\mathrm{se}^2`, and its
    standard error (from the given standard errors, not from the scatter about the line).

    ``x``, ``y`` and ``se`` are sequences of one length, at least two, with every ``se`` positive. For a
    power law :math:`y = c x^b` pass ``log x``, ``log y`` and the relative errors ``se / y``.

    >>> slope, slope_se = weighted_slope([0, 1, 2], [1.0, 3.0, 5.0], [0.1, 0.1, 0.1])   # 2.0, 0.0707
    """
    x, y, se = (np.asarray(a, dtype=float) for a in (x, y, se))
    if not x.ndim == 1 or not x.shape == y.shape == se.shape or len(x) < 2:
        raise ValueError(f"x, y and se must be 1-d of one length, at least 2; got shapes {x.shape}, {y.shape}, "
                         f"{se.shape}")
    if not np.all(np.isfinite(se)) or not np.all(se > 0):
        raise ValueError(f"se must be positive and finite, got {se.tolist()}")
    (slope, _), cov = np.polyfit(x, y, 1, w=1 / se, cov="unscaled")
    return float(slope), math.sqrt(cov[0, 0])


def golden_section_min(f, low: float, high: float, *, iterations: int = 100) -> float:
    """The minimiser of a unimodal function ``f`` on ``[low, high]``, by golden-section search.

    Each iteration keeps the part of the interval that holds the smaller of two interior values, and
    shrinks it by the golden ratio, so ``iterations = 100`` narrows it by a factor of about ``1e-21``.

    >>> round(golden_section_min(lambda x: (x - 0.3) ** 2, 0.0, 1.0), 9)
    0.3
    """
    if not callable(f):
        raise TypeError(f"f must be a function of one real, got {type(f).__name__}")
    low, high = _validate.finite_float("low", low), _validate.finite_float("high", high)
    if not low < high:
        raise ValueError(f"low must be below high, got low={low}, high={high}")
    iterations = _validate.positive_int("iterations", iterations)
    golden = (math.sqrt(5) - 1) / 2
    for _ in range(iterations):
        a, b = high - golden * (high - low), low + golden * (high - low)
        low, high = (low, b) if f(a) <= f(b) else (a, high)
    return (low + high) / 2


def ratio(a: tuple[float, float], b: tuple[float, float]) -> tuple[float, float]:
    r"""The ratio :math:`a/b` of two independent estimates ``(value, se)``, and its standard error.

    To first order (the delta method) the relative errors add in quadrature:
    :math:`\mathrm{se}(a/b) = |a/b| \sqrt{(\mathrm{se}_a/a)^2 + (\mathrm{se}_b/b)^2}`. An exact number is ``(value, 0.0)``.

    >>> ratio((6.0, 0.3), (2.0, 0.0))     # 5% of 3
    (3.0, 0.15)
    """
    (a, a_se), (b, b_se) = ((_validate.finite_float(name, x), _validate.finite_float(f"{name}'s se", s, nonnegative=True))
                            for name, (x, s) in (("a", a), ("b", b)))
    if a == 0 or b == 0:
        raise ValueError(f"a and b must be non-zero for a relative error, got a={a}, b={b}")
    return a / b, a / b * math.hypot(a_se / a, b_se / b)


def crossing(curve: dict, level: float, *, window: float | None = None) -> tuple[float, float]:
    r"""Where a decreasing measured curve first falls below ``level``, interpolated linearly, with its standard error.

    ``curve`` maps each ``x`` to an estimate ``(y, se)``. With :math:`x_a < x_b` the neighbouring points around
    the first fall below ``level`` (:math:`y_a \ge \ell > y_b`), the crossing is
    :math:`x_a + (x_b - x_a)(y_a - \ell)/(y_a - y_b)`; its standard error propagates the two independent
    :math:`\mathrm{se}` to first order: :math:`(x_b - x_a) \sqrt{((\ell - y_b)\,\mathrm{se}_a)^2 + ((y_a - \ell)\,\mathrm{se}_b)^2}/(y_a - y_b)^2`.

    Two neighbours that happen to lie close in :math:`y` make that error large, though the points around them fix
    the crossing well. With ``window`` (a ratio above 1) the line is fitted instead, by least squares, through every
    point within a factor ``window`` of the interpolated crossing (the two neighbours always among them), and its
    crossing, kept between the two neighbours, has an error that propagates every point's :math:`\mathrm{se}`
    through the fit; with two points it is the interpolation.

    >>> [round(x, 4) for x in crossing({1: (1.0, 0.05), 2: (0.5, 0.05), 4: (0.25, 0.05)}, 0.75)]   # halfway from 1 to 2
    [1.5, 0.0707]
    >>> flat = {45: (0.94, 0.01), 49: (0.93, 0.01), 51: (0.907, 0.01), 54: (0.898, 0.02), 64: (0.83, 0.02)}
    >>> [round(x, 1) for x in crossing(flat, 0.9)], [round(x, 1) for x in crossing(flat, 0.9, window=2 ** 0.25)]
    ([53.3, 5.2], [53.5, 2.7])
    """
    level = _validate.finite_float("level", level)
    if not isinstance(curve, dict) or len(curve) < 2:
        raise ValueError(f"curve must be a dict of at least two points {{x: (y, se)}}, got {curve!r}")
    xs = sorted(curve)
    b = next((i for i, x in enumerate(xs) if curve[x][0] < level), None)
    if not b:
        raise ValueError(f"the curve's x = {xs[0]} .. {xs[-1]} does not straddle the level {level}: extend it")
    (xa, (ya, sa)), (xb, (yb, sb)) = (xs[b - 1], curve[xs[b - 1]]), (xs[b], curve[xs[b]])
    se = (xb - xa) * math.hypot((level - yb) * sa, (ya - level) * sb) / (ya - yb) ** 2
    at = xa + (xb - xa) * (ya - level) / (ya - yb)
    if window is None:
        return at, se
    window = _validate.finite_float("window", window, positive=True)
    if window <= 1:
        raise ValueError(f"window must be a ratio above 1, got {window}")
    near = [x for x in xs if at / window <= x <= at * window or x in (xa, xb)]
    x = np.array(near, dtype=float)
    design = np.stack([np.ones_like(x), x], 1)
    spread = np.linalg.pinv(design)                               # (2, points): the least-squares fit
    intercept, slope = spread @ np.array([curve[p][0] for p in near])
    if not slope < 0:                                             # no fall to fit: keep the interpolation
        return at, se
    fitted = min(max((level - intercept) / slope, xa), xb)       # the first fall lies between the two
    gradient = np.array([-1 / slope, -(level - intercept) / slope**2]) @ spread
    return float(fitted), float(math.sqrt(np.sum((gradient * np.array([curve[p][1] for p in near])) ** 2)))


def search(measure, start: float, level: float, *, past: float, ratio: float = 2 ** 0.25,
           limit: int = 64) -> tuple[int, int]:
    r"""Measure a decreasing curve on a geometric grid of loads until it has crossed ``level``; return the two loads
    around its first fall below ``level``, ``(held, fell)``.

    The loads are the integers :math:`\max(1, \mathrm{round}(\text{start} \cdot \text{ratio}^i))` (one that repeats is
    measured once), and ``measure(load)`` returns the curve's mean there. From :math:`i = 0` the search goes up until
    the curve falls below ``past`` (at most ``level``); when the load at :math:`i = 0` is already below ``level``
    it first goes down until a load holds ``level``. So the loads measured straddle ``level`` whatever the draw, and
    :func:`crossing` can be read off them. A curve that holds ``level`` down to one, or stays above ``past`` for
    ``limit`` steps, raises a ``ValueError`` that says so.

    >>> measured = []
    >>> def measure(n):
    ...     measured.append(n)
    ...     return 1.0 if n < 40 else 0.0
    >>> search(measure, 100, 0.9, past=0.5, ratio=2.0), measured     # down from 100 to a load that holds
    ((25, 50), [100, 50, 25])
    """
    level, past = _validate.finite_float("level", level), _validate.finite_float("past", past)
    if past > level:
        raise ValueError(f"past must be at most level (the search ends below it), got past={past}, level={level}")
    start, ratio = (_validate.finite_float(name, x, positive=True) for name, x in (("start", start), ("ratio", ratio)))
    if ratio <= 1:
        raise ValueError(f"ratio must exceed 1 (the grid grows), got {ratio}")
    limit = _validate.positive_int("limit", limit)
    means: dict[int, float] = {}

    def at(i: int) -> float:
        load = max(1, round(start * ratio**i))
        if load not in means:
            means[load] = float(measure(load))
        return means[load]

    i = 0
    while at(i) < level:                            # below already: down until a load holds
        i -= 1
        if i < -limit or max(1, round(start * ratio ** (i + 1))) == 1:
            raise ValueError(f"no load from {max(1, round(start))} down to {min(means)} holds the level {level} "
                             f"(its mean there is {means[min(means)]:.3g}): start the search lower")
    i = 0
    while at(i) >= past:                            # up until well past the crossing
        i += 1
        if i > limit:
            raise ValueError(f"the curve stays at or above {past} up to the load {max(means)} ({limit} steps of "
                             f"{ratio:.3g} from {start:.4g}): start the search higher or raise limit")
    loads = sorted(means)
    fell = next(k for k, load in enumerate(loads) if means[load] < level)
    return loads[fell - 1], loads[fell]
