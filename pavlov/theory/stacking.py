"""Stacked circuits: how one head's retrieval failures propagate through heads and layers.

Chapter 6: the exact error of a stack, its union bound, and the depth-width trade-off of that bound.
"""

from __future__ import annotations

import math

from .. import _validate


def stacked_error(head_failure: float, *, heads: int, layers: int) -> float:
    r"""The probability that a chain of ``layers`` hops fails when a layer fails only if all its ``heads`` fail.

    With each head failing independently with probability :math:`p` and layers failing independently,
    a layer fails with :math:`p^H` and the chain with

    .. math:: r = 1 - (1 - p^H)^L \;\le\; L\, p^H ,

    the union bound (:func:`stacked_error_bound`), which it approaches when :math:`L p^H \ll 1`.

    >>> stacked_error(0.5, heads=2, layers=3)     # 1 - (3/4)^3
    0.578125
    """
    p = _validate.probability("head_failure", head_failure)
    heads, layers = _validate.positive_int("heads", heads), _validate.positive_int("layers", layers)
    return -math.expm1(layers * math.log1p(-p**heads)) if p**heads < 1 else 1.0


def stacked_error_bound(head_failure: float, *, heads: int, layers: int) -> float:
    r"""The union bound :math:`L\, p^H` on :func:`stacked_error`; above 1 it says nothing (it is vacuous).

    The source's bound :math:`r^* \sim L (n/d_k)^H` is this bound with :math:`p = n/d_k`
    (:func:`source_error_bound`); ``head_failure`` may therefore exceed 1 here.

    >>> stacked_error_bound(0.5, heads=2, layers=3)
    0.75
    """
    p = _validate.finite_float("head_failure", head_failure, nonnegative=True)
    heads, layers = _validate.positive_int("heads", heads), _validate.positive_int("layers", layers)
    return layers * p**heads


def source_error_bound(n_memories: int, d_key: int, *, heads: int, layers: int) -> float:
    r"""The source's error bound :math:`L (n/d_k)^H` for ``layers`` layers of ``heads`` heads.

    Each head stores ``n_memories`` associations in ``d_key`` dimensions.

    >>> source_error_bound(4, 8, heads=2, layers=3)     # 3 (1/2)^2
    0.75
    """
    n_memories = _validate.positive_int("n_memories", n_memories)
    d_key = _validate.positive_int("d_key", d_key)
    return stacked_error_bound(n_memories / d_key, heads=heads, layers=layers)


def bound_optimal_heads(width: int, n_memories: int) -> float:
    r"""The head count :math:`H^* = D / (e\, n)` that minimises the source's bound at a fixed width :math:`D = H d_k`.

    At :math:`d_k = D/H` the bound is :math:`L (nH/D)^H = L e^{g(H)}` with :math:`g(H) = H \log(nH/D)`;
    :math:`g'(H) = \log(nH/D) + 1` vanishes at :math:`H^* = D/(en)` and :math:`g''(H) = 1/H > 0`, so this is the
    minimum over real :math:`H > 0`, where the bound is :math:`L e^{-D/(en)}`.

    >>> round(bound_optimal_heads(16, 3), 3)          # 16 / (3 e)
    1.962
    """
    width = _validate.positive_int("width", width)
    n_memories = _validate.positive_int("n_memories", n_memories)
    return width / (math.e * n_memories)
