r"""Retrieval as a noisy channel: how many bits a store's reads carry, measured exactly for Gaussian values.

Every store of :mod:`pavlov.stores`, and every linear write rule of :mod:`pavlov.rules`, reads memory
:math:`j` as a weighted sum of the values, :math:`r_j = \sum_i W_{ji} v_i`, with weights :math:`W` set by the
keys alone. So, given the keys :math:`K`, a read is linear in the values, and with values of independent
:math:`\mathcal N(0, \sigma^2)` entries it is a Gaussian channel: the signal :math:`W_{jj} v_j` plus crosstalk
:math:`\sum_{i \ne j} W_{ji} v_i`, Gaussian, independent of :math:`v_j`, of power
:math:`\sigma^2 \sum_{i \ne j} W_{ji}^2` per entry. Its information is exactly

.. math::

    I(v_j; r_j \mid K) = \frac{d_v}{2} \log_2\Big(1 + \frac{1}{\mathrm{ISR}_j(K)}\Big), \qquad
    \mathrm{ISR}_j(K) = \frac{\sum_{i \ne j} W_{ji}^2}{W_{jj}^2},

the ISR of the read averaged over the values. :func:`measure_bits` averages it over independent key sets:
the information one read carries when it is decoded alone, the crosstalk treated as noise, as a query is.
:func:`pavlov.theory.retrieval_bits` is the lower bound from the mean ISR that Jensen's inequality gives.

The weights come from the memory's own code: written with the standard basis :math:`e_i` as values, a store
or rule returns row :math:`j` of :math:`W` when read with :math:`k_j` (:func:`read_weights`).

:func:`decode_codebook` measures the bits a decoder actually recovers, with no formula for the channel: the
values are codewords of a random Gaussian codebook, the reads are decoded against it, and the decoder's own
posterior gives a lower bound on the information (Barber and Agakov's), which approaches the exact
information as the codebook grows.

A noiseless read of real numbers carries infinitely many bits. The bits are finite only because a read has noise:
the crosstalk of the other memories, or, with ``number_bits`` in :func:`measure_bits`, the rounding of every stored
number to :math:`b` bits (:func:`quantised_isr`), which caps what a store can hold at :math:`b` bits per number.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import torch

from . import _validate, rules, stores, theory
from .runtime import generator, resolve, seed_or_fresh
from .stats import mean_and_se
from .stimuli import KINDS, random_stimuli

RULES = ("decay", "delta")
"""The write rules :func:`read_weights` takes besides the stores (the Hebbian rule is the Hebbian store)."""

MEMORIES = (*stores.STORES, *RULES)

PAIR_MEMORIES = ("relu", "relu2", "polynomial", "softmax")
"""The stores that keep every key and value (an MLP's hidden units, attention's cache); the others keep a matrix."""


def _sizes(d_key, n_memories, trials, d_value) -> tuple[int, int, int, int]:
    """The checked sizes of a measurement, ``d_value`` defaulting to ``d_key``."""
    d_key, n_memories, trials = (_validate.positive_int(name, x) for name, x in
                                 (("d_key", d_key), ("n_memories", n_memories), ("trials", trials)))
    if trials < 2:
        raise ValueError(f"trials must be at least 2 for a standard error, got {trials}")
    if n_memories < 2:
        raise ValueError(f"n_memories must be at least 2 (one memory has no crosstalk), got {n_memories}")
    return d_key, n_memories, trials, d_key if d_value is None else _validate.positive_int("d_value", d_value)


def read_weights(memory: str, keys: torch.Tensor, **params) -> torch.Tensor:
    r"""The weights :math:`W` ``[..., n, n]`` of a memory's reads: :math:`W_{ji}`, the weight of memory :math:`i` in the read by :math:`k_j`.

    ``memory`` names a store (:data:`pavlov.stores.STORES`, ``params`` passed to it) or a write rule of
    :data:`RULES` (``gamma`` for ``"decay"``, ``beta`` for ``"delta"``), which writes the ``n`` pairs in order,
    the last one most recently. The store or rule is written with the standard basis as values, so that each
    read returns one row of :math:`W`; the values never enter :math:`W`. A softmax store's row is normalised.

    >>> keys = torch.eye(3, dtype=torch.float64)
    >>> read_weights("hebbian", keys)          # orthonormal keys: no crosstalk
    tensor([[1., 0., 0.],
            [0., 1., 0.],
            [0., 0., 1.]], dtype=torch.float64)
    """
    _validate.option("memory", memory, MEMORIES)
    keys = _validate.tensor("keys", keys, min_dim=2)
    n = keys.shape[-2]
    basis = torch.eye(n, device=keys.device, dtype=keys.dtype).expand(*keys.shape[:-2], n, n)
    if memory in RULES:
        _, state = rules.RULES[memory](keys, keys, basis, **params)      # state (..., d_k, n)
        return keys @ state
    targets = torch.arange(n, device=keys.device).expand(keys.shape[:-1])
    return stores.build(memory, keys, basis, **params).read(keys, targets)[0]


def read_isr(weights: torch.Tensor) -> torch.Tensor:
    r""":math:`\mathrm{ISR}_j(K) = \sum_{i \ne j} W_{ji}^2 / W_{jj}^2` ``[..., n]``: each read's ISR averaged over the values.

    >>> read_isr(torch.tensor([[1.0, 0.5], [0.5, 1.0]]))
    tensor([0.2500, 0.2500])
    """
    weights = _validate.tensor("weights", weights, min_dim=2)
    if weights.shape[-1] != weights.shape[-2]:
        raise ValueError(f"weights must be square [..., n, n], got {tuple(weights.shape)}")
    signal = torch.diagonal(weights, dim1=-2, dim2=-1).pow(2)
    return (weights.pow(2).sum(-1) - signal) / signal


def read_bits(isr: torch.Tensor, d_value: int) -> torch.Tensor:
    r""":math:`(d_v/2) \log_2(1 + 1/\mathrm{ISR})`: the bits of a Gaussian read of ``d_value`` entries at that ISR (inf at 0).

    >>> read_bits(torch.tensor([1.0, 1 / 3]), 4)
    tensor([2., 4.])
    """
    isr = _validate.tensor("isr", isr, min_dim=0, finite=False)
    if bool((isr < 0).any()) or bool(isr.isnan().any()):
        raise ValueError("isr must be non-negative")
    d_value = _validate.positive_int("d_value", d_value)
    return d_value / 2 * torch.log1p(1 / isr) / math.log(2)


def _matrix_power(memory: str, keys: torch.Tensor, **params) -> torch.Tensor:
    r"""The mean square ``[...]`` of a matrix memory's :math:`d_k d_v` stored numbers, per unit variance of the values.

    A matrix memory keeps :math:`S = M V` with :math:`M` ``[d_k, n]`` set by the keys (the keys' transpose for the
    Hebbian store, :math:`K^+` for least squares, a rule's state written with the standard basis as values), so an
    entry of :math:`S` has variance :math:`\sigma^2 \sum_i M_{ai}^2`, whose mean over the rows :math:`a` is this.
    """
    if memory in RULES:
        n = keys.shape[-2]
        basis = torch.eye(n, device=keys.device, dtype=keys.dtype).expand(*keys.shape[:-2], n, n)
        state = rules.RULES[memory](keys, keys, basis, **params)[1]                       # (..., d_k, n)
    else:
        state = stores.build(memory, keys, torch.zeros_like(keys[..., :1]), **params).duals   # (..., n, d_k)
    return state.pow(2).sum((-2, -1)) / keys.shape[-1]


def quantised_isr(memory: str, keys: torch.Tensor, weights: torch.Tensor, number_bits: int, **params) -> torch.Tensor:
    r"""Each read's ISR ``[..., n]`` when every stored number is rounded to ``number_bits`` = :math:`b` bits.

    A number of root-mean-square :math:`s` is rounded to :math:`2^b` levels over :math:`\pm 4 s`
    (:data:`pavlov.theory.QUANTISER_RANGE`, clipping beyond neglected), with a subtractive dither, so that its error is independent of
    it and uniform, of variance :math:`\Delta^2/12 = q s^2`, :math:`q = 16 / (3 \cdot 4^b)`. A store that keeps its
    pairs rounds its values (its keys, rounded alike, only move the weights, which the reader computes from what is
    kept): the read gains noise :math:`q \sigma^2 \sum_i W_{ji}^2`, so :math:`\mathrm{ISR}_j \to \mathrm{ISR}_j + q
    (1 + \mathrm{ISR}_j)`. A matrix memory rounds its :math:`d_k d_v` entries (:func:`_matrix_power` gives their
    mean square :math:`s^2/\sigma^2`): a unit key reads :math:`q s^2` of noise, so :math:`\mathrm{ISR}_j \to
    \mathrm{ISR}_j + q s^2 / (\sigma^2 W_{jj}^2)`. The error is uncorrelated with the value, so the bits of
    :func:`read_bits` at this ISR are a lower bound on the information (the argument of
    :func:`pavlov.theory.retrieval_bits`); :math:`b` bits a number is the ceiling.
    """
    number_bits = _validate.positive_int("number_bits", number_bits)
    _validate.option("memory", memory, MEMORIES)
    step = theory.quantisation_noise(number_bits)                                 # q = Delta^2 / (12 s^2)
    signal = torch.diagonal(weights, dim1=-2, dim2=-1).pow(2)
    if memory in PAIR_MEMORIES:
        noise = step * weights.pow(2).sum(-1)                                    # q sum_i W_ji^2, (..., n)
    else:
        noise = step * _matrix_power(memory, keys, **params).unsqueeze(-1) * keys.pow(2).sum(-1)
    return read_isr(weights) + noise / signal


class BitsMeasurement(NamedTuple):
    """The result of :func:`measure_bits`.

    ``bits``, ``bits_se``: the information per read in bits, exact given the keys, and its standard error
    over trials (each trial's reads averaged first: they share a store); ``isr``, ``isr_se``: the mean ISR
    over the values, and its standard error; ``per_read``: every read's ISR over the values
    ``[trials, n]``; ``seed``: the seed used.
    """

    bits: float
    bits_se: float
    isr: float
    isr_se: float
    per_read: torch.Tensor
    seed: int


def measure_bits(memory: str, d_key: int, n_memories: int, *, trials: int, d_value: int | None = None,
                 keys: str = "sphere", number_bits: int | None = None, seed: int | None = None, device=None,
                 dtype=None, **params) -> BitsMeasurement:
    r"""The information one read of a memory carries about its value, in bits, for Gaussian values.

    Each trial draws ``n_memories`` keys from the ensemble ``keys`` (:func:`pavlov.stimuli.random_stimuli`),
    finds the weights of every read (:func:`read_weights`), and from them each read's ISR over the values,
    :math:`\mathrm{ISR}_j(K)` (:func:`read_isr`), and its exact information for values of ``d_value``
    (default ``d_key``) Gaussian entries, :math:`(d_v/2)\log_2(1 + 1/\mathrm{ISR}_j(K))` (:func:`read_bits`;
    the module's docstring derives it). No value is drawn: given the keys, the average over Gaussian values is
    exact. The trials are read in chunks of at most :data:`pavlov.stores.CHUNK_ELEMENTS` weights (or one trial),
    so that the memory does not grow with their number. A read without crosstalk has infinite information, and then so has the mean (``bits`` and
    ``bits_se`` are ``math.inf``): a ReLU store read by a key whose overlaps with all the others are negative,
    with probability :math:`2^{-(n-1)}` on the sphere. Least squares below its capacity has no crosstalk
    either, but in floating point its ISR is rounding error, and the bits it reports measure the precision.
    With ``number_bits`` = :math:`b` every stored number is rounded to :math:`b` bits (:func:`quantised_isr`): every
    read is then noisy, the bits are finite for every memory, and they are a lower bound on the information.

    >>> m = measure_bits("hebbian", 32, 33, trials=50, seed=0, device="cpu", dtype=torch.float64)
    >>> round(m.bits / 16, 1)             # about log2(1 + 1/ISR), ISR = 32/32
    1.0
    """
    _validate.option("memory", memory, MEMORIES)
    d_key, n_memories, trials, d_value = _sizes(d_key, n_memories, trials, d_value)
    _validate.option("keys", keys, KINDS)
    seed = seed_or_fresh(seed)
    device, dtype = resolve(device, dtype)
    key_set = random_stimuli(trials, n_memories, d_key, kind=keys, generator=generator(seed, device),
                             device=device, dtype=dtype)
    # the weights [chunk, n, n] of a chunk of trials at a time: memory that does not grow with the trials
    if number_bits is not None:
        number_bits = _validate.positive_int("number_bits", number_bits)

    def block_isr(block):
        weights = read_weights(memory, block, **params)
        return read_isr(weights) if number_bits is None else quantised_isr(memory, block, weights, number_bits,
                                                                            **params)

    isr = torch.cat([block_isr(block) for block in key_set.split(stores.trial_blocks(trials, n_memories**2))])
    per_trial = read_bits(isr, d_value).mean(-1)
    # a read without crosstalk (a ReLU store whose other overlaps are all negative) carries infinite information
    bits, bits_se = mean_and_se(per_trial) if bool(torch.isfinite(per_trial).all()) else (math.inf, math.inf)
    mean_isr, isr_se = mean_and_se(isr.mean(-1))
    return BitsMeasurement(float(bits), float(bits_se), mean_isr.item(), isr_se.item(), isr, seed)


class CodebookMeasurement(NamedTuple):
    """The result of :func:`decode_codebook`.

    ``bits``, ``bits_se``: the decoder's lower bound on the information per read, in bits, and its standard
    error over trials; ``error``, ``error_se``: the fraction of reads decoded to a wrong codeword;
    ``exact``, ``exact_se``: the exact information per read of Gaussian values given the keys
    (:func:`read_bits`), from the same keys; ``seed``: the seed used.
    """

    bits: float
    bits_se: float
    error: float
    error_se: float
    exact: float
    exact_se: float
    seed: int


def decode_codebook(memory: str, d_key: int, n_memories: int, *, codebook_bits: int, trials: int,
                    d_value: int | None = None, seed: int | None = None, device=None, dtype=None,
                    **params) -> CodebookMeasurement:
    r"""The bits a decoder recovers from each read when the values are codewords of a random Gaussian codebook.

    Each trial draws ``n_memories`` unit keys, a codebook of :math:`M = 2^b` codewords (``codebook_bits`` = b)
    with :math:`\mathcal N(0, 1/d_v)` entries, and for each memory a codeword :math:`c_{m_j}`, uniformly and
    independently. It writes them, reads every memory by its key, :math:`r_j = \sum_i W_{ji} c_{m_i}`, and
    decodes each read with the posterior of a Gaussian channel of the read's own gain and noise power,
    :math:`q(m \mid r_j) \propto \exp(-\lVert r_j - W_{jj} c_m \rVert^2 / (2 s_j^2))`,
    :math:`s_j^2 = \sum_{i \ne j} W_{ji}^2 / d_v`. For any :math:`q`,
    :math:`I(m_j; r_j \mid K) \ge b + \mathbb E \log_2 q(m_j \mid r_j)` (Barber and Agakov 2003): an
    estimate of a lower bound on the information, with no bias but its standard error, and no assumption that
    the crosstalk, a sum of codewords, is Gaussian. The decoded codeword is the most probable one.

    The reads are decoded in chunks of trials, so that the :math:`[\ldots, n, M]` scores hold at most
    :data:`pavlov.stores.CHUNK_ELEMENTS` entries (or one trial's, if that is more).

    >>> m = decode_codebook("hebbian", 32, 33, codebook_bits=8, trials=20, d_value=8, seed=0, device="cpu",
    ...                     dtype=torch.float64)
    >>> 0 < m.bits < 8 and 0 < m.error < 1
    True
    """
    _validate.option("memory", memory, MEMORIES)
    d_key, n_memories, trials, d_value = _sizes(d_key, n_memories, trials, d_value)
    codebook_bits = _validate.positive_int("codebook_bits", codebook_bits)
    if codebook_bits > 24:
        raise ValueError(f"codebook_bits must be at most 24 (a codebook of 2^24 codewords), got {codebook_bits}")
    seed = seed_or_fresh(seed)
    device, dtype = resolve(device, dtype)
    gen, size = generator(seed, device), 2**codebook_bits
    bits, errors, exact = [], [], []
    for batch in stores.trial_blocks(trials, n_memories * size):
        keys = random_stimuli(batch, n_memories, d_key, generator=gen, device=device, dtype=dtype)
        codebook = torch.randn(batch, size, d_value, generator=gen, device=device, dtype=dtype) / math.sqrt(d_value)
        chosen = torch.randint(size, (batch, n_memories), generator=gen, device=device)
        values = torch.gather(codebook, 1, chosen.unsqueeze(-1).expand(-1, -1, d_value))
        weights = read_weights(memory, keys, **params)                            # (b, n, n)
        reads = weights @ values                                                  # r_j = sum_i W_ji c_{m_i}
        gain = torch.diagonal(weights, dim1=-2, dim2=-1)                          # W_jj, (b, n)
        isr = read_isr(weights)
        noise = isr * gain.pow(2) / d_value                                       # s_j^2, (b, n)
        # -||r - W_jj c_m||^2 / (2 s^2), up to a term in r alone, which the softmax drops
        scores = (gain.unsqueeze(-1) * (reads @ codebook.mT)
                  - gain.pow(2).unsqueeze(-1) * codebook.pow(2).sum(-1).unsqueeze(1) / 2) / noise.unsqueeze(-1)
        posterior = torch.log_softmax(scores, dim=-1)                             # (b, n, M)
        own = torch.gather(posterior, -1, chosen.unsqueeze(-1)).squeeze(-1)
        bits.append((codebook_bits + own / math.log(2)).mean(-1))
        errors.append((scores.argmax(-1) != chosen).to(dtype).mean(-1))
        exact.append(read_bits(isr, d_value).mean(-1))
    (b, b_se), (e, e_se), (x, x_se) = (mean_and_se(torch.cat(v)) for v in (bits, errors, exact))
    return CodebookMeasurement(b.item(), b_se.item(), e.item(), e_se.item(), x.item(), x_se.item(), seed)
