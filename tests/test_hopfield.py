"""pavlov.hopfield: the classical network recalls and descends its energy, its fixed points against their
definition, the dense memory against the classical one at degree 2 and beyond its capacity, and the
modern network's step against softmax attention.

Identities in float64 are checked to ``EXACT`` (see conftest); the binary networks' states are compared exactly.
"""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F
from conftest import DEVICE, EXACT, FLOAT_DTYPES, PROPERTY, batch_shapes, randn, rel_err, seeds
from hypothesis import given
from hypothesis import strategies as st

from pavlov import generator, hopfield, stores, theory

pytestmark = pytest.mark.usefixtures("one_thread")


def spins(seed: int, *shape: int, dtype=torch.float64) -> torch.Tensor:
    """Random ±1 entries."""
    return randn(seed, *shape, dtype=dtype).sign()


def flipped(x: torch.Tensor, bits: int, seed: int) -> torch.Tensor:
    """``x`` with ``bits`` random entries of each row flipped."""
    order = torch.rand(x.shape, generator=generator(seed, x.device), device=x.device).argsort(-1)
    return x * torch.ones_like(x).scatter_(-1, order[..., :bits], -1.0)


def couplings(patterns: torch.Tensor) -> torch.Tensor:
    """``N W = xi^T xi - P I``, the classical weights from their definition, in units of ``1/N`` (integers)."""
    n_patterns, n = patterns.shape[-2:]
    eye = torch.eye(n, dtype=patterns.dtype, device=patterns.device)
    return patterns.transpose(-1, -2) @ patterns - n_patterns * eye


def classical_energy(patterns, states):
    """``E = -s W s^T / 2``."""
    return -0.5 * ((states @ couplings(patterns)) * states).sum(-1) / patterns.shape[-1]


def dense_energy(patterns, states, degree=3):
    return -(states @ patterns.transpose(-1, -2)).pow(degree).sum(-1)


def is_fixed_point(patterns, states) -> torch.Tensor:
    """No bit's classical field has the opposite sign, ``[..., Q]`` (a zero field, exactly zero here, is stable)."""
    return ((states @ couplings(patterns)) * states >= 0).all(-1)


def seeded(seed: int = 0) -> torch.Generator:
    return generator(seed, DEVICE)


# --- the classical network ------------------------------------------------------------------------------------

def test_one_pattern_is_recalled_from_a_fifth_of_its_bits_flipped():
    pattern = spins(0, 1, 100)
    cue = flipped(pattern, 20, seed=1)
    result = hopfield.classical_recall(pattern, cue, generator=seeded())
    assert torch.equal(result.states, pattern)
    assert result.converged.all() and result.sweeps.tolist() == [2]       # one sweep to recall, one to see it stays


def test_stored_patterns_at_low_load_are_fixed_points():
    patterns = spins(1, 5, 200)                                          # P / N = 0.025
    result = hopfield.classical_recall(patterns, patterns, generator=seeded())
    assert torch.equal(result.states, patterns)
    assert result.converged.all() and (result.sweeps == 1).all()
    assert hopfield.stable_fraction(patterns).item() == 1.0


def test_converged_states_are_fixed_points():
    patterns = spins(2, 4, 20, 100)                                       # load 0.2: spurious states too
    result = hopfield.classical_recall(patterns, flipped(patterns, 15, seed=3), generator=seeded(1))
    assert result.converged.all()
    assert is_fixed_point(patterns, result.states).all()
    assert not torch.equal(result.states, patterns)                      # and not all of them the stored ones


@pytest.mark.parametrize("network, energy", [
    (hopfield.classical_recall, classical_energy),
    (lambda *args, **kwargs: hopfield.dense_recall(*args, degree=3, **kwargs), dense_energy)],
    ids=["classical", "dense"])
def test_energy_never_increases_from_sweep_to_sweep(network, energy):
    patterns = spins(4, 3, 30, 80)
    cues = spins(5, 3, 16, 80)                                            # random cues: many sweeps
    states = [cues] + [network(patterns, cues, max_sweeps=k, generator=seeded(2)).states for k in range(1, 7)]
    energies = torch.stack([energy(patterns, s) for s in states])       # (sweeps, 3, 16)
    assert (energies.diff(dim=0) <= EXACT).all()
    assert (energies[-1] < energies[0]).all()
    final = network(patterns, cues, generator=seeded(2))
    assert torch.equal(final.states[final.sweeps <= 6], states[-1][final.sweeps <= 6])   # settled: unchanged


def test_batch_elements_are_independent_and_shapes_broadcast():
    patterns = spins(6, 2, 3, 12, 50)
    cues = flipped(patterns[..., :4, :], 10, seed=7)
    batched = hopfield.classical_recall(patterns, cues, generator=seeded(3))
    assert batched.states.shape == (2, 3, 4, 50) and batched.sweeps.shape == batched.converged.shape == (2, 3, 4)
    for a in range(2):
        for b in range(3):
            alone = hopfield.classical_recall(patterns[a, b], cues[a, b], generator=seeded(3))
            for got, want in zip(batched, alone, strict=True):
                assert torch.equal(got[a, b], want)
    shared = hopfield.classical_recall(patterns[0, 0], cues[:, 0], generator=seeded(3))   # one store, two batches
    assert shared.states.shape == (2, 4, 50)
    assert torch.equal(shared.states[0], batched.states[0, 0])


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize("network", ["classical", "dense"])
def test_recall_keeps_device_and_dtype(dtype, network):
    recall = {"classical": hopfield.classical_recall,
              "dense": lambda *args, **kwargs: hopfield.dense_recall(*args, degree=3, **kwargs)}[network]
    patterns = spins(8, 2, 6, 40, dtype=dtype)
    cues = flipped(patterns, 12, seed=9)
    result = recall(patterns, cues, generator=seeded())
    assert result.states.dtype == dtype and result.states.device == patterns.device
    assert result.sweeps.dtype == torch.long and result.converged.dtype == torch.bool
    assert result.sweeps.device == result.converged.device == patterns.device
    reference = recall(patterns.double(), cues.double(), generator=seeded())
    assert torch.equal(result.states.double(), reference.states)      # integer sums: exact in float32 too
    assert torch.equal(result.sweeps, reference.sweeps)


def test_a_cue_that_never_settles_reports_max_sweeps():
    patterns = spins(10, 30, 60)
    result = hopfield.classical_recall(patterns, spins(11, 8, 60), max_sweeps=1, generator=seeded())
    assert (result.sweeps == 1).all()
    assert torch.equal(result.converged, (result.states == spins(11, 8, 60)).all(-1))   # settled iff unchanged


@PROPERTY
@given(batch=batch_shapes, p=st.integers(1, 8), n=st.integers(2, 24), q=st.integers(1, 4),
       max_sweeps=st.integers(1, 4), seed=seeds)
def test_recall_returns_spins_within_max_sweeps_and_degree_two_is_classical(batch, p, n, q, max_sweeps, seed):
    patterns, cues = spins(seed, *batch, p, n), spins(seed + 1, *batch, q, n)
    result = hopfield.classical_recall(patterns, cues, max_sweeps=max_sweeps, generator=seeded(seed))
    assert result.states.shape == (*batch, q, n) and (result.states.abs() == 1).all()
    assert ((1 <= result.sweeps) & (result.sweeps <= max_sweeps)).all()
    assert (result.converged | (result.sweeps == max_sweeps)).all()
    assert is_fixed_point(patterns, result.states)[result.converged].all()
    dense = hopfield.dense_recall(patterns, cues, degree=2, max_sweeps=max_sweeps, generator=seeded(seed))
    for got, want in zip(dense, result, strict=True):
        assert torch.equal(got, want)


# --- stable patterns ------------------------------------------------------------------------------------------

def test_orthogonal_patterns_are_all_stable():
    hadamard = torch.ones(1, 1, dtype=torch.float64, device=DEVICE)
    for _ in range(4):                                                    # Sylvester's construction: 16 x 16
        hadamard = torch.cat([torch.cat([hadamard, hadamard], 1), torch.cat([hadamard, -hadamard], 1)], 0)
    assert torch.equal(hadamard @ hadamard.T, 16 * torch.eye(16, dtype=torch.float64, device=DEVICE))
    assert hopfield.stable_fraction(hadamard[:4]).item() == 1.0
    assert hopfield.stable_fraction(hadamard[[1, 2, 4, 8]].float()).item() == 1.0


def test_stable_fraction_matches_a_loop_over_bits():
    patterns = spins(12, 3, 2, 14, 30)                                    # load ~0.5: some stable, most not
    weights = couplings(patterns)                                        # integers: a zero field is exactly zero
    reference = torch.zeros(3, 2, dtype=torch.float64)
    for a in range(3):
        for b in range(2):
            for mu in range(14):
                xi = patterns[a, b, mu]
                fields = [sum(weights[a, b, i, j] * xi[j] for j in range(30) if j != i) for i in range(30)]
                reference[a, b] += all(h * x >= 0 for h, x in zip(fields, xi, strict=True)) / 14
    got = hopfield.stable_fraction(patterns)
    assert got.shape == (3, 2) and got.dtype == torch.float64
    assert torch.allclose(got.cpu(), reference, atol=EXACT, rtol=0)
    assert 0 < reference.sum() < 6                                         # neither all nor none


# --- the dense memory -----------------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_degree_two_is_the_classical_network(dtype):
    patterns = spins(13, 2, 25, 100, dtype=dtype)
    cues = flipped(patterns[:, :10], 20, seed=14)
    classical = hopfield.classical_recall(patterns, cues, generator=seeded(5))
    dense = hopfield.dense_recall(patterns, cues, degree=2, generator=seeded(5))
    assert int(classical.sweeps.max()) > 2                                # the dynamics did something
    for got, want in zip(dense, classical, strict=True):
        assert torch.equal(got, want)


def test_dense_memory_recalls_beyond_the_classical_capacity():
    patterns = spins(15, 4, 40, 100)                                      # P / N = 0.4, about 3 times 0.138
    cues = flipped(patterns, 5, seed=16)                                  # 5% of the bits flipped
    overlap = {}
    for name, degree in (("classical", None), ("cubic", 3), ("quartic", 4)):
        recall = (hopfield.classical_recall(patterns, cues, generator=seeded(6)) if degree is None else
                  hopfield.dense_recall(patterns, cues, degree=degree, generator=seeded(6)))
        assert recall.converged.all()
        overlap[name] = (recall.states * patterns).mean(-1)
    assert overlap["classical"].mean() < 0.7
    assert (overlap["cubic"] == 1).all() and (overlap["quartic"] == 1).all()


def test_dense_memory_refuses_a_degree_that_overflows():
    patterns = spins(17, 3, 8, dtype=torch.float32)
    with pytest.raises(ValueError, match=r"\bdegree\b"):
        hopfield.dense_recall(patterns, patterns, degree=60)             # 9^60 > float32's largest
    hopfield.dense_recall(patterns.double(), patterns.double(), degree=60)


# --- the modern network ---------------------------------------------------------------------------------------

@PROPERTY
@given(batch=batch_shapes, n=st.integers(1, 9), d=st.integers(1, 8), q=st.integers(1, 5),
       beta=st.floats(0.1, 8.0), seed=seeds)
def test_one_step_is_softmax_attention(batch, n, d, q, beta, seed):
    patterns, cues = randn(seed, *batch, n, d), randn(seed + 1, *batch, q, d)
    state = hopfield.modern_retrieve(cues, patterns, beta=beta)
    targets = torch.zeros(cues.shape[:-1], dtype=torch.long, device=DEVICE)
    read = stores.build("softmax", patterns, patterns, beta=beta).read(cues, targets)[0]
    attention = F.scaled_dot_product_attention(cues, patterns, patterns, scale=beta)
    assert state.shape == (*batch, q, d)
    assert torch.allclose(state, read, atol=EXACT, rtol=0)
    assert torch.allclose(state, attention, atol=EXACT, rtol=0)


def test_steps_are_repeated_single_steps():
    patterns, cues = randn(18, 2, 6, 5), randn(19, 2, 3, 5)
    state = cues
    for _ in range(4):
        state = hopfield.modern_retrieve(state, patterns, beta=1.5)
    assert rel_err(state, hopfield.modern_retrieve(cues, patterns, beta=1.5, steps=4)) <= EXACT


def test_large_beta_retrieves_the_nearest_pattern_in_one_step():
    patterns = F.normalize(randn(20, 5, 64), dim=-1)                      # overlaps about 1/8: well separated
    assert (patterns @ patterns.T - torch.eye(5, dtype=torch.float64, device=DEVICE)).abs().max() < 0.5
    cues = F.normalize(patterns + 0.2 * randn(21, 5, 64) / 8, dim=-1)     # each near its own pattern
    state = hopfield.modern_retrieve(cues, patterns, beta=100.0)
    assert (state - patterns).abs().max() < 1e-6


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float32])
def test_modern_retrieve_keeps_dtype_and_runs_half_in_float32(dtype):
    patterns, cues = randn(22, 2, 6, 5), randn(23, 2, 3, 5)
    state = hopfield.modern_retrieve(cues.to(dtype), patterns.to(dtype), beta=2.0, steps=2)
    assert state.dtype == dtype and state.device == cues.device
    reference = hopfield.modern_retrieve(cues.to(dtype).double(), patterns.to(dtype).double(), beta=2.0, steps=2)
    assert rel_err(reference, state.double()) <= {torch.float32: 1e-6}.get(dtype, 1e-2)


def test_random_patterns_and_flipped_cues():
    gen = torch.Generator().manual_seed(4)
    patterns = hopfield.random_patterns(50, 20, 400, generator=gen, device="cpu", dtype=torch.float64)
    assert patterns.shape == (50, 20, 400) and patterns.dtype == torch.float64
    assert bool(patterns.abs().eq(1).all())
    assert abs(patterns.mean().item()) < 5 / math.sqrt(patterns.numel())
    cues = hopfield.flip_bits(patterns, 0.1, generator=gen)
    overlap = (cues * patterns).mean().item()                      # 1 - 2 f on average
    assert abs(overlap - 0.8) < 5 * 0.6 / math.sqrt(patterns.numel())
    assert torch.equal(hopfield.flip_bits(patterns, 0.0, generator=gen), patterns)
    assert torch.equal(hopfield.flip_bits(patterns, 1.0, generator=gen), -patterns)


# --- synchronous updates, the cost of a pass, the modern network's mean field ----------------------------------

def test_synchronous_recall_recalls_one_pattern_and_stops_at_fixed_points():
    pattern = spins(20, 1, 100)
    result = hopfield.synchronous_recall(pattern, flipped(pattern, 20, seed=21))
    assert torch.equal(result.states, pattern) and result.sweeps.tolist() == [2] and result.converged.all()
    patterns = spins(22, 3, 20, 100)                                      # load 0.2
    settled = hopfield.synchronous_recall(patterns, flipped(patterns, 10, seed=23))
    fixed = settled.states[settled.converged]
    assert settled.converged.any()
    assert is_fixed_point(patterns.unsqueeze(-3).expand(3, 20, 20, 100)[settled.converged], fixed.unsqueeze(-2)).all()


@given(p=st.integers(1, 6), n=st.integers(4, 24), seed=seeds)
@PROPERTY
def test_synchronous_and_asynchronous_recall_share_their_fixed_points(p, n, seed):
    patterns = spins(seed, 2, p, n)
    fixed = hopfield.classical_recall(patterns, spins(seed + 1, 2, 3, n), generator=seeded(seed)).states
    result = hopfield.synchronous_recall(patterns, fixed)
    assert torch.equal(result.states, fixed) and (result.sweeps == 1).all()


def test_pass_flops_count_the_products():
    assert hopfield.pass_flops("synchronous", 10, 100) == 4 * 10 * 100
    assert hopfield.pass_flops("dense", 10, 100) == 9 * 10 * 100
    assert hopfield.pass_flops("modern", 10, 100) == 4 * 10 * 100 + 30


def test_modern_mean_field_weight_is_a_fixed_point_and_jumps_at_the_threshold():
    for n, d, beta in ((64, 32, 4.0), (64, 32, 12.0), (1024, 32, 20.0), (60, 200, 14.0)):
        m = theory.modern_retrieval_weight(n, d, beta)
        assert math.isclose(m, 1 / (1 + (n - 1) * math.exp(beta**2 * m**2 / (2 * d) - beta * m)), rel_tol=1e-9)
    critical = [theory.modern_critical_beta(n, 32) for n in (16, 64, 256, 1024)]
    assert critical == sorted(critical) and critical[-1] < 64
    beta = critical[1]
    assert theory.modern_retrieval_weight(64, 32, 0.99 * beta) < 0.1 < 0.5 < theory.modern_retrieval_weight(64, 32, 1.01 * beta)


def test_modern_network_collapses_below_the_threshold_and_retrieves_above():
    patterns, _ = stores.random_memories(8, 64, 32, seed=0, dtype=torch.float64)
    beta = theory.modern_critical_beta(64, 32)
    targets = torch.arange(64)
    for factor, expected in ((0.7, False), (1.5, True)):
        state = hopfield.modern_retrieve(patterns, patterns, beta=factor * beta, steps=100)
        kept = ((state @ patterns.transpose(-1, -2)).argmax(-1) == targets).double().mean().item()
        assert (kept > 0.9) if expected else (kept < 0.1)
