"""pavlov.icl: the in-context classification task, its tests, the model and its training as a stack."""

from __future__ import annotations

import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from pavlov import batched, icl


def task(**kwargs) -> icl.Task:
    return icl.Task(**({"classes": 16, "dim": 8, "labels": 6, "pairs": 4, "bursty": 2, "device": "cpu"} | kwargs))


def split(t: icl.Task, inputs: torch.Tensor):
    """The examples ``[S, N, D]``, the shown labels' ids ``[S, N]`` and the query ``[S, D]`` of a batch."""
    ids = (inputs[:, 1:-1:2] @ t.label_vectors.T).argmax(-1)      # label vectors are nearly orthogonal at dim 8
    return inputs[:, 0:-1:2], ids, inputs[:, -1]


def nearest_class(t: icl.Task, x: torch.Tensor) -> torch.Tensor:
    return (x @ t.means.T).argmax(-1)


def test_a_sequence_is_examples_each_followed_by_its_label_then_a_query():
    t = task(noise=0.0, labels=4, dim=32)
    inputs, answers = icl.sequences(t, 64, seed=1)
    assert inputs.shape == (64, 2 * t.pairs + 1, t.dim) and answers.shape == (64,)
    examples, shown, query = split(t, inputs)
    classes = nearest_class(t, examples)
    assert torch.equal(shown, t.class_labels[classes])           # every example beside its class's label
    assert torch.equal(answers, t.class_labels[nearest_class(t, query)])


@pytest.mark.parametrize("bursty", [1, 2, 4])
def test_a_bursty_context_shows_the_query_class_b_times_and_no_class_more_often(bursty):
    t = task(noise=0.0, dim=32, bursty=bursty, classes=64)
    inputs, _ = icl.sequences(t, 128, seed=2)
    examples, _, query = split(t, inputs)
    classes, asked = nearest_class(t, examples), nearest_class(t, query)
    assert torch.equal((classes == asked[:, None]).sum(1), torch.full((128,), bursty))
    counts = torch.stack([(classes == c[:, None]).sum(1) for c in classes.T], 1)   # each example's class count
    assert int(counts.max()) <= bursty


def test_the_in_weights_test_shows_no_example_of_the_query_class():
    t = task(noise=0.0, dim=32)
    inputs, answers = icl.sequences(t, 128, seed=3, kind="in_weights")
    examples, _, query = split(t, inputs)
    assert not (nearest_class(t, examples) == nearest_class(t, query)[:, None]).any()
    assert torch.equal(answers, t.class_labels[nearest_class(t, query)])


def test_the_in_context_test_uses_fresh_classes_and_labels_drawn_for_the_sequence():
    t = task(noise=0.0, dim=32, bursty=2)
    inputs, answers = icl.sequences(t, 256, seed=4, kind="in_context", bursty=2)
    examples, shown, query = split(t, inputs)
    # fresh classes: far from every trained class
    assert torch.cosine_similarity(examples.flatten(0, 1)[:, None], t.means, dim=-1).abs().max() < 0.9
    same = torch.cosine_similarity(examples, query[:, None], dim=-1) > 0.99    # the query's own examples
    assert torch.equal(same.sum(1), torch.full((256,), 2))
    assert torch.equal(shown[same].view(256, 2)[:, 0], answers)          # the answer is the label beside them
    assert len(answers.unique()) > 1 and not torch.equal(answers, t.class_labels[nearest_class(t, query)])


def test_by_default_the_in_context_test_shows_every_label_once_so_counting_them_finds_nothing():
    t = task(noise=0.0, dim=32, labels=8, pairs=8)
    inputs, answers = icl.sequences(t, 256, seed=7, kind="in_context")
    examples, shown, query = split(t, inputs)
    same = torch.cosine_similarity(examples, query[:, None], dim=-1) > 0.99
    assert torch.equal(same.sum(1), torch.ones(256, dtype=torch.long))       # one exemplar of the query's class
    assert torch.equal(shown.sort(1).values, torch.arange(8).expand(256, -1))  # each of the 8 labels once
    assert torch.equal(shown[same], answers)


def test_the_decoy_shows_the_other_label_beside_another_class_and_none_of_the_query():
    t = task(noise=0.0, dim=32)
    inputs, answers = icl.sequences(t, 128, seed=5, kind="decoy", bursty=2)
    examples, shown, query = split(t, inputs)
    asked, classes = nearest_class(t, query), nearest_class(t, examples)
    assert not (classes == asked[:, None]).any()                     # none of the query's class
    assert ((shown == answers[:, None]).sum(1) >= 2).all()           # the other label, shown beside the decoy
    assert (answers != t.class_labels[asked]).all()


def test_the_conflict_test_shows_the_query_class_with_another_label_which_is_the_answer():
    t = task(noise=0.0, dim=32)
    inputs, answers = icl.sequences(t, 128, seed=5, kind="conflict", bursty=3)
    examples, shown, query = split(t, inputs)
    asked = nearest_class(t, query)
    same = nearest_class(t, examples) == asked[:, None]
    assert torch.equal(same.sum(1), torch.full((128,), 3))
    assert (answers != t.class_labels[asked]).all()
    assert torch.equal(shown[same].view(128, 3), answers[:, None].expand(-1, 3))
    assert torch.equal(shown[~same], t.class_labels[nearest_class(t, examples)][~same])


def test_zipf_frequencies_fall_as_a_power_of_the_rank():
    p = task(zipf=1.0).frequencies()
    assert p.sum().item() == pytest.approx(1.0) and p[0] / p[3] == pytest.approx(4.0)
    queries = icl.sequences(task(zipf=1.0, noise=0.0, dim=32), 4096, seed=6)[1]
    assert queries.numel() == 4096


@settings(max_examples=20, deadline=None)
@given(st.integers(0, 10**6), st.sampled_from(icl.KINDS))
def test_sequences_are_fixed_by_their_seed(seed, kind):
    t = task()
    a, b = icl.sequences(t, 4, seed=seed, kind=kind), icl.sequences(t, 4, seed=seed, kind=kind)
    assert all(torch.equal(x, y) for x, y in zip(a, b))


def test_the_model_reads_the_query_and_a_stack_reads_each_model_its_own_inputs():
    t = task()
    models = [icl.build(t, seed=s) for s in range(3)]
    inputs = torch.stack([icl.sequences(t, 5, seed=s)[0] for s in range(3)])
    stacked = batched.stack(models)
    alone = torch.stack([m(x) for m, x in zip(models, inputs)])
    assert stacked(inputs).shape == (3, 5, t.labels)
    assert torch.allclose(stacked(inputs), alone, atol=1e-5)


def test_ablating_the_second_layer_leaves_the_first_layers_path_only():
    t = task()
    model = icl.build(t, seed=0)
    x = icl.sequences(t, 3, seed=0)[0]
    with torch.no_grad():
        model.attentions[1].out.weight.zero_()
    assert torch.allclose(model(x), model(x, ablate=((1, 0),)))


def test_training_together_learns_the_classes_in_the_weights_without_useful_context():
    t = task(classes=8, bursty=0, labels=8, dim=16)
    runs = icl.train_together([t, t], steps=150, seeds=(0, 1), lr=1e-2, batch=32, every=50, tests=128)
    for r in runs:
        assert r.steps == [0, 50, 100, 150] and set(r.curves) == {"in_context", "in_weights", "induction"}
        assert r.curves["in_weights"][-1] > 0.9                     # 8 classes: the weights hold them
        assert r.curves["in_context"][-1] < 0.5                     # a context that never answers is not read
        assert icl.accuracy(r.model, t, "in_weights") > 0.9
    assert runs[0].seed == 0 and math.isfinite(icl.head_mass(runs[0].model, t))
    # a context that was never read does not move the weights' answer: a conflict is won by the weights
    context, weights = icl.conflict(runs[0].model, t, shown=4)
    assert weights > 0.9 and context < 0.1 and context + weights <= 1


def test_a_stack_trains_each_model_as_it_would_train_alone():
    tasks = [task(seed=1), task(seed=2, classes=32)]
    together = icl.train_together(tasks, steps=5, seeds=(3, 4), every=5, tests=8)
    alone = [icl.train_together(t, steps=5, seeds=(s,), every=5, tests=8)[0] for t, s in zip(tasks, (3, 4))]
    for a, b in zip(together, alone):
        for (name, p), q in zip(a.model.named_parameters(), b.model.parameters()):
            assert torch.allclose(p, q, atol=1e-5), name


def test_attention_at_the_last_position_alone_is_the_last_row_of_the_whole():
    from pavlov.induction import Attention

    torch.manual_seed(0)
    attention, x = Attention(8, 2), torch.randn(3, 5, 8)
    patterns = []
    whole, last = attention(x, patterns=patterns), attention(x, patterns=patterns, last=True)
    assert last.shape == (3, 1, 8) and torch.allclose(last[:, 0], whole[:, -1], atol=1e-6)
    assert torch.allclose(patterns[1][..., 0, :], patterns[0][..., -1, :], atol=1e-6)
    with pytest.raises(ValueError, match="last"):
        attention(x, cut=torch.tensor([True, False]), last=True)
