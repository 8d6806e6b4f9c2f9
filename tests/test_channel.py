"""pavlov.channel: the weights of every read, each read's ISR over the values, and the exact bits of a read.

The weights are checked against each store's and rule's definition and against reading real values (a read is
linear in the values); the measured information against the bound of :func:`pavlov.theory.retrieval_bits`, which
Jensen's inequality puts below it, and against the second-order closed form of the Hebbian store,
:func:`pavlov.theory.hebbian_read_bits`, within five standard errors.
"""

from __future__ import annotations

import math

import pytest
import torch

from pavlov import channel, rules, stores, theory

F64 = {"device": "cpu", "dtype": torch.float64}
MEMORIES = [("hebbian", {}), ("least_squares", {}), ("relu", {}), ("relu2", {}), ("polynomial", {"degree": 3}),
            ("softmax", {"beta": 4.0}), ("decay", {"gamma": 0.9}), ("delta", {"beta": 0.5})]


def unit_keys(trials: int, n: int, d: int, seed: int = 0, dtype=torch.float64) -> torch.Tensor:
    gen = torch.Generator().manual_seed(seed)
    return torch.nn.functional.normalize(torch.randn(trials, n, d, generator=gen, dtype=dtype), dim=-1)


@pytest.mark.parametrize(("memory", "params"), MEMORIES, ids=[m for m, _ in MEMORIES])
def test_weights_read_real_values(memory, params):
    # every read is linear in the values: reading values V returns W V
    keys = unit_keys(3, 7, 5)
    values = torch.randn(3, 7, 4, generator=torch.Generator().manual_seed(1), **F64)
    weights = channel.read_weights(memory, keys, **params)
    if memory in channel.RULES:
        _, state = rules.RULES[memory](keys, keys, values, **params)
        read = keys @ state
    else:
        targets = torch.arange(7).expand(3, 7)
        read = stores.build(memory, keys, values, **params).read(keys, targets)[0]
    torch.testing.assert_close(weights @ values, read, rtol=1e-10, atol=1e-12)


def test_weights_by_definition():
    keys = unit_keys(2, 6, 4)
    overlaps = keys @ keys.mT
    torch.testing.assert_close(channel.read_weights("hebbian", keys), overlaps)
    torch.testing.assert_close(channel.read_weights("relu", keys), overlaps.clamp(min=0))
    torch.testing.assert_close(channel.read_weights("softmax", keys, beta=3.0), torch.softmax(3.0 * overlaps, -1))
    ages = torch.arange(5, -1, -1, dtype=torch.float64)                 # the last pair written has age 0
    torch.testing.assert_close(channel.read_weights("decay", keys, gamma=0.8), overlaps * 0.8**ages)
    torch.testing.assert_close(channel.read_isr(channel.read_weights("hebbian", keys)).mean(-1),
                               stores.linear_read_isr(keys, keys.mT))


def test_keeps_device_and_dtype():
    keys = unit_keys(2, 5, 4, dtype=torch.float32)
    weights = channel.read_weights("softmax", keys, beta=2.0)
    assert weights.dtype == torch.float32 and weights.device == keys.device
    assert channel.read_bits(channel.read_isr(weights), 4).dtype == torch.float32


def test_read_bits_by_hand():
    bits = channel.read_bits(torch.tensor([1.0, 1 / 3, 0.0], dtype=torch.float64), 4).tolist()
    assert bits[:2] == pytest.approx([2.0, 4.0], rel=1e-14) and bits[2] == math.inf


@pytest.mark.parametrize(("store", "params"), MEMORIES[:6], ids=[m for m, _ in MEMORIES[:6]])
def test_the_bound_lies_below_the_exact_information(store, params):
    n = 48 if store == "least_squares" else 24
    m = channel.measure_bits(store, 16, n, trials=200, seed=3, **F64, **params)
    assert theory.retrieval_bits(store, 16, n, **params) / n <= m.bits + 5 * m.bits_se
    assert m.isr == pytest.approx(theory.isr(store, 16, n, **params), rel=0.1)


@pytest.mark.parametrize("n", [16, 64, 256])
def test_hebbian_information_to_second_order(n):
    m = channel.measure_bits("hebbian", 32, n, trials=max(16, 8192 // n), seed=n, **F64)
    assert abs(m.bits - theory.hebbian_read_bits(32, n)) <= 5 * m.bits_se


def test_a_noiseless_read_makes_the_mean_infinite():
    m = channel.measure_bits("relu", 16, 2, trials=64, seed=0, **F64)   # half the reads have no crosstalk
    assert m.bits == math.inf and bool((m.per_read == 0).any())


def test_decay_bound_matches_its_stream_sum():
    gamma, d, n = 0.95, 16, 200
    m = channel.measure_bits("decay", d, n, trials=32, seed=2, gamma=gamma, **F64)
    bound = theory.decay_retrieval_bits(gamma=gamma, d=d, length=n) / n
    assert bound <= m.bits + 5 * m.bits_se
    ages = torch.arange(n - 1, -1, -1, dtype=torch.float64)
    mean_isr = [theory.decay_isr(int(a), gamma=gamma, d=d, length=n) for a in ages]
    measured = m.per_read.mean(0)                                     # each age's ISR over the trials
    assert float((measured / torch.tensor(mean_isr, dtype=torch.float64)).median()) == pytest.approx(1, abs=0.1)


def test_hebbian_read_bits_tends_to_the_bound():
    # relative to the bound, the gap falls as 1/n at a fixed load per dimension
    gaps = [theory.hebbian_read_bits(d, 4 * d) / (theory.retrieval_bits("hebbian", d, 4 * d) / (4 * d)) - 1
            for d in (32, 64, 128)]
    assert gaps[0] > gaps[1] > gaps[2] > 0
    assert gaps[0] / gaps[2] == pytest.approx(4, rel=0.1)


def test_decay_retrieval_bits_below_the_hebbian_limit():
    for gamma in (0.9, 0.97, 0.995):
        per_number = theory.decay_retrieval_bits(gamma=gamma, d=32, length=20000) / 32**2
        assert per_number < theory.HEBBIAN_BITS_LIMIT


def test_codebook_decoder_reaches_the_exact_information():
    m = channel.decode_codebook("hebbian", 32, 65, codebook_bits=12, trials=100, d_value=8, seed=1, **F64)
    assert abs(m.bits - m.exact) <= 5 * math.hypot(m.bits_se, m.exact_se)
    assert 0.5 < m.error < 1                              # 12 bits asked of a read that carries about 2.4


def test_codebook_bits_never_exceed_the_codebook():
    m = channel.decode_codebook("softmax", 16, 8, codebook_bits=3, trials=50, d_value=4, seed=2, beta=8.0, **F64)
    assert m.bits <= 3 + 5 * m.bits_se and m.error < 0.5


def test_codebook_chunks_give_the_same_answer():
    # the trials are decoded in chunks: the chunk size changes the order of the draws, not the statistics
    kwargs = {"codebook_bits": 6, "trials": 12, "d_value": 4, "seed": 3, **F64}
    whole = channel.decode_codebook("hebbian", 8, 10, **kwargs)
    original = stores.CHUNK_ELEMENTS
    try:
        stores.CHUNK_ELEMENTS = 10 * 2**6 * 5               # five trials a chunk
        chunked = channel.decode_codebook("hebbian", 8, 10, **kwargs)
    finally:
        stores.CHUNK_ELEMENTS = original
    assert abs(chunked.bits - whole.bits) <= 5 * math.hypot(chunked.bits_se, whole.bits_se)


def test_hebbian_slope_in_one_over_n():
    # d = 3: the exact bits per number pass the limit at high load by c/n, c = d(4 - d)/(2(d + 2)) = 0.3
    n, d = 64, 3
    m = channel.measure_bits("hebbian", d, n, trials=3000, seed=5, **F64)
    excess = (m.bits * n / d**2 / theory.HEBBIAN_BITS_LIMIT - 1) * n
    se = m.bits_se * n / d**2 / theory.HEBBIAN_BITS_LIMIT * n
    assert abs(excess - theory.hebbian_bits_slope(d)) <= 5 * se + 0.1


@pytest.mark.parametrize(("memory", "params"), MEMORIES, ids=[m for m, _ in MEMORIES])
def test_quantised_reads_are_noisier_and_finite(memory, params):
    keys = unit_keys(4, 6, 8)
    weights = channel.read_weights(memory, keys, **params)
    rounded = channel.quantised_isr(memory, keys, weights, 4, **params)
    assert bool((rounded > channel.read_isr(weights)).all()) and bool(torch.isfinite(rounded).all())


def test_quantised_sharp_softmax_reaches_the_ceiling():
    m = channel.measure_bits("softmax", 16, 8, trials=20, number_bits=4, seed=2, beta=200.0, **F64)
    assert m.bits * 8 / theory.stored_numbers("softmax", 16, 8) == pytest.approx(theory.quantised_pair_bits(4, 16),
                                                                                 rel=1e-6)
    # a Hebbian matrix rounded to b bits: one entry's rounding noise per unit key, q times the mean square of S
    keys = unit_keys(1, 5, 4)
    weights = channel.read_weights("hebbian", keys)
    expected = channel.read_isr(weights) + theory.quantisation_noise(3) * 5 / 4 / torch.diagonal(weights, 0, -2, -1) ** 2
    torch.testing.assert_close(channel.quantised_isr("hebbian", keys, weights, 3), expected)
