"""pavlov.theory, the channel view: retrieval as a noisy channel and the bits a store holds per stored number.

The bound :func:`pavlov.theory.retrieval_bits` is checked by hand at small sizes, against the closed forms
derived in :func:`pavlov.theory.bits_per_number` (the Hebbian limit :math:`1/(2 \\ln 2)`, the directions in which
each store's bits per number move with the load), and against a Monte Carlo draw of the per-query bound given the
keys, which Jensen's inequality puts above it. The mean ISR's independence of the values' dimension, which the
bound relies on, is measured directly.
"""

from __future__ import annotations

import math

import pytest
import torch

from pavlov import theory

F64 = {"device": "cpu", "dtype": torch.float64}
STORES = [("hebbian", {}), ("least_squares", {}), ("relu", {}), ("relu2", {}), ("polynomial", {"degree": 3}),
          ("softmax", {"beta": math.sqrt(32)}), ("softmax", {"beta": 8.0})]
PAIRS = [(s, p) for s, p in STORES if s in theory.PAIR_STORES]


def unit_keys(trials: int, n: int, d: int, seed: int) -> torch.Tensor:
    gen = torch.Generator().manual_seed(seed)
    return torch.nn.functional.normalize(torch.randn(trials, n, d, generator=gen, **F64), dim=-1)


def hebbian_closed_form(d: int, n: int) -> float:
    return n / (2 * d) * math.log2(1 + d / (n - 1))


# --- hand-computed values ---


def test_hand_computed_values():
    assert theory.retrieval_bits("hebbian", 4, 5) == pytest.approx(10.0, rel=1e-15)       # ISR 1: 5 * 4/2 * log2 2
    assert theory.retrieval_bits("hebbian", 4, 5, d_value=6) == pytest.approx(15.0, rel=1e-15)
    assert theory.bits_per_number("hebbian", 4, 5) == pytest.approx(10 / 16, rel=1e-15)
    assert theory.bits_per_number("hebbian", 4, 5, d_value=6) == pytest.approx(15 / 24, rel=1e-15)
    assert theory.retrieval_bits("relu", 4, 9) == pytest.approx(18.0, rel=1e-15)          # ISR 8/8 = 1
    assert theory.bits_per_number("relu", 4, 9) == pytest.approx(18 / 72, rel=1e-15)
    assert theory.retrieval_bits("hebbian", 4, 13) == pytest.approx(13 * 2 * math.log2(4 / 3), rel=1e-14)   # ISR 3


@pytest.mark.parametrize("store, params", STORES)
def test_retrieval_bits_is_the_gaussian_channel_at_the_mean_isr(store, params):
    for n in (40, 100, 1000):
        mean_isr = theory.isr(store, 32, n, **params)
        expected = n * 24 / 2 * math.log2(1 + 1 / mean_isr)
        assert theory.retrieval_bits(store, 32, n, d_value=24, **params) == pytest.approx(expected, rel=1e-13)
        assert theory.bits_per_number(store, 32, n, d_value=24, **params) == pytest.approx(
            expected / theory.stored_numbers(store, 32, n, d_value=24), rel=1e-13)


@pytest.mark.parametrize("store, params", STORES)
def test_one_memory_is_a_noiseless_read(store, params):
    assert theory.retrieval_bits(store, 32, 1, **params) == math.inf          # no crosstalk
    assert theory.bits_per_number(store, 32, 1, **params) == math.inf


def test_a_noiseless_read_is_infinite_and_an_infinite_isr_is_zero():
    assert theory.retrieval_bits("least_squares", 32, 32) == math.inf         # up to capacity
    assert theory.retrieval_bits("least_squares", 32, 33) < math.inf
    assert theory.retrieval_bits("hebbian", 2, 5, keys="gaussian") == 0.0     # E 1/|k|^2 infinite at d = 2


def test_stored_numbers():
    for store in ("hebbian", "least_squares"):
        assert theory.stored_numbers(store, 32, 7) == 32 * 32
        assert theory.stored_numbers(store, 32, 10**6, d_value=8) == 32 * 8
    for store in ("relu", "relu2", "polynomial", "softmax"):
        assert theory.stored_numbers(store, 32, 7) == 7 * 64
        assert theory.stored_numbers(store, 32, 7, d_value=8) == 7 * 40
    assert set(theory.MATRIX_STORES) | set(theory.PAIR_STORES) == set(theory.ISR_FORMULAS)
    assert isinstance(theory.stored_numbers("softmax", 32, 7), int)


def test_the_mean_isr_does_not_depend_on_the_values_dimension():
    """Hebbian store, unit keys and unit values in d_v dimensions: the mean ISR is (n - 1)/d_k for every d_v."""
    d, n, trials = 8, 5, 40_000
    keys = unit_keys(trials, n, d, seed=1)
    overlaps = keys @ keys.transpose(-1, -2)
    gen = torch.Generator().manual_seed(2)
    for d_v in (1, 3, 8, 20):
        values = torch.nn.functional.normalize(torch.randn(trials, n, d_v, generator=gen, **F64), dim=-1)
        crosstalk = overlaps[:, 0, 1:, None] * values[:, 1:]            # query memory 0
        ratio = crosstalk.sum(1).square().sum(-1) / overlaps[:, 0, 0].square()
        mean, se = ratio.mean().item(), ratio.std().item() / math.sqrt(trials)
        assert abs(mean - theory.isr("hebbian", d, n)) < 5 * se


# --- the Hebbian limit and the directions of each store's bits per number ---


def test_hebbian_bits_per_number_tends_to_its_limit():
    assert theory.HEBBIAN_BITS_LIMIT == pytest.approx(1 / (2 * math.log(2)), rel=1e-15)
    assert abs(theory.bits_per_number("hebbian", 32, 10**6) - theory.HEBBIAN_BITS_LIMIT) < 1e-3
    gaps = [theory.HEBBIAN_BITS_LIMIT - theory.bits_per_number("hebbian", 32, 10**k) for k in range(2, 8)]
    assert all(g > 0 for g in gaps) and all(b < a for a, b in zip(gaps, gaps[1:]))
    assert gaps[-1] < 1e-5
    for d_v in (1, 8, 100):      # bits per number of the Hebbian store do not depend on d_v
        assert theory.bits_per_number("hebbian", 32, 1000, d_value=d_v) == pytest.approx(
            theory.bits_per_number("hebbian", 32, 1000), rel=1e-14)


@pytest.mark.parametrize("d", [1, 2, 3, 4, 8, 32])
def test_hebbian_bits_per_number_closed_form_and_direction(d):
    values = [theory.bits_per_number("hebbian", d, n) for n in range(2, 3000)]
    assert values == pytest.approx([hebbian_closed_form(d, n) for n in range(2, 3000)], rel=1e-13)
    steps = [b - a for a, b in zip(values, values[1:])]
    if d >= 4:                   # N(d) = 2d - (1 + d) ln(1 + d) < 0: rises for ever, from below
        assert all(s > 0 for s in steps) and values[-1] < theory.HEBBIAN_BITS_LIMIT
    elif d <= 2:                 # N'' >= 0: falls towards the limit from above
        assert all(s < 0 for s in steps) and values[-1] > theory.HEBBIAN_BITS_LIMIT
    else:                        # d = 3: a dip, then a rise
        assert steps[0] < 0 and all(s > 0 for s in steps[2:]) and values[-1] < theory.HEBBIAN_BITS_LIMIT
    assert (2 * d - (1 + d) * math.log(1 + d) < 0) == (d >= 4)


@pytest.mark.parametrize("d", [4, 32])
def test_least_squares_falls_to_the_hebbian_limit_from_above(d):
    values = [theory.bits_per_number("least_squares", d, n) for n in range(d + 1, 40 * d)]
    assert values[0] == pytest.approx((d + 1) / (2 * d) * math.log2(d + 1), rel=1e-13)
    assert all(b < a for a, b in zip(values, values[1:]))
    assert all(v > theory.HEBBIAN_BITS_LIMIT for v in values)
    assert theory.bits_per_number("least_squares", d, 10**7 * d) == pytest.approx(theory.HEBBIAN_BITS_LIMIT, abs=1e-6)
    assert all(theory.bits_per_number("least_squares", d, n) == math.inf for n in range(1, d + 1))


@pytest.mark.parametrize("store, params", PAIRS)
@pytest.mark.parametrize("d_v", [32, 8])
def test_pair_stores_fall_with_the_load(store, params, d_v):
    isr2 = theory.isr(store, 32, 2, **params)
    ns = list(range(2, 200)) + [10**4, 10**6]
    values = [theory.bits_per_number(store, 32, n, d_value=d_v, **params) for n in ns]
    expected = [d_v / (2 * (32 + d_v)) * math.log2(1 + 1 / ((n - 1) * isr2)) for n in ns]
    assert values == pytest.approx(expected, rel=1e-12)
    assert all(b < a for a, b in zip(values, values[1:]))


def test_relu_bits_per_number():
    for n in (2, 10, 65, 1000):
        assert theory.bits_per_number("relu", 32, n) == pytest.approx(math.log2(1 + 64 / (n - 1)) / 4, rel=1e-13)


# --- the optimal load ---


@pytest.mark.parametrize("n_max", [2, 3, 100, 4097, 2**20])
def test_optimal_load_of_the_hebbian_store_is_n_max(n_max):
    n, bits = theory.optimal_load("hebbian", 32, n_max=n_max)
    assert n == n_max and bits == theory.bits_per_number("hebbian", 32, n_max)
    assert bits < theory.HEBBIAN_BITS_LIMIT


@pytest.mark.parametrize("store, params", PAIRS)
def test_optimal_load_of_the_pair_stores_is_two(store, params):
    for d_v in (None, 8):
        n, bits = theory.optimal_load(store, 32, d_value=d_v, **params)
        assert n == 2 and bits == theory.bits_per_number(store, 32, 2, d_value=d_v, **params)


@pytest.mark.parametrize("d", [4, 32])
def test_optimal_load_of_least_squares_is_just_beyond_capacity(d):
    n, bits = theory.optimal_load("least_squares", d)
    assert n == d + 1 and bits == pytest.approx((d + 1) / (2 * d) * math.log2(d + 1), rel=1e-13)
    assert theory.optimal_load("least_squares", d, n_max=d + 1)[0] == d + 1
    with pytest.raises(ValueError, match=r"\bn_max\b"):
        theory.optimal_load("least_squares", d, n_max=d)


def test_optimal_load_small_cases():
    # d = 1: falls from n = 2 (1 bit per number) to the limit; d = 3: bits at 2 beat bits at 3
    assert theory.optimal_load("hebbian", 1) == (2, theory.bits_per_number("hebbian", 1, 2))
    assert theory.optimal_load("hebbian", 3, n_max=3)[0] == 2
    assert theory.optimal_load("hebbian", 3, n_max=100)[0] == 100
    with pytest.raises(ValueError, match=r"\bn_max\b"):
        theory.optimal_load("relu", 32, n_max=1)


@pytest.mark.parametrize("peak", [2, 7, 64, 65, 66, 1234, 99_999, 2**20 - 1, 2**20])
def test_the_integer_search_finds_an_interior_maximum(peak):
    def f(n):
        return -(math.log(n) - math.log(peak)) ** 2

    assert theory.channel._integer_argmax(f, 2, 2**20) == (peak, 0.0)
    assert theory.channel._integer_argmax(lambda n: -abs(n - peak), 2, 2**20)[0] == peak
    assert theory.channel._integer_argmax(lambda n: 0.0, 2, 50)[0] == 50        # a tie: the largest n


# --- the bound given the keys, by Monte Carlo ---


def test_per_query_bound_given_the_keys_exceeds_the_bound_at_the_mean_isr():
    """Hebbian store, unit keys, Gaussian values: given the keys the crosstalk of read j is exactly Gaussian with
    ISR_j(K) = sum_{i != j} (k_i . k_j)^2, so I(v_j; r_j | K) = (d_v/2) log2(1 + 1/ISR_j(K)); its mean over random
    keys is at least retrieval_bits / n (Jensen: log2(1 + 1/x) is convex) and, at d = 64, n = 32, close to it."""
    d, n, trials = 64, 32, 2000
    keys = unit_keys(trials, n, d, seed=3)
    overlaps = keys @ keys.transpose(-1, -2)
    isr_given_keys = overlaps.square().sum(-1) - 1                    # the diagonal is k_j . k_j = 1
    assert isr_given_keys.mean().item() == pytest.approx(theory.isr("hebbian", d, n), rel=0.01)
    per_query = d / 2 * torch.log2(1 + 1 / isr_given_keys)
    mean, se = per_query.mean().item(), per_query.std().item() / math.sqrt(per_query.numel())
    bound = theory.retrieval_bits("hebbian", d, n) / n
    assert mean > bound + 5 * se
    assert mean < 1.05 * bound
