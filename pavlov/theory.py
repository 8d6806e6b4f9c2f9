"""Closed-form predictions, derived in the chapters.

This module never imports the code that measures (``conditioning``, ``attention``, ``stimuli``):
a prediction computed by the code it checks proves nothing. Sections follow the chapters.
"""

from __future__ import annotations

import functools
import math

import torch

from . import _validate, stats


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
    counts = {name: _validate.reals(name, values, nonnegative=True)
              for name, values in (("same_us", same_us), ("other_us", other_us))}
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


def rounding_scale(depth: int, precision="float64") -> float:
    r"""The rounding scale :math:`n u`: the relative rounding error expected of outputs that each accumulate ``depth`` terms.

    A heuristic, not a bound (the worst case, :math:`\gamma_n \sum_j |x_j| / |\sum_j x_j|` with
    :math:`\gamma_n = nu/(1 - nu)`, depends on the data's cancellation). A sum of :math:`n` rounded terms errs by about :math:`\sqrt n\, u \sum_j |x_j|` (rounding errors
    add like a random walk); terms of random sign cancel to :math:`|\sum_j x_j| \approx \sum_j |x_j| /
    \sqrt n`, so the relative error is about :math:`n u`, with :math:`u` the unit roundoff of
    ``precision`` (a name such as ``"float64"`` or a ``torch`` dtype). Terms of one sign do better.

    >>> rounding_scale(1000, "float64")
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
    A single memory has no interference at all, whatever :math:`d`.
    """
    if n_memories == 1:
        return 0.0
    if keys == "sphere":
        return (n_memories - 1) / d_key
    if d_key <= 2:
        return math.inf
    return (n_memories - 1) / (d_key - 2)


def _isr_variance_hebbian(d_key: int, n_memories: int, keys: str) -> float:
    r"""Variance of one query's ISR in the Hebbian store, exact, for values uniform on the unit sphere in ``d_key`` dimensions.

    With :math:`m = n - 1` key overlaps :math:`c_i = k_i \cdot k_j` and value overlaps :math:`g_{il} = v_i \cdot v_l`
    (:math:`g_{ii} = 1`, :math:`\mathbb E g_{il}^2 = 1/d`), :math:`\mathrm{ISR}_j = \sum_{i, l \ne j} c_i c_l g_{il} / \lVert k_j \rVert^4`.
    On the sphere the :math:`c_i` are i.i.d. with :math:`\mathbb E c^2 = 1/d`, :math:`\mathbb E c^4 = 3/(d(d+2))`, so

    .. math:: \mathrm{Var} = \frac{2m(d-1)}{d^2(d+2)} + \frac{2m(m-1)}{d^3} .

    For Gaussian keys :math:`\mathrm{ISR}_j = z^\top G z / \chi^2_d` with :math:`z` standard normal, so
    :math:`\mathbb E\, \mathrm{ISR}^2 = (m^2 + 2m + 2m(m-1)/d) / ((d-2)(d-4))`, which needs :math:`d > 4`.
    """
    m = n_memories - 1
    if m == 0:
        return 0.0
    if keys == "sphere":
        return 2 * m * (d_key - 1) / (d_key**2 * (d_key + 2)) + 2 * m * (m - 1) / d_key**3
    if d_key <= 4:
        return math.inf
    second_moment = (m * m + 2 * m + 2 * m * (m - 1) / d_key) / ((d_key - 2) * (d_key - 4))
    return second_moment - _isr_hebbian(d_key, n_memories, keys) ** 2


ISR_FORMULAS = {"hebbian": _isr_hebbian}
ISR_VARIANCES = {"hebbian": _isr_variance_hebbian}


def _store_arguments(store: str, registry: dict, d_key, n_memories, keys: str) -> tuple[int, int]:
    _validate.option("store", store, tuple(registry))
    d_key = _validate.positive_int("d_key", d_key)
    n_memories = _validate.positive_int("n_memories", n_memories)
    _validate.option("keys", keys, KEY_ENSEMBLES)
    return d_key, n_memories


COUNT_LIMIT = 2**62
"""The largest number of memories the capacity searches count to: beyond it :func:`capacity` returns ``math.inf``."""


def _largest(holds, limit: int = COUNT_LIMIT, *, beyond=None) -> int | float:
    """The largest ``n >= 1`` with ``holds(n)``, for a predicate true up to some ``n`` and false beyond (0 if none).

    If ``holds(limit)``, the answer is at least ``limit``: ``beyond`` is returned, or, if it is ``None``,
    a ValueError is raised.
    """
    if not holds(1):
        return 0
    low, high = 1, 2
    while holds(high):                  # bracket: holds(low) and not holds(high)
        if high >= limit:               # e.g. an upper bound that never falls below 1 - delta
            if beyond is not None:
                return beyond
            raise ValueError(f"the condition holds for every n up to {limit}: no largest n")
        low, high = high, 2 * high
    while high - low > 1:
        middle = (low + high) // 2
        low, high = (middle, high) if holds(middle) else (low, middle)
    return low


def isr(store: str, d_key: int, n_memories: int, *, keys: str = "sphere", **params) -> float:
    """The closed-form mean ISR of ``store`` holding ``n_memories`` random memories, queried by a stored key.

    Exact for keys uniform on the unit sphere (``keys="sphere"``) and for Gaussian keys with entries
    ``N(0, 1/d_key)`` (``keys="gaussian"``), with values independent and uniform on the unit sphere.
    ``params`` go to the store's formula (``beta``, ``degree``); each formula's docstring says where it is exact.

    >>> isr("hebbian", 64, 65)
    1.0
    """
    d_key, n_memories = _store_arguments(store, ISR_FORMULAS, d_key, n_memories, keys)
    return ISR_FORMULAS[store](d_key, n_memories, keys, **params)


def isr_variance(store: str, d_key: int, n_memories: int, *, keys: str = "sphere") -> float:
    """The closed-form variance of one query's ISR, for the ensembles of :func:`isr` and values of dimension ``d_key``.

    >>> isr_variance("hebbian", 64, 1)     # one memory: no interference
    0.0
    """
    d_key, n_memories = _store_arguments(store, ISR_VARIANCES, d_key, n_memories, keys)
    return ISR_VARIANCES[store](d_key, n_memories, keys)


def capacity(store: str, d_key: int, *, threshold: float = 1.0, keys: str = "sphere", **params) -> int | float:
    """The largest number of memories whose mean ISR stays at or below ``threshold`` (0 if none does).

    Found by bisection on :func:`isr`, which grows with the number of memories for every store. For
    the Hebbian store on the sphere this is :math:`\\lfloor 1 + d / \\gamma \\rfloor` at
    ``threshold`` :math:`= 1/\\gamma`, the source's average-case form :math:`n < 1 + d_k/\\gamma`.

    Returns ``math.inf`` when the capacity is at least :data:`COUNT_LIMIT` :math:`= 2^{62}` memories, the
    largest count the search represents: the softmax store on the sphere from :math:`\\beta \\approx 36.4` at
    :math:`d_k = 64` and :math:`\\beta \\approx 26.6` at :math:`d_k = 128`. The mean ISR grows without bound for
    every store, so the true capacity is then finite but beyond any countable store; :func:`isr_crossing`
    gives it as a real number for the stores whose ISR is linear in :math:`n`.

    >>> capacity("hebbian", 64)          # (n - 1) / 64 <= 1
    65
    >>> capacity("softmax", 64, beta=45.0)     # about 1e21 memories (isr_crossing)
    inf
    """
    _validate.option("store", store, tuple(ISR_FORMULAS))
    d_key = _validate.positive_int("d_key", d_key)
    threshold = _validate.finite_float("threshold", threshold, positive=True)
    _validate.option("keys", keys, KEY_ENSEMBLES)
    return _largest(lambda n: isr(store, d_key, n, keys=keys, **params) <= threshold, beyond=math.inf)



def isr_crossing(store: str, d_key: int, *, keys: str = "sphere", **params) -> float:
    """The number of memories, as a real number, at which the mean ISR of ``store`` reaches 1.

    For every store but least squares the mean ISR is :math:`n - 1` times one other memory's mean
    interference, :func:`isr` at two memories, so it reaches 1 at :math:`1 + 1/\\mathrm{ISR}(2)`; the
    least-squares store's ISR is not linear in :math:`n` and has no such crossing. :func:`capacity` is
    its integer part, up to :data:`COUNT_LIMIT` (``math.inf`` beyond).

    >>> isr_crossing("relu", 64)         # 1 + 2d
    129.0
    """
    if store == "least_squares":
        raise ValueError("store 'least_squares' has a mean ISR not linear in n, so no crossing 1 + 1/ISR(2): "
                         "use capacity('least_squares', d_key)")
    return 1 + 1 / isr(store, d_key, 2, keys=keys, **params)

WORST_CASE_METHODS = ("markov", "cantelli", "paley_zygmund", "gamma")


def all_within_probability(store: str, d_key: int, n_memories: int, *, threshold: float = 1.0,
                           keys: str = "sphere", method: str = "gamma") -> float:
    r"""The probability that every one of ``n_memories`` stored items has ISR at most ``threshold``: a bound or an approximation.

    With :math:`\mu` and :math:`\sigma^2` the mean and variance of one item's ISR (:func:`isr`,
    :func:`isr_variance`), :math:`\varepsilon` = ``threshold`` and :math:`n` items, a union bound over
    the items with a tail bound for each gives lower bounds; one item's tail gives an upper bound:

    * ``"markov"``, the source's bound: :math:`1 - n \mu / \varepsilon` (Markov's inequality), a lower bound;
    * ``"cantelli"``: :math:`1 - n \sigma^2 / (\sigma^2 + (\varepsilon - \mu)^2)` for :math:`\mu < \varepsilon`
      (Cantelli's one-sided inequality), a lower bound;
    * ``"paley_zygmund"``: :math:`1 - (\mu - \varepsilon)^2 / (\mu^2 + \sigma^2)` for :math:`\mu > \varepsilon`,
      else 1 (one item exceeds :math:`\varepsilon` at least this often, by the Paley-Zygmund inequality), an upper bound;
    * ``"gamma"``: :math:`F(\varepsilon)^n` with :math:`F` the gamma distribution of mean :math:`\mu` and
      variance :math:`\sigma^2`, an approximation that treats the items' ISRs as independent and gamma-distributed.

    Bounds are clipped to :math:`[0, 1]`; ``"markov"`` needs only :func:`isr`, the others also :func:`isr_variance`.

    >>> all_within_probability("hebbian", 64, 3, threshold=1.0, method="markov")    # 1 - 3 (2/64)
    0.90625
    """
    _validate.option("method", method, WORST_CASE_METHODS)
    d_key, n_memories = _store_arguments(store, ISR_FORMULAS if method == "markov" else ISR_VARIANCES,
                                         d_key, n_memories, keys)
    eps = _validate.finite_float("threshold", threshold, positive=True)
    n, mean = n_memories, isr(store, d_key, n_memories, keys=keys)
    if method == "markov":
        return max(0.0, 1.0 - n * mean / eps)
    variance = isr_variance(store, d_key, n_memories, keys=keys)
    if variance == 0.0:                         # no interference: every item is retrieved exactly
        return 1.0 if mean <= eps else 0.0
    if method == "cantelli":
        return max(0.0, 1.0 - n * variance / (variance + (eps - mean) ** 2)) if mean < eps else 0.0
    if method == "paley_zygmund":
        return 1.0 - (mean - eps) ** 2 / (mean**2 + variance) if mean > eps else 1.0
    if math.isinf(variance):
        raise ValueError(f"the gamma approximation needs a finite ISR variance, infinite at d_key = {d_key}")
    shape = torch.tensor(mean**2 / variance, dtype=torch.float64, device="cpu")   # closed-form scalars: CPU
    one_item = torch.special.gammainc(shape, shape * eps / mean).item()            # F(eps), scale sigma^2 / mu
    return one_item**n


def worst_case_capacity(store: str, d_key: int, *, threshold: float = 1.0, delta: float = 0.1,
                        keys: str = "sphere", method: str = "gamma") -> int:
    r"""The largest :math:`n` for which all :math:`n` items have ISR at most ``threshold`` with probability at least :math:`1 - \delta`.

    From :func:`all_within_probability` with ``method``: a lower bound on the true value for
    ``"markov"`` (the source's :math:`n (n - 1) \le \varepsilon \delta d`, i.e. :math:`n \approx \sqrt{\varepsilon \delta d}`
    on the sphere) and ``"cantelli"``, an upper bound for ``"paley_zygmund"``, an approximation for ``"gamma"``.

    >>> worst_case_capacity("hebbian", 1000, threshold=1.0, delta=0.1, method="markov")   # n (n - 1) <= 100
    10
    """
    delta = _validate.finite_float("delta", delta, positive=True)
    if delta >= 1:
        raise ValueError(f"delta must be a probability in (0, 1), got {delta}")
    return _largest(lambda n: all_within_probability(store, d_key, n, threshold=threshold, keys=keys,
                                                     method=method) >= 1 - delta)


def hebbian_decoding_accuracy(d_key: int, n_memories: int) -> float:
    r"""The fraction of queries decoded to the right value by the Hebbian store, in a Gaussian approximation.

    Keys uniform on the unit sphere, values uniform on the unit sphere in ``d_key`` dimensions. Queried
    with :math:`k_j`, the retrieval :math:`r = \sum_i c_i v_i` (:math:`c_i = k_i \cdot k_j`, :math:`c_j = 1`)
    has inner product :math:`r \cdot v_j = 1 + \sum_{i \ne j} c_i g_{ij}` with its own value, noise of
    variance :math:`\sigma_0^2 = (n-1)/d^2`, and :math:`r \cdot v_l = g_{lj} + c_l + \sum_{i \ne j, l} c_i g_{il}`,
    of variance :math:`\sigma^2 = 2/d + (n-2)/d^2`, with each other value; all are uncorrelated.
    Treating them as independent Gaussians,

    .. math:: P(\text{correct}) = \mathbb E_Z\, \Phi\big((1 + \sigma_0 Z)/\sigma\big)^{n-1}, \quad Z \sim \mathcal N(0, 1),

    integrated by the trapezoidal rule on :math:`|Z| \le 10`: :func:`recall_accuracy` with overlaps :math:`1/d`.

    >>> hebbian_decoding_accuracy(64, 1)
    1.0
    """
    d_key = _validate.positive_int("d_key", d_key)
    return recall_accuracy(n_memories, key_overlap=1 / d_key, value_overlap=1 / d_key)


def recall_accuracy(n_memories: int, *, key_overlap: float, value_overlap: float, n_values: int | None = None) -> float:
    r"""The Hebbian store's decoding accuracy for keys and values of given mean squared overlaps (Gaussian approximation).

    :func:`hebbian_decoding_accuracy` with :math:`\mu_k = \mathbb E\,c^2` and :math:`\mu_v = \mathbb E\,g^2` in place
    of :math:`1/d` (random unit vectors have :math:`1/d`; vectors packed tighter, such as trained ones, less).
    Decoded among a vocabulary of ``n_values`` values (default ``n_memories``: only the stored values
    compete), the :math:`n - 1` other stored values score with variance
    :math:`\sigma^2 = \mu_v + \mu_k + (n - 2) \mu_k \mu_v` and the :math:`V - n` values not stored, which
    have no key of their own, with :math:`\sigma_\text{out}^2 = n \mu_k \mu_v`; the target's noise is
    :math:`\sigma_0^2 = (n - 1) \mu_k \mu_v`:

    .. math:: P(\text{correct}) = \mathbb E_Z\, \Phi\big(\tfrac{1 + \sigma_0 Z}{\sigma}\big)^{n-1}
              \Phi\big(\tfrac{1 + \sigma_0 Z}{\sigma_\text{out}}\big)^{V-n}.

    >>> round(recall_accuracy(8, key_overlap=1 / 16, value_overlap=1 / 16), 3) == round(hebbian_decoding_accuracy(16, 8), 3)
    True
    """
    n = _validate.positive_int("n_memories", n_memories)
    mu_k = _validate.finite_float("key_overlap", key_overlap, positive=True)
    mu_v = _validate.finite_float("value_overlap", value_overlap, positive=True)
    if mu_k > 1 or mu_v > 1:
        raise ValueError(f"key_overlap and value_overlap are mean squared cosines in (0, 1], got {mu_k}, {mu_v}")
    vocabulary = n if n_values is None else _validate.positive_int("n_values", n_values)
    if vocabulary < n:
        raise ValueError(f"n_values must be at least n_memories = {n}, got {vocabulary}")
    if vocabulary == 1:
        return 1.0
    sd_target = math.sqrt((n - 1) * mu_k * mu_v)
    sd_other, sd_outside = math.sqrt(mu_v + mu_k + (n - 2) * mu_k * mu_v), math.sqrt(n * mu_k * mu_v)
    z = torch.linspace(-10.0, 10.0, 4001, dtype=torch.float64, device="cpu")     # closed-form scalars: CPU
    signal = 1 + sd_target * z
    log_win = -z.pow(2) / 2 - 0.5 * math.log(2 * math.pi)                        # the density of Z, then Phi(.)^count
    if n > 1:
        log_win = log_win + (n - 1) * torch.special.log_ndtr(signal / sd_other)
    if vocabulary > n:
        log_win = log_win + (vocabulary - n) * torch.special.log_ndtr(signal / sd_outside)
    return torch.trapezoid(log_win.exp(), z).clamp(0.0, 1.0).item()


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


def hebbian_accuracy_capacity(d_key: int, *, accuracy: float = 0.9) -> int:
    """The largest number of memories the Hebbian store decodes with at least ``accuracy`` (:func:`hebbian_decoding_accuracy`).

    >>> hebbian_accuracy_capacity(64) > capacity("hebbian", 64)     # far beyond mean ISR 1
    True
    """
    d_key = _validate.positive_int("d_key", d_key)
    accuracy = _validate.finite_float("accuracy", accuracy, positive=True)
    if accuracy >= 1:
        raise ValueError(f"accuracy must be a fraction in (0, 1), got {accuracy}")
    return _largest(lambda n: hebbian_decoding_accuracy(d_key, n) >= accuracy)


# --- Chapter 4: MLP and softmax stores (registered in ISR_FORMULAS) ---

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


def _with_others(n_memories: int, per_memory: float) -> float:
    """:math:`(n - 1)` times ``per_memory``: the mean ISR of a store whose other memories each add ``per_memory``."""
    return 0.0 if n_memories == 1 else (n_memories - 1) * per_memory   # one memory: no crosstalk, even if infinite


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


ISR_FORMULAS.update({"least_squares": _isr_least_squares, "relu": _isr_relu, "relu2": _isr_relu2,
                     "polynomial": _isr_polynomial, "softmax": _isr_softmax})


def gaussian_overlap_isr(store: str, d_key: int, n_memories: int, **params) -> float:
    r"""Mean ISR of ``store`` for unit keys in the Gaussian approximation: each other overlap :math:`\sim \mathcal N(0, 1/d)`.

    The approximation keeps the target's overlap at 1 and replaces the exact sphere moments by
    Gaussian ones: :math:`(n-1)(2p-1)!!/d^p` for degree :math:`p` (half that for the rectified stores),
    :math:`(n - 1) e^{-2\beta + 2\beta^2 / d}` for softmax, and :math:`(n - d)/d` for least squares. Compare
    :func:`isr` with ``keys="sphere"`` (exact, except for least squares, where it is this approximation).

    >>> gaussian_overlap_isr("softmax", 64, 2, beta=32.0) == math.exp(-32.0)   # the optimum beta = d/2: e^(-d/2)
    True
    """
    _validate.option("store", store, tuple(ISR_FORMULAS))
    d_key, n_memories = _validate.positive_int("d_key", d_key), _validate.positive_int("n_memories", n_memories)
    if store == "hebbian":                       # the Hebbian store is the polynomial store of degree 1
        store, params = "polynomial", {"degree": 1, **params}
    return ISR_FORMULAS[store](d_key, n_memories, GAUSSIAN_OVERLAP, **params)


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


# --- Chapter 6: stacked circuits, error propagation and the depth-width trade-off ---


def _probability(name: str, value) -> float:
    value = _validate.finite_float(name, value, nonnegative=True)
    if value > 1:
        raise ValueError(f"{name} must be a probability in [0, 1], got {value}")
    return value


def stacked_error(head_failure: float, *, heads: int, layers: int) -> float:
    r"""The probability that a chain of ``layers`` hops fails when a layer fails only if all its ``heads`` fail.

    With each head failing independently with probability :math:`p` and layers failing independently,
    a layer fails with :math:`p^H` and the chain with

    .. math:: r = 1 - (1 - p^H)^L \;\le\; L\, p^H ,

    the union bound (:func:`stacked_error_bound`), which it approaches when :math:`L p^H \ll 1`.

    >>> stacked_error(0.5, heads=2, layers=3)     # 1 - (3/4)^3
    0.578125
    """
    p = _probability("head_failure", head_failure)
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


# --- Chapter 7: learning rules, forgetting and drift ---


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
    if isinstance(age, bool) or not isinstance(age, int) or age < 0:
        raise ValueError(f"age must be a non-negative integer, got {age!r}")
    interference, signal = _decay_interference(gamma, d, length), gamma ** (2 * age)
    return interference / signal - 1 / d if signal > 0 else math.inf    # a signal below the smallest float


def _decay_interference(gamma: float, d: int, length: int | None) -> float:
    """:math:`G / d`, the total written weight's mean square seen by one probe."""
    gamma = _probability("gamma", gamma)
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


def decay_horizon(*, gamma: float, d: int, length: int | None = None) -> float:
    r"""The age up to which decay-rule pairs are read with ISR at most 1: :math:`\ln\frac{d+1}{G} / (2 \ln \frac1\gamma)`.

    Pairs of age at most the horizon (rounded down) are retrievable; a negative horizon means none is.

    >>> round(decay_horizon(gamma=0.98, d=64), 1)
    23.4
    """
    if gamma == 1:
        raise ValueError("gamma must be below 1: the Hebbian store has no horizon (every pair has one ISR)")
    interference = _decay_interference(gamma, d, length)          # checks gamma, d and length first
    return math.log((1 + 1 / d) / interference) / (2 * math.log(1 / gamma))


def optimal_decay(d: int, *, exact: bool = False) -> tuple[float, float]:
    r"""The forgetting rate that retrieves the longest past in an endless stream, and that horizon.

    For :math:`\varepsilon = 1 - \gamma` small the horizon is :math:`\ln(2(d+1)\varepsilon) / (2\varepsilon)`;
    it peaks at :math:`\varepsilon^* = e / (2(d+1))` with horizon :math:`(d+1)/e`: the best decay memory
    recalls its last :math:`0.37\,(d+1)` pairs, for ever, where the Hebbian store recalls :math:`d+1`
    pairs and then nothing. That is the asymptote for large ``d``; with ``exact=True`` the horizon
    :func:`decay_horizon` itself is maximised over :math:`\gamma` (golden-section search), which at
    ``d = 64`` is half a step shorter.

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
    if not exact:
        return 1 - math.e / (2 * (d + 1)), (d + 1) / math.e
    # the horizon is positive only where (d + 1)(1 - gamma^2) > 1, and has one peak there
    high = math.sqrt(1 - 1 / (d + 1))
    gamma = stats.golden_section_min(lambda g: -decay_horizon(gamma=g, d=d), 1e-9, high)
    return gamma, decay_horizon(gamma=gamma, d=d)


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
    if steps is not None and (isinstance(steps, bool) or not isinstance(steps, int) or steps < 0):
        raise ValueError(f"steps must be a non-negative integer or None, got {steps!r}")
    if form == "source":
        gain = v ** 2
        inverse = torch.where(v != 0, 1 / torch.where(v != 0, v, 1), 0)       # 1/v_j, 0 where v_j = 0
    else:
        gain = v.pow(2).sum()
        inverse = v / gain
    settled = 1.0 if steps is None else 1 - (1 - alpha * gain) ** steps
    return k[:, None] * (settled * inverse)[None, :]



# --- Chapter 8: erasing one association from a least-squares store ---

ERASURE_RULES = {"delta_zero": ("beta", "steps"), "delta_neutral": ("beta", "steps"), "anti_hebbian": ("alpha",),
                 "kalman": ("noise", "steps")}
"""The erasing rules of the closed forms below and the parameters each takes (the Kalman forms: ``ridge = 0``)."""


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


def _erasure(rule: str, d_key: int, n_memories: int, overlap: float | None, params: dict, exact_beyond: tuple):
    r"""Checked arguments of the erasure forms: ``(c, h, n, mean, mean_square)``.

    :math:`c` is the part of the target's read-out a rule removes (below capacity): :math:`1 - (1-\beta)^s` for
    :math:`s` = ``steps`` delta writes at rate :math:`\beta` on a unit key, :math:`\alpha` for the anti-Hebbian write,
    :math:`s / (\sigma^2 + s)` for :math:`s` Kalman writes at noise :math:`\sigma^2`. :math:`h = \min(n, d)/n` is the mean
    leverage :math:`\mathbb E P_{tt}` of a key, the hat matrix :math:`P = K K^+` having trace
    :math:`\mathrm{rank}\, K = \min(n, d)` and an exchangeable diagonal. Beyond capacity a form holds for the rules
    in ``exact_beyond``, and for the Kalman rule at ``noise = 0``; other ``n_memories > d_key`` are refused.
    """
    _validate.option("rule", rule, tuple(ERASURE_RULES))
    d_key = _validate.positive_int("d_key", d_key)
    n = _validate.positive_int("n_memories", n_memories)
    if n < 2:
        raise ValueError(f"n_memories must be at least 2 (one to erase, others to damage), got {n}")
    mean, square = key_overlap_moments(d_key, overlap)
    unknown = sorted(set(params) - set(ERASURE_RULES[rule]))
    if unknown:
        raise TypeError(f"{unknown[0]} is not a parameter of the {rule!r} closed forms, which take "
                        f"{', '.join(ERASURE_RULES[rule])}")
    steps = _validate.positive_int("steps", params.get("steps", 1)) if "steps" in ERASURE_RULES[rule] else 1
    if rule == "anti_hebbian":
        c = _validate.finite_float("alpha", params.get("alpha", 1.0), nonnegative=True)
    elif rule == "kalman":
        noise = _validate.finite_float("noise", params.get("noise", 1.0), nonnegative=True)
        c = steps / (noise + steps)
    else:
        c = 1 - (1 - _validate.finite_float("beta", params.get("beta", 1.0), nonnegative=True)) ** steps
    if n > d_key and rule not in exact_beyond and not (rule == "kalman" and c == 1):
        raise ValueError(f"n_memories must be at most d_key = {d_key} for this closed form of {rule!r}"
                         f"{' at noise > 0' if rule == 'kalman' else ''}, got {n}; beyond, measure it "
                         f"(pavlov.stores.erase)")
    return c, min(n, d_key) / n, n, mean, square


def erasure_residual(rule: str, d_key: int, n_memories: int, *, overlap: float | None = None, **params) -> float:
    r"""The mean recall :math:`(k_t S) \cdot v_t` left to an association after ``rule`` erases it from a least-squares store.

    The store is :math:`S_0 = K^+ V` (:math:`n` unit keys in general position, independent unit values), so
    the target recalls :math:`k_t S_0 = \sum_j P_{tj} v_j`, with :math:`P = K K^+` the hat matrix, and
    :math:`\mathbb E\, (k_t S_0) \cdot v_t = \mathbb E P_{tt} = h = \min(n, d)/n` (1 for :math:`n \le d`). For a unit key:

    * delta writes of :math:`(k_t, 0)`: each maps :math:`k_t S \to (1 - \beta)\, k_t S`, so
      :math:`k_t S = (1 - c)\, k_t S_0` with :math:`c = 1 - (1-\beta)^s`, and the residual is :math:`(1 - c)\, h`;
    * of :math:`(k_t, u)`, :math:`u` the mean of the other values: :math:`k_t S = (1 - c)\, k_t S_0 + c\, u`, with
      :math:`\mathbb E\, u \cdot v_t = 0`: again :math:`(1 - c)\, h`;
    * anti-Hebbian, :math:`S = S_0 - \alpha\, k_t^\top v_t`: :math:`h - \alpha`, negative beyond :math:`d` keys at
      :math:`\alpha = 1`: the target had only :math:`d/n` of its value to lose, and is then recalled reversed;
    * Kalman writes of :math:`(k_t, 0)` at noise :math:`\sigma^2` from :math:`P = (K^\top K)^+` (the stored pairs' posterior at
      unit noise, ``ridge = 0``): :math:`s` writes are one at noise :math:`\sigma^2/s` (the information form), and
      :math:`S = S_0 - P k_t^\top (k_t S_0) / (\sigma^2/s + P_{tt})`, since :math:`k_t P k_t^\top = P_{tt}`. So
      :math:`k_t S = k_t S_0\, \sigma^2 / (\sigma^2 + s P_{tt})`: for :math:`n \le d` (:math:`P_{tt} = 1`) :math:`(1 - c)` with
      :math:`c = s / (\sigma^2 + s)`, the erasing pairings weighed against the stored one; beyond, only at
      ``noise = 0`` (the limit of a certain erasure; the rule itself needs noise > 0), where it is 0.

    Every value holds for either key ensemble (``overlap``: see :func:`key_overlap_moments`).

    >>> erasure_residual("delta_zero", 32, 16), erasure_residual("anti_hebbian", 32, 64), erasure_residual("kalman", 32, 16)
    (0.0, -0.5, 0.5)
    """
    c, h, _, _, _ = _erasure(rule, d_key, n_memories, overlap, params, ("delta_zero", "delta_neutral", "anti_hebbian"))
    return h - c if rule == "anti_hebbian" else (1 - c) * h


def erasure_damage(rule: str, d_key: int, n_memories: int, *, overlap: float | None = None, **params) -> float:
    r"""The mean loss of recall :math:`(k_i S_0 - k_i S) \cdot v_i` of the other associations when ``rule`` erases one.

    Every rule changes the store along one direction, so pair :math:`i` loses a multiple of its key's weight
    on it. Over the independent unit values :math:`\mathbb E\, (k_t S_0) \cdot v_i = P_{ti}`, with :math:`P = K K^+`, and since
    :math:`K^\top P = K^\top`, :math:`\sum_i (k_i \cdot k_t) P_{it} = \lVert k_t \rVert^2 = 1`, so
    :math:`\sum_{i \ne t} (k_i \cdot k_t) P_{it} = 1 - P_{tt}`, of mean :math:`1 - h`, :math:`h = \min(n, d)/n`.

    * Delta writes (unit key): :math:`S - S_0 = c\, k_t^\top (u - k_t S_0)` with :math:`u = 0` (``delta_zero``) or the mean
      :math:`\bar v` of the other values (``delta_neutral``), so pair :math:`i` loses :math:`c\, (k_i \cdot k_t)\, (k_t S_0 - u) \cdot v_i`;
      with :math:`\mathbb E\, \bar v \cdot v_i = 1/(n-1)` and :math:`\bar\rho = \mathbb E\, k_i \cdot k_t` (0, or ``overlap``), the mean over the
      :math:`n - 1` others is :math:`c\,(1 - h)/(n - 1)` and :math:`c\,(1 - h - \bar\rho)/(n - 1)`, for every :math:`n`.
      Below capacity the erasure costs the others nothing on average, and a neutral value, which
      shares the others' values, helps them through the shared key direction; beyond, each loses about :math:`1/n`.
    * Anti-Hebbian, :math:`S - S_0 = -\alpha\, k_t^\top v_t`: pair :math:`i` loses :math:`\alpha\, (k_i \cdot k_t)(v_t \cdot v_i)`, of mean 0.
    * Kalman from :math:`P = (K^\top K)^+` (``ridge = 0``): :math:`S - S_0 = -P k_t^\top (k_t S_0) / (a + P_{tt})`, :math:`a = \sigma^2/s`,
      and :math:`k_i P k_t^\top = P_{it}`; so pair :math:`i` loses :math:`P_{it}\, (k_t S_0) \cdot v_i / (a + P_{tt})`, of mean
      :math:`P_{it}^2 / (a + P_{tt})`, and :math:`\sum_{i \ne t} P_{it}^2 = P_{tt} - P_{tt}^2` (:math:`P^2 = P`). For :math:`n \le d`,
      :math:`P = I`: no other read-out moves at all, 0. Beyond, at ``noise = 0`` (a certain erasure: the least-squares
      store refitted under the constraint :math:`k_t S = 0`), :math:`(1 - P_{tt})/(n - 1)`, of mean :math:`(1 - h)/(n - 1)`,
      the delta rule's; at noise > 0 it has no closed form here.

    >>> erasure_damage("delta_zero", 32, 64), erasure_damage("delta_neutral", 32, 16, overlap=0.3)
    (0.007936507936507936, -0.02)
    """
    c, h, n, mean, _ = _erasure(rule, d_key, n_memories, overlap, params, ("delta_zero", "delta_neutral", "anti_hebbian"))
    if rule == "anti_hebbian":
        return 0.0
    if rule == "kalman":
        return (1 - h) / (n - 1)
    return c * (1 - h - (mean if rule == "delta_neutral" else 0.0)) / (n - 1)


def erasure_change(rule: str, d_key: int, n_memories: int, *, overlap: float | None = None, **params) -> float:
    r"""The mean squared change :math:`\lVert k_i (S - S_0) \rVert^2` of the other associations' read-outs when ``rule`` erases one.

    With :math:`m_2 = \mathbb E\, (k_i \cdot k_t)^2` (:func:`key_overlap_moments`: :math:`1/d`, or
    :math:`\rho^2 + (1-\rho)^2/(d-1)`), keys independent of values, and :math:`n \le d`, where :math:`k_t S_0 = v_t`:

    * ``delta_zero``: :math:`k_i (S - S_0) = -c\, (k_i \cdot k_t)\, v_t`, so :math:`c^2 m_2`;
    * ``delta_neutral``: :math:`c\, (k_i \cdot k_t)(\bar v - v_t)` with :math:`\mathbb E \lVert \bar v - v_t \rVert^2 = 1 + 1/(n-1)`,
      so :math:`c^2 m_2\, n / (n - 1)`: a neutral value moves the others more than zero does;
    * ``anti_hebbian``: :math:`-\alpha\, (k_i \cdot k_t)\, v_t` (it writes :math:`v_t`, whatever the store recalls), so
      :math:`\alpha^2 m_2`, for every :math:`n`;
    * ``kalman`` (``ridge = 0``): :math:`-P_{it}\, (k_t S_0) / (a + P_{tt})` (see :func:`erasure_damage`), 0 for :math:`n \le d`;
      beyond, at ``noise = 0``, with :math:`\mathbb E \lVert k_t S_0 \rVert^2 = \sum_j P_{tj}^2 = P_{tt}` the mean over the others is
      :math:`(P_{tt} - P_{tt}^2) P_{tt} / (P_{tt}^2 (n-1)) = (1 - P_{tt})/(n-1)`, of mean :math:`(1 - h)/(n - 1)`.

    Beyond :math:`d` keys the delta rules' change depends on the leverage :math:`P_{tt}` jointly with the
    overlaps, and has no closed form here (``delta_zero``'s is near :math:`c^2 m_2\, d/n`, which for independent
    keys is above the certain Kalman erasure's :math:`(1 - h)/(n - 1)`).

    >>> erasure_change("delta_zero", 32, 16), erasure_change("anti_hebbian", 32, 64, overlap=0.5)
    (0.03125, 0.25806451612903225)
    """
    c, h, n, _, square = _erasure(rule, d_key, n_memories, overlap, params, ("anti_hebbian",))
    if rule == "kalman":
        return (1 - h) / (n - 1)
    return c**2 * square * (n / (n - 1) if rule == "delta_neutral" else 1.0)


# --- Chapter 10: noisy cues, basins of attraction and Hopfield networks ---


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


def _ags_load(y: float) -> float:
    """The load at which the zero-temperature retrieval state has overlap erf(y) (Amit, Gutfreund, Sompolinsky)."""
    m = math.erf(y)
    return (m - 2 * y * math.exp(-y * y) / math.sqrt(math.pi)) ** 2 / (2 * y * y)


_AGS_Y = stats.golden_section_min(lambda y: -_ags_load(y), 0.5, 3.0)
HOPFIELD_CRITICAL_LOAD = _ags_load(_AGS_Y)
"""Amit, Gutfreund and Sompolinsky's critical load of the classical Hopfield network, :math:`\\alpha_c \\approx 0.138`."""


def hopfield_retrieval_overlap(load: float) -> float:
    r"""The overlap :math:`m` of the classical Hopfield network's retrieval state with its pattern at load
    :math:`\alpha = P/N`, in the replica-symmetric theory at zero temperature of Amit, Gutfreund and Sompolinsky
    (1985), as :math:`N \to \infty`; ``math.nan`` beyond :data:`HOPFIELD_CRITICAL_LOAD`, where there is no retrieval
    state.

    The saddle-point equations :math:`m = \mathrm{erf}(y)`, :math:`y = m/\sqrt{2\alpha r}`,
    :math:`C = \sqrt{2/(\pi\alpha r)}\, e^{-y^2}`, :math:`r = (1 - C)^{-2}` give the load in terms of :math:`y`,

    .. math::

        \alpha(y) = \frac{\big(\mathrm{erf}(y) - 2 y e^{-y^2}/\sqrt\pi\big)^2}{2 y^2},

    whose maximum is :math:`\alpha_c`; the retrieval state is the branch beyond it, solved here by bisection.

    >>> round(HOPFIELD_CRITICAL_LOAD, 4), round(hopfield_retrieval_overlap(HOPFIELD_CRITICAL_LOAD), 3)
    (0.1379, 0.967)
    """
    load = _validate.finite_float("load", load, nonnegative=True)
    if load > HOPFIELD_CRITICAL_LOAD:
        return math.nan
    if load == 0:
        return 1.0
    low, high = _AGS_Y, 10.0          # alpha(y) falls from alpha_c on this branch
    for _ in range(100):
        middle = (low + high) / 2
        low, high = (middle, high) if _ags_load(middle) > load else (low, middle)
    return math.erf((low + high) / 2)


def hopfield_bit_flip(n_neurons: int, n_patterns: int) -> float:
    r"""The probability, exact, that one bit of a stored random pattern is unstable in the classical Hopfield network.

    The bit's field times the bit is :math:`((N - 1) + S)/N`, with :math:`S` a sum of :math:`M = (P - 1)(N - 1)`
    independent signs (:func:`hopfield_stable_fraction`), so the bit flips when the binomial :math:`S = 2B - M`
    falls below :math:`-(N - 1)`.

    >>> hopfield_bit_flip(5, 2), round(hopfield_bit_flip(5, 3) * 256, 9)     # B <= 1 of 8 signs: 9/256
    (0.0, 9.0)
    """
    n_neurons = _validate.positive_int("n_neurons", n_neurons)
    n_patterns = _validate.positive_int("n_patterns", n_patterns)
    m = (n_patterns - 1) * (n_neurons - 1)
    flips_below = math.ceil((m - n_neurons + 1) / 2)       # a flip when B <= flips_below - 1
    if m == 0 or flips_below <= 0:
        return 0.0
    b = torch.arange(flips_below, dtype=torch.float64)
    log_binomial = math.lgamma(m + 1) - torch.lgamma(b + 1) - torch.lgamma(m - b + 1)
    return min(torch.logsumexp(log_binomial - m * math.log(2), 0).exp().item(), 1.0)


def hopfield_stable_fraction(n_neurons: int, n_patterns: int) -> float:
    r"""The probability that a stored pattern is a fixed point of the classical Hopfield network, with its bits'
    failures taken as independent.

    The field on bit :math:`i` of stored pattern :math:`\nu`, times the bit, is :math:`\xi^\nu_i h_i = ((N - 1) + S)/N`,
    with :math:`S` a sum of :math:`M = (P - 1)(N - 1)` independent signs (each :math:`\xi^\nu_i \xi^\mu_i \xi^\mu_j \xi^\nu_j`,
    :math:`\mu \ne \nu`, :math:`j \ne i`), so a bit flips exactly when the binomial :math:`S < -(N - 1)` (a zero field keeps the
    bit). The :math:`N` bits of a pattern share their patterns' signs and are not quite independent; taking them
    so gives :math:`(1 - p_{\mathrm{flip}})^N`. As :math:`N \to \infty` it tends to 1 below McEliece et al.'s
    :math:`P = N/(2 \ln N)` and to 0 beyond.

    >>> hopfield_stable_fraction(100, 1), round(hopfield_stable_fraction(1000, 200), 3)
    (1.0, 0.0)
    """
    p_flip = hopfield_bit_flip(n_neurons, n_patterns)
    return math.exp(n_neurons * math.log1p(-p_flip)) if p_flip < 1 else 0.0


# --- The channel view: retrieval as a noisy channel, bits per stored number ---

MATRIX_STORES = ("hebbian", "least_squares")
"""The stores that keep one :math:`d_v \\times d_k` matrix, :math:`d_k d_v` numbers whatever the number of memories."""

PAIR_STORES = ("relu", "relu2", "polynomial", "softmax")
"""The stores that keep every key and value, :math:`n (d_k + d_v)` numbers: the MLP's hidden units, attention's cache."""


def _value_dimension(d_key: int, d_value) -> int:
    return d_key if d_value is None else _validate.positive_int("d_value", d_value)


def _channel_bits(d_value: int, mean_isr: float) -> float:
    """:math:`(d_v/2) \\log_2(1 + 1/\\mathrm{ISR})`: ``math.inf`` at ISR 0 (a noiseless read), 0 at an infinite ISR."""
    if mean_isr == 0:
        return math.inf
    return d_value / 2 * math.log1p(1 / mean_isr) / math.log(2)


def retrieval_bits(store: str, d_key: int, n_memories: int, *, d_value: int | None = None, keys: str = "sphere",
                   **params) -> float:
    r"""A lower bound, in bits, on what the ``n_memories`` reads of ``store`` by its stored keys tell about the values:
    :math:`n \, (d_v/2) \log_2(1 + 1/\mathrm{ISR})`, with :math:`\mathrm{ISR}` the store's exact mean ISR (:func:`isr`).

    Read by key :math:`k_j`, the store returns :math:`r_j = w_j v_j + \sum_{i \ne j} w_i v_i`, the weights :math:`w`
    set by the keys :math:`K`. Let the values have independent :math:`\mathcal N(0, \sigma^2)` entries, independent
    of each other and of the keys. Given :math:`K`, the crosstalk :math:`\sum_{i \ne j} (w_i / w_j) v_i` of the
    rescaled read :math:`r_j / w_j = v_j + \ldots` has :math:`\sigma^2 \mathrm{ISR}_j(K)` per entry, with
    :math:`\mathrm{ISR}_j(K) = \sum_{i \ne j} w_i^2 / w_j^2` the ISR's mean over the values, and it is uncorrelated
    with :math:`v_j`. The linear MMSE estimate :math:`A r_j` of :math:`v_j` then errs by
    :math:`\sigma^2 / (1 + \mathrm{SNR})` per entry, :math:`\mathrm{SNR} = 1/\mathrm{ISR}_j(K)`: this needs the
    crosstalk only uncorrelated with :math:`v_j`, neither independent of it nor Gaussian (unlike the argument that
    Gaussian noise is the worst additive noise). A Gaussian has the largest entropy at a given covariance, so

    .. math::

        h(v_j \mid r_j, K) \le h(v_j - A r_j \mid K) \le \frac{d_v}{2} \log_2 \frac{2 \pi e\, \sigma^2}{1 + 1/\mathrm{ISR}_j(K)},
        \qquad
        I(v_j; r_j \mid K) = h(v_j) - h(v_j \mid r_j, K) \ge \frac{d_v}{2} \log_2\Big(1 + \frac{1}{\mathrm{ISR}_j(K)}\Big),

    with :math:`h(v_j) = (d_v/2) \log_2(2 \pi e \sigma^2)` because the target value is Gaussian. (Given :math:`K`
    the crosstalk here is Gaussian and independent of :math:`v_j`, so this holds with equality.)
    :math:`\log_2(1 + 1/x)` is convex, so by Jensen's inequality the mean over the keys is at least its value at
    the mean ISR, :math:`\mathbb E_K\, \mathrm{ISR}_j(K) = ` :func:`isr`, which gives the per-read bound
    :math:`(d_v/2) \log_2(1 + 1/\mathrm{ISR})`. The values are independent, so the :math:`n` reads' bounds add to a
    lower bound on :math:`I(v_1, \ldots, v_n; r_1, \ldots, r_n \mid K)`, the information the whole store gives up.

    The mean ISR does not depend on the values' dimension: its cross terms :math:`v_i \cdot v_l` average to 0 in any
    dimension. So ``d_value`` (default ``d_key``) is free, and the ISR is that of :func:`isr` (whose ensembles of
    keys it takes; for least squares on the sphere :func:`isr` is the Gaussian approximation, so this is too).
    The book's unit values have entries close to :math:`\mathcal N(0, 1/d_v)` in many dimensions.

    An ISR of 0 (one memory; least squares up to :math:`n = d_k`) is a noiseless read, and the bound is
    ``math.inf``: such a read carries as many bits as its numbers' precision allows, which this bound, of real
    numbers, does not model. An infinite mean ISR gives 0.

    >>> retrieval_bits("hebbian", 4, 5)          # ISR = (5 - 1)/4 = 1: 5 reads of 4/2 log2(2) bits
    10.0
    >>> retrieval_bits("least_squares", 4, 4)    # below capacity: noiseless reads
    inf
    """
    mean_isr = isr(store, d_key, n_memories, keys=keys, **params)
    return n_memories * _channel_bits(_value_dimension(d_key, d_value), mean_isr)


def stored_numbers(store: str, d_key: int, n_memories: int, *, d_value: int | None = None) -> int:
    r"""The numbers ``store`` keeps for ``n_memories`` memories: :math:`d_k d_v` for a matrix store, :math:`n (d_k + d_v)` for the others.

    The Hebbian and least-squares stores keep one :math:`d_v \times d_k` matrix (:data:`MATRIX_STORES`). The ReLU,
    squared-ReLU, polynomial and softmax stores keep every key and value (:data:`PAIR_STORES`): an MLP's hidden
    unit per memory (its key in, its value out) and attention's key-value cache. ``d_value`` defaults to ``d_key``.

    >>> stored_numbers("hebbian", 64, 1000), stored_numbers("softmax", 64, 1000)
    (4096, 128000)
    """
    _validate.option("store", store, (*MATRIX_STORES, *PAIR_STORES))
    d_key = _validate.positive_int("d_key", d_key)
    n_memories = _validate.positive_int("n_memories", n_memories)
    d_value = _value_dimension(d_key, d_value)
    return d_key * d_value if store in MATRIX_STORES else n_memories * (d_key + d_value)


def bits_per_number(store: str, d_key: int, n_memories: int, *, d_value: int | None = None, keys: str = "sphere",
                    **params) -> float:
    r"""The bits the reads of ``store`` give up per number it keeps: :func:`retrieval_bits` over :func:`stored_numbers`.

    In closed form, with :math:`\mathrm{ISR}(n)` the mean ISR (:func:`isr`):

    * Hebbian, sphere: :math:`\mathrm{ISR} = (n - 1)/d_k`, so :math:`\frac{n}{2 d_k} \log_2\big(1 + \frac{d_k}{n - 1}\big)`,
      whatever :math:`d_v`. With :math:`x = d_k/(n - 1)` this is :math:`\big(\frac{1}{2 d_k} + \frac{1}{2x}\big) \log_2(1 + x)`,
      which tends to :data:`HEBBIAN_BITS_LIMIT` :math:`= 1/(2 \ln 2)` as :math:`n \to \infty`. It increases with
      :math:`n` from :math:`n = 2` on for :math:`d_k \ge 4`, approaching the limit from below; it falls to it from above
      for :math:`d_k \le 2`, and dips before rising for :math:`d_k = 3` (:data:`HEBBIAN_BITS_LIMIT` derives this).
    * Least squares, sphere, :math:`n > d_k` (``math.inf`` below): :math:`\mathrm{ISR} = (n - d_k)/d_k`, so
      :math:`\frac{n}{2 d_k} \log_2 \frac{n}{n - d_k}`; with :math:`n = d_k(1 + t)` it is :math:`\frac{1 + t}{2} \log_2(1 + 1/t)`,
      whose derivative :math:`(\ln(1 + 1/t) - 1/t)/(2 \ln 2)` is negative: it falls from
      :math:`\frac{d_k + 1}{2 d_k} \log_2(d_k + 1)` at :math:`n = d_k + 1` to the same limit :math:`1/(2 \ln 2)`.
    * The stores that keep every pair: :math:`\mathrm{ISR} = (n - 1)\, \mathrm{ISR}(2)`, so
      :math:`\frac{d_v}{2 (d_k + d_v)} \log_2\big(1 + \frac{1}{(n - 1)\, \mathrm{ISR}(2)}\big)`, which falls with
      :math:`n`; for the ReLU store at :math:`d_v = d_k` it is :math:`\frac14 \log_2(1 + 2 d_k/(n - 1))`.

    >>> bits_per_number("hebbian", 4, 5)         # 10 bits in 16 numbers
    0.625
    >>> round(bits_per_number("hebbian", 32, 10**6), 4), round(HEBBIAN_BITS_LIMIT, 4)
    (0.7213, 0.7213)
    """
    numbers = stored_numbers(store, d_key, n_memories, d_value=d_value)
    return retrieval_bits(store, d_key, n_memories, d_value=d_value, keys=keys, **params) / numbers


HEBBIAN_BITS_LIMIT = 1 / (2 * math.log(2))
r"""The bits per stored number of the Hebbian store on the sphere as :math:`n/d_k \to \infty`: :math:`1/(2 \ln 2) \approx 0.721`.

From :func:`bits_per_number`, :math:`\big(\frac{1}{2 d_k} + \frac{1}{2x}\big) \log_2(1 + x)` with :math:`x = d_k/(n - 1) \to 0`,
and :math:`\log_2(1 + x)/x \to 1/\ln 2`. It is the Gaussian channel at low signal-to-noise ratio,
:math:`\frac12 \log_2(1 + s) \approx s/(2 \ln 2)`: each of :math:`n` reads has :math:`d_v` entries at
:math:`s \approx d_k/n`, so the reads together carry :math:`d_k d_v / (2 \ln 2)` bits, however many memories share them.

On the way, with :math:`a = 1/d_k`, :math:`g(x) = (a + 1/x) \ln(1 + x)` has :math:`g'(x) = N(x)/(x^2 (1 + x))`,
:math:`N(x) = x + a x^2 - (1 + x) \ln(1 + x)`. :math:`N(0) = N'(0) = 0` and :math:`N'(x) = 2 a x - \ln(1 + x)` is
negative and then positive, so on :math:`0 < x \le d_k` (that is, :math:`n \ge 2`) :math:`N < 0` exactly when
:math:`N(d_k) = 2 d_k - (1 + d_k) \ln(1 + d_k) < 0`, which holds from :math:`d_k = 4` on: there bits per number
fall with :math:`x` and rise with :math:`n`, for ever, towards the limit. For :math:`d_k \le 2`, :math:`N'' = 2a - 1/(1 + x) \ge 0`
gives :math:`N \ge 0`, and bits per number fall towards the limit instead.
"""


def _integer_argmax(f, low: int, high: int) -> tuple[int, float]:
    """The integer ``n`` in ``[low, high]`` with the largest ``f(n)`` (the largest such ``n`` on a tie), and ``f(n)``.

    ``f`` is evaluated at every integer up to ``low + 64`` and on a geometric grid of ratio :math:`2^{1/8}` beyond,
    and between the grid points either side of the best one by ternary search: exact for a function unimodal there,
    as the bits per number of every store are.
    """
    values: dict[int, float] = {}

    def value(n: int) -> float:
        if n not in values:
            values[n] = f(n)
        return values[n]

    grid = list(range(low, min(high, low + 64) + 1))
    while grid[-1] < high:
        grid.append(min(high, max(grid[-1] + 1, int(grid[-1] * 2**0.125))))
    best = max(range(len(grid)), key=lambda i: (value(grid[i]), grid[i]))
    lo, hi = grid[max(best - 1, 0)], grid[min(best + 1, len(grid) - 1)]
    while hi - lo > 2:
        m1, m2 = lo + (hi - lo) // 3, hi - (hi - lo) // 3
        lo, hi = (m1, hi) if value(m1) <= value(m2) else (lo, m2)
    for n in range(lo, hi + 1):
        value(n)
    n = max(values, key=lambda m: (values[m], m))
    return n, values[n]


def optimal_load(store: str, d_key: int, *, d_value: int | None = None, keys: str = "sphere", n_max: int = 2**20,
                 **params) -> tuple[int, float]:
    r"""The number of memories :math:`n \le` ``n_max`` at which ``store`` gives up the most bits per stored number
    (:func:`bits_per_number`), and that maximum.

    Where the mean ISR is 0 the bound is infinite (a noiseless read, limited only by the numbers' precision,
    :func:`retrieval_bits`), so the search starts at the first :math:`n` with a positive ISR: :math:`n = 2` for
    every store but least squares, :math:`n = d_k + 1` for it, whose reads are noiseless up to its capacity
    :math:`d_k`. ``n_max`` must reach that start, or a ValueError says so. The search is over integers
    (``_integer_argmax``: every :math:`n` near the start, a geometric grid beyond, refined between grid points).

    The closed forms of :func:`bits_per_number` say where it ends. The stores that keep every pair fall with
    :math:`n`: their optimum is :math:`n = 2`, the fewest memories that interfere. Least squares falls from
    :math:`n = d_k + 1`. The Hebbian store on the sphere rises for ever from :math:`d_k = 4` on: the search returns
    ``n_max``, and the supremum is :data:`HEBBIAN_BITS_LIMIT`, approached as :math:`n \to \infty`.

    >>> n, bits = optimal_load("relu", 32); n, round(bits, 4)           # log2(1 + 64/(n - 1))/4 falls with n
    (2, 1.5056)
    >>> n, bits = optimal_load("least_squares", 32); n, round(bits, 4)  # 33/64 log2(33)
    (33, 2.601)
    >>> optimal_load("hebbian", 32, n_max=1024)[0]                     # rises towards 1/(2 ln 2)
    1024
    """
    _validate.option("store", store, (*MATRIX_STORES, *PAIR_STORES))
    d_key = _validate.positive_int("d_key", d_key)
    d_value = _value_dimension(d_key, d_value)
    _validate.option("keys", keys, KEY_ENSEMBLES)
    n_max = _validate.positive_int("n_max", n_max)
    noiseless = _largest(lambda n: isr(store, d_key, n, keys=keys, **params) == 0, limit=n_max, beyond=n_max)
    if noiseless + 1 > n_max:
        raise ValueError(f"n_max must exceed {noiseless}, the memories {store!r} reads without crosstalk at "
                         f"d_key={d_key} (mean ISR 0, where the bound is infinite); got n_max={n_max}")
    return _integer_argmax(lambda n: bits_per_number(store, d_key, n, d_value=d_value, keys=keys, **params),
                           noiseless + 1, n_max)


def hebbian_read_bits(d_key: int, n_memories: int, *, d_value: int | None = None) -> float:
    r"""The information of one read of the Hebbian store on the sphere, exact given the keys and averaged over them,
    to second order in the spread of its ISR: the bound of :func:`retrieval_bits` plus Jensen's gap.

    Given the keys, a read of Gaussian values carries :math:`(d_v/2) f(X)` bits, :math:`f(x) = \log_2(1 + 1/x)`,
    with :math:`X = \sum_{i \ne j} t_i^2` and :math:`t_i = k_i \cdot k_j` (:mod:`pavlov.channel`). :math:`X` has
    mean :math:`\mu = (n - 1)/d` and variance :math:`(n - 1)(\mathbb E t^4 - d^{-2})` with
    :math:`\mathbb E t^4 = 3/(d (d + 2))` on the sphere, and by the delta method

    .. math::

        \mathbb E\, \frac{d_v}{2} f(X) \approx \frac{d_v}{2} \Big( f(\mu) + \frac{f''(\mu)}{2} \mathrm{Var}\, X \Big),
        \qquad f''(x) = \frac{2x + 1}{x^2 (1 + x)^2 \ln 2}.

    The gap :math:`f''(\mu) \mathrm{Var} X / 2` is positive (:math:`f` is convex) and, relative to the bound,
    falls as :math:`1/n` at a fixed :math:`n/d`. The terms of the third and fourth moments of :math:`X` are of the
    same order in :math:`1/n` but carry smaller constants; at :math:`d = 32` the second-order form matches the exact
    mean to better than 0.1 % from :math:`n = 32` on (``tests/test_channel.py`` checks it within standard errors).

    >>> round(hebbian_read_bits(32, 33) - retrieval_bits("hebbian", 32, 33) / 33, 3)    # the gap, in bits
    0.493
    """
    d_key = _validate.positive_int("d_key", d_key)
    n_memories = _validate.positive_int("n_memories", n_memories)
    if n_memories < 2:
        raise ValueError(f"n_memories must be at least 2 (one memory has no crosstalk), got {n_memories}")
    d_value = _value_dimension(d_key, d_value)
    mu = (n_memories - 1) / d_key
    variance = (n_memories - 1) * (3 / (d_key * (d_key + 2)) - 1 / d_key**2)
    curvature = (2 * mu + 1) / (mu**2 * (1 + mu) ** 2 * math.log(2))
    return _channel_bits(d_value, mu) + d_value / 2 * curvature * variance / 2


def decay_retrieval_bits(*, gamma: float, d: int, length: int, d_value: int | None = None) -> float:
    r"""The bound of :func:`retrieval_bits` for a decay-rule stream of ``length`` pairs: every age's read at its mean ISR.

    :math:`\sum_{a=0}^{T-1} (d_v/2) \log_2(1 + 1/\mathrm{ISR}(a))` with :math:`\mathrm{ISR}(a)` from :func:`decay_isr`
    (unit keys uniform on the sphere, ``d_value`` defaulting to ``d``). Over :math:`d\, d_v` numbers, and for a long
    stream with :math:`\varepsilon = 1 - \gamma` small, this is about :math:`-\mathrm{Li}_2(-s) / (2 s \ln 2)` bits per
    number with :math:`s = 2 \varepsilon d`, below :data:`HEBBIAN_BITS_LIMIT` for every :math:`s > 0`.

    >>> round(decay_retrieval_bits(gamma=1.0, d=32, length=33) / 33, 6)    # gamma = 1: the Hebbian store
    16.0
    """
    d = _validate.positive_int("d", d)
    length = _validate.positive_int("length", length)
    d_value = _value_dimension(d, d_value)
    return sum(_channel_bits(d_value, decay_isr(age, gamma=gamma, d=d, length=length)) for age in range(length))


def binary_channel_bits(flip: float) -> float:
    r"""The bits one binary decision carries when it is wrong with probability ``flip``: :math:`1 - h_2(p)`.

    The capacity of the binary symmetric channel, :math:`1 + p \log_2 p + (1 - p) \log_2 (1 - p)`: 1 at
    :math:`p = 0` or 1, 0 at :math:`p = 1/2`. It counts what a read of signs keeps (chapter 11's exercise on
    signs), and what a Hopfield network's retrieved bit keeps when a fraction of them are wrong.

    >>> binary_channel_bits(0.5), binary_channel_bits(0.0)
    (0.0, 1.0)
    """
    p = _probability("flip", flip)
    return 1.0 + sum(q * math.log2(q) for q in (p, 1 - p) if q > 0)
