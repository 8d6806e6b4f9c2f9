r"""How many facts a d x d linear memory read by the best-scoring attribute holds: the n ln n ~ d^2 / 2 threshold.

Chapter 14. A Hebbian memory of :math:`n` facts read by top-1 gives each wrong attribute a score of variance about
:math:`2/d + n/d^2` (:func:`~pavlov.theory.hebbian_decoding_accuracy`) against a right score of about 1, and the best
of :math:`n` such Gaussians reaches :math:`\sqrt{2 \ln n}` standard deviations: the read holds while
:math:`2 \ln n\, (2/d + n/d^2) < 1`, which for :math:`n \gg d` is :math:`n \ln n < d^2/2`.
"""

from __future__ import annotations

import math

from .. import _validate


def top1_threshold(d_key: int, *, wide: bool = True) -> float:
    r"""The number of facts :math:`n` at which :math:`2 \ln n\, (n/d^2 + 2/d) = 1`, or with ``wide`` (the limit
    :math:`n \gg d`) :math:`n \ln n = d^2/2`: the load where the best wrong score of a Hebbian top-1 read reaches the
    right one. Order :math:`d^2 / \ln d`, where the ISR criterion (mean ISR 1) holds order :math:`d`.

    >>> round(top1_threshold(32), 1)
    109.1
    """
    d = _validate.positive_int("d_key", d_key)
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
