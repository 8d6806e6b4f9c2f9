"""Retrieval as a noisy channel: the bits a read carries, per stored number, and the load that maximises them.

Chapter 12.
"""

from __future__ import annotations

import math

from .. import _validate
from .forgetting import decay_isr
from .interference import _largest, isr
from .overlaps import KEY_ENSEMBLES


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
    :math:`p = 0` or 1, 0 at :math:`p = 1/2`. It counts what a read of signs keeps (chapter 12's exercise on
    signs), and what a Hopfield network's retrieved bit keeps when a fraction of them are wrong.

    >>> binary_channel_bits(0.5), binary_channel_bits(0.0)
    (0.0, 1.0)
    """
    p = _validate.probability("flip", flip)
    return 1.0 + sum(q * math.log2(q) for q in (p, 1 - p) if q > 0)


def hebbian_bits_slope(d_key: int) -> float:
    r"""The coefficient :math:`c` of :math:`1/n` in the Hebbian store's exact bits per number over its limit,
    :math:`1 + c/n + O(1/n^2)`: :math:`c = d_k (4 - d_k) / (2 (d_k + 2))`.

    The exact information of a read (:mod:`pavlov.channel`) is :math:`(d_v/2)\, \mathbb E \log_2(1 + 1/X)`,
    :math:`X = \sum_{i \ne j} t_i^2` a sum of :math:`n - 1` independent squared overlaps on the sphere, of mean
    :math:`\mu = (n - 1)/d` and relative variance :math:`v = \mathrm{Var}\, X / \mu^2 = 2 (d - 1) / ((d + 2)(n - 1))`.
    Expanding :math:`\ln(1 + 1/X) = 1/X - 1/(2 X^2) + O(X^{-3})` and :math:`\mathbb E\, 1/X = (1 + v + O(n^{-2}))/\mu`
    (the third and higher cumulants of :math:`X/\mu` are :math:`O(n^{-2})`), the :math:`n` reads over :math:`d\, d_v`
    numbers carry

    .. math::

        \frac{n}{2 d \ln 2} \Big( \frac{d (1 + v)}{n - 1} - \frac{d^2}{2 (n - 1)^2} \Big) + O(n^{-2})
        = \frac{1}{2 \ln 2} \Big( 1 + \frac{1}{n} \Big( 1 + \frac{2 (d - 1)}{d + 2} - \frac{d}{2} \Big) \Big) + O(n^{-2}),

    and the bracket is :math:`d (4 - d) / (2 (d + 2))`. It is positive below :math:`d_k = 4`, where the store passes
    :data:`HEBBIAN_BITS_LIMIT` at high load and approaches it from above; zero at :math:`d_k = 4`, where the next order
    decides; negative from :math:`d_k = 5` on. The Jensen bound has :math:`1 - d/2` instead: the spread of the ISR
    (:math:`v`) adds :math:`2 (d - 1)/(d + 2)`.

    >>> hebbian_bits_slope(3), hebbian_bits_slope(4), round(hebbian_bits_slope(32), 4)
    (0.3, 0.0, -13.1765)
    """
    d = _validate.positive_int("d_key", d_key)
    return d * (4 - d) / (2 * (d + 2))


QUANTISER_RANGE = 4.0
"""A stored number rounded to :math:`b` bits spans this many root-mean-squares either side of 0, in :math:`2^b` steps."""


def quantisation_noise(number_bits: int) -> float:
    r"""The variance :math:`q = \Delta^2 / (12 s^2)` of rounding a number of root-mean-square :math:`s` to ``number_bits`` bits.

    :math:`2^b` levels over :math:`\pm R s` (:data:`QUANTISER_RANGE` :math:`R = 4`, clipping beyond neglected) have step
    :math:`\Delta = 2 R s / 2^b`; with a subtractive dither the error is uniform on a step and independent of the
    number, of variance :math:`\Delta^2/12`, so :math:`q = R^2 / (3 \cdot 4^b)`.

    >>> round(quantisation_noise(4), 6)       # 16 / 768
    0.020833
    """
    b = _validate.positive_int("number_bits", number_bits)
    return QUANTISER_RANGE**2 / (3 * 4**b)


def quantised_pair_bits(number_bits: int, d_key: int, *, d_value: int | None = None) -> float:
    r"""The most a store that keeps its pairs gives up per number, its values rounded to ``number_bits`` bits, by the bound.

    A read without crosstalk (a sharp softmax, :math:`\beta \to \infty`, whose own key wins) still carries the
    rounding noise of its value, :math:`q \sigma^2` per entry (:func:`quantisation_noise`), so it carries
    :math:`(d_v/2) \log_2(1 + 1/q)` bits, and over the :math:`d_k + d_v` numbers of its pair,
    :math:`\frac{d_v}{2 (d_k + d_v)} \log_2(1 + 1/q)`, about :math:`(b - 1.2)/2` when :math:`d_v = d_k`.

    >>> round(quantised_pair_bits(4, 32), 3)
    1.404
    """
    d_key = _validate.positive_int("d_key", d_key)
    d_value = _value_dimension(d_key, d_value)
    return _channel_bits(d_value, quantisation_noise(number_bits)) / (d_key + d_value)


def hopfield_one_step_bits(alpha: float) -> float:
    r"""Bits per synapse of one sign read of the Hopfield matrix at load :math:`\alpha = P/N`, each bit counted alone.

    Read pattern :math:`\xi^\mu` through :math:`J = \frac1N \sum_\nu \xi^\nu \xi^{\nu \top}`: each neuron's field is
    :math:`\xi_i^\mu` plus crosstalk of variance about :math:`\alpha`, so one update flips a bit with probability
    :math:`p = \Phi(-1/\sqrt\alpha)`, a binary symmetric channel of :math:`1 - h_2(p)` bits (:func:`binary_channel_bits`).
    :math:`P N` such bits over :math:`N^2` synapses give :math:`\alpha\, (1 - h_2(\Phi(-1/\sqrt\alpha)))`, which rises with
    :math:`\alpha` towards :math:`1/(\pi \ln 2) \approx 0.459` (the small-signal limit of chapter 12's exercise on signs).

    >>> round(hopfield_one_step_bits(0.138), 3), round(hopfield_one_step_bits(1e6), 3)
    (0.133, 0.459)
    """
    alpha = _validate.finite_float("alpha", alpha)
    if alpha <= 0:
        raise ValueError(f"alpha must be positive, got {alpha}")
    flip = 0.5 * math.erfc(1 / math.sqrt(2 * alpha))
    return alpha * binary_channel_bits(flip)
