"""Noisy cues: the gain of each store's weights under a noisy query, its ISR, the Bayes temperature and the matched
ridge, nearest-key recall and the basin radius.

Chapter 10.
"""

from __future__ import annotations

import functools
import math

import torch

from .. import _validate
from .interference import isr


def _cue_cosines(d: int, sigma: float) -> tuple[torch.Tensor, torch.Tensor]:
    r"""``(c, log_weight)``: a grid of the cosine :math:`c = a/\sqrt{a^2 + s^2 x^2}` of a noisy cue with its unit key
    (:func:`noisy_cue_gain`), over :math:`z` (:math:`a = 1 + s z`) and the :math:`\chi_{d-1}` variable :math:`x`, with the
    logarithms of trapezoid weights against their densities, normalised. The :math:`z` grid reaches past
    :math:`a = 0`, where the cues that point away from their key lie."""
    s, k = sigma / math.sqrt(d), d - 1
    z = torch.linspace(-9 - min(1 / s, 1e3), 9, 481 + int(min(1 / s, 1e3) * 20), dtype=torch.float64)
    x = torch.linspace(max(0.0, math.sqrt(k) - 9), math.sqrt(k) + 9, 241, dtype=torch.float64)
    log_weight = (-z**2 / 2)[:, None] + ((k - 1) * torch.log(x.clamp_min(1e-300)) - x**2 / 2)[None, :]
    a = 1 + s * z[:, None]
    c = a / torch.sqrt(a**2 + (s * x[None, :]) ** 2)
    return c, log_weight - torch.logsumexp(log_weight.flatten(), 0)


def _inverse_power_moment(q: int, s2: float) -> float:
    r""":math:`\mathbb E\, a^{-q}` for :math:`a = 1 + s z`, :math:`s^2` = ``s2``: the asymptotic series
    :math:`\sum_l \binom{q + 2l - 1}{2l} (2l - 1)!!\, s^{2l}`, summed up to its smallest term."""
    total, previous, l = 1.0, math.inf, 0
    while True:
        l += 1
        term = math.comb(q + 2 * l - 1, 2 * l) * math.prod(range(1, 2 * l, 2)) * s2**l
        if term >= previous or term < 1e-17 * total:
            return total
        total, previous = total + term, term


KERNEL_POWERS = {"hebbian": 1, "relu": 1, "relu2": 2}
"""The power :math:`p` of the kernel stores whose weight near :math:`c = 1` is :math:`c^p` (``polynomial``: its degree)."""


def noisy_cue_gain(d_key: int, sigma: float, *, store: str = "hebbian", **params) -> float:
    r"""The factor :math:`\mathbb E\, [w(1)^2/w(c)^2]` by which a noisy cue multiplies a kernel store's mean ISR.

    A cue of the unit key :math:`k` is :math:`q \propto k + \sigma z/\sqrt d` (``stores.noisy_cues``), of cosine
    :math:`c = k \cdot q` with its key. Write :math:`s = \sigma/\sqrt d`, :math:`a = 1 + s z_1` and :math:`R` for the
    squared norm of the other :math:`d - 1` components of :math:`z` (:math:`\chi^2_{d-1}`, independent of :math:`a`):
    :math:`c^2 = a^2 / (a^2 + s^2 R)`. For the Hebbian store, :math:`w(c) = c`,

    .. math::

        \mathbb E\, \frac{1}{c^2} = 1 + \sigma^2 \Big(1 - \frac 1d\Big)\, \mathbb E\, \frac{1}{a^2}, \qquad
        \mathbb E\, \frac{1}{a^2} \simeq \sum_{j \ge 0} (2j + 1)!!\, s^{2j} = 1 + \frac{3\sigma^2}{d} + \frac{15\sigma^4}{d^2}
        + \dots,

    and for :math:`w(c) = c^p` (``relu``: :math:`p = 1`, ``relu2``: 2, ``polynomial``: its ``degree``),
    :math:`\mathbb E\, c^{-2p} = \sum_{j \le p} \binom pj s^{2j}\, \mathbb E R^j\, \mathbb E a^{-2j}`. These series are
    asymptotic, summed up to their smallest term: strictly the means are infinite, because a cue can land
    orthogonal to its key (:math:`a = 0`), but only with a probability of order :math:`e^{-d/(2\sigma^2)}`, and the
    truncated sums are the means over any sample that holds no such cue. For large :math:`d` the Hebbian gain is
    :math:`1 + \sigma^2`: a cue whose noise has the key's power halves the capacity.

    For the softmax store, :math:`w(c) = e^{\beta c}`, the gain :math:`\mathbb E\, e^{2\beta (1 - c)}` is finite and
    integrated on a grid (:func:`nearest_key_accuracy`'s); it grows without bound in :math:`\beta`, fed by the rare
    cues that point away from their key.

    >>> noisy_cue_gain(64, 0.0), round(noisy_cue_gain(10**6, 1.0), 4)
    (1.0, 2.0)
    """
    d_key = _validate.positive_int("d_key", d_key)
    sigma = _validate.finite_float("sigma", sigma, nonnegative=True)
    _validate.option("store", store, (*KERNEL_POWERS, "polynomial", "softmax"))
    if store == "softmax":
        beta = _validate.finite_float("beta", params.pop("beta", math.sqrt(d_key)), positive=True)
    elif store == "polynomial":
        power = _validate.positive_int("degree", params.pop("degree", None))
    else:
        power = KERNEL_POWERS[store]
    if params:
        raise TypeError(f"unexpected parameters for the {store} store: {sorted(params)}")
    if sigma == 0:
        return 1.0
    if store == "softmax":
        if d_key < 2:
            raise ValueError(f"d_key must be at least 2, got {d_key}")
        c, log_weight = _cue_cosines(d_key, sigma)
        return torch.logsumexp((log_weight + 2 * beta * (1 - c)).flatten(), 0).exp().item()
    s2 = sigma**2 / d_key
    chi_moment = 1.0
    total = 0.0
    for j in range(power + 1):
        total += math.comb(power, j) * s2**j * chi_moment * _inverse_power_moment(2 * j, s2)
        chi_moment *= d_key - 1 + 2 * j                    # E R^(j+1) = E R^j (d - 1 + 2j)
    return total


def noisy_cue_isr(store: str, d_key: int, n_memories: int, sigma: float, **params) -> float:
    r"""The mean ISR of ``store`` on the sphere queried with noisy cues (``stores.noisy_cues``) of its keys.

    **Kernel stores** (Hebbian, ReLU, squared ReLU, polynomial, softmax): exactly
    :func:`isr` :math:`\times` :func:`noisy_cue_gain`. The cue is a unit vector that depends only on its own key and
    its noise, so the other keys' overlaps with it have the law they have with a stored key, and the crosstalk
    :math:`\sum_{i \ne j} w(k_i \cdot q) v_i` keeps its mean square; only the target's weight falls, from
    :math:`w(1)` to :math:`w(c)` (the softmax's normaliser divides both and cancels).

    **Least squares** (an approximation): the read weights are :math:`w = q K^+`; with :math:`q = c k_j + \sqrt{1 - c^2}\, u`,
    :math:`u \perp k_j`, the other weights are :math:`\sqrt{1-c^2}\, u \cdot a_i` for the dual keys :math:`a_i`, of mean square
    norm about :math:`d/(d - n - 1)` (the inverse Wishart's), so :math:`\mathrm{ISR} \approx (n - 1)\,(\mathbb E[1/c^2] - 1)/(d - n - 1)`.
    It neglects the target weight's own fluctuation (it fails as :math:`\sigma` grows) and the heavy tail of the
    dual keys near :math:`n = d` (where the mean is dominated by the smallest singular value of :math:`K`); it needs
    :math:`n < d - 1`.

    >>> round(noisy_cue_isr("hebbian", 64, 65, 0.5), 4)
    1.249
    """
    _validate.option("store", store, (*KERNEL_POWERS, "polynomial", "softmax", "least_squares"))
    d_key = _validate.positive_int("d_key", d_key)
    n_memories = _validate.positive_int("n_memories", n_memories)
    if store == "least_squares":
        if params:
            raise TypeError(f"unexpected parameters for the least_squares store: {sorted(params)}")
        if n_memories >= d_key - 1:
            raise ValueError(f"n_memories must be below d_key - 1 = {d_key - 1} for the least-squares "
                             f"approximation, got {n_memories}")
        return (n_memories - 1) * (noisy_cue_gain(d_key, sigma) - 1) / (d_key - n_memories - 1)
    return isr(store, d_key, n_memories, **params) * noisy_cue_gain(d_key, sigma, store=store, **params)


@functools.lru_cache(maxsize=16)
def _sphere_upper_tail(d: int, points: int = 20001) -> tuple[torch.Tensor, torch.Tensor]:
    r"""``(t, G)``: the overlap :math:`t` of two independent unit vectors in :math:`d` dimensions, increasing, and
    :math:`G(t) = P(u \cdot q > t)`, from the density :math:`\propto \sin^{d-2}\theta` of the angle, integrated by the
    trapezoid rule on a grid in :math:`\theta`."""
    theta = torch.linspace(0, math.pi, points, dtype=torch.float64)
    log_density = (d - 2) * torch.log(torch.sin(theta).clamp_min(1e-300))
    density = torch.exp(log_density - log_density.max())
    cumulative = torch.cat([density.new_zeros(1), torch.cumsum((density[1:] + density[:-1]) / 2, 0)])
    return torch.cos(theta).flip(0), (cumulative / cumulative[-1]).flip(0)


def nearest_key_accuracy(d_key: int, n_memories: int, sigma: float) -> float:
    r"""The probability that a noisy cue (``stores.noisy_cues``) of one of ``n_memories`` unit keys, independent and
    uniform on the sphere, is nearer its own key than every other.

    The other keys are independent of the cue, so their overlaps with it are independent, each with the sphere's
    upper tail :math:`G_d(t) = P(u \cdot q > t)`; given the cue's cosine :math:`c` with its key the probability is
    :math:`(1 - G_d(c))^{n-1}`, and

    .. math::

        p_{\mathrm{nn}} = \mathbb E_c \big[(1 - G_d(c))^{\,n-1}\big], \qquad c = \frac{a}{\sqrt{a^2 + s^2 x^2}},

    with :math:`a = 1 + s z` (:math:`z` standard normal), :math:`x` a :math:`\chi_{d-1}` variable and :math:`s = \sigma/\sqrt d`,
    as in :func:`noisy_cue_gain`. The two expectations are integrated on grids (the trapezoid rule against their
    exact densities), to about ``1e-4``. It is the accuracy of the softmax store as :math:`\beta \to \infty`, where
    attention returns the value of the key nearest the cue.

    >>> nearest_key_accuracy(32, 1000, 0.0), round(nearest_key_accuracy(32, 2, 1e6), 2)   # a cue that forgot its key
    (1.0, 0.5)
    """
    d_key = _validate.positive_int("d_key", d_key)
    n_memories = _validate.positive_int("n_memories", n_memories)
    sigma = _validate.finite_float("sigma", sigma, nonnegative=True)
    if d_key < 3:
        raise ValueError(f"d_key must be at least 3, got {d_key}")
    if n_memories == 1 or sigma == 0:
        return 1.0
    t, tail = _sphere_upper_tail(d_key)
    c, log_weight = _cue_cosines(d_key, sigma)
    # linear interpolation of the tail at c
    i = torch.searchsorted(t, c.clamp(-1, 1)).clamp(1, len(t) - 1)
    fraction = (c - t[i - 1]) / (t[i] - t[i - 1])
    g = tail[i - 1] + fraction.clamp(0, 1) * (tail[i] - tail[i - 1])
    recalled = torch.exp((n_memories - 1) * torch.log1p(-g.clamp(max=1.0 - 1e-16)))
    return (log_weight.exp() * recalled).sum().item()


def basin_radius(d_key: int, n_memories: int, *, delta: float = 0.05) -> float:
    r"""The largest cue noise :math:`\sigma` from which the nearest key is still the right one with probability
    :math:`1 - \delta` (:func:`nearest_key_accuracy`): the radius of a memory's basin of attraction under attention
    at :math:`\beta \to \infty`, for ``n_memories`` random unit keys in ``d_key`` dimensions.

    Found by bisection on :math:`\sigma`; the accuracy falls from 1 to :math:`1/n` as the cue forgets its key, so a
    radius exists when :math:`1 - \delta > 1/n`, and is ``math.inf`` for one memory.

    >>> round(basin_radius(32, 256), 2)
    1.13
    """
    d_key = _validate.positive_int("d_key", d_key)
    n_memories = _validate.positive_int("n_memories", n_memories)
    delta = _validate.finite_float("delta", delta)
    if not 0 < delta < 1:
        raise ValueError(f"delta must lie in (0, 1), got {delta}")
    if n_memories == 1:
        return math.inf
    if 1 - delta <= 1 / n_memories:
        raise ValueError(f"delta must be below 1 - 1/n_memories = {1 - 1 / n_memories}: a random cue already "
                         f"finds its key with probability 1/n, got {delta}")
    low, high = 0.0, 1.0
    while nearest_key_accuracy(d_key, n_memories, high) >= 1 - delta:
        low, high = high, 2 * high
    while high - low > 1e-4 * high:
        middle = (low + high) / 2
        low, high = (middle, high) if nearest_key_accuracy(d_key, n_memories, middle) >= 1 - delta else (low, middle)
    return (low + high) / 2


def bayes_temperature(d_key: int, sigma: float, *, renormalised: bool = False) -> float:
    r"""The inverse temperature at which the softmax store's read is the posterior mean of the value meant, so
    the read of least mean squared error :math:`\mathbb E \lVert r - v_j \rVert^2`.

    For unit keys, the meant memory :math:`j` uniform and the cue :math:`q = k_j + \sigma z/\sqrt d` (not rescaled),
    the likelihood of memory :math:`i` is :math:`\propto e^{-d \lVert q - k_i \rVert^2 / (2\sigma^2)} \propto e^{(d/\sigma^2)\, q \cdot k_i}`
    (the terms :math:`\lVert q \rVert^2` and :math:`\lVert k_i \rVert^2 = 1` are the same for every :math:`i`), so the
    posterior over the memory meant is the softmax of :math:`q \cdot k_i` at :math:`\beta = d/\sigma^2`, and
    :math:`\sum_i P(i \mid q)\, v_i`, attention's read, is the posterior mean: no read of :math:`q` and the memories
    has a smaller mean squared error. Exact for every ``d_key`` and ``sigma`` > 0.

    ``renormalised=True``: the cue rescaled to unit norm (``stores.noisy_cues``' default) has lost the norm
    :math:`\lVert k_j + \sigma z/\sqrt d \rVert \approx \sqrt{1 + \sigma^2}`; putting it back gives
    :math:`\beta \approx d \sqrt{1 + \sigma^2}/\sigma^2`, an approximation (the posterior given the direction alone
    is not exactly a softmax; the norm fluctuates by about :math:`\sigma/\sqrt{2d}` relative to itself).

    >>> bayes_temperature(32, 1.0), round(bayes_temperature(32, 1.0, renormalised=True), 2)
    (32.0, 45.25)
    """
    d_key = _validate.positive_int("d_key", d_key)
    sigma = _validate.finite_float("sigma", sigma, positive=True)
    if not isinstance(renormalised, bool):
        raise TypeError(f"renormalised must be True or False, got {renormalised!r}")
    beta = d_key / sigma**2
    return beta * math.sqrt(1 + sigma**2) if renormalised else beta


def matched_ridge(d_key: int, n_memories: int, sigma: float) -> float:
    r"""The ridge :math:`\lambda = n \sigma^2 / d` of the linear read of least mean squared error under cue noise.

    For the cue :math:`q = k_j + \sigma z/\sqrt d` with :math:`j` uniform over the ``n_memories`` memories, a linear
    read :math:`r = q W` errs by :math:`\mathbb E \lVert q W - v_j \rVert^2 = \tfrac 1n \lVert K W - V \rVert^2 +
    \tfrac{\sigma^2}{d} \lVert W \rVert_F^2`: the noise's cross term vanishes and its square adds the penalty. The
    minimiser is ridge regression with :math:`\lambda = n \sigma^2/d` (``stores``' ``"ridge"``). For the rescaled
    cue (a unit vector of cosine :math:`c \approx 1/\sqrt{1+\sigma^2}` with its key) the same :math:`\lambda` holds to
    first order, with :math:`W` scaled by :math:`1/c`, which changes neither the ISR nor the decoding.

    >>> matched_ridge(32, 16, 0.5)
    0.125
    """
    d_key = _validate.positive_int("d_key", d_key)
    n_memories = _validate.positive_int("n_memories", n_memories)
    sigma = _validate.finite_float("sigma", sigma, positive=True)
    return n_memories * sigma**2 / d_key


def linear_read_mse(store: str, d_key: int, n_memories: int, sigma: float) -> float:
    r"""The mean squared error :math:`\mathbb E \lVert q W - v_j \rVert^2` of a linear store read with the cue
    :math:`q = k_j + \sigma z/\sqrt d` (not rescaled), keys and values independent and uniform on the unit sphere.

    ``"hebbian"`` (:math:`W = K^\top V`), exactly: the target's weight :math:`q \cdot k_j = 1 + \sigma z \cdot k_j/\sqrt d` errs
    by :math:`\sigma^2/d` in mean square, and each of the :math:`n - 1` other weights has mean square
    :math:`(1 + \sigma^2)/d`, so :math:`\sigma^2/d + (n - 1)(1 + \sigma^2)/d`.

    ``"least_squares"`` (:math:`W = K^+ V`, :math:`n < d - 1`), approximately: the cue's key is read exactly and its
    noise through :math:`K^+`, :math:`(\sigma^2/d)\, \mathbb E \lVert K^+ V \rVert_F^2 \approx \sigma^2 n/(d - n - 1)`, taking
    :math:`K K^\top` as a Wishart matrix of scale :math:`1/d` (for keys on the sphere it is a little smaller).

    >>> linear_read_mse("hebbian", 32, 1, 1.0)
    0.03125
    """
    _validate.option("store", store, ("hebbian", "least_squares"))
    d_key = _validate.positive_int("d_key", d_key)
    n_memories = _validate.positive_int("n_memories", n_memories)
    sigma = _validate.finite_float("sigma", sigma, nonnegative=True)
    if store == "hebbian":
        return (sigma**2 + (n_memories - 1) * (1 + sigma**2)) / d_key
    if n_memories >= d_key - 1:
        raise ValueError(f"n_memories must be below d_key - 1 = {d_key - 1} for the least-squares "
                         f"approximation, got {n_memories}")
    return sigma**2 * n_memories / (d_key - n_memories - 1)
