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


def test_triggers_drawn_per_sequence_keep_their_outputs_and_vary_between_sequences():
    task = induction.Task(vocab=12, n_triggers=2, length=32, fixed_triggers=False, device="cpu")
    tokens, labels = induction.sequences(task, 64, seed=0)
    asked = set()
    for seq, lab in zip(tokens.tolist(), labels.tolist()):
        for t in range(len(seq) - 1):
            if lab[t] != induction.IGNORE:  # a repeated trigger: every earlier occurrence had the same output
                assert lab[t] == seq[t + 1] and seq[t] in seq[:t]
                assert all(seq[s + 1] == seq[t + 1] for s in range(t) if seq[s] == seq[t])
                asked.add(seq[t])
    assert len(asked) > task.n_triggers  # not the same triggers in every sequence
    with pytest.raises(ValueError, match="fixed_triggers"):
        induction.Task(vocab=12, n_triggers=2, length=32, fixed_triggers=False, trigger_mass=0.3)


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


def test_cutting_the_previous_position_removes_its_weight_and_keeping_it_alone_puts_every_weight_there():
    model = induction.build(12, 16, seed=0, d_model=8, layers=2, heads=2, device="cpu")
    tokens, _ = induction.sequences(TASK, 3, seed=1)
    whole, cut, only = [], [], []
    model(tokens, patterns=whole)
    model(tokens, cut_previous=[(0, 1)], patterns=cut)
    model(tokens, only_previous=[(0, 1)], patterns=only)
    assert cut[0][:, 1].diagonal(-1, -2, -1).abs().max() == 0                       # head 1 of layer 1: none on t - 1
    torch.testing.assert_close(cut[0][:, 0], whole[0][:, 0])                         # head 0 untouched
    kept = whole[0][:, 1].clone()
    kept.diagonal(-1, -2, -1).zero_()
    torch.testing.assert_close(cut[0][:, 1], kept / kept.sum(-1, keepdim=True))
    assert torch.equal(only[0][:, 1].diagonal(-1, -2, -1), torch.ones(3, 15))       # all on t - 1 ...
    assert (only[0][:, 1, 0, 0] == 1).all()                                          # ... the first on itself
    torch.testing.assert_close(only[0][:, 0], whole[0][:, 0])
    assert {"self_trigger", "two_back_trigger", "uniform_self_trigger"} <= set(induction.head_scores(model, TASK, count=16))


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


def test_held_out_outputs_are_never_drawn_in_training_and_only_they_are_drawn_when_asked():
    task = induction.Task(vocab=16, n_triggers=2, length=32, trigger_mass=0.3, held_out=0.25, device="cpu")
    held = set(task.outputs["held_out"].tolist())
    assert len(held) == 4 and not held & set(task.outputs["trained"].tolist())
    assert not held & set(task.triggers.tolist())
    for outputs, inside in (("trained", False), ("held_out", True)):
        tokens, _ = induction.sequences(task, 64, seed=3, outputs=outputs)
        after = {seq[t + 1] for seq in tokens.tolist() for t in range(len(seq) - 1) if seq[t] in task.triggers.tolist()}
        assert after and all((x in held) == inside for x in after)


def test_the_token_shift_keys_read_the_previous_position():
    model = induction.build(12, 16, seed=0, d_model=8, layers=1, shift=True, device="cpu").double()
    tokens, _ = induction.sequences(TASK, 2, seed=1)
    attention = model.attentions[0]
    x = model.embed(tokens) + model.position(torch.arange(16))
    keys = attention.split(attention.key(torch.cat([torch.zeros_like(x[:, :1]), x[:, :-1]], 1)))
    queries = attention.split(attention.query(x))
    scores = (queries @ keys.transpose(-1, -2) / 8**0.5).masked_fill(~torch.ones(16, 16, dtype=torch.bool).tril(),
                                                                     float("-inf"))
    torch.testing.assert_close(attention.pattern(x), scores.softmax(-1))


def test_training_records_the_heads_and_adams_step_against_the_gradient():
    runs = induction.train_together(TASK, steps=4, seeds=(0,), batch=4, every=2, d_model=8, mlp=True)
    curves = runs[0].curves
    assert len(curves["induction"]) == len(curves["adam_cosine"]) == 3
    assert all(-1 <= c <= 1 for c in curves["adam_cosine"][:-1]) and curves["adam_cosine"][-1] != curves["adam_cosine"][-1]


def test_the_induction_reading_gives_every_labelled_query_its_own_scores():
    model = induction.build(12, 16, seed=0, d_model=8, layers=2, device="cpu")
    tokens, labels = induction.sequences(TASK, 32, seed=2**31)
    queries = induction.induction_reading(model, TASK, count=32)["queries"]
    n = int((labels != induction.IGNORE).sum())
    assert queries["memories"].shape == queries["others"].shape == (n,)
    assert queries["wins"].shape == queries["gap"].shape == queries["spread"].shape == (1, n)
    assert (queries["others"] < queries["memories"]).all() and (queries["spread"] >= 0).all()
