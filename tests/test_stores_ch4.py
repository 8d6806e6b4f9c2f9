"""pavlov.stores, chapter 4: the least-squares, ReLU, squared-ReLU, polynomial and softmax stores against a
direct dense computation, the streaming softmax against dense softmax, the memory the streaming needs, and
the measurement helpers built on the stores.

Identities in float64 are checked to ``EXACT`` (see conftest): every output is a sum of at most
``n * d_k <= 64 * 8`` products, or a least-squares solve of condition number below 10 (keys with
``n >= 2 d_k`` or ``n <= d_k / 2`` rows), far inside that bound.
"""

from __future__ import annotations

import math
import os
import subprocess
import sys
import textwrap

import pytest
import torch
from conftest import EXACT, PROPERTY, batch_shapes, cases, rel_err, seeds
from hypothesis import given
from hypothesis import strategies as st

from pavlov import claims, stores, theory

pytestmark = pytest.mark.usefixtures("one_thread")
F64 = {"dtype": torch.float64, "device": "cpu"}
KERNELS = {"relu": {}, "relu2": {}, "polynomial": {"degree": 3}, "softmax": {"beta": 2.5}}


def draw(seed: int, *shape: int, unit: bool = False) -> torch.Tensor:
    x = torch.randn(shape, generator=torch.Generator().manual_seed(seed), **F64)
    return x / x.norm(dim=-1, keepdim=True) if unit else x


# --- references: the definitions, with the whole [m, n] weight matrix at once ------------------

def dense_weights(store: str, queries, keys, **params) -> torch.Tensor:
    """w_i(q) for every query and memory, ``[..., m, n]``, written from each store's definition."""
    overlaps = queries @ keys.transpose(-1, -2)
    if store == "hebbian":
        return overlaps
    if store == "relu":
        return overlaps.clamp(min=0)
    if store == "relu2":
        return overlaps.clamp(min=0) ** 2
    if store == "polynomial":
        return overlaps ** params["degree"]
    if store == "softmax":
        return torch.softmax(params.get("beta", math.sqrt(keys.shape[-1])) * overlaps, dim=-1)
    # least squares: w(q) = q K^+, with K^+ from the normal equations of a full-rank K
    n, d = keys.shape[-2:]
    gram_rows, gram_cols = keys @ keys.transpose(-1, -2), keys.transpose(-1, -2) @ keys
    if n >= d:   # K^+ = (K^T K)^{-1} K^T
        return queries @ torch.linalg.solve(gram_cols, keys.transpose(-1, -2))
    return queries @ keys.transpose(-1, -2) @ torch.linalg.inv(gram_rows)    # K^+ = K^T (K K^T)^{-1}


def dense_read(store: str, queries, keys, values, targets, **params):
    weights = dense_weights(store, queries, keys, **params)
    return weights @ values, torch.take_along_dim(weights, targets.unsqueeze(-1), dim=-1).squeeze(-1)


# --- every store against its definition --------------------------------------------------------

@given(batch=batch_shapes, n=st.integers(1, 64), d=st.integers(1, 8), m=st.integers(1, 12), seed=seeds,
       store=st.sampled_from(sorted(KERNELS)), chunk=st.one_of(st.none(), st.integers(1, 70)))
@PROPERTY
def test_kernel_stores_equal_dense_computation(batch, n, d, m, seed, store, chunk):
    keys, values, queries = draw(seed, *batch, n, d), draw(seed + 1, *batch, n, 5), draw(seed + 2, *batch, m, d)
    targets = torch.randint(0, n, (*batch, m), generator=torch.Generator().manual_seed(seed))
    memory = stores.build(store, keys, values, chunk_size=chunk, **KERNELS[store])
    retrieved, weight = memory.read(queries, targets)
    ref_retrieved, ref_weight = dense_read(store, queries, keys, values, targets, **KERNELS[store])
    assert rel_err(ref_retrieved, retrieved) <= EXACT
    assert rel_err(ref_weight, weight) <= EXACT       # softmax: normalised; the others: the kernel of the overlap


@pytest.mark.parametrize("n, d", [(64, 8), (32, 16), (4, 8), (16, 32)])   # n >= 2 d or n <= d / 2: well conditioned
@pytest.mark.parametrize("batch", [(), (3,)])
def test_least_squares_store_equals_normal_equations(n, d, batch):
    keys, values, queries = draw(0, *batch, n, d), draw(1, *batch, n, 6), draw(2, *batch, 10, d)
    targets = torch.randint(0, n, (*batch, 10), generator=torch.Generator().manual_seed(3))
    retrieved, weight = stores.build("least_squares", keys, values).read(queries, targets)
    ref_retrieved, ref_weight = dense_read("least_squares", queries, keys, values, targets)
    assert rel_err(ref_retrieved, retrieved) <= EXACT
    assert rel_err(ref_weight, weight) <= EXACT


def test_least_squares_retrieves_exactly_up_to_d_keys():
    # n <= d independent keys: P = K K^+ = I, so a stored key gets its own value with weight 1
    keys, values = draw(0, 2, 8, 16), draw(1, 2, 8, 4)
    targets = torch.arange(8).expand(2, 8)
    retrieved, weight = stores.build("least_squares", keys, values).read(keys, targets)
    assert rel_err(values, retrieved) <= EXACT
    assert rel_err(torch.ones(2, 8, **F64), weight) <= EXACT


def test_least_squares_weights_are_the_hat_matrix():
    # a stored key k_j weighs memory i by P_ij, and P^2 = P: sum_i P_ij^2 = P_jj, so ISR_j = 1 / P_jj - 1
    keys = draw(0, 40, 8)
    memory = stores.build("least_squares", keys, draw(1, 40, 3))
    weights = keys @ memory.duals.transpose(-1, -2)                          # (40, 40) = P
    assert rel_err(weights @ weights, weights) <= EXACT
    assert rel_err(torch.diagonal(weights), weights.pow(2).sum(-1)) <= EXACT
    assert abs(torch.trace(weights).item() - 8) <= 1e-12 * 8                 # rank d


def test_polynomial_of_degree_one_is_the_hebbian_store():
    keys, values, queries = draw(0, 3, 50, 8), draw(1, 3, 50, 4), draw(2, 3, 7, 8)
    targets = torch.randint(0, 50, (3, 7), generator=torch.Generator().manual_seed(0))
    hebbian = stores.build("hebbian", keys, values).read(queries, targets)
    polynomial = stores.build("polynomial", keys, values, degree=1, chunk_size=7).read(queries, targets)
    for a, b in zip(hebbian, polynomial):
        assert rel_err(a, b) <= EXACT


def test_relu_mlp_is_the_relu_store_and_reglu_the_squared_relu_store():
    # Linear(keys) -> ReLU -> Linear(values): the feed-forward layer as a key-value memory
    keys, values, queries = draw(0, 100, 16), draw(1, 100, 12), draw(2, 9, 16)
    first = torch.nn.Linear(16, 100, bias=False, **F64)
    second = torch.nn.Linear(100, 12, bias=False, **F64)
    with torch.no_grad():
        first.weight.copy_(keys)
        second.weight.copy_(values.T)
        mlp = torch.nn.Sequential(first, torch.nn.ReLU(), second)(queries)
        reglu = second(torch.relu(first(queries)) * first(queries))       # gate and input share the keys
    targets = torch.zeros(9, dtype=torch.long)
    assert rel_err(mlp, stores.build("relu", keys, values).read(queries, targets)[0]) <= EXACT
    assert rel_err(reglu, stores.build("relu2", keys, values).read(queries, targets)[0]) <= EXACT


# --- streaming softmax against dense softmax ---------------------------------------------------

@pytest.mark.parametrize("chunk", [1, 3, 7, 37, 63, 64, 65, 1000])    # 64 memories: most do not divide
@pytest.mark.parametrize("beta", [0.1, 1.0, 8.0, 40.0])
def test_streaming_softmax_equals_dense_softmax(chunk, beta):
    keys, values, queries = draw(0, 2, 64, 8, unit=True), draw(1, 2, 64, 5), draw(2, 2, 6, 8, unit=True)
    targets = torch.randint(0, 64, (2, 6), generator=torch.Generator().manual_seed(1))
    memory = stores.build("softmax", keys, values, beta=beta, chunk_size=chunk)
    retrieved, weight = memory.read(queries, targets)
    ref_retrieved, ref_weight = dense_read("softmax", queries, keys, values, targets, beta=beta)
    assert rel_err(ref_retrieved, retrieved) <= EXACT
    assert rel_err(ref_weight, weight) <= EXACT
    assert memory.buffer_elements == 2 * 6 * min(chunk, 64)


def test_streaming_softmax_never_overflows():
    # beta * overlap reaches 1e4: e^(beta c) overflows float64, the running log-sum-exp does not.
    keys, values = draw(0, 200, 8, unit=True), draw(1, 200, 4)
    for dtype in (torch.float32, torch.float64):
        memory = stores.build("softmax", keys.to(dtype), values.to(dtype), beta=1e4, chunk_size=13)
        retrieved, weight = memory.read(keys[:5].to(dtype), torch.arange(5))
        assert torch.isfinite(retrieved).all() and torch.isfinite(weight).all()
        # every other overlap is below 1 - 1e-3 here, so its weight is below e^-10 of the target's
        assert rel_err(values[:5].to(dtype), retrieved) <= 1e-4 and rel_err(torch.ones(5, dtype=dtype), weight) <= 1e-4


def test_chunk_length():
    assert stores.chunk_length(2**20, 128) == stores.CHUNK_ELEMENTS // 128
    assert stores.chunk_length(10, 128) == 10                          # never more than the memories
    assert stores.chunk_length(10**9, stores.CHUNK_ELEMENTS * 4) == 1  # at least one
    assert stores.chunk_length(100, 5, chunk_size=30) == 30


@pytest.mark.parametrize("store", sorted(KERNELS))
def test_default_buffer_stays_within_chunk_elements(store):
    keys, values = draw(0, 3, 5000, 4), draw(1, 3, 5000, 2)
    memory = stores.build(store, keys, values, **KERNELS[store])
    memory.read(keys[:, :300], torch.zeros(3, 300, dtype=torch.long))
    chunk = stores.CHUNK_ELEMENTS // 900
    assert memory.buffer_elements == 900 * chunk <= stores.CHUNK_ELEMENTS


MEMORY_SCRIPT = textwrap.dedent("""
    import resource, sys, torch
    from pavlov import stores
    torch.set_num_threads(1)
    case, n, m, d = sys.argv[1], 2**18, 256, 8
    gen = torch.Generator().manual_seed(0)
    keys = torch.randn(1, n, d, generator=gen)
    keys.div_(keys.norm(dim=-1, keepdim=True))
    values = torch.randn(1, n, d, generator=gen)
    memory = stores.build("softmax" if case == "decode" else case, keys, values)
    if case == "decode":   # the read and the nearest-value decoding of every query
        run = lambda q: stores.interference_to_signal(memory, q)
    else:
        run = lambda q: memory.read(keys[:, :q], torch.arange(q).unsqueeze(0))
    run(1)                 # warm up allocators and thread pools
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    run(m)
    grown = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before
    print(grown if sys.platform == "darwin" else grown * 1024)    # ru_maxrss: bytes on macOS, KiB on Linux
""")


@pytest.mark.skipif(sys.platform == "win32", reason="the resource module is POSIX-only")
@pytest.mark.parametrize("case", ["relu2", "softmax", "decode"])   # every kernel store reads as relu2 does
def test_streaming_peak_memory_is_bounded(case):
    # A dense read of 256 queries over 2^18 memories holds a [256, 2^18] float32 matrix: 256 MiB. Streaming
    # holds at most two buffers of CHUNK_ELEMENTS entries (16 MiB) at once, a chunk's overlaps and its
    # weights or scores; the bound allows four, a quarter of dense. Each case runs in a fresh process,
    # since the peak resident size only grows, with glibc's mmap threshold fixed at 1 MiB: otherwise glibc
    # raises it after the first large free and serves later buffers from a heap that keeps freed pages
    # resident, so the peak would measure the allocator's fragmentation rather than the live memory.
    bound = 4 * stores.CHUNK_ELEMENTS * 4
    env = {**os.environ, "MALLOC_MMAP_THRESHOLD_": str(2**20)}
    out = subprocess.run([sys.executable, "-c", MEMORY_SCRIPT, case], capture_output=True, text=True, check=True,
                         env=env)
    grown = int(out.stdout)
    assert grown <= bound, f"peak memory grew by {grown / 2**20:.0f} MiB during the read"


# --- the strongest memory ----------------------------------------------------------------------

@pytest.mark.parametrize("store", sorted(KERNELS))
@pytest.mark.parametrize("chunk", [None, 1, 6])
def test_strongest_is_the_dense_argmax_first_on_ties(store, chunk):
    keys = draw(0, 2, 30, 4, unit=True)
    keys[:, 17] = keys[:, 3]                     # a duplicate key: the tie goes to the first, memory 3
    queries = torch.cat([keys[:, [3, 17]], draw(1, 2, 5, 4, unit=True)], dim=-2)
    memory = stores.build(store, keys, draw(2, 2, 30, 3), chunk_size=chunk, **KERNELS[store])
    reference = dense_weights(store, queries, keys, **KERNELS[store]).argmax(-1)
    assert torch.equal(memory.strongest(queries), reference)
    assert memory.strongest(queries)[:, :2].eq(3).all()


# --- the measurement helpers -------------------------------------------------------------------

def test_measure_isr_is_random_memories_read_by_interference_to_signal():
    m = stores.measure_isr("softmax", 16, 40, trials=3, n_queries=9, seed=5, device="cpu", beta=3.0)
    keys, values = stores.random_memories(3, 40, 16, seed=5, device="cpu")
    isr, correct = stores.interference_to_signal(stores.build("softmax", keys, values, beta=3.0), 9)
    assert torch.equal(m.values, isr) and torch.equal(m.correct, correct)


def test_noisy_cues_read_through_queries_and_their_landing():
    keys, values = stores.random_memories(3, 40, 16, seed=5, device="cpu")
    memory = stores.build("softmax", keys, values, beta=3.0)
    drawn = stores.interference_to_signal(memory, 9, query_noise=0.7, generator=torch.Generator().manual_seed(3))
    cues = stores.noisy_cues(keys[:, :9], 0.7, generator=torch.Generator().manual_seed(3))
    given_cues = stores.interference_to_signal(memory, queries=cues)
    assert all(torch.equal(a, b) for a, b in zip(drawn, given_cues))
    # landed: whether the cue's largest inner product is with its own key; sharp attention decodes exactly those
    m = stores.measure_isr("softmax", 8, 64, trials=400, n_queries=8, seed=2, device="cpu", dtype=torch.float64,
                           beta=60.0, query_noise=1.0)
    assert (m.landed == m.correct).double().mean().item() > 0.98      # near-ties differ at a finite beta
    p, se = m.landed.double().mean().item(), m.landed.double().mean(-1).std().item() / 20
    assert abs(p - theory.nearest_key_accuracy(8, 64, 1.0)) < 4 * se
    assert stores.measure_isr("hebbian", 16, 40, trials=3, seed=5, device="cpu").landed is None


@pytest.mark.parametrize("store", sorted(KERNELS))
def test_measure_isr_does_not_depend_on_the_chunks(store):
    common = dict(trials=4, seed=1, device="cpu", dtype=torch.float64, **KERNELS[store])
    whole = stores.measure_isr(store, 8, 50, **common)
    chunked = stores.measure_isr(store, 8, 50, chunk_size=7, **common)
    assert rel_err(whole.values, chunked.values) <= EXACT
    assert torch.equal(whole.correct, chunked.correct)


@pytest.mark.parametrize("store, extra", [("relu", {}), ("relu2", {}), ("softmax", {"beta": 4.0})])
def test_measure_capacity_finds_the_crossing(store, extra):
    # A seeded statistical check: the interpolated crossing lies within 5 standard errors of where the
    # stores' exact mean ISR (chapter 4) crosses 1, between the two sizes measured.
    predicted = {"relu": 2 * 16 + 1, "relu2": 1 + 2 * 16 * 18 / 3, "softmax": 482.96}[store]
    c = stores.measure_capacity(store, 16, around=predicted, trials=64, n_queries=32, device="cpu", **extra)
    assert c.n_memories[0] < c.capacity < c.n_memories[1]
    assert abs(c.capacity - predicted) <= claims.tolerance(c.se)
    assert c.below.mean < 1 < c.above.mean


# --- bad arguments -----------------------------------------------------------------------------

K, V = draw(0, 10, 4), draw(1, 10, 3)


@pytest.mark.parametrize("store, params, error, param", cases(
    ("unknown store", "gaussian_process", {}, ValueError, "store"),
    ("beta zero", "softmax", {"beta": 0.0}, ValueError, "beta"),
    ("beta negative", "softmax", {"beta": -1.0}, ValueError, "beta"),
    ("beta nan", "softmax", {"beta": float("nan")}, ValueError, "beta"),
    ("beta a string", "softmax", {"beta": "8"}, TypeError, "beta"),
    ("degree zero", "polynomial", {"degree": 0}, ValueError, "degree"),
    ("degree a float", "polynomial", {"degree": 2.0}, TypeError, "degree"),
    ("degree missing", "polynomial", {}, TypeError, "degree"),
    ("chunk zero", "relu", {"chunk_size": 0}, ValueError, "chunk_size"),
    ("chunk a float", "softmax", {"chunk_size": 8.0}, TypeError, "chunk_size"),
    ("beta for relu", "relu", {"beta": 1.0}, TypeError, "beta"),
    ("chunks for least squares", "least_squares", {"chunk_size": 4}, TypeError, "chunk_size"),
))
def test_build_rejects_bad_arguments(store, params, error, param):
    with pytest.raises(error, match=param):
        stores.build(store, K, V, **params)


@pytest.mark.parametrize("store", sorted(KERNELS) + ["least_squares"])
def test_read_rejects_bad_queries(store):
    memory = stores.build(store, K, V, **KERNELS.get(store, {}))
    with pytest.raises(ValueError, match="queries"):
        memory.read(draw(2, 5, 3), torch.zeros(5, dtype=torch.long))
    with pytest.raises(ValueError, match="targets"):
        memory.read(draw(2, 5, 4), torch.full((5,), 10, dtype=torch.long))
    with pytest.raises(TypeError, match="targets"):
        memory.read(draw(2, 5, 4), torch.zeros(5))
    if store != "least_squares":
        with pytest.raises(ValueError, match="queries"):
            memory.strongest(draw(2, 5, 3))


def test_helpers_reject_bad_arguments():
    with pytest.raises(ValueError, match="store"):
        stores.measure_isr("gaussian_process", 8, 10, trials=2)
    with pytest.raises(ValueError, match="beta"):
        stores.measure_isr("softmax", 8, 10, trials=2, beta=0.0, device="cpu")
    with pytest.raises(ValueError, match="n_queries"):
        stores.interference_to_signal(stores.build("relu", K, V), 11)
    with pytest.raises(ValueError, match="keys"):
        stores.random_memories(2, 10, 4, keys="uniform", seed=0, device="cpu")
    with pytest.raises(ValueError, match="spread"):
        stores.measure_capacity("relu", 8, around=17, trials=2, spread=1.0, device="cpu")
    with pytest.raises(ValueError, match="around"):
        stores.measure_capacity("relu", 8, around=0, trials=2, device="cpu")
    with pytest.raises(ValueError, match="rows"):
        stores.chunk_length(10, 0)


def test_measure_capacity_refuses_an_isr_that_does_not_grow(monkeypatch):
    flat = stores.IsrMeasurement(0.5, 0.01, torch.zeros(2, 1), torch.ones(2, 1, dtype=torch.bool), 0)
    monkeypatch.setattr(stores, "measure_isr", lambda *args, **kwargs: flat)
    with pytest.raises(ValueError, match="did not grow"):
        stores.measure_capacity("relu", 8, around=17, trials=2)


def test_measure_capacity_measures_again_with_more_trials_when_the_rise_is_lost_in_noise(monkeypatch):
    asked = []

    def noisy(store, d_key, n, *, trials, **kwargs):     # no rise with few trials, a rise with four times as many
        asked.append(trials)
        mean = 0.5 + (0.1 if trials >= 8 else -0.1) * (n > 17)
        return stores.IsrMeasurement(mean, 0.01, torch.zeros(2, 1), torch.ones(2, 1, dtype=torch.bool), 0)

    monkeypatch.setattr(stores, "measure_isr", noisy)
    c = stores.measure_capacity("relu", 8, around=17, trials=2)
    assert asked == [2, 2, 4, 4, 8, 8] and c.above.mean > c.below.mean


# --- the optimal linear store ---

def unit_keys(sets, n, d, seed=0):
    gen = torch.Generator().manual_seed(seed)
    return torch.nn.functional.normalize(torch.randn(sets, n, d, dtype=torch.float64, generator=gen), dim=-1)


def test_linear_read_isr_of_hebbian_and_least_squares_reads():
    keys = unit_keys(3, 10, 4)
    overlaps = keys @ keys.transpose(-1, -2)
    hebbian = (overlaps.pow(2).sum(-1) - 1).mean(-1)      # sum over i != j of c_ij^2, unit keys
    assert torch.allclose(stores.linear_read_isr(keys, keys.transpose(-1, -2)), hebbian)
    hat = keys @ torch.linalg.pinv(keys)                    # P = K K^+: E_v ISR_j = 1/P_jj - 1
    leverage = torch.diagonal(hat, dim1=-2, dim2=-1)
    assert torch.allclose(stores.linear_read_isr(keys, torch.linalg.pinv(keys)), (1 / leverage - 1).mean(-1))


@pytest.mark.parametrize("n, d", [(8, 4), (12, 4), (16, 8)])
def test_the_optimal_linear_read_attains_the_bound_and_least_squares_does_not(n, d):
    keys = unit_keys(4, n, d, seed=n)
    _, optimal = stores.optimal_linear_read(keys)
    bound = theory.linear_isr_bound(d, n)
    assert torch.allclose(optimal, torch.full_like(optimal, bound), atol=1e-8)
    least_squares = stores.linear_read_isr(keys, torch.linalg.pinv(keys))
    assert (least_squares > bound + 1e-4).all()


def test_no_linear_read_beats_the_bound():
    # random reads, far from optimal, never go below n/d - 1
    keys = unit_keys(200, 12, 4, seed=1)
    reads = torch.randn(200, 4, 12, dtype=torch.float64, generator=torch.Generator().manual_seed(2))
    assert (stores.linear_read_isr(keys, reads) >= theory.linear_isr_bound(4, 12) - 1e-12).all()


def test_an_isr_beyond_the_float_range_is_infinite_not_an_error():
    # d = 8, sigma = 1: some cues land nearer another key; at beta = 2000 the target's weight underflows
    m = stores.measure_isr("softmax", 8, 64, trials=50, seed=1, device="cpu", dtype=torch.float64, beta=2000.0,
                           query_noise=1.0)
    assert m.mean == math.inf and m.se == math.inf
    assert bool(torch.isinf(m.values).any()) and bool((m.values[torch.isfinite(m.values)] >= 0).all())


@pytest.mark.parametrize("n_memories", [2**10, 2**14, 2**16])
def test_interference_to_signal_streams_through_a_buffer_that_does_not_grow_with_the_memories(monkeypatch, n_memories):
    # chapter 5's million-memory read, scaled down: with a buffer of 2^12 entries, reading 64 queries against up to
    # 2^16 memories holds at most that buffer, not the 64 x n weights a dense read would, and still reads every memory
    monkeypatch.setattr(stores, "CHUNK_ELEMENTS", 2**12)
    keys, values = (x.double() for x in stores.random_memories(1, n_memories, 16, seed=0))
    memory = stores.build("softmax", keys, values, beta=4.0)
    isr, correct = stores.interference_to_signal(memory, 64)
    assert 0 < memory.buffer_elements <= stores.CHUNK_ELEMENTS < 64 * n_memories
    streamed = memory.read(keys[:, :64], torch.arange(64).unsqueeze(0))
    dense = dense_read("softmax", keys[:, :64], keys, values, torch.arange(64).unsqueeze(0), beta=4.0)
    assert rel_err(dense[0], streamed[0]) <= EXACT and rel_err(dense[1], streamed[1]) <= EXACT
    assert isr.shape == correct.shape == (1, 64)
