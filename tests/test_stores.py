"""pavlov.stores, the Hebbian store and the ISR measurement: the store against its definition, every
query's ISR and decoding against a direct computation, determinism, shapes, devices, and bad input.

Identities in float64 are checked to ``EXACT`` (see conftest); the statistical checks of the ISR
against its closed form live in ``test_theory_ch3.py``.
"""

from __future__ import annotations

import math

import pytest
import torch
from conftest import DEVICE, EXACT, PROPERTY, batch_shapes, cases, cpu, meta, randn, rel_err, seeds, with_value
from hypothesis import given
from hypothesis import strategies as st

from pavlov import stores

pytestmark = pytest.mark.usefixtures("one_thread")


# --- the Hebbian store ------------------------------------------------------------------------

@PROPERTY
@given(batch=batch_shapes, n=st.integers(1, 6), d_k=st.integers(1, 5), d_v=st.integers(1, 5), m=st.integers(1, 4),
       seed=seeds)
def test_hebbian_store_is_the_sum_of_outer_products(batch, n, d_k, d_v, m, seed):
    keys, values, queries = randn(seed, *batch, n, d_k), randn(seed + 1, *batch, n, d_v), randn(seed + 2, *batch, m, d_k)
    targets = torch.randint(n, (*batch, m), generator=torch.Generator(DEVICE).manual_seed(seed), device=DEVICE)
    store = stores.HebbianStore(keys, values)
    matrix = sum(keys[..., i, :, None] * values[..., i, None, :] for i in range(n))    # sum_i k_i^T v_i
    retrieved, weight = store.read(queries, targets)
    by_definition = sum((queries * keys[..., i, None, :]).sum(-1, keepdim=True) * values[..., i, None, :] for i in range(n))
    assert rel_err(matrix, store.matrix) <= EXACT
    assert rel_err(by_definition, retrieved) <= EXACT                                   # r(q) = sum_i (q . k_i) v_i
    target_keys = torch.take_along_dim(keys, targets.unsqueeze(-1), dim=-2)
    assert rel_err((queries * target_keys).sum(-1), weight) <= EXACT                   # w_j = q . k_j


def test_orthonormal_keys_retrieve_exactly():
    keys = torch.linalg.qr(randn(0, 8, 8))[0][:5]                     # 5 orthonormal keys in 8 dimensions
    values = randn(1, 5, 3)
    retrieved, weight = stores.build("hebbian", keys, values).read(keys, torch.arange(5, device=DEVICE))
    assert rel_err(values, retrieved) <= EXACT and rel_err(torch.ones_like(weight), weight) <= EXACT


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_store_keeps_device_and_dtype(dtype):
    keys, values = randn(0, 2, 4, 3, dtype=dtype), randn(1, 2, 4, 5, dtype=dtype)
    retrieved, weight = stores.build("hebbian", keys, values).read(keys, torch.zeros(2, 4, dtype=torch.long, device=DEVICE))
    for x in (retrieved, weight):
        assert x.device == keys.device and x.dtype == dtype
    assert retrieved.shape == (2, 4, 5) and weight.shape == (2, 4)


def test_store_on_meta_gives_shapes():
    retrieved, weight = stores.build("hebbian", meta(2, 7, 3), meta(2, 7, 5)).read(
        meta(2, 4, 3), torch.zeros(2, 4, dtype=torch.long, device="meta"))
    assert retrieved.shape == (2, 4, 5) and weight.shape == (2, 4)


def test_build_finds_the_hebbian_store():
    assert "hebbian" in stores.STORES
    assert isinstance(stores.build("hebbian", cpu(3, 2), cpu(3, 4)), stores.HebbianStore)


BAD_BUILD = cases(   # (case, store, keys, values, error, parameter)
    ("unknown store", "outer", cpu(3, 2), cpu(3, 4), ValueError, "store"),
    ("keys 1-D", "hebbian", cpu(3), cpu(3, 4), ValueError, "keys"),
    ("n of values differs", "hebbian", cpu(3, 2), cpu(4, 4), ValueError, "values"),
    ("batch of values differs", "hebbian", cpu(2, 3, 2), cpu(3, 3, 4), ValueError, "values"),
    ("values float32", "hebbian", cpu(3, 2), cpu(3, 4, dtype=torch.float32), TypeError, "values"),
    ("values on meta", "hebbian", cpu(3, 2), meta(3, 4), ValueError, "values"),
    ("keys a list", "hebbian", cpu(3, 2).tolist(), cpu(3, 4), TypeError, "keys"),
    ("NaN in keys", "hebbian", with_value(cpu(3, 2), math.nan), cpu(3, 4), ValueError, "keys"),
    ("n = 0", "hebbian", cpu(0, 2), cpu(0, 4), ValueError, "keys"),
)


@pytest.mark.parametrize("store, keys, values, error, param", BAD_BUILD)
def test_build_bad_input(store, keys, values, error, param):
    with pytest.raises(error, match=rf"\b{param}\b"):
        stores.build(store, keys, values)


LONG = torch.long
BAD_READ = cases(   # (case, queries, targets, error, parameter); the store holds 3 memories, d_k = 2
    ("queries 1-D", cpu(2), torch.zeros((), dtype=LONG), ValueError, "queries"),
    ("queries of another d_k", cpu(4, 5), torch.zeros(4, dtype=LONG), ValueError, "queries"),
    ("queries float32", cpu(4, 2, dtype=torch.float32), torch.zeros(4, dtype=LONG), TypeError, "queries"),
    ("inf in queries", with_value(cpu(4, 2), math.inf), torch.zeros(4, dtype=LONG), ValueError, "queries"),
    ("targets float", cpu(4, 2), torch.zeros(4), TypeError, "targets"),
    ("targets a list", cpu(4, 2), [0, 0, 0, 0], TypeError, "targets"),
    ("targets of another shape", cpu(4, 2), torch.zeros(3, dtype=LONG), ValueError, "targets"),
    ("target beyond n", cpu(4, 2), torch.tensor([0, 1, 2, 3]), ValueError, "targets"),
    ("negative target", cpu(4, 2), torch.tensor([0, -1, 2, 0]), ValueError, "targets"),
)


@pytest.mark.parametrize("queries, targets, error, param", BAD_READ)
def test_read_bad_input(queries, targets, error, param):
    with pytest.raises(error, match=rf"\b{param}\b"):
        stores.build("hebbian", cpu(3, 2), cpu(3, 4)).read(queries, targets)


# --- measure_isr --------------------------------------------------------------------------------

def direct_isr_and_decoding(keys: torch.Tensor, values: torch.Tensor, m: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Each query's ISR and decoding from the definition, written out term by term (float64, no store)."""
    overlaps = keys[:, :m] @ keys.transpose(-1, -2)                              # c: (trials, m, n)
    own = torch.arange(m, device=keys.device)
    signal = overlaps[:, own, own, None] * values[:, :m]                         # (k_j . k_j) v_j
    crosstalk = overlaps.clone()
    crosstalk[:, own, own] = 0.0
    isr = (crosstalk @ values).pow(2).sum(-1) / signal.pow(2).sum(-1)           # |sum_{i != j} c_i v_i|^2 / |signal|^2
    scores = (overlaps @ values) @ values.transpose(-1, -2)                      # r . v_l: (trials, m, n)
    return isr, scores.argmax(-1) == own


@pytest.mark.parametrize("keys", ["sphere", "gaussian"])
@pytest.mark.parametrize("d, n, m", [(8, 12, 12), (16, 5, 3), (4, 30, 7)])
def test_measure_isr_is_the_definition(keys, d, n, m):
    measured = stores.measure_isr("hebbian", d, n, trials=6, keys=keys, seed=3, device=DEVICE, dtype=torch.float64,
                                  n_queries=m)
    key_set, value_set = stores.random_memories(6, n, d, keys=keys, seed=3, device=DEVICE, dtype=torch.float64)
    isr, decoded = direct_isr_and_decoding(key_set, value_set, m)
    assert measured.values.shape == measured.correct.shape == (6, m)
    assert rel_err(isr, measured.values) <= EXACT
    assert torch.equal(decoded, measured.correct)
    per_store = isr.mean(-1)
    assert math.isclose(measured.mean, per_store.mean().item(), rel_tol=1e-12)
    assert math.isclose(measured.se, per_store.std().item() / math.sqrt(6), rel_tol=1e-12)
    assert measured.accuracy == pytest.approx(decoded.double().mean().item(), abs=1e-7)


def test_measure_isr_is_reproducible_and_returns_its_seed():
    a, b = (stores.measure_isr("hebbian", 16, 10, trials=4, seed=11, device=DEVICE) for _ in range(2))
    assert a.seed == b.seed == 11 and torch.equal(a.values, b.values) and torch.equal(a.correct, b.correct)
    c = stores.measure_isr("hebbian", 16, 10, trials=4, seed=12, device=DEVICE)
    assert not torch.equal(a.values, c.values)
    fresh = stores.measure_isr("hebbian", 16, 10, trials=4, device=DEVICE)
    assert isinstance(fresh.seed, int) and 0 <= fresh.seed < 2**32



@pytest.mark.parametrize("query_noise", [0.0, 0.5])
def test_measure_isr_in_blocks_draws_each_block_in_turn(monkeypatch, query_noise):
    # 7 trials in blocks of 3, 3 and 1: each block draws its memories, then its cues, from the one generator,
    # so the first block is the measurement of 3 trials; the whole returns every trial, noisy cues included
    args = ("softmax", 8, 10)
    kwargs = {"seed": 5, "device": DEVICE, "dtype": torch.float64, "n_queries": 4, "query_noise": query_noise,
              "beta": 2.0}
    whole = stores.measure_isr(*args, trials=7, **kwargs)
    assert stores.trial_blocks(7, 10 * 16, stores.MEMORY_ELEMENTS) == [7]                          # one block
    monkeypatch.setattr(stores, "MEMORY_ELEMENTS", 3 * 10 * 16)
    blocked, first = (stores.measure_isr(*args, trials=t, **kwargs) for t in (7, 3))
    assert blocked.values.shape == blocked.correct.shape == (7, 4)
    assert torch.equal(blocked.values[:3], first.values) and torch.equal(blocked.correct[:3], first.correct)
    assert not torch.equal(blocked.values, whole.values)                  # later blocks are drawn in another order
    assert (blocked.landed is None) == (whole.landed is None) == (query_noise == 0)
    if query_noise:
        assert blocked.landed.shape == (7, 4) and torch.equal(blocked.landed[:3], first.landed)
    per_trial = blocked.values.mean(-1)
    assert math.isclose(blocked.mean, per_trial.mean().item(), rel_tol=1e-12)
    assert math.isclose(blocked.se, per_trial.std().item() / math.sqrt(7), rel_tol=1e-12)

def test_one_memory_has_no_interference():
    # the retrieval r = q W (float32) differs from the signal (q . k) v only by rounding: each entry by
    # at most about d units of 2^-24 relative, so the ISR is below (4 d 2^-24)^2; one crosstalk term is of order 1/d
    d = 8
    m = stores.measure_isr("hebbian", d, 1, trials=5, keys="gaussian", seed=0, device=DEVICE)
    assert m.values.shape == (5, 1) and m.values.max().item() <= (4 * d * 2.0**-24) ** 2
    assert m.accuracy == 1.0


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_measure_isr_defaults_and_options(dtype):
    m = stores.measure_isr("hebbian", 6, 9, trials=3, seed=0, dtype=dtype, n_queries=4, d_value=11)
    assert m.values.device.type == DEVICE.type and m.values.dtype == dtype
    assert m.values.shape == (3, 4) and m.correct.dtype == torch.bool
    assert stores.measure_isr("hebbian", 6, 9, trials=3, seed=0).values.dtype == torch.float32


BAD_MEASURE = cases(   # (case, positional (store, d_key, n_memories), keyword arguments, error, parameter)
    ("unknown store", ("outer", 8, 4), {}, ValueError, "store"),
    ("d_key = 0", ("hebbian", 0, 4), {}, ValueError, "d_key"),
    ("d_key float", ("hebbian", 8.0, 4), {}, TypeError, "d_key"),
    ("n_memories = 0", ("hebbian", 8, 0), {}, ValueError, "n_memories"),
    ("n_memories negative", ("hebbian", 8, -3), {}, ValueError, "n_memories"),
    ("n_memories bool", ("hebbian", 8, True), {}, TypeError, "n_memories"),
    ("trials = 0", ("hebbian", 8, 4), {"trials": 0}, ValueError, "trials"),
    ("trials = 1", ("hebbian", 8, 4), {"trials": 1}, ValueError, "trials"),
    ("unknown keys", ("hebbian", 8, 4), {"keys": "cube"}, ValueError, "keys"),
    ("n_queries = 0", ("hebbian", 8, 4), {"n_queries": 0}, ValueError, "n_queries"),
    ("n_queries > n", ("hebbian", 8, 4), {"n_queries": 5}, ValueError, "n_queries"),
    ("d_value = 0", ("hebbian", 8, 4), {"d_value": 0}, ValueError, "d_value"),
    ("integer dtype", ("hebbian", 8, 4), {"dtype": torch.int64}, TypeError, "dtype"),
    ("negative seed", ("hebbian", 8, 4), {"seed": -1}, ValueError, "seed"),
)


@pytest.mark.parametrize("args, kwargs, error, param", BAD_MEASURE)
def test_measure_isr_bad_input(args, kwargs, error, param):
    with pytest.raises(error, match=rf"\b{param}\b"):
        stores.measure_isr(*args, **{"trials": 3, "seed": 0, "device": "cpu", **kwargs})


# --- noisy cues ---

def test_noisy_cues_keep_the_key_norm_and_sit_about_sigma_away():
    gen = torch.Generator().manual_seed(0)
    keys = torch.nn.functional.normalize(torch.randn(2000, 64, dtype=torch.float64, generator=gen), dim=-1)
    cues = stores.noisy_cues(keys, 0.3, generator=gen)
    assert torch.allclose(cues.norm(dim=-1), torch.ones(2000, dtype=torch.float64))
    # unit keys: the distance is about sigma for small sigma (the rescaling shortens it by O(sigma^2))
    distance = (cues - keys).norm(dim=-1).pow(2).mean().sqrt().item()
    assert torch.allclose(stores.noisy_cues(3 * keys, 0.3).norm(dim=-1), torch.full((2000,), 3.0, dtype=torch.float64))
    assert distance == pytest.approx(0.3, rel=0.05)
    assert stores.noisy_cues(keys, 0.0) is keys


def test_noisy_cues_follow_the_keys_device_and_dtype():
    keys = torch.randn(4, 8, dtype=torch.float32)
    assert stores.noisy_cues(keys, 1.0).dtype == torch.float32


def test_query_noise_zero_is_the_exact_cue_and_keeps_the_memories():
    exact = stores.measure_isr("hebbian", 32, 16, trials=4, seed=3, device="cpu")
    zero = stores.measure_isr("hebbian", 32, 16, trials=4, seed=3, device="cpu", query_noise=0.0)
    assert torch.equal(exact.values, zero.values)


def test_a_noisy_cue_raises_the_hebbian_isr_by_its_lost_signal():
    # signal (q . k_j)^2 ~ 1 / (1 + sigma^2) for large d, crosstalk unchanged: ISR x (1 + sigma^2)
    d, n, sigma = 256, 64, 1.0
    exact, noisy = (stores.measure_isr("hebbian", d, n, trials=200, seed=5, device="cpu", dtype=torch.float64,
                                       query_noise=s) for s in (0.0, sigma))
    assert exact.mean == pytest.approx((n - 1) / d, rel=0.05)
    assert noisy.mean / exact.mean == pytest.approx(1 + sigma**2, rel=0.1)


# --- decoding among a vocabulary, and a measurement against a prediction -----------------------------------------


@pytest.mark.parametrize("store", ["hebbian", "softmax"])
def test_candidates_decode_among_stored_values_and_distractors(store):
    keys, values = stores.random_memories(3, 40, 16, seed=0, device=DEVICE)
    memory = stores.build(store, keys[:, :10], values[:, :10])
    _, correct = stores.interference_to_signal(memory, candidates=values)
    targets = torch.arange(10, device=DEVICE).expand(3, 10)
    retrieved, _ = memory.read(keys[:, :10], targets)
    expected = (retrieved @ values.transpose(-1, -2)).argmax(-1) == targets       # by hand, among all 40
    assert torch.equal(correct, expected)
    _, among_stored = stores.interference_to_signal(memory)
    assert (among_stored >= correct).all()                    # distractors can only take a decoding away


@pytest.mark.parametrize("candidates", [lambda V: V[:, 1:], lambda V: V[:1], lambda V: V[..., :8], lambda V: V[:, :5]],
                         ids=["stored-values-not-first", "other-batch", "other-d_v", "fewer-than-stored"])
def test_candidates_bad_input(candidates):
    keys, values = stores.random_memories(3, 40, 16, seed=0, device=DEVICE)
    memory = stores.build("hebbian", keys[:, :10], values[:, :10])
    with pytest.raises(ValueError, match="candidates must be"):
        stores.interference_to_signal(memory, candidates=candidates(values))


def test_deviation_is_in_standard_errors():
    m = stores.measure_isr("hebbian", 16, 8, trials=20, seed=0, device=DEVICE)
    assert m.deviation(m.mean) == 0.0
    assert m.deviation(m.mean - 2 * m.se) == pytest.approx(2.0, rel=1e-12)
    with pytest.raises(ValueError, match="predicted must be finite"):
        m.deviation(math.nan)


def test_ridge_store_runs_from_least_squares_to_the_hebbian_direction():
    gen = torch.Generator().manual_seed(0)
    keys = torch.nn.functional.normalize(torch.randn(3, 6, 10, generator=gen, dtype=torch.float64), dim=-1)
    values = torch.randn(3, 6, 4, generator=gen, dtype=torch.float64)
    small = stores.build("ridge", keys, values, lam=1e-9)
    assert torch.allclose(small.matrix, stores.build("least_squares", keys, values).matrix, atol=1e-6)
    large = stores.build("ridge", keys, values, lam=1e6)
    assert torch.allclose(large.matrix * 1e6, stores.build("hebbian", keys, values).matrix, rtol=1e-4, atol=1e-4)
    _, weight = stores.build("ridge", keys, values, lam=0.3).read(keys, torch.arange(6).expand(3, 6))
    assert bool(((weight > 0) & (weight < 1)).all())          # the ridge shrinks every stored key's own weight


def test_ridge_store_keeps_the_keys_device_and_dtype():
    keys = torch.nn.functional.normalize(torch.randn(2, 5, 8), dim=-1)
    memory = stores.build("ridge", keys, torch.randn(2, 5, 3), lam=0.5)
    assert memory.matrix.dtype == torch.float32 and memory.duals.device == keys.device


def test_unrescaled_cues_and_the_read_error():
    gen = torch.Generator().manual_seed(1)
    keys = torch.nn.functional.normalize(torch.randn(4000, 16, generator=gen, dtype=torch.float64), dim=-1)
    cues = stores.noisy_cues(keys, 1.0, generator=gen, renormalise=False)
    assert cues.pow(2).sum(-1).mean().item() == pytest.approx(2.0, rel=0.02)      # E|q|^2 = 1 + sigma^2
    m = stores.measure_isr("hebbian", 16, 4, trials=50, query_noise=0.5, renormalise_cues=False, seed=0,
                           dtype=torch.float64)
    assert m.error.shape == m.values.shape and m.mse[0] > 0
    exact = stores.measure_isr("least_squares", 16, 4, trials=5, seed=0, dtype=torch.float64)
    assert exact.mse[0] < 1e-20                                       # exact cues: least squares reads exactly
