"""pavlov.stacking: the stack against the chapter-2 circuit and a direct sum over heads, the chain task against
the literal stack, the failure counts, the margins and the Cramér rate, and the input checks.

Identities in float64 are checked to ``EXACT`` (see conftest); counts of failures are checked where they are
exact (one head, two items, independent readouts of one head) or against binomial standard errors.
"""

from __future__ import annotations

import math

import pytest
import torch
from conftest import DEVICE, EXACT, FLOAT_DTYPES, PROPERTY, cases, cpu, meta, randn, rel_err, seeds
from hypothesis import given
from hypothesis import strategies as st

import pavlov as pv
from pavlov import stacking, stores
from pavlov.conditioning import ConditioningCircuit
from pavlov.maps import NORMS

pytestmark = pytest.mark.usefixtures("one_thread")


def random_stack(seed, layers, heads, d_model, d_k, d_v=None, *, device=DEVICE, dtype=torch.float64, **options):
    return stacking.ConditioningStack.random(layers, heads, d_model, d_k, d_v, generator=pv.generator(seed, device),
                                             device=device, dtype=dtype, **options)


# --- the stack ----------------------------------------------------------------------------------

@pytest.mark.parametrize("feature_map", [None, "elu+1", "tanh"])
@pytest.mark.parametrize("norm", NORMS)
def test_one_layer_one_head_is_the_conditioning_circuit(feature_map, norm):
    stack = random_stack(0, 1, 1, 12, 5, 7, feature_map=feature_map, norm=norm)
    x = randn(1, 3, 20, 12)
    circuit = ConditioningCircuit(stack.W_Q[0, 0], stack.W_K[0, 0], stack.W_V[0, 0], f=feature_map, norm=norm)
    assert rel_err(circuit(x) @ stack.W_O[0, 0], stack(x) - x) < EXACT


@given(seed=seeds, layers=st.integers(1, 3), heads=st.integers(1, 4), d_k=st.integers(1, 6), T=st.integers(1, 9))
@PROPERTY
def test_stack_is_a_sum_of_circuits_layer_by_layer(seed, layers, heads, d_k, T):
    # the definition, head by head: X_l = X_{l-1} + sum_h circuit_h(X_{l-1}) W_O^h
    d_model = 8
    stack = random_stack(seed, layers, heads, d_model, d_k, d_k + 1, feature_map="elu+1", norm="layer")
    x = randn(seed + 1, 2, T, d_model)
    expected = x
    for layer in range(layers):
        expected = expected + sum(ConditioningCircuit(stack.W_Q[layer, h], stack.W_K[layer, h], stack.W_V[layer, h],
                                                      f="elu+1", norm="layer")(expected) @ stack.W_O[layer, h]
                                  for h in range(heads))
    assert rel_err(expected, stack(x)) < EXACT


@pytest.mark.parametrize("device", [str(DEVICE), "meta"])
@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize("batch", [(), (3,), (2, 4)])
def test_stack_shapes_devices_dtypes(device, dtype, batch):
    stack = random_stack(0, 2, 3, 10, 4, 6, device="cpu", dtype=dtype)
    if device == "meta":
        stack = stacking.ConditioningStack(*(W.to("meta") for W in (stack.W_Q, stack.W_K, stack.W_V, stack.W_O)))
    x = torch.zeros(*batch, 7, 10, device=device, dtype=dtype)
    responses = stack.head_responses(x, 1)
    out = stack(x)
    assert responses.shape == (*batch, 3, 7, 6) and out.shape == (*batch, 7, 10)
    for y in (responses, out):
        assert y.device.type == torch.device(device).type and y.dtype == dtype
    assert (stack.layers, stack.heads, stack.d_model) == (2, 3, 10)


def test_random_stack_draws_on_its_device_in_its_dtype():
    stack = random_stack(0, 2, 2, 6, 3, device=DEVICE, dtype=torch.float32)
    for W in (stack.W_Q, stack.W_K, stack.W_V, stack.W_O):
        assert W.device.type == DEVICE.type and W.dtype == torch.float32
    assert stack.W_V.shape == (2, 2, 6, 3)                                   # d_v defaults to d_k
    same = random_stack(0, 2, 2, 6, 3, device=DEVICE, dtype=torch.float32)
    assert torch.equal(stack.W_O, same.W_O)                                  # seeded


W = cpu(2, 3, 8, 4)
BAD_STACKS = cases(
    ("W_Q not 4-D", dict(W_Q=cpu(3, 8, 4)), ValueError, "W_Q"),
    ("W_K shape", dict(W_K=cpu(2, 3, 8, 5)), ValueError, "W_K"),
    ("W_V heads", dict(W_V=cpu(2, 2, 8, 4)), ValueError, "W_V"),
    ("W_O shape", dict(W_O=cpu(2, 3, 4, 7)), ValueError, "W_O"),
    ("W_O dtype", dict(W_O=cpu(2, 3, 4, 8, dtype=torch.float32)), TypeError, "W_O"),
    ("W_K integer", dict(W_K=torch.zeros(2, 3, 8, 4, dtype=torch.long)), TypeError, "W_K"),
    ("norm", dict(norm="batch"), ValueError, "norm"),
    ("feature map", dict(feature_map="softplus"), ValueError, "feature_map"),
    ("eps", dict(eps=-1.0), ValueError, "eps"),
)


@pytest.mark.parametrize("change, error, name", BAD_STACKS)
def test_stack_rejects_bad_weights(change, error, name):
    arguments = {"W_Q": W, "W_K": W, "W_V": W, "W_O": cpu(2, 3, 4, 8), **change}
    with pytest.raises(error, match=name):
        stacking.ConditioningStack(**arguments)


@pytest.mark.parametrize("x, layer, error, name", cases(
    ("x width", cpu(5, 9), 0, ValueError, "x"),
    ("x 1-D", cpu(8), 0, ValueError, "x"),
    ("x dtype", cpu(5, 8, dtype=torch.float32), 0, TypeError, "x"),
    ("x NaN", torch.full((5, 8), math.nan, dtype=torch.float64), 0, ValueError, "x"),
    ("layer too large", cpu(5, 8), 2, ValueError, "layer"),
    ("layer negative", cpu(5, 8), -1, ValueError, "layer"),
    ("layer float", cpu(5, 8), 1.0, ValueError, "layer"),
))
def test_stack_rejects_bad_input(x, layer, error, name):
    stack = stacking.ConditioningStack(W, W, W, cpu(2, 3, 4, 8))
    with pytest.raises(error, match=name):
        stack.head_responses(x, layer)


def test_random_stack_rejects_bad_sizes():
    with pytest.raises(ValueError, match="heads"):
        stacking.ConditioningStack.random(2, 0, 8, 4, device="cpu")
    with pytest.raises(TypeError, match="d_k"):
        stacking.ConditioningStack.random(2, 1, 8, 4.0, device="cpu")


# --- the chain task ------------------------------------------------------------------------------

@pytest.mark.parametrize("readout", stacking.READOUTS)
@pytest.mark.parametrize("heads, n, d_k, layers", [(1, 5, 3, 2), (3, 6, 4, 4), (2, 2, 2, 1)])
def test_chain_on_the_literal_stack_matches_the_stores(readout, heads, n, d_k, layers):
    codes = stacking.chain_codes(40, n, d_k, heads=heads, layers=layers, seed=3, device=DEVICE, dtype=torch.float64)
    start = torch.randint(n, (40,), generator=pv.generator(4, DEVICE), device=DEVICE)
    fast, literal = stacking.run_chain(codes, start, readout=readout), stacking.reference_chain(codes, start,
                                                                                              readout=readout)
    assert torch.equal(fast.items, literal.items) and torch.equal(fast.head_items, literal.head_items)
    assert rel_err(literal.retrieved, fast.retrieved) < EXACT
    assert fast.items.shape == (40, layers + 1) and fast.head_items.shape == (40, layers, heads)
    assert fast.retrieved.shape == (40, layers, heads, d_k)


def test_retrieval_by_hand():
    # orthonormal codes: every head retrieves exactly the associate, and every layer passes it on
    eye = torch.eye(3, dtype=torch.float64)
    codes = eye.expand(1, 2, 2, 2, 3, 3)                                     # (B, L, keys and values, H, n, d_k)
    run = stacking.run_chain(codes, torch.tensor([2]))
    assert run.items.tolist() == [[2, 2, 2]] and not run.layer_failed.any() and not run.head_failed.any()
    assert torch.equal(run.retrieved, eye[2].expand(1, 2, 2, 3))


def test_failures_by_hand():
    # three items, three heads. Head 0 has orthonormal codes and is right. Heads 1 and 2 see one key for every
    # item and store values e0, e1, -e0: queried with item 2 they retrieve e0 + e1 - e0 = e1 and pick item 1.
    # The oracle trusts head 0 and is right; the sum scores [0, 0, 1] + 2 [0, 1, 0] and picks item 1.
    eye = torch.eye(3, dtype=torch.float64)
    e0, e1 = eye[0], eye[1]
    keys = torch.stack([eye, torch.stack([e0, e0, e0]), torch.stack([e0, e0, e0])])       # (H, n, d_k)
    values = torch.stack([eye, torch.stack([e0, e1, -e0]), torch.stack([e0, e1, -e0])])
    codes = torch.stack([keys, values])[None, None]                                       # (1, L, 2, H, n, d_k)
    oracle, summed = (stacking.run_chain(codes, torch.tensor([2]), readout=r) for r in ("any", "sum"))
    for run in (oracle, summed):
        assert run.head_items.tolist() == [[[2, 1, 1]]]
        assert run.head_failed.tolist() == [[[False, True, True]]]
        assert torch.equal(run.retrieved[0, 0], torch.stack([eye[2], e1, e1]))
    assert oracle.items.tolist() == [[2, 2]] and oracle.layer_failed.tolist() == [[False]]
    assert summed.items.tolist() == [[2, 1]] and summed.layer_failed.tolist() == [[True]]


def test_two_items_never_fail():
    # with two stored associations r = v_1 + c v_2, c = k_1 . k_2, and r.(v_1 - v_2) = (1 - g)(1 - c) >= 0
    m = stacking.measure_chain(2, 3, heads=1, layers=3, trials=2_000, seed=0, device=DEVICE)
    assert not m.head_failed.any() and m.chain_error() == (0.0, 0.0)


def test_one_head_readouts_agree_and_rates_are_consistent():
    runs = [stacking.measure_chain(8, 8, heads=1, layers=3, trials=500, readout=r, seed=5, device=DEVICE)
            for r in stacking.READOUTS]
    assert torch.equal(runs[0].layer_failed, runs[1].layer_failed)
    m = runs[0]
    assert torch.equal(m.layer_failed, m.head_failed[..., 0])
    assert m.chain_error(1)[0] == m.layer_failed[:, 0].double().mean().item()
    assert m.chain_error()[0] == m.layer_failed.any(1).double().mean().item()
    assert m.layer_error()[0] == pytest.approx(m.layer_failed.double().mean().item(), rel=EXACT)


def test_head_error_matches_an_independent_count_of_negative_margins():
    # a head fails exactly when one of its margins is negative: two independent estimates of p, n = d_k = 8
    m = stacking.measure_chain(8, 8, heads=2, layers=2, trials=4_000, seed=1, device=DEVICE)
    margins = stacking.head_margins(8, 8, trials=16_000, seed=2, device=DEVICE)
    p_margins, se_margins = pv.stats.mean_and_se((margins < 0).any(1).double())
    p, se = m.head_error()
    assert abs(p - p_margins.item()) < pv.claims.tolerance(math.hypot(se, se_margins.item()))


def test_measure_chain_is_seeded_and_batched():
    a = stacking.measure_chain(6, 4, heads=2, layers=2, trials=300, seed=9, device=DEVICE)
    b = stacking.measure_chain(6, 4, heads=2, layers=2, trials=300, seed=9, device=DEVICE)
    assert torch.equal(a.head_failed, b.head_failed) and a.seed == 9
    assert a.head_failed.shape == (300, 2, 2) and a.layer_failed.shape == (300, 2)
    assert stacking.measure_chain(6, 4, heads=1, layers=1, trials=2, device=DEVICE).seed >= 0


def test_measure_chain_splits_trials_into_batches(monkeypatch):
    monkeypatch.setattr(stores, "CHUNK_ELEMENTS", 2 * (2 * 2 * 6 * 4))       # two trials' keys and values per batch
    m = stacking.measure_chain(6, 4, heads=2, layers=3, trials=7, seed=0, device=DEVICE)
    assert m.head_failed.shape == (7, 3, 2)


@pytest.mark.parametrize("args, error, name", cases(
    ("d_key one", dict(d_key=1), ValueError, "d_key"),
    ("heads zero", dict(heads=0), ValueError, "heads"),
    ("layers float", dict(layers=2.0), TypeError, "layers"),
    ("trials one", dict(trials=1), ValueError, "trials"),
    ("n zero", dict(n_memories=0), ValueError, "n_memories"),
    ("readout", dict(readout="vote"), ValueError, "readout"),
))
def test_measure_chain_rejects_bad_sizes(args, error, name):
    arguments = {**dict(n_memories=4, d_key=4, heads=2, layers=2, trials=10, seed=0, device="cpu"), **args}
    with pytest.raises(error, match=name):
        stacking.measure_chain(**arguments)


CODES = stacking.chain_codes(3, 4, 2, heads=2, layers=2, seed=0, device="cpu", dtype=torch.float64)


@pytest.mark.parametrize("codes, start, readout, error, name", cases(
    ("codes 5-D", CODES[0], torch.zeros(3, dtype=torch.long), "sum", ValueError, "codes"),
    ("codes without values", CODES[:, :, :1], torch.zeros(3, dtype=torch.long), "sum", ValueError, "codes"),
    ("start float", CODES, torch.zeros(3), "sum", TypeError, "start"),
    ("start shape", CODES, torch.zeros(2, dtype=torch.long), "sum", ValueError, "start"),
    ("start range", CODES, torch.full((3,), 4, dtype=torch.long), "sum", ValueError, "start"),
    ("readout", CODES, torch.zeros(3, dtype=torch.long), "median", ValueError, "readout"),
))
def test_chains_reject_bad_input(codes, start, readout, error, name):
    for run in (stacking.run_chain, stacking.reference_chain):
        with pytest.raises(error, match=name):
            run(codes, start, readout=readout)


def test_chain_codes_needs_exactly_one_source_of_randomness():
    with pytest.raises(ValueError, match="seed"):
        stacking.chain_codes(2, 3, 4, heads=1, layers=1, device="cpu")
    with pytest.raises(ValueError, match="seed"):
        stacking.chain_codes(2, 3, 4, heads=1, layers=1, seed=0, generator=pv.generator(0, "cpu"), device="cpu")
    codes = stacking.chain_codes(2, 3, 4, heads=2, layers=1, seed=0, device=DEVICE)
    assert codes.shape == (2, 1, 2, 2, 3, 4) and codes.device.type == DEVICE.type and codes.dtype == torch.float32
    assert torch.allclose(codes.norm(dim=-1), torch.ones((), device=DEVICE))


# --- margins and the Cramér rate -----------------------------------------------------------------

def test_cramer_rate_of_a_two_point_margin():
    # Delta in {-1, 3}, equally likely: E e^{-t Delta} = (e^t + e^{-3t}) / 2 is least at e^{4t} = 3
    margins = torch.tensor([[-1.0], [3.0]], dtype=torch.float64)
    rate = stacking.cramer_rate(margins)
    assert rate.tilt == pytest.approx(math.log(3) / 4, rel=1e-6)
    assert rate.rate == pytest.approx((3**0.25 + 3**-0.75) / 2, rel=1e-12)


def test_cramer_rate_of_gaussian_margins():
    # N(mu, s^2): min_t e^{-t mu + t^2 s^2 / 2} = e^{-mu^2 / (2 s^2)} at t = mu / s^2
    margins = 1.0 + 0.5 * randn(0, 200_000, 1)
    rate = stacking.cramer_rate(margins)
    assert rate.rate == pytest.approx(math.exp(-2.0), abs=pv.claims.tolerance(rate.se))
    assert rate.tilt == pytest.approx(4.0, rel=0.05)


def test_cramer_rate_bounds_the_sum_of_independent_margins():
    # Chernoff: P(Delta_1 + Delta_2 < 0) <= rho^2, for pairs of independent draws of one margin distribution
    margins = stacking.head_margins(4, 4, trials=20_000, seed=1, device=DEVICE)
    rho = stacking.cramer_rate(margins).rate
    pairs = margins[:10_000, 0] + margins[10_000:, 0]
    assert (pairs < 0).double().mean().item() <= rho**2
    assert 0 < rho < 1


def test_cramer_rate_without_negative_margins_is_zero():
    assert stacking.cramer_rate(torch.ones(3, 2, dtype=torch.float64)) == (0.0, 0.0, math.inf)


@pytest.mark.parametrize("margins, error, name", cases(
    ("1-D", torch.tensor([1.0, -1.0]), ValueError, "margins"),
    ("one trial", torch.tensor([[1.0, -1.0]]), ValueError, "margins"),
    ("negative mean", torch.tensor([[-1.0], [0.5]]), ValueError, "mean"),
    ("integer", torch.tensor([[1], [-1]]), TypeError, "margins"),
))
def test_cramer_rate_rejects_bad_margins(margins, error, name):
    with pytest.raises(error, match=name):
        stacking.cramer_rate(margins)


def test_head_margins_shapes_and_checks():
    margins = stacking.head_margins(5, 3, trials=4, seed=0, device=DEVICE, dtype=torch.float64)
    assert margins.shape == (4, 4) and margins.dtype == torch.float64 and margins.device.type == DEVICE.type
    with pytest.raises(ValueError, match="n_memories"):
        stacking.head_margins(1, 3, trials=4, seed=0, device="cpu")
    with pytest.raises(TypeError, match="trials"):
        stacking.head_margins(3, 3, trials=4.0, seed=0, device="cpu")



def test_head_margins_in_blocks_draw_each_block_in_turn(monkeypatch):
    # 7 trials in blocks of 3, 3 and 1 from one generator: the first block is the margins of 3 trials
    whole = stacking.head_margins(5, 4, trials=7, seed=2, device=DEVICE, dtype=torch.float64)
    monkeypatch.setattr(stores, "MEMORY_ELEMENTS", 3 * 2 * 5 * 4)
    blocked, first = (stacking.head_margins(5, 4, trials=t, seed=2, device=DEVICE, dtype=torch.float64)
                      for t in (7, 3))
    assert blocked.shape == whole.shape == (7, 4)
    assert torch.equal(blocked[:3], first) and not torch.equal(blocked, whole)

def test_stack_on_meta_tensors():
    # shapes without data, e.g. to plan a large stack
    stack = stacking.ConditioningStack(*(meta(1, 1, 4, 2) for _ in range(3)), meta(1, 1, 2, 4))
    assert stack(meta(3, 4)).shape == (3, 4)


def test_layers_fail_independently():
    # each hop has its own key and value codes, so a layer's failure is independent of the layers before it:
    # P(both of two layers fail) = q^2, within five standard errors (n = d_k = 8, one head: q ~ 0.2)
    m = stacking.measure_chain(8, 8, heads=1, layers=2, trials=20_000, seed=3, device=DEVICE)
    first, second = m.layer_failed[:, 0].double(), m.layer_failed[:, 1].double()
    both, se = pv.stats.mean_and_se(first * second)
    assert abs(both.item() - first.mean().item() * second.mean().item()) < pv.claims.tolerance(se)


# --- without the clean-up ---

def test_without_the_cleanup_the_first_hop_is_the_same_and_errors_compound_after_it():
    kwargs = dict(heads=1, layers=3, trials=4000, seed=11, device="cpu")
    clean, raw = (stacking.measure_chain(4, 8, cleanup=c, **kwargs) for c in (True, False))
    assert torch.equal(clean.layer_failed[:, 0], raw.layer_failed[:, 0])     # same codes, same first read
    (c2, c2_se), (r2, r2_se) = clean.chain_error(2), raw.chain_error(2)
    assert r2 - c2 > 5 * math.hypot(c2_se, r2_se)                            # crosstalk is passed on


def test_without_the_cleanup_a_single_association_passes_through_every_layer_exactly():
    # one association per hop: no crosstalk, and the map v -> next key is exact, so nothing ever fails
    m = stacking.measure_chain(1, 4, heads=2, layers=6, trials=50, seed=0, device="cpu", dtype=torch.float64,
                               cleanup=False)
    assert not m.layer_failed.any()
