"""The interference-to-signal ratio (ISR) of the stores, their capacity, and the worst case.

:data:`ISR_FORMULAS` maps each store to its mean-ISR formula (the Hebbian store here; :mod:`.mlp` and :mod:`.softmax`
register theirs); :func:`isr`, :func:`capacity` and :func:`worst_case_capacity` read it. Chapters 3, 4, 5, 9, 10 and 11.
"""

from __future__ import annotations

import math

import torch

from .. import _validate
from .overlaps import GAUSSIAN_OVERLAP, KEY_ENSEMBLES


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


def _with_others(n_memories: int, per_memory: float) -> float:
    """:math:`(n - 1)` times ``per_memory``: the mean ISR of a store whose other memories each add ``per_memory``."""
    return 0.0 if n_memories == 1 else (n_memories - 1) * per_memory   # one memory: no crosstalk, even if infinite


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
