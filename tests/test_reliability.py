"""Reliability: the same seed reproduces every draw bit for bit, in one process and across processes;
the streaming stores and the chunkwise rules keep their memory bounded as the problem grows; and the
computations stay accurate at the edges of their range (a softmax store's large inverse temperature,
forgetting rates next to one, half-precision inputs).

Half precision on the CPU. Every function gets float16 and bfloat16 inputs and is compared with
float64 on the same (rounded) inputs, at two sizes 16x apart; u is the half format's unit roundoff.
It must either compute correctly (error within a few u and not growing with the size, as with
float32 accumulation) or refuse with a TypeError/ValueError that names the parameter. Every one
computes correctly: the sequence memories (pavlov._precision.float32_accumulation) run half inputs in
float32 and return half, and the streaming stores sum their chunks in float32. Kept in half
precision, a recurrent state's error grows as sqrt(T) (15 u at T = 4096 for the Hebbian rule), a
bfloat16 decay gamma * S rounds back to S and stops forgetting, and the chunkwise delta rule's
triangular solve has no half kernel on the CPU.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from conftest import rel_err

import pavlov as pv
from pavlov import attention, conditioning, drift, mqar, phenomena, rules, stacking, stores, theory

pytestmark = pytest.mark.usefixtures("one_thread")
HERE = Path(__file__).resolve().parent
CPU = "cpu"


# --- determinism --------------------------------------------------------------------------------

def _stimuli(seed):
    return pv.random_stimuli(4, 32, 16, generator=pv.generator(seed, CPU), device=CPU)


def _isr(seed):
    m = stores.measure_isr("softmax", 16, 64, trials=3, seed=seed, device=CPU)
    return m.values, m.correct


def _delta_chunkwise(seed):
    gen = pv.generator(seed, CPU)
    q, k, v = (pv.random_stimuli(2, 200, 16, generator=gen, device=CPU) for _ in range(3))
    beta = torch.rand(2, 200, generator=gen, device=CPU)
    return rules.delta(q, k, v, beta=beta, chunk_size=64)


def _generalisation(seed):
    gen = pv.generator(seed, CPU)
    cs = pv.random_stimuli(3, 16, generator=gen, device=CPU)
    return (conditioning.generalisation_tests(cs, [1.0, 0.5, 0.0, -0.5], generator=gen),)


def _phenomena_stimuli(seed):
    return tuple(phenomena.stimuli("ABCX", 8, seed=seed, device=CPU).values())


def _chain(seed):
    m = stacking.measure_chain(16, 16, heads=2, layers=3, trials=200, seed=seed, device=CPU)
    return m.head_failed, m.layer_failed


def _margins(seed):
    return (stacking.head_margins(16, 16, trials=20, seed=seed, device=CPU),)


def _drift(seed):
    run = drift.concept_drift("delta", n_pairs=8, d=16, epochs_before=3, epochs_after=3, trials=4, beta=0.5,
                              seed=seed, device=CPU)
    return run.quality, run.norm


def _mqar_training(seed):
    trained = mqar.train(mqar.Vocabulary(8, 8), layer="delta", d_key=8, d_model=16, pairs=(2, 3), steps=3, batch=4,
                         seed=seed, device=CPU)
    return (torch.tensor(trained.losses, dtype=torch.float64), *trained.model.state_dict().values())


COMPUTATIONS = {"random_stimuli": _stimuli, "measure_isr": _isr, "delta_chunkwise": _delta_chunkwise,
                "generalisation_tests": _generalisation, "phenomena_stimuli": _phenomena_stimuli,
                "measure_chain": _chain, "head_margins": _margins, "concept_drift": _drift,
                "mqar_train": _mqar_training}


def digest(name: str, seed: int) -> str:
    """The sha256 of the dtype, shape and bytes of every tensor that computation ``name`` returns for ``seed``."""
    h = hashlib.sha256()
    for x in COMPUTATIONS[name](seed):
        x = x.detach().contiguous()
        h.update(f"{x.dtype}{tuple(x.shape)}".encode())
        h.update(x.numpy().tobytes())
    return h.hexdigest()


def _digests_in_fresh_process() -> dict[str, str]:
    code = ("import json, torch; torch.set_num_threads(1); import test_reliability as t; "
            "print(json.dumps({name: t.digest(name, 0) for name in t.COMPUTATIONS}))")
    env = {key: value for key, value in os.environ.items() if key != "PAVLOV_SEED"}
    # the tests import the repository's tools (pytest puts the root on the path, through its conftest.py)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, (str(HERE.parent), env.get("PYTHONPATH"))))
    done = subprocess.run([sys.executable, "-c", code], cwd=HERE, env=env, capture_output=True, text=True, check=True)
    return json.loads(done.stdout)


@pytest.fixture
def no_pavlov_seed(monkeypatch):
    monkeypatch.delenv("PAVLOV_SEED", raising=False)


@pytest.mark.usefixtures("no_pavlov_seed")
@pytest.mark.parametrize("name", COMPUTATIONS)
def test_same_seed_same_bits_and_other_seed_other_bits(name):
    assert digest(name, 0) == digest(name, 0)
    assert digest(name, 0) != digest(name, 1)


@pytest.mark.usefixtures("no_pavlov_seed")
def test_same_seed_same_bits_across_processes():
    first, second = _digests_in_fresh_process(), _digests_in_fresh_process()
    assert first == second
    here = {name: digest(name, 0) for name in COMPUTATIONS}    # one thread here too (pytestmark)
    assert first == here


@pytest.mark.parametrize("name", COMPUTATIONS)
def test_pavlov_seed_moves_the_draws_and_reproduces_them(name, monkeypatch):
    monkeypatch.delenv("PAVLOV_SEED", raising=False)
    unset = digest(name, 0)
    monkeypatch.setenv("PAVLOV_SEED", "0")       # the documented default: no change
    assert digest(name, 0) == unset
    monkeypatch.setenv("PAVLOV_SEED", "1")
    one = digest(name, 0)
    monkeypatch.setenv("PAVLOV_SEED", "2")
    two = digest(name, 0)
    monkeypatch.setenv("PAVLOV_SEED", "1")
    assert digest(name, 0) == one
    assert len({unset, one, two}) == 3


# --- bounded memory -----------------------------------------------------------------------------
#
# Each figure is the peak resident memory a call adds, measured in a fresh process as benchmarks/run.py
# measures the softmax store (store_peak_cpu, reused here): a warm-up call, then Linux's high-water mark
# reset to the current resident size, the call, and the new high-water mark minus the old. glibc's mmap
# threshold is fixed, so every freed buffer goes back to the system and the resident size follows the
# buffers alive rather than the allocator's free lists.

STORE_QUERIES, STORE_DIM, STORE_SIZES = 256, 8, (2**14, 2**18)
RULE_DIM, RULE_SIZES, RULE_CHUNK = 64, (2**10, 2**14), 64
ALLOWANCE = 16 * 2**20       # fixed: the outputs of a store read, a block of chunks' work buffers, allocator slack
FLOAT32 = 4

MEMORY_SCRIPT = """
import json, sys, torch
from pathlib import Path
import pavlov as pv
from benchmarks.run import _high_water_bytes, store_peak_cpu
torch.set_num_threads(1)
queries, store_dim, store_sizes, rule_dim, rule_sizes, chunk = json.loads(sys.argv[1])

def grown(call):
    Path("/proc/self/clear_refs").write_text("5")          # the high-water mark := the resident size now
    before = _high_water_bytes()
    call()
    return _high_water_bytes() - before

def relu_read(n):
    keys, values = pv.stores.random_memories(1, n, store_dim, seed=n, device="cpu")
    memory = pv.stores.build("relu", keys, values)
    return lambda: memory.read(keys[:, :queries], torch.arange(queries)[None])

def rule(name, length):
    gen = pv.generator(length, "cpu")
    q, k, v = (pv.random_stimuli(1, length, rule_dim, generator=gen, device="cpu") for _ in range(3))
    rate = {"hebbian": {}, "decay": {"gamma": 0.99}, "delta": {"beta": 0.5}}[name]
    return lambda: pv.rules.RULES[name](q, k, v, chunk_size=chunk, **rate)

peaks = {"softmax": [store_peak_cpu(n, queries, store_dim) for n in store_sizes]}
reads = [relu_read(n) for n in store_sizes]
reads[0]()                                                  # warm up at the small size
peaks["relu"] = [grown(read) for read in reads]
del reads
for name in ("hebbian", "decay", "delta"):
    calls = [rule(name, length) for length in rule_sizes]
    calls[0]()
    peaks[name] = [grown(call) for call in calls]
print(json.dumps(peaks))
"""


@pytest.fixture(scope="module")
def peaks() -> dict[str, list[int]]:
    """Peak extra resident bytes of each store read and chunkwise rule at the two sizes, from one fresh process."""
    if not Path("/proc/self/clear_refs").exists():
        pytest.skip("needs Linux's /proc/self/clear_refs to reset the high-water mark")
    sizes = json.dumps([STORE_QUERIES, STORE_DIM, STORE_SIZES, RULE_DIM, RULE_SIZES, RULE_CHUNK])
    done = subprocess.run([sys.executable, "-c", MEMORY_SCRIPT, sizes], cwd=HERE.parent, capture_output=True,
                          text=True, check=True, env={**os.environ, "MALLOC_MMAP_THRESHOLD_": str(2**16)})
    return json.loads(done.stdout)


@pytest.mark.parametrize("store", ["relu", "softmax"])
def test_store_read_memory_does_not_grow_with_the_memories(store, peaks):
    # A read streams over chunks of at most CHUNK_ELEMENTS overlaps and holds two such buffers at once
    # (a chunk's overlaps and its weights, or the last chunk's logits while the next are made): the
    # budget does not depend on n. A dense read of the larger store would hold m x n floats, 256 MiB.
    budget = 2 * stores.CHUNK_ELEMENTS * FLOAT32 + ALLOWANCE
    assert STORE_QUERIES * STORE_SIZES[-1] * FLOAT32 > 4 * budget      # the test can tell streaming from dense
    for n, grown in zip(STORE_SIZES, peaks[store]):
        assert grown <= budget, f"a read of {n} memories added {grown / 2**20:.1f} MiB"


@pytest.mark.parametrize("rule", ["hebbian", "decay", "delta"])
def test_chunkwise_rule_memory_grows_linearly_with_the_length(rule, peaks):
    # What scales with T is the inputs, the outputs (made twice: per block, then concatenated) and the
    # per-step rates; the state and a block's work buffers are fixed. So the extra memory is at most the
    # inputs' size plus the allowance, and each further step adds at most the inputs' bytes per step
    # (2 d_k + d_v floats; the outputs made twice are 2 d_v). A form quadratic in T would add T floats
    # per step (the T x T scores: 1 GiB at T = 2^14).
    per_step = 3 * RULE_DIM * FLOAT32
    for length, grown in zip(RULE_SIZES, peaks[rule]):
        assert grown <= per_step * length + ALLOWANCE, f"T = {length} added {grown / 2**20:.1f} MiB"
    (short, long), (small, large) = RULE_SIZES, peaks[rule]
    assert (large - small) / (long - short) <= per_step


# --- numerical range: softmax stores at a large inverse temperature ------------------------------

@pytest.mark.parametrize("d", [16, 64])
@pytest.mark.parametrize("beta", [None, 100.0])
def test_softmax_store_large_beta_is_finite_and_keeps_the_signal(d, beta):
    # e^(beta c) overflows float32 for beta c > 88; the streaming read subtracts the running maximum, so
    # none of it may show. A float32 overlap of unit vectors errs by at most d u, a logit by beta d u, a
    # weight (numerator and normaliser) by twice that, relatively; the n positive weights add n u more.
    n, m = 10_000, 256
    keys, values = stores.random_memories(1, n, d, seed=d, device=CPU, dtype=torch.float64)
    targets = torch.arange(m).expand(1, m)
    reference, ref_weight = stores.build("softmax", keys, values, beta=beta).read(keys[:, :m], targets)
    memory = stores.build("softmax", keys.float(), values.float(), beta=beta, chunk_size=1000)   # ten chunks
    retrieved, weight = memory.read(keys[:, :m].float(), targets)
    isr, _ = stores.interference_to_signal(memory, m)
    assert torch.isfinite(retrieved).all() and torch.isfinite(weight).all() and torch.isfinite(isr).all()
    bound = 2 * memory.beta * theory.rounding_scale(d, "float32") + theory.rounding_scale(n, "float32")
    assert rel_err(reference, retrieved) <= bound
    assert rel_err(ref_weight, weight) <= bound
    if beta == 100.0:
        # the interference weighs e^(beta (c - 1)) per memory; on the sphere E e^(beta c) ~ e^beta beta^-(d-1)/2,
        # so all 10^4 others together weigh ~1e-5 of the target at d = 16: every stored key recalls its value
        cosine = torch.nn.functional.cosine_similarity(retrieved.double(), values[:, :m], dim=-1)
        assert cosine.min() > 0.99


# --- numerical range: forgetting rates next to one ---------------------------------------------

DECAY_LENGTH, DECAY_DIM = 4096, 16


@pytest.fixture(scope="module")
def decay_inputs():
    """Unit q, k, v ``[T, d]`` and the Hebbian rule's outputs in both forms, per dtype."""
    made = {}
    for dtype in (torch.float32, torch.float64):
        gen = pv.generator(0, CPU)
        q, k, v = (pv.random_stimuli(DECAY_LENGTH, DECAY_DIM, generator=gen, device=CPU, dtype=dtype) for _ in range(3))
        hebbian = {size: rules.hebbian(q, k, v, chunk_size=size)[0] for size in (None, 64)}
        made[dtype] = (q, k, v, hebbian)
    return made


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("gamma", [1 - 1e-6, 1 - 1e-9, 1.0])
def test_decay_next_to_one_agrees_across_forms_and_with_hebbian(gamma, dtype, decay_inputs):
    q, k, v, hebbian = decay_inputs[dtype]
    recurrent = rules.decay(q, k, v, gamma=gamma)[0]
    chunkwise = rules.decay(q, k, v, gamma=gamma, chunk_size=64)[0]
    assert torch.isfinite(recurrent).all() and torch.isfinite(chunkwise).all()
    # each output accumulates up to T outer products into the state and d_k more in the product with the
    # query; each form errs by at most the rounding scale of that depth
    rounding = theory.rounding_scale(DECAY_LENGTH + DECAY_DIM, dtype)
    assert rel_err(recurrent, chunkwise) <= 2 * rounding
    # the decay weighs a pair written a steps ago by gamma^a >= 1 - a (1 - gamma): within T (1 - gamma) of
    # Hebbian, with gamma as the dtype holds it (1 - 1e-9 is 1 in float32)
    forgetting = DECAY_LENGTH * (1 - torch.tensor(gamma, dtype=dtype).item())
    for size, out in ((None, recurrent), (64, chunkwise)):
        assert rel_err(hebbian[size], out) <= forgetting + 2 * rounding


# --- half precision ------------------------------------------------------------------------------
#
# An implementation that accumulates in float32 rounds a value to the half format a few times on its
# way to an output: the inputs it hands to each product in half (scores, weights, the state) and the
# output, at most 4 roundings of relative size <= u. A condition factor g multiplies them: the kernel
# (c^p) turns a relative overlap error into p times as much, the softmax (e^(beta c)) an absolute logit
# error beta |c| u into a relative weight error, and least squares amplifies by the condition number of
# the keys. The float32 sums of `depth` terms add rounding_scale(depth, float32). So the error must stay
# below 4 g u + rounding_scale(depth, float32) at both sizes, and must not grow by more than 2x when the
# size grows 16x: float32 sums keep it nearly constant (at most 1.5x here: their share is <= 0.5 u at
# 4096 terms), while a sum kept in half precision grows like sqrt(size), 4x.

HALF = (torch.float16, torch.bfloat16)
HALF_SIZES = (256, 4096)
HALF_DIM = 16
HALF_GAMMA = 1 - 2**-8     # the slowest forgetting bfloat16 holds exactly (8 significant bits)
GROWTH = 2.0

def _sequence(name, call, condition=1.0):
    return pytest.param(call, condition, id=name)


SEQUENCE_CASES = [
    _sequence("linear_attention/recurrent", lambda q, k, v: attention.linear_attention(q, k, v, form="recurrent")),
    _sequence("linear_attention/parallel", lambda q, k, v: attention.linear_attention(q, k, v, form="parallel")),
    _sequence("linear_attention/chunkwise", lambda q, k, v: attention.linear_attention(q, k, v, form="chunkwise")),
    # unit vectors, scale 1/sqrt(d): logits at most 1/sqrt(d)
    _sequence("softmax_attention", attention.softmax_attention, condition=1 + 1 / math.sqrt(HALF_DIM)),
    _sequence("hebbian/recurrent", lambda q, k, v: rules.hebbian(q, k, v)[0]),
    _sequence("hebbian/chunkwise", lambda q, k, v: rules.hebbian(q, k, v, chunk_size=64)[0]),
    _sequence("decay/recurrent", lambda q, k, v: rules.decay(q, k, v, gamma=HALF_GAMMA)[0]),
    _sequence("decay/chunkwise", lambda q, k, v: rules.decay(q, k, v, gamma=HALF_GAMMA, chunk_size=64)[0]),
    _sequence("delta/recurrent", lambda q, k, v: rules.delta(q, k, v, beta=0.5)[0]),
    _sequence("delta/chunkwise", lambda q, k, v: rules.delta(q, k, v, beta=0.5, chunk_size=64)[0]),
]


def _refused(error: Exception, names) -> bool:
    """Whether ``error`` is a clear refusal: a TypeError or ValueError whose message names one of ``names``."""
    return isinstance(error, (TypeError, ValueError)) and any(f"{name} " in str(error) for name in names)


def _half_errors(run, inputs, dtype, names) -> list[float] | None:
    """Relative errors against float64 of ``run`` on each size's ``inputs`` rounded to ``dtype``; None if refused."""
    errors = []
    for tensors in inputs:
        rounded = [x.to(dtype) for x in tensors]
        try:
            outs = run(*rounded)
        except (TypeError, ValueError) as error:
            assert _refused(error, names), f"unclear refusal: {error}"
            return None
        references = run(*(x.double() for x in rounded))
        for out in outs:
            assert out.dtype == dtype and torch.isfinite(out).all()
        errors.append(max(rel_err(ref, out) for ref, out in zip(references, outs)))
    return errors


def _check_half(errors, dtype, condition):
    u = theory.UNIT_ROUNDOFF[str(dtype).removeprefix("torch.")]
    for size, error in zip(HALF_SIZES, errors):
        assert error <= 4 * condition * u + theory.rounding_scale(size, "float32"), f"{error / u:.2f} u at {size}"
    assert errors[1] <= GROWTH * errors[0], f"{errors[0] / u:.2f} u -> {errors[1] / u:.2f} u"


@pytest.fixture(scope="module")
def half_sequences():
    """Unit q, k, v ``[T, d]`` in float64 at each length of HALF_SIZES."""
    gen = pv.generator(0, CPU)
    return [[pv.random_stimuli(length, HALF_DIM, generator=gen, device=CPU, dtype=torch.float64) for _ in range(3)]
            for length in HALF_SIZES]


@pytest.mark.parametrize("dtype", HALF, ids=str)
@pytest.mark.parametrize("call, condition", SEQUENCE_CASES)
def test_half_precision_sequences(call, condition, dtype, half_sequences):
    errors = _half_errors(lambda q, k, v: (call(q, k, v),), half_sequences, dtype, ("q", "k", "v"))
    if errors is not None:
        _check_half(errors, dtype, condition)


def _store(name, **params):
    return pytest.param(name, params, id=name)


STORE_CASES = [_store("hebbian"), _store("least_squares"), _store("relu"), _store("relu2"),
               _store("polynomial", degree=3), _store("softmax")]


@pytest.fixture(scope="module")
def half_memories():
    """Unit keys and values ``[1, n, d]`` in float64 for each n of HALF_SIZES."""
    return [stores.random_memories(1, n, HALF_DIM, seed=n, device=CPU, dtype=torch.float64) for n in HALF_SIZES]


@pytest.mark.parametrize("dtype", HALF, ids=str)
@pytest.mark.parametrize("store, params", STORE_CASES)
def test_half_precision_stores(store, params, dtype, half_memories):
    m = HALF_SIZES[0]
    chunked = {} if store in ("hebbian", "least_squares") else {"chunk_size": 64}   # n / 64 chunks: 4, then 64

    def read(keys, values):
        return stores.build(store, keys, values, **params, **chunked).read(keys[:, :m], torch.arange(m)[None])

    errors = _half_errors(read, half_memories, dtype, ("keys", "values", "queries"))
    if errors is None:
        return
    condition = {"relu2": 2, "polynomial": params.get("degree"), "softmax": 1 + math.sqrt(HALF_DIM)}.get(store, 1)
    if store == "least_squares":
        condition = max(torch.linalg.cond(keys.to(dtype).double()[0]).item() for keys, _ in half_memories)
    _check_half(errors, dtype, condition)
