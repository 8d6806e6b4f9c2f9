r"""How many facts a d x d linear memory read by the best-scoring attribute holds: the n ln n ~ d^2 / 2 threshold.

Chapter 14. A Hebbian memory of :math:`n` facts read by top-1 gives each wrong attribute a score of variance about
:math:`2/d + n/d^2` (:func:`~pavlov.theory.hebbian_decoding_accuracy`) against a right score of about 1, and the best
of :math:`n` such Gaussians reaches :math:`\sqrt{2 \ln n}` standard deviations: the read holds while
:math:`2 \ln n\, (2/d + n/d^2) < 1`, which for :math:`n \gg d` is :math:`n \ln n < d^2/2`.
"""

from __future__ import annotations

import math

from .. import _validate


def top1_threshold(d_key: float, *, wide: bool = True) -> float:
    r"""The number of facts :math:`n` at which :math:`2 \ln n\, (n/d^2 + 2/d) = 1`, or with ``wide`` (the limit
    :math:`n \gg d`) :math:`n \ln n = d^2/2`: the load where the best wrong score of a Hebbian top-1 read reaches the
    right one. Order :math:`d^2 / \ln d`, where the ISR criterion (mean ISR 1) holds order :math:`d`. The width
    ``d_key`` may be any positive real, so that the threshold draws as a smooth line between the integer widths.

    >>> round(top1_threshold(32), 1)
    109.1
    """
    d = _validate.finite_float("d_key", d_key, positive=True)
    if not isinstance(wide, bool):
        raise TypeError(f"wide must be a bool, got {type(wide).__name__}")

    def excess(n: float) -> float:
        return 2 * math.log(n) * (n / d**2 + (0.0 if wide else 2 / d)) - 1

    low, high = 1.0, float(d) ** 2 + 2.0
    if excess(high) < 0 or excess(low) > 0:
        return low if excess(low) > 0 else high
    for _ in range(200):  # bisection: excess rises with n
        mid = (low + high) / 2
        low, high = (mid, high) if excess(mid) < 0 else (low, mid)
    return (low + high) / 2


def log_law_capacity(d_key: float, *, through: tuple[float, float]) -> float:
    r"""The load :math:`n` at width ``d_key`` on the law :math:`n \ln n = c\, d^2`, its constant fixed by the point
    ``through`` :math:`= (d_0, n_0)`: :math:`c = n_0 \ln n_0 / d_0^2`. The law of :func:`top1_threshold` with its
    constant left free, so that it can be laid through a measured capacity (its slope on logarithmic axes,
    :math:`2 \ln n / (\ln n + 1)`, rises from 1 towards 2 with the load).

    >>> round(log_law_capacity(32, through=(16, top1_threshold(16))), 1) == round(top1_threshold(32), 1)
    True
    """
    d = _validate.finite_float("d_key", d_key, positive=True)
    if not isinstance(through, tuple) or len(through) != 2:
        raise TypeError(f"through must be a pair (d_0, n_0), got {through!r}")
    d0 = _validate.finite_float("through's width", through[0], positive=True)
    n0 = _validate.finite_float("through's load", through[1], positive=True)
    if n0 <= 1:
        raise ValueError(f"through's load must exceed 1 (ln n > 0), got {n0}")
    target = n0 * math.log(n0) * (d / d0) ** 2
    low, high = 1.0, max(3.0, target)  # n ln n rises with n, and exceeds n past e
    for _ in range(200):  # bisection
        mid = (low + high) / 2
        low, high = (mid, high) if mid * math.log(mid) < target else (low, mid)
    return (low + high) / 2
