"""Closed-form predictions, derived in the chapters.

This module never imports the code that measures (``conditioning``, ``attention``, ``stimuli``):
a prediction computed by the code it checks proves nothing. Sections follow the chapters.
"""

from __future__ import annotations

import math

from . import _validate


# --- Chapter 1: the conditioning circuit ---


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
    counts = {}
    for name, values in (("same_us", same_us), ("other_us", other_us)):
        counts[name] = [_validate.finite_float(f"{name}[{i}]", m, nonnegative=True) for i, m in enumerate(values)]
    variance = alpha**2 * (sum(m**2 for m in counts["same_us"]) / d + sum(m**2 for m in counts["other_us"]) / d**2)
    return alpha * trained * c, math.sqrt(variance)


# --- Chapter 2: cost of the attention forms ---

ATTENTION_FORMS = ("recurrent", "parallel", "chunkwise")


def attention_cost(form: str, T: int, d_k: int, d_v: int, chunk_size: int = 64) -> int:
    r"""Multiply-adds of one head of causal linear attention over ``T`` steps, in ``form``.

    Counts the products of the matrix multiplications as the three forms are written; the feature
    map and the output norm add :math:`O(T d)`, lower order, and are left out (the denominator adds
    one value column: pass ``d_v + 1``).

    * ``"recurrent"``: :math:`2 T d_k d_v`, per step the update :math:`\phi(k_t)^\top v_t` and the
      read-out :math:`\phi(q_t) S_t`;
    * ``"parallel"``: :math:`T^2 (d_k + d_v)`, the dense scores :math:`\phi(Q)\phi(K)^\top` and the
      scores times :math:`V` (the causal mask zeroes half the scores but does not skip them);
    * ``"chunkwise"``: :math:`2 T d_k d_v + (d_k + d_v) \sum_c C_c^2`, chunks of :math:`C_c` steps
      (``chunk_size`` each, the last possibly shorter): per chunk the read-out of the state, the
      parallel form inside the chunk and the state update.

    >>> attention_cost("parallel", 1024, 64, 64) / attention_cost("parallel", 512, 64, 64)
    4.0
    """
    _validate.option("form", form, ATTENTION_FORMS)
    T, d_k, d_v = (_validate.positive_int(n, x) for n, x in (("T", T), ("d_k", d_k), ("d_v", d_v)))
    chunk_size = _validate.positive_int("chunk_size", chunk_size)
    if form == "recurrent":
        return 2 * T * d_k * d_v
    if form == "parallel":
        return T * T * (d_k + d_v)
    full, last = divmod(T, chunk_size)
    return 2 * T * d_k * d_v + (d_k + d_v) * (full * chunk_size**2 + last**2)


def norm_rescaling_change(scale: float, eps: float, mean_square: float) -> float:
    r"""Relative change of an RMSNorm or LayerNorm output when its input is multiplied by ``scale`` > 0.

    With :math:`m` the row's mean square (RMSNorm) or variance (LayerNorm),
    :math:`\mathrm{Norm}_\epsilon(s r) = \mathrm{Norm}_{\epsilon / s^2}(r)`, so the output row is
    multiplied by :math:`c = \sqrt{(m + \epsilon) / (m + \epsilon / s^2)}` and changes by

    .. math:: |c - 1| \approx \frac{\epsilon}{2m}\,\lvert 1 - s^{-2} \rvert \quad (\epsilon \ll s^2 m),

    exactly 0 for :math:`\epsilon = 0`.

    >>> norm_rescaling_change(10.0, 0.0, 1.0)
    0.0
    """
    scale = _validate.finite_float("scale", scale, positive=True)
    eps = _validate.finite_float("eps", eps, nonnegative=True)
    mean_square = _validate.finite_float("mean_square", mean_square, positive=True)
    return abs(math.sqrt((mean_square + eps) / (mean_square + eps / scale**2)) - 1.0)


UNIT_ROUNDOFF = {"float64": 2.0**-53, "float32": 2.0**-24, "bfloat16": 2.0**-8, "float16": 2.0**-11}


def rounding_bound(depth: int, precision="float64") -> float:
    r"""Relative rounding error expected of outputs that each accumulate ``depth`` terms: :math:`n u`.

    A sum of :math:`n` rounded terms errs by about :math:`\sqrt n\, u \sum_j |x_j|` (rounding errors
    add like a random walk); terms of random sign cancel to :math:`|\sum_j x_j| \approx \sum_j |x_j| /
    \sqrt n`, so the relative error is about :math:`n u`, with :math:`u` the unit roundoff of
    ``precision`` (a name such as ``"float64"`` or a ``torch`` dtype). Terms of one sign do better.

    >>> rounding_bound(1000, "float64")
    1.1102230246251565e-13
    """
    depth = _validate.positive_int("depth", depth)
    name = str(precision).removeprefix("torch.")
    _validate.option("precision", name, tuple(UNIT_ROUNDOFF))
    return depth * UNIT_ROUNDOFF[name]


# --- Chapter 3: capacity of the stores (mean ISR and capacity; chapter 4 registers more stores) ---

KEY_ENSEMBLES = ("sphere", "gaussian")


def _isr_hebbian(d_key: int, n_memories: int, keys: str) -> float:
    r"""Mean ISR of the Hebbian store, exact: :math:`(n - 1)/d` (sphere) and :math:`(n - 1)/(d - 2)` (Gaussian).

    Values are independent unit vectors, so the interference's cross terms average out and
    :math:`\mathbb E\, \mathrm{ISR}_j = \mathbb E \sum_{i \ne j} (k_i \cdot k_j)^2 / (k_j \cdot k_j)^2`.
    On the sphere each overlap has second moment :math:`1/d`. For Gaussian keys, given :math:`k_j`,
    :math:`k_i \cdot k_j \sim \mathcal N(0, \lVert k_j \rVert^2 / d)`, and
    :math:`\mathbb E\, 1/\lVert k_j \rVert^2 = d / (d - 2)` (inverse chi-square), which needs :math:`d > 2`.
    """
    if keys == "sphere":
        return (n_memories - 1) / d_key
    if d_key <= 2:
        return math.inf
    return (n_memories - 1) / (d_key - 2)


ISR_FORMULAS = {"hebbian": _isr_hebbian}


def isr(store: str, d_key: int, n_memories: int, *, keys: str = "sphere") -> float:
    """The closed-form mean ISR of ``store`` holding ``n_memories`` random memories, queried by a stored key.

    Exact for keys uniform on the unit sphere (``keys="sphere"``) and for Gaussian keys with entries
    ``N(0, 1/d_key)`` (``keys="gaussian"``), with values independent and uniform on the unit sphere.

    >>> isr("hebbian", 64, 65)
    1.0
    """
    _validate.option("store", store, tuple(ISR_FORMULAS))
    d_key = _validate.positive_int("d_key", d_key)
    n_memories = _validate.positive_int("n_memories", n_memories)
    _validate.option("keys", keys, KEY_ENSEMBLES)
    return ISR_FORMULAS[store](d_key, n_memories, keys)


def capacity(store: str, d_key: int, *, threshold: float = 1.0, keys: str = "sphere") -> int:
    """The largest number of memories whose mean ISR stays at or below ``threshold`` (0 if none does).

    Found by bisection on :func:`isr`, which grows with the number of memories for every store.

    >>> capacity("hebbian", 64)          # (n - 1) / 64 <= 1
    65
    """
    _validate.option("store", store, tuple(ISR_FORMULAS))
    d_key = _validate.positive_int("d_key", d_key)
    threshold = _validate.finite_float("threshold", threshold, positive=True)
    _validate.option("keys", keys, KEY_ENSEMBLES)
    if isr(store, d_key, 1, keys=keys) > threshold:
        return 0
    low, high = 1, 2
    while isr(store, d_key, high, keys=keys) <= threshold:   # bracket: isr(low) <= threshold < isr(high)
        low, high = high, 2 * high
    while high - low > 1:
        middle = (low + high) // 2
        low, high = (middle, high) if isr(store, d_key, middle, keys=keys) <= threshold else (low, middle)
    return low
