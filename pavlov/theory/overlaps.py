r"""Moments of overlaps between random keys: on the sphere, for Gaussian keys, and in the Gaussian approximation.

The overlap :math:`c = k_i \cdot k_j` of two keys is the source of every store's interference; its moments, its
moment generating function and the Welch bound are used by chapters 1, 3, 4, 5, 8 and 9.
"""

from __future__ import annotations

import math

import torch

from .. import _validate


def sphere_overlap_moments(d: int) -> tuple[float, float]:
    r"""Mean and variance of the overlap :math:`x \cdot y` of two independent unit vectors uniform on :math:`S^{d-1}`.

    By symmetry (:math:`x \to -x`) the mean is 0. Fixing :math:`y` and rotating it to :math:`e_1`,
    :math:`\mathbb E (x \cdot y)^2 = \mathbb E x_1^2 = 1/d`, since the :math:`d` coordinates of :math:`x`
    have equal second moments summing to :math:`\lVert x \rVert^2 = 1`.

    >>> sphere_overlap_moments(64)
    (0.0, 0.015625)
    """
    d = _validate.positive_int("d", d)
    return 0.0, 1.0 / d


KEY_ENSEMBLES = ("sphere", "gaussian")


def welch_bound(n_vectors: int, dim: int) -> float:
    r"""The least mean squared overlap of ``n_vectors`` unit vectors in ``dim`` dimensions (Welch 1974).

    For unit vectors :math:`x_a` with Gram matrix :math:`G` of rank at most :math:`d`,
    :math:`\lVert G \rVert_F^2 \ge (\operatorname{tr} G)^2 / d = K^2/d`, so the mean over :math:`a \ne b` of
    :math:`(x_a \cdot x_b)^2` is at least :math:`(K - d) / (d (K - 1))`; 0 when :math:`K \le d` (orthonormal
    vectors). Random unit vectors have mean :math:`1/d`.

    >>> welch_bound(64, 16), welch_bound(8, 16)
    (0.047619047619047616, 0.0)
    """
    n_vectors, dim = _validate.positive_int("n_vectors", n_vectors), _validate.positive_int("dim", dim)
    return max(n_vectors - dim, 0) / (dim * (n_vectors - 1)) if n_vectors > 1 else 0.0


GAUSSIAN_OVERLAP = "gaussian_overlap"
"""The Gaussian approximation for unit keys: the target's overlap is 1 and every other overlap is ``N(0, 1/d)``."""


_ENSEMBLES_AND_APPROXIMATION = (*KEY_ENSEMBLES, GAUSSIAN_OVERLAP)


def sphere_overlap_moment(d: int, p: int) -> float:
    r"""The moment :math:`\mathbb E\, c^{2p}` of the overlap :math:`c` of two independent unit vectors uniform on :math:`S^{d-1}`.

    :math:`c^2 = x_1^2` is :math:`\mathrm{Beta}(1/2, (d-1)/2)`, whose moments give

    .. math:: \mathbb E\, c^{2p} = \prod_{k=0}^{p-1} \frac{2k + 1}{d + 2k} = \frac{(2p - 1)!!}{d (d + 2) \cdots (d + 2p - 2)},

    against :math:`(2p-1)!!/d^p` for the Gaussian approximation :math:`c \sim \mathcal N(0, 1/d)`.

    >>> sphere_overlap_moment(64, 2)     # 3 / (64 * 66)
    0.0007102272727272727
    """
    d = _validate.positive_int("d", d)
    p = _validate.positive_int("p", p)
    return math.prod((2 * k + 1) / (d + 2 * k) for k in range(p))


def log_sphere_overlap_mgf(d: int, t: float) -> float:
    r"""The logarithm of :math:`M_d(t) = \mathbb E\, e^{t c}`, the moment generating function of the overlap :math:`c` on :math:`S^{d-1}`.

    Summing :math:`t^{2p} \mathbb E c^{2p} / (2p)!` (:func:`sphere_overlap_moment`; odd moments vanish) gives
    the hypergeometric series

    .. math:: M_d(t) = \sum_{p \ge 0} \frac{(t^2/4)^p}{p!\, (d/2)_p} = \Gamma(d/2)\, (t/2)^{1 - d/2}\, I_{d/2 - 1}(t),

    with :math:`(a)_p` the rising factorial and :math:`I_\nu` the modified Bessel function. Its terms are
    positive and grow while :math:`(p + 1)(p + d/2) < t^2/4`; beyond their peak :math:`p^*` they fall like a
    Gaussian of variance about :math:`p^*`, so the terms within :math:`40 \sqrt{p^*} + 60` of the peak,
    added in logarithms, give it to rounding for any :math:`t`. The Gaussian approximation is :math:`e^{t^2/(2d)}`.

    >>> round(math.exp(log_sphere_overlap_mgf(1, 2.0)), 12) == round(math.cosh(2.0), 12)    # S^0 = {-1, 1}
    True
    """
    d = _validate.positive_int("d", d)
    t = abs(_validate.finite_float("t", t))
    if t == 0.0:
        return 0.0
    peak = (math.sqrt(d * d / 4 + t * t) - d / 2) / 2                   # where the terms stop growing
    width = 40 * math.sqrt(peak + 1) + 60
    p = torch.arange(max(0, int(peak - width)), int(peak + width) + 1, dtype=torch.float64, device="cpu")   # scalars: CPU
    log_terms = p * math.log(t * t / 4) - torch.lgamma(p + 1) - torch.lgamma(p + d / 2) + math.lgamma(d / 2)
    return torch.logsumexp(log_terms, 0).item()


def key_overlap_moments(d_key: int, overlap: float | None = None) -> tuple[float, float]:
    r"""Mean and mean square of the cosine :math:`k_i \cdot k_j` of two keys of an erasure experiment.

    Independent keys uniform on the sphere (``overlap=None``): :math:`(0, 1/d)`
    (:func:`sphere_overlap_moments`). Keys sharing a direction, :math:`k_i = \sqrt\rho\, c + \sqrt{1-\rho}\, g_i`
    with the :math:`g_i` uniform on the unit sphere of the :math:`d - 1` dimensions orthogonal to the unit
    vector :math:`c`: :math:`k_i \cdot k_j = \rho + (1-\rho)\, g_i \cdot g_j`, and :math:`g_i \cdot g_j` has mean 0
    and mean square :math:`1/(d-1)`, so the moments are :math:`(\rho,\ \rho^2 + (1-\rho)^2/(d-1))`.

    >>> key_overlap_moments(32), key_overlap_moments(5, 0.5)
    ((0.0, 0.03125), (0.5, 0.3125))
    """
    d_key = _validate.positive_int("d_key", d_key)
    if overlap is None:
        return sphere_overlap_moments(d_key)
    overlap = _validate.finite_float("overlap", overlap)
    if not 0 < overlap < 1:
        raise ValueError(f"overlap must lie in (0, 1) (None for independent keys), got {overlap}")
    if d_key < 2:
        raise ValueError(f"d_key must be at least 2 for overlapping keys, got {d_key}")
    return overlap, overlap**2 + (1 - overlap) ** 2 / (d_key - 1)
