"""Forgetting and drift: exponential decay's ISR and horizon, Hebbian drift, and Oja's rule on a repeated pair.

Chapter 7 derives them; chapter 12 reads decay's ISR as bits.
"""

from __future__ import annotations

import functools
import math

import torch

from .. import _validate, stats


def decay_isr(age: int, *, gamma: float, d: int, length: int | None = None) -> float:
    r"""Mean ISR of the pair written ``age`` steps before the end of a decay-rule stream of ``length`` pairs.

    With unit keys uniform on the sphere and unit values, the pair of age :math:`a` is read with signal
    :math:`\gamma^a v` and interference :math:`\sum_{m \ne a} \gamma^m (k \cdot k_m) v_m`, whose mean
    square is :math:`\frac1d \sum_{m \ne a} \gamma^{2m}`:

    .. math::

        \mathrm{ISR}(a) = \frac{G - \gamma^{2a}}{d\, \gamma^{2a}}, \qquad G = \sum_{m=0}^{T-1} \gamma^{2m}
        = \frac{1 - \gamma^{2T}}{1 - \gamma^2} \quad (T = \infty: \tfrac{1}{1-\gamma^2}).

    At :math:`\gamma = 1` every pair has ISR :math:`(T-1)/d`, the Hebbian store of chapter 3.

    >>> round(decay_isr(0, gamma=1.0, d=64, length=65), 12)
    1.0
    """
    age = _validate.nonnegative_int("age", age)
    interference, signal = _decay_interference(gamma, d, length), gamma ** (2 * age)
    return interference / signal - 1 / d if signal > 0 else math.inf    # a signal below the smallest float


def _decay_interference(gamma: float, d: int, length: int | None) -> float:
    """:math:`G / d`, the total written weight's mean square seen by one probe."""
    gamma = _validate.probability("gamma", gamma)
    d = _validate.positive_int("d", d)
    if length is not None:
        length = _validate.positive_int("length", length)
    if gamma == 0:
        raise ValueError("gamma must be positive: at gamma = 0 only the last pair is kept")
    if length is None:
        if gamma == 1:
            raise ValueError("length must be given when gamma = 1 (the Hebbian store never forgets)")
        total = 1 / (1 - gamma ** 2)
    else:
        total = length if gamma == 1 else (1 - gamma ** (2 * length)) / (1 - gamma ** 2)
    return total / d


def decay_horizon(*, gamma: float, d: int, length: int | None = None, threshold: float = 1.0) -> float:
    r"""The age up to which decay-rule pairs are read with ISR at most ``threshold`` :math:`\theta`: :math:`\ln\frac{\theta d+1}{G} / (2 \ln \frac1\gamma)`.

    From :func:`decay_isr`, :math:`\mathrm{ISR}(a) \le \theta` exactly when :math:`\gamma^{2a} \ge G/(\theta d + 1)`. Pairs of
    age at most the horizon (rounded down) are retrievable; a negative horizon means none is. The book's
    criterion is :math:`\theta = 1`, interference no stronger than the signal.

    >>> round(decay_horizon(gamma=0.98, d=64), 1), round(decay_horizon(gamma=0.98, d=64, threshold=2), 1)
    (23.4, 40.4)
    """
    if gamma == 1:
        raise ValueError("gamma must be below 1: the Hebbian store has no horizon (every pair has one ISR)")
    interference = _decay_interference(gamma, d, length)          # checks gamma, d and length first
    threshold = _validate.finite_float("threshold", threshold, positive=True)
    return math.log((threshold + 1 / d) / interference) / (2 * math.log(1 / gamma))


def optimal_decay(d: int, *, exact: bool = False, threshold: float = 1.0) -> tuple[float, float]:
    r"""The forgetting rate that retrieves the longest past in an endless stream, and that horizon.

    For :math:`\varepsilon = 1 - \gamma` small the horizon is :math:`\ln(2(d+1)\varepsilon) / (2\varepsilon)`;
    it peaks at :math:`\varepsilon^* = e / (2(d+1))` with horizon :math:`(d+1)/e`: the best decay memory
    recalls its last :math:`0.37\,(d+1)` pairs, for ever, where the Hebbian store recalls :math:`d+1`
    pairs and then nothing. That is the asymptote for large ``d``; with ``exact=True`` the horizon
    :func:`decay_horizon` itself is maximised over :math:`\gamma` (golden-section search), which at
    ``d = 64`` is half a step shorter. Under the criterion ISR at most ``threshold`` :math:`\theta`, :math:`d + 1`
    becomes :math:`\theta d + 1` throughout: the optimum is :math:`\varepsilon^* = e/(2(\theta d + 1))` with horizon
    :math:`(\theta d + 1)/e`, so a looser criterion is best served by slower forgetting.

    >>> gamma, horizon = optimal_decay(64)
    >>> round(gamma, 4), round(horizon, 2)
    (0.9791, 23.91)
    >>> gamma, horizon = optimal_decay(64, exact=True)
    >>> round(gamma, 4), round(horizon, 2)
    (0.9793, 23.41)
    """
    d = _validate.positive_int("d", d)
    if not isinstance(exact, bool):
        raise TypeError(f"exact must be True or False, got {exact!r}")
    threshold = _validate.finite_float("threshold", threshold, positive=True)
    scale = threshold * d + 1
    if not exact:
        return 1 - math.e / (2 * scale), scale / math.e
    # the horizon is positive only where (theta d + 1)(1 - gamma^2) > 1, and has one peak there
    high = math.sqrt(1 - 1 / scale)
    horizon = functools.partial(decay_horizon, d=d, threshold=threshold)
    gamma = stats.golden_section_min(lambda g: -horizon(gamma=g), 1e-9, high)
    return gamma, horizon(gamma=gamma)


def hebbian_drift(epochs_old: int, epochs_new: int, *, n_pairs: int, d: int) -> tuple[float, float, float]:
    r"""Exact means for the Hebbian store after ``epochs_old`` epochs of old and ``epochs_new`` of new values.

    With :math:`S = \sum_i k_i^\top (e_1 v_i + e_2 v'_i)` (unit keys uniform on the sphere, independent unit
    values), returns :math:`(\mathbb E[(k_i S) \cdot v'_i],\ \mathbb E\lVert k_i S \rVert^2,\ \mathbb E \lVert S \rVert_F^2)
    = (e_2,\ (e_1^2 + e_2^2)(1 + \tfrac{n-1}{d}),\ n (e_1^2 + e_2^2))`. Their ratio, the retrieval quality
    :math:`e_2 / \sqrt{(e_1^2 + e_2^2)(1 + (n-1)/d)}`, regains a fraction :math:`\rho` of its value before the
    change only when :math:`e_2 = e_1 \rho / \sqrt{1 - \rho^2}`: old learning slows new learning in proportion.

    >>> hebbian_drift(3, 4, n_pairs=1, d=8)
    (4.0, 25.0, 25.0)
    """
    epochs_old, epochs_new = (_validate.finite_float(name, value, nonnegative=True)     # real epochs allowed
                              for name, value in (("epochs_old", epochs_old), ("epochs_new", epochs_new)))
    n_pairs, d = _validate.positive_int("n_pairs", n_pairs), _validate.positive_int("d", d)
    weight = epochs_old ** 2 + epochs_new ** 2
    return epochs_new, weight * (1 + (n_pairs - 1) / d), n_pairs * weight


def oja_repeated_pair(k, v, *, alpha: float, steps: int | None = None, form: str = "source"):
    r"""The exact store after ``steps`` presentations of one pair ``(k [d_k], v [d_v])`` under Oja's rule (None: the limit).

    Source form: column :math:`j` is :math:`(1 - (1 - \alpha v_j^2)^N)\, k / v_j`, converging to :math:`k^\top (1/v)`,
    whose read-out :math:`k S = \lVert k \rVert^2 / v` is the reciprocal of the US, not the US. Standard form:
    :math:`(1 - (1 - \alpha \lVert v \rVert^2)^N)\, k^\top v / \lVert v \rVert^2`, read out as :math:`v / \lVert v\rVert^2`.
    Both converge when :math:`0 < \alpha v_j^2 < 2` (resp. :math:`\alpha \lVert v \rVert^2 < 2`); a component
    :math:`v_j = 0` leaves its column at zero.

    >>> oja_repeated_pair(torch.tensor([1.0, 0.0]), torch.tensor([0.5, 2.0]), alpha=0.1)
    tensor([[2.0000, 0.5000],
            [0.0000, 0.0000]])
    """
    _validate.option("form", form, ("source", "standard"))
    for name, x in (("k", k), ("v", v)):
        _validate.tensor(name, x)
        if x.dim() != 1:
            raise ValueError(f"{name} must be one vector (1 dimension), got shape {tuple(x.shape)}")
    _validate.same_device_dtype(k=k, v=v)
    alpha = _validate.finite_float("alpha", alpha, positive=True)
    if steps is not None:
        steps = _validate.nonnegative_int("steps", steps)
    if form == "source":
        gain = v ** 2
        inverse = torch.where(v != 0, 1 / torch.where(v != 0, v, 1), 0)       # 1/v_j, 0 where v_j = 0
    else:
        gain = v.pow(2).sum()
        inverse = v / gain
    settled = 1.0 if steps is None else 1 - (1 - alpha * gain) ** steps
    return k[:, None] * (settled * inverse)[None, :]


def stream_signal(
    age: int, *, gamma: float, d: int, beta: float | None = None
) -> float:
    r"""The mean signal :math:`\mathbb E\, (k_s S_T) \cdot v_s` of the pair written ``age`` steps before the end of a stream.

    Unit keys uniform on the sphere in ``d`` dimensions, independent unit values. The decay rule
    (``beta=None``) keeps :math:`\gamma^a` of each write. The gated delta rule
    :math:`S \leftarrow \gamma (I - \beta k^\top k) S + \beta k^\top v` (the delta rule at :math:`\gamma = 1`) writes
    :math:`\beta` of the pair along its own key, and every later write multiplies the store by
    :math:`M = \gamma (I - \beta k_m^\top k_m)`, of mean :math:`\gamma (1 - \beta/d) I`, independent of the pair:
    :math:`\beta\, (\gamma (1 - \beta / d))^a`.

    >>> stream_signal(2, gamma=0.5, d=8), stream_signal(1, gamma=1.0, d=4, beta=1.0)
    (0.25, 0.75)
    """
    age = _validate.nonnegative_int("age", age)
    gamma = _validate.probability("gamma", gamma)
    d = _validate.positive_int("d", d)
    if beta is None:
        return gamma**age
    beta = _validate.finite_float("beta", beta, positive=True)
    if beta > 2:
        raise ValueError(
            f"beta must lie in (0, 2] (a unit-key delta step beyond 2 diverges), got {beta}"
        )
    return beta * (gamma * (1 - beta / d)) ** age


def delta_isr(age: int, *, d: int) -> float:
    r"""Mean ISR of the pair of age ``age`` in an endless stream written by the delta rule at :math:`\beta = 1`.

    With unit keys, each write :math:`S \leftarrow (I - k^\top k) S + k^\top v` removes the store along one
    random direction and adds a unit write along it, so :math:`\mathbb E \lVert S \rVert_F^2 \to d`, and every
    read-out has mean energy :math:`\mathbb E \lVert k_s S_T \rVert^2 = 1` at every age, while its mean signal is
    :math:`\rho^a`, :math:`\rho = 1 - 1/d` (:func:`stream_signal`). Hence

    .. math::

        \mathrm{ISR}(a) = \frac{1 - \rho^{2a}}{\rho^{2a}} = \rho^{-2a} - 1,

    which crosses 1 at the horizon :func:`delta_horizon`. A stream of :math:`T` pairs from an empty store has
    read-out energy between :math:`1 - \rho^{T-1}` and 1: the ISR is lower by at most :math:`\rho^{T-1-2a}`.

    >>> delta_isr(0, d=64), round(delta_isr(22, d=64), 3)
    (0.0, 1.0)
    """
    d = _validate.positive_int("d", d)
    if d < 2:
        raise ValueError(
            f"d must be at least 2 (at d = 1 each write replaces the whole store), got {d}"
        )
    signal = stream_signal(age, gamma=1.0, d=d, beta=1.0)
    return 1 / signal**2 - 1


def delta_horizon(d: int) -> float:
    r"""The age up to which the delta rule at :math:`\beta = 1` recalls a stream with ISR at most 1: :math:`\ln 2 / (2 \ln\frac{d}{d-1})`.

    From :func:`delta_isr`: :math:`\rho^{-2a} = 2`. For large ``d`` it is :math:`(d - \tfrac12) \ln 2 / 2 \approx 0.35\, d`,
    shorter than the best decay rule's :math:`(d+1)/e \approx 0.37\, d` (:func:`optimal_decay`).

    >>> round(delta_horizon(64), 2)
    22.01
    """
    d = _validate.positive_int("d", d)
    if d < 2:
        raise ValueError(
            f"d must be at least 2 (at d = 1 each write replaces the whole store), got {d}"
        )
    return math.log(2) / (2 * math.log(d / (d - 1)))


def oja_fixed_point(keys, values, *, form: str = "source", alpha: float | None = None, steps: int | None = None):
    r"""The fixed point of the mean update of Oja's rule shown the pairs ``(keys [n, d_k], values [n, d_v])`` at random.

    One pair drawn uniformly at each step, independent of the store: the mean store obeys
    :math:`\mathbb E S \leftarrow \mathbb E S + \alpha (B - \mathbb E S\, D)` with :math:`B = \frac1n K^\top V`, the
    Hebbian store's mean write, and :math:`D = \frac1n \mathrm{diag}(\sum_i v_i^2)` (source form) or
    :math:`\frac1n V^\top V` (standard form). So it settles, whatever :math:`\alpha` with :math:`\alpha D` below 2, at

    * source form: :math:`S^*_{:j} = \sum_i v_{ij} k_i^\top / \sum_i v_{ij}^2`: each column the Hebbian store's,
      rescaled by its own US energy (for one pair, :math:`k^\top (1/v)`, the reciprocal);
    * standard form: :math:`S^* = K^\top V (V^\top V)^+`, the Hebbian store times the inverse of the USs' Gram matrix
      (for one pair, :math:`k^\top v / \lVert v \rVert^2`, read out as :math:`\lVert k \rVert^2 v / \lVert v \rVert^2`).

    With ``steps`` (and ``alpha``) given, the mean store after that many steps from :math:`S_0 = 0` instead,
    :math:`S^* (I - (I - \alpha D)^N)`, exactly: the recursion of the mean is linear.

    >>> oja_fixed_point(torch.eye(2), torch.tensor([[2.0, 1.0], [1.0, 1.0]]))
    tensor([[0.4000, 0.5000],
            [0.2000, 0.5000]])
    """
    _validate.option("form", form, ("source", "standard"))
    for name, x in (("keys", keys), ("values", values)):
        _validate.tensor(name, x)
        if x.dim() != 2:
            raise ValueError(
                f"{name} must be a matrix [pairs, dimension], got shape {tuple(x.shape)}"
            )
    _validate.same_device_dtype(keys=keys, values=values)
    if keys.shape[0] != values.shape[0]:
        raise ValueError(
            f"keys and values must hold as many pairs, got {keys.shape[0]} and {values.shape[0]}"
        )
    if (alpha is None) != (steps is None):
        raise TypeError(
            "alpha and steps must be given together (the mean store after steps at rate alpha)"
        )
    hebbian = keys.mT @ values
    if form == "source":
        energy = values.pow(2).sum(0)
        limit = hebbian * torch.where(
            energy != 0, 1 / torch.where(energy != 0, energy, 1), 0
        )
        rate = torch.diag(energy)
    else:
        rate = values.mT @ values
        limit = hebbian @ torch.linalg.pinv(rate, hermitian=True)
    if steps is None:
        return limit
    alpha = _validate.finite_float("alpha", alpha, positive=True)
    steps = _validate.nonnegative_int("steps", steps)
    eye = torch.eye(values.shape[-1], device=values.device, dtype=values.dtype)
    return limit @ (
        eye - torch.linalg.matrix_power(eye - alpha * rate / keys.shape[0], steps)
    )
