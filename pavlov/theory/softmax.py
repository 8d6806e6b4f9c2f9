"""The softmax store: its mean ISR, the temperature that gives a target ISR, and long-context scaling of the temperature.

Chapter 5. The store registers in :data:`~.interference.ISR_FORMULAS`.
"""

from __future__ import annotations

import math

from .. import _validate
from .overlaps import GAUSSIAN_OVERLAP, _ENSEMBLES_AND_APPROXIMATION, log_sphere_overlap_mgf
from .interference import ISR_FORMULAS


def _log_softmax(d: int, beta: float, keys: str) -> float:
    r"""Log of :math:`\mathbb E\, e^{2 \beta (c_i - c_j)}`, the mean interference of one other memory in the softmax store.

    Sphere (:math:`c_j = 1`): :math:`\log M_d(2\beta) - 2\beta` (:func:`log_sphere_overlap_mgf`). Gaussian keys:
    given :math:`R = \lVert k_j \rVert^2`, :math:`c_i \sim \mathcal N(0, R/d)` and :math:`c_j = R`, so the ratio is
    :math:`\mathbb E\, e^{-2\beta R (1 - \beta/d)} = (1 + 4\beta(d - \beta)/d^2)^{-d/2}` (the :math:`\chi^2_d` moment
    generating function), infinite once the base is :math:`\le 0`. Gaussian approximation: :math:`-2\beta + 2\beta^2/d`.
    """
    if keys == "sphere":
        return log_sphere_overlap_mgf(d, 2 * beta) - 2 * beta
    if keys == "gaussian":
        base = 1 + 4 * beta * (d - beta) / d**2
        return -d / 2 * math.log(base) if base > 0 else math.inf
    return -2 * beta + 2 * beta**2 / d


def _isr_softmax(d_key: int, n_memories: int, keys: str, *, beta: float | None = None) -> float:
    r"""Mean ISR of the softmax store, exact: :math:`(n - 1)\, e^{-2\beta} M_d(2\beta)` on the sphere.

    The normaliser :math:`\sum_l e^{\beta c_l}` divides interference and signal alike, so
    :math:`\mathrm{ISR}_j = \lVert \sum_{i \ne j} e^{\beta c_i} v_i \rVert^2 / e^{2\beta c_j}`, whose mean over the
    values is :math:`\sum_{i \ne j} e^{2\beta(c_i - c_j)}` (``_log_softmax``). ``beta`` defaults to :math:`\sqrt{d}`.
    """
    beta = math.sqrt(d_key) if beta is None else _validate.finite_float("beta", beta, positive=True)
    if n_memories == 1:
        return 0.0
    log_isr = math.log(n_memories - 1) + _log_softmax(d_key, beta, keys)    # in logarithms: e^(-2 beta) M underflows
    return math.exp(log_isr) if log_isr < 709.0 else math.inf               # beyond float64's range


def softmax_moment_limit(d_key: int, moment: int = 2) -> float:
    r"""The inverse temperature below which the softmax store's ISR with Gaussian keys has a finite moment of order ``moment``.

    One other memory contributes :math:`e^{2\beta(c_i - c_j)}`. Given :math:`R = \lVert k_j \rVert^2`, its ``moment``-th
    power :math:`p` has mean :math:`\mathbb E\, e^{2p\beta c_i} e^{-2p\beta R} = e^{(2p^2\beta^2/d - 2p\beta) R}`, and with
    :math:`R = \chi^2_d/d` this is finite exactly when :math:`2p^2\beta^2/d - 2p\beta < d/2`, that is
    :math:`p\beta < d(1 + \sqrt 2)/2`. The limit is therefore :math:`d(1 + \sqrt 2)/(2p)`. At ``moment`` 1 the mean
    ISR itself becomes infinite (:func:`isr`); a normal standard error of the mean needs a finite variance,
    ``moment`` 2. On the sphere every moment is finite.

    >>> softmax_moment_limit(8, 1) == 4 * (1 + math.sqrt(2))
    True
    """
    d_key = _validate.positive_int("d_key", d_key)
    moment = _validate.positive_int("moment", moment)
    return d_key * (1 + math.sqrt(2)) / (2 * moment)


def softmax_beta_for_isr(d_key: int, n_memories: int, target_isr: float = 1.0, *, keys: str = "sphere") -> float:
    r"""The least :math:`\beta \ge 0` at which the softmax store holding ``n_memories`` has mean ISR ``target_isr``.

    ``keys``: ``"sphere"``, ``"gaussian"`` or ``"gaussian_overlap"`` (the approximation). On the sphere
    :math:`e^{-2\beta} M_d(2\beta) = \mathbb E\, e^{2\beta(c - 1)}` falls monotonically, since :math:`c \le 1`, and
    any target is reached; found by bisection. The other two fall only up to :math:`\beta = d/2`, and
    have the closed forms, with :math:`L = \log((n-1)/\mathrm{ISR}^*)`,

    .. math:: \beta = \frac d2 \Big(1 - \sqrt{1 - 2L/d}\Big) \ \text{(approximation)}, \qquad
        \beta = \frac d2 \Big(1 - \sqrt{2 - e^{2L/d}}\Big) \ \text{(Gaussian keys)},

    so :math:`\beta \approx L/2 = \tfrac12 \log M + \dots` for :math:`L \ll d`; they are ``inf`` where the
    target is out of reach (:math:`L > d/2`, :math:`L > d \log 2 / 2`). 0 if :math:`n - 1 \le` the target.

    >>> round(softmax_beta_for_isr(64, 2, math.exp(-24.0), keys="gaussian_overlap"), 9)    # L = 24: (d/2)(1 - 1/2)
    16.0
    """
    d_key = _validate.positive_int("d_key", d_key)
    n_memories = _validate.positive_int("n_memories", n_memories)
    target = _validate.finite_float("target_isr", target_isr, positive=True)
    _validate.option("keys", keys, _ENSEMBLES_AND_APPROXIMATION)
    if n_memories - 1 <= target:
        return 0.0
    excess = math.log((n_memories - 1) / target)             # L: what the exponential weights must suppress
    if keys == GAUSSIAN_OVERLAP:
        return d_key / 2 * (1 - math.sqrt(1 - 2 * excess / d_key)) if excess <= d_key / 2 else math.inf
    if keys == "gaussian":
        root = 2 - math.exp(2 * excess / d_key)
        return d_key / 2 * (1 - math.sqrt(root)) if root >= 0 else math.inf
    low, high = 0.0, 1.0
    while _log_softmax(d_key, high, keys) > -excess:          # bracket the crossing
        low, high = high, 2 * high
    for _ in range(200):
        middle = (low + high) / 2
        if middle in (low, high):
            break
        low, high = (middle, high) if _log_softmax(d_key, middle, keys) > -excess else (low, middle)
    return high


def logn_scaled_beta(beta: float, n: int, n_train: int) -> float:
    r"""Qwen's log-n attention scaling: the logits multiplied by :math:`\max(1, \log n / \log n_0)` beyond the training length :math:`n_0`.

    >>> logn_scaled_beta(8.0, 2**20, 2**10)
    16.0
    """
    beta = _validate.finite_float("beta", beta, positive=True)
    n, n_train = _validate.positive_int("n", n), _validate.positive_int("n_train", n_train)
    if n_train < 2:
        raise ValueError(f"n_train must be at least 2 (its logarithm divides), got {n_train}")
    return beta * max(1.0, math.log(n) / math.log(n_train))


def yarn_scaled_beta(beta: float, n: int, n_train: int) -> float:
    r"""YaRN's attention temperature: logits divided by :math:`t` with :math:`\sqrt{1/t} = 0.1 \ln s + 1`, :math:`s = \max(1, n / n_0)`.

    So :math:`\beta \mapsto \beta\, (1 + 0.1 \ln s)^2`.

    >>> yarn_scaled_beta(8.0, 1024, 2048)     # within the training length: unchanged
    8.0
    """
    beta = _validate.finite_float("beta", beta, positive=True)
    n, n_train = _validate.positive_int("n", n), _validate.positive_int("n_train", n_train)
    return beta * (1 + 0.1 * math.log(max(1.0, n / n_train))) ** 2


ISR_FORMULAS["softmax"] = _isr_softmax
