"""pavlov.induction: the task's sequences, the model against its stack, the probes and the gradient identity."""

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from pavlov import batched, induction, stores

TASK = induction.Task(vocab=12, n_triggers=2, length=16, trigger_mass=0.3, device="cpu")


def test_a_trigger_is_always_followed_by_its_sequences_output_and_labels_mark_repeats():
    tokens, labels = induction.sequences(TASK, 64, seed=0)
    triggers = set(TASK.triggers.tolist())
    for seq, lab in zip(tokens.tolist(), labels.tolist()):
        outputs, seen = {}, set()
        for t in range(len(seq) - 1):
            if seq[t] in triggers:
                assert outputs.setdefault(seq[t], seq[t + 1]) == seq[t + 1]
                assert seq[t + 1] not in triggers
                assert (lab[t] != induction.IGNORE) == (seq[t] in seen)
            else:
                assert lab[t] == induction.IGNORE
            seen.add(seq[t])


def test_the_stack_computes_what_each_model_computes():
    models = [induction.build(12, 16, seed=s, d_model=8, heads=2, mlp=True) for s in range(3)]
    tokens, _ = induction.sequences(TASK, 4, seed=1)
    stacked = batched.stack(models)(tokens.expand(3, -1, -1))
    for m, model in enumerate(models):
        torch.testing.assert_close(stacked[m], model(tokens), rtol=1e-5, atol=1e-5)


def test_training_records_curves_and_probes_and_the_gradient_is_a_sum_of_outer_products():
    runs = induction.train_together(TASK, steps=3, seeds=(0, 1), batch=4, every=1, d_model=8, frozen=True, mlp=True)
    assert len(runs) == 2 and runs[0].steps == [0, 1, 2, 3]
    assert set(induction.PROBES) <= set(runs[0].curves)
    recall = induction.memory_recall(runs[0].model, TASK)
    assert all(0 <= float(v) <= 1 for v in recall.values())
    tokens, _ = induction.sequences(TASK, 4, seed=2)
    autograd, outer, hebbian = induction.output_gradient(runs[0].model.double(), tokens)
    torch.testing.assert_close(autograd, outer)
    assert not torch.allclose(autograd, hebbian)
    scores = induction.evaluate(runs[0].model.float(), TASK, count=8, ablate=[(1, 0)])
    assert 0 <= scores["in_context"] <= 1


def test_cutting_the_previous_position_removes_its_weight_and_renormalises_the_rest():
    model = induction.build(12, 16, seed=0, d_model=8, layers=2, heads=2, device="cpu")
    tokens, _ = induction.sequences(TASK, 3, seed=1)
    whole, cut = [], []
    model(tokens, patterns=whole)
    model(tokens, cut_previous=[(0, 1)], patterns=cut)
    assert cut[0][:, 1].diagonal(-1, -2, -1).abs().max() == 0                       # head 1 of layer 1: none on t - 1
    torch.testing.assert_close(cut[0][:, 0], whole[0][:, 0])                         # head 0 untouched
    kept = whole[0][:, 1].clone()
    kept.diagonal(-1, -2, -1).zero_()
    torch.testing.assert_close(cut[0][:, 1], kept / kept.sum(-1, keepdim=True))


def test_bad_inputs_name_the_parameter():
    with pytest.raises(ValueError, match="n_triggers"):
        induction.Task(vocab=4, n_triggers=4, length=8)
    with pytest.raises(ValueError, match="trigger_mass"):
        induction.Task(vocab=8, n_triggers=2, length=8, trigger_mass=2.0)
    with pytest.raises(TypeError, match="task"):
        induction.sequences("task", 2, seed=0)
    with pytest.raises(ValueError, match="heads"):
        induction.Transformer(8, 8, d_model=6, heads=4)
    with pytest.raises(ValueError, match="seeds"):
        induction.train_together(TASK, steps=1, seeds=())
    model = induction.build(12, 16, seed=0, d_model=8)
    with pytest.raises(ValueError, match="ablate"):
        induction.evaluate(model, TASK, ablate=[(5, 0)])
    with pytest.raises(ValueError, match="frozen"):
        induction.memory_recall(model, TASK)


@given(n=st.integers(1, 6), d=st.integers(6, 12), seed=st.integers(0, 2**16))
@settings(max_examples=20, deadline=None)
def test_the_hebbian_matrix_read_as_a_matrix_store_is_the_hebbian_store(n, d, seed):
    gen = torch.Generator().manual_seed(seed)
    keys, values = (torch.randn(n, d, generator=gen, dtype=torch.float64) for _ in range(2))
    hebbian = stores.build("hebbian", keys, values)
    as_matrix = stores.MatrixStore(keys.T @ values, keys, values)
    for a, b in zip(stores.interference_to_signal(hebbian), stores.interference_to_signal(as_matrix)):
        torch.testing.assert_close(a, b)


def test_an_exact_matrix_store_has_no_interference():
    keys = values = torch.eye(4, dtype=torch.float64)
    isr, correct = stores.interference_to_signal(stores.MatrixStore(3 * torch.eye(4, dtype=torch.float64), keys, values))
    assert torch.all(isr.abs() < 1e-12) and bool(correct.all())


def test_memory_isr_reads_each_memory_beside_its_hebbian_store():
    model = induction.build(12, 16, seed=0, d_model=16, frozen=True, mlp=True)
    isr = induction.memory_isr(model, TASK, draws=3)
    assert set(isr) == set(induction.PROBES)
    sizes = {"previous_token": 15, "induction_key": TASK.n_triggers, "output_copy": 12}
    for name, result in isr.items():
        assert result["learned"].shape == (1, sizes[name]) and result["hebbian"].shape == (sizes[name],)
        assert bool((result["learned"] >= 0).all()) and bool((result["hebbian"] >= 0).all())
        assert result["random"].shape == (3, sizes[name]) and bool((result["random"] >= 0).all())


def test_head_scores_of_a_uniform_map_are_the_uniform_scores_and_the_reading_is_a_fraction():
    model = induction.build(12, 16, seed=0, d_model=8, frozen=True)
    for attention in model.attentions:          # zero queries: every causal map uniform
        torch.nn.init.zeros_(attention.query.weight)
    scores = induction.head_scores(model, TASK, count=16)
    for name in ("previous_token", "previous_trigger", "induction"):
        torch.testing.assert_close(scores[name], scores[f"uniform_{name}"].expand_as(scores[name]))
    reading = induction.induction_reading(model, TASK, count=16)
    assert abs(float(reading["beta"])) < 1e-9          # a uniform map scores every position alike
    assert 0 <= float(reading["retrieved"]) <= 1 and 1 <= float(reading["memories"]) <= 16
