"""Conditioning: the moments of the conditioned response during acquisition, and its generalisation.

Chapter 1: Hebbian acquisition with noisy stimuli, and the response to a test stimulus of overlap :math:`c`.
"""

from __future__ import annotations

import math

from .. import _validate


def acquisition_moments(n: float, *, alpha: float, d: int, sigma: float, test_sigma: float = 0.0,
                        cs_sq_norm: float = 1.0) -> tuple[float, float]:
    r"""Mean and standard deviation of the response strength to the CS after ``n`` noisy Hebbian pairings.

    Pairing :math:`j` presents the CS as :math:`b + \varepsilon_j` with the US :math:`u` (any non-zero
    vector, since the strength divides by :math:`\lVert u \rVert^2`); the test presents
    :math:`b + \varepsilon_0`; all :math:`\varepsilon` are independent :math:`\mathcal N(0, \sigma^2 / d\, I)`
    (:math:`\sigma_0` = ``test_sigma`` for the test). With :math:`f = g = ` identity the strength is
    :math:`s_n = \alpha (b + \varepsilon_0) \cdot \sum_{j \le n} (b + \varepsilon_j)`, so

    .. math::

        \mathbb E s_n = \alpha n \lVert b \rVert^2, \qquad
        \mathrm{Var}\, s_n = \frac{\alpha^2}{d} \Big( n^2 \lVert b \rVert^2 \sigma_0^2
            + n \lVert b \rVert^2 \sigma^2 + n \sigma_0^2 \sigma^2 \Big),

    the three terms from :math:`n\, b \cdot \varepsilon_0`, :math:`b \cdot \sum_j \varepsilon_j` and
    :math:`\varepsilon_0 \cdot \sum_j \varepsilon_j`, which are uncorrelated.

    Args:
        n: the number of pairings (a real number >= 0, so a curve can be drawn through the integers).
        alpha: learning rate; d: stimulus dimension; sigma, test_sigma: noise levels;
        cs_sq_norm: :math:`\lVert b \rVert^2` (1 for a stimulus on the unit sphere).

    Returns:
        ``(mean, sd)``.

    >>> acquisition_moments(10, alpha=0.5, d=64, sigma=0.0)
    (5.0, 0.0)
    """
    n = _validate.finite_float("n", n, nonnegative=True)
    alpha = _validate.finite_float("alpha", alpha)
    d = _validate.positive_int("d", d)
    sigma = _validate.finite_float("sigma", sigma, nonnegative=True)
    test_sigma = _validate.finite_float("test_sigma", test_sigma, nonnegative=True)
    cs_sq_norm = _validate.finite_float("cs_sq_norm", cs_sq_norm, nonnegative=True)
    variance = alpha**2 / d * (n**2 * cs_sq_norm * test_sigma**2 + n * cs_sq_norm * sigma**2
                               + n * test_sigma**2 * sigma**2)
    return alpha * n * cs_sq_norm, math.sqrt(variance)


def normalised_strength(d_v: int, us_norm: float = 1.0) -> float:
    r"""Response strength of an RMS-normalised response when every pairing in the store has the same US.

    Then :math:`r = \alpha c\, u` for a scalar :math:`c` (the summed CS-test overlaps), and with
    :math:`\epsilon = 0`, :math:`\mathrm{RMSNorm}(r) = \mathrm{sign}(\alpha c) \sqrt{d_v}\, u / \lVert u \rVert`,
    whose strength :math:`\mathrm{RMSNorm}(r) \cdot u / \lVert u \rVert^2` is
    :math:`\sqrt{d_v} / \lVert u \rVert` for :math:`\alpha c > 0`, whatever the number of pairings.

    >>> normalised_strength(64)
    8.0
    """
    d_v = _validate.positive_int("d_v", d_v)
    us_norm = _validate.finite_float("us_norm", us_norm, positive=True)
    return math.sqrt(d_v) / us_norm


def generalisation_moments(c: float, *, alpha: float, d: int, trained: int = 1, same_us=(),
                           other_us=()) -> tuple[float, float]:
    r"""Mean and standard deviation of the strength of the response to a test at cosine similarity ``c`` to the CS.

    The store holds ``trained`` pairings of the unit CS :math:`b` with the US :math:`u`, and pairings of
    other CS :math:`a_k` (independent, uniform on the unit sphere), ``same_us[k]`` times with :math:`u`
    or ``other_us[k]`` times with an independent unit US :math:`w_k`. For a unit test :math:`t` with
    :math:`t \cdot b = c` and :math:`f = g = ` identity, the strength along :math:`u` is

    .. math::

        s = \alpha\, \mathrm{trained}\; c + \alpha \sum_k m_k\, (t \cdot a_k)
            + \alpha \sum_k m'_k\, (t \cdot a'_k)(w_k \cdot u) / \lVert u \rVert^2 .

    Each overlap has mean 0 and variance :math:`1/d` (:func:`sphere_overlap_moments`) and the terms are
    uncorrelated, so, for a unit US,

    .. math:: \mathbb E s = \alpha\, \mathrm{trained}\; c, \qquad
        \mathrm{Var}\, s = \alpha^2 \Big( \sum_k m_k^2 / d + \sum_k {m'_k}^2 / d^2 \Big).

    >>> generalisation_moments(0.5, alpha=1.0, d=64, same_us=[1], other_us=[1])[0]
    0.5
    """
    c = _validate.finite_float("c", c)
    if not -1.0 <= c <= 1.0:
        raise ValueError(f"c must be a cosine similarity in [-1, 1], got {c}")
    alpha = _validate.finite_float("alpha", alpha)
    d = _validate.positive_int("d", d)
    if isinstance(trained, bool) or not isinstance(trained, int):
        raise TypeError(f"trained must be an int, got {type(trained).__name__}")
    if trained < 0:
        raise ValueError(f"trained must be non-negative, got {trained}")
    counts = {name: _validate.reals(name, values, nonnegative=True)
              for name, values in (("same_us", same_us), ("other_us", other_us))}
    variance = alpha**2 * (sum(m**2 for m in counts["same_us"]) / d + sum(m**2 for m in counts["other_us"]) / d**2)
    return alpha * trained * c, math.sqrt(variance)
