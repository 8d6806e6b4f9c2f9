"""The MLP stores (polynomial, ReLU, squared ReLU) and least squares: their mean ISR, and the bound on any linear store.

Chapter 4 derives them; chapter 5 compares softmax against them. They register in :data:`~.interference.ISR_FORMULAS`.
"""

from __future__ import annotations

import math

import torch

from .. import _validate
from .interference import _with_others
from .overlaps import KEY_ENSEMBLES, sphere_overlap_moment
from .interference import ISR_FORMULAS


def _power(d: int, degree: int, keys: str) -> float:
    r""":math:`\mathbb E\, w_i^2 / w_j^2` for :math:`w = c^p`: the mean interference of one other memory.

    Sphere: :math:`\mathbb E c^{2p}` (:func:`sphere_overlap_moment`), with :math:`w_j = 1`. Gaussian keys:
    given :math:`R = \lVert k_j \rVert^2`, :math:`c \sim \mathcal N(0, R/d)` and :math:`w_j = R^p`, so the ratio is
    :math:`(2p-1)!!\, \mathbb E R^{-p} / d^p = (2p - 1)!! / \prod_{k=1}^{p} (d - 2k)` (:math:`dR` is
    :math:`\chi^2_d`; finite for :math:`d > 2p`). Gaussian approximation: :math:`(2p-1)!!/d^p`.
    """
    if keys == "sphere":
        return sphere_overlap_moment(d, degree)
    if keys == "gaussian":
        return math.prod((2 * k - 1) / (d - 2 * k) for k in range(1, degree + 1)) if d > 2 * degree else math.inf
    return math.prod((2 * k + 1) / d for k in range(degree))


def _isr_polynomial(d_key: int, n_memories: int, keys: str, *, degree: int) -> float:
    r"""Mean ISR of the polynomial store, exact: :math:`(n - 1)\, \mathbb E c^{2p}` on the sphere.

    With values independent unit vectors the cross terms of the interference average out, so
    :math:`\mathbb E\, \mathrm{ISR}_j = (n - 1)\, \mathbb E\, w_i^2 / w_j^2` for one other memory :math:`i`
    (``_power``): :math:`(n-1)(2p-1)!!/(d (d+2) \cdots (d+2p-2))` on the sphere and
    :math:`(n-1)(2p-1)!!/((d-2)(d-4)\cdots(d-2p))` for Gaussian keys. Degree 1 is the Hebbian store.
    """
    degree = _validate.positive_int("degree", degree)
    return _with_others(n_memories, _power(d_key, degree, keys))


def _isr_relu(d_key: int, n_memories: int, keys: str) -> float:
    r"""Mean ISR of the ReLU store, exact: half the Hebbian one, :math:`(n - 1)/(2d)` on the sphere.

    The overlaps are symmetric, so :math:`\mathbb E \max(0, c)^2 = \mathbb E c^2 / 2`, and the target's
    weight is :math:`\max(0, \lVert k_j \rVert^2) = \lVert k_j \rVert^2`, as for the Hebbian store.
    """
    return _with_others(n_memories, _power(d_key, 1, keys) / 2)


def _isr_relu2(d_key: int, n_memories: int, keys: str) -> float:
    r"""Mean ISR of the squared-ReLU store, exact: :math:`3 (n - 1) / (2 d (d + 2))` on the sphere.

    Half the degree-2 polynomial store's, by the symmetry of the overlaps; Gaussian keys:
    :math:`3 (n-1) / (2 (d-2)(d-4))`.
    """
    return _with_others(n_memories, _power(d_key, 2, keys) / 2)


def _isr_least_squares(d_key: int, n_memories: int, keys: str) -> float:
    r"""Mean ISR of the least-squares store: 0 for :math:`n \le d`, then :math:`(n-d)/(d-2)` (Gaussian keys, exact).

    Queried with :math:`k_j`, the store weighs memory :math:`i` by the hat matrix entry :math:`P_{ij}`, and
    :math:`P^2 = P` gives :math:`\sum_i P_{ij}^2 = P_{jj}`, so :math:`\mathbb E_v[\mathrm{ISR}_j \mid K] = 1/P_{jj} - 1`.
    For Gaussian keys the leverage :math:`P_{jj}` is :math:`\mathrm{Beta}(d/2, (n-d)/2)`, whose
    :math:`\mathbb E\, 1/P_{jj} = (n-2)/(d-2)`. For unit keys this returns the Gaussian approximation
    :math:`(n - d)/d`: a unit query against Gaussian other keys, for which :math:`1/\mathrm{ISR}_j = k_j^\top B^{-1} k_j`
    (Sherman-Morrison, :math:`B = \sum_{i \ne j} k_i k_i^\top` Wishart) and :math:`d \cdot \mathrm{ISR}_j` is
    :math:`\chi^2_{n-d}`. It is not exact on the sphere, where chapter 4 measures its error.
    """
    if n_memories <= d_key:
        return 0.0
    if keys == "gaussian":
        return (n_memories - d_key) / (d_key - 2) if d_key > 2 else math.inf
    return (n_memories - d_key) / d_key


def linear_isr_bound(d_key: int, n_memories: int) -> float:
    r"""The least item-averaged ISR of any linear store of ``n_memories`` memories with keys in ``d_key`` dimensions: :math:`\max(0, n/d - 1)`.

    A linear read weighs memory :math:`i` by :math:`(q A)_i`. For the stored keys :math:`M = K A` has rank at
    most :math:`d`; divided row by row by its diagonal it has trace :math:`n`, and the mean ISR over unit
    values is :math:`(\lVert \tilde M \rVert_F^2 - n)/n \ge ((\operatorname{tr} \tilde M)^2/d - n)/n = n/d - 1`
    (Cauchy-Schwarz on the singular values). Chapter 4 finds it attained; its capacity is :math:`2d`.

    >>> linear_isr_bound(16, 32)
    1.0
    """
    d_key = _validate.positive_int("d_key", d_key)
    n_memories = _validate.positive_int("n_memories", n_memories)
    return max(0.0, n_memories / d_key - 1)


def target_wins_probability(d_key: int, n_memories: int, *, keys: str = "sphere") -> float:
    r"""The probability that a stored key, as query, gives its own memory the largest weight of a monotone store.

    For softmax (any :math:`\beta > 0`), ReLU and squared ReLU alike the target wins when its overlap
    :math:`c_j = \lVert k_j \rVert^2` exceeds every other :math:`c_i`. On the sphere :math:`c_j = 1 > c_i`, so it
    always wins. For Gaussian keys, given :math:`k_j`, the :math:`c_i` are independent
    :math:`\mathcal N(0, R/d)`, :math:`R = \lVert k_j \rVert^2`, and :math:`c_i < R` iff a standard normal is below
    :math:`\sqrt{dR}`, which is :math:`\chi_d`-distributed:

    .. math:: P(\text{win}) = \mathbb E\, \Phi(\chi_d)^{\,n - 1},

    integrated by the trapezoidal rule over the :math:`\chi_d` density. It does not depend on :math:`\beta`.

    >>> target_wins_probability(64, 10**6)
    1.0
    """
    d_key, n_memories = _validate.positive_int("d_key", d_key), _validate.positive_int("n_memories", n_memories)
    _validate.option("keys", keys, KEY_ENSEMBLES)
    if keys == "sphere" or n_memories == 1:
        return 1.0
    x = torch.linspace(0.0, math.sqrt(d_key) + 12.0, 8001, dtype=torch.float64, device="cpu")   # scalars: CPU
    log_chi = (torch.special.xlogy(d_key - 1.0, x) - x.pow(2) / 2
               - (d_key / 2 - 1) * math.log(2.0) - math.lgamma(d_key / 2))
    log_win = (n_memories - 1) * torch.special.log_ndtr(x)
    return torch.trapezoid((log_chi + log_win).exp(), x).clamp(0.0, 1.0).item()


ISR_FORMULAS.update({"least_squares": _isr_least_squares, "relu": _isr_relu, "relu2": _isr_relu2,
                     "polynomial": _isr_polynomial})
