"""Multi-query associative recall: the task generator's invariants, the model on every layer, a tiny training run."""

import math

import pytest
import torch
from conftest import rel_err

import pavlov as pv
from pavlov import batched, mqar, theory

CPU = torch.device("cpu")
VOCAB = mqar.Vocabulary(16, 12)


@pytest.mark.parametrize("placement", mqar.PLACEMENTS)
@pytest.mark.parametrize("n_pairs, length", [(1, None), (5, None), (16, None), (5, 40)])
def test_task_invariants(placement, n_pairs, length):
    tokens, labels = mqar.mqar(32, n_pairs, vocab=VOCAB, length=length, placement=placement, seed=3, device=CPU)
    length = length or 3 * n_pairs
    assert tokens.shape == labels.shape == (32, length) and tokens.dtype == labels.dtype == torch.long
    keys, values = tokens[:, 0:2 * n_pairs:2], tokens[:, 1:2 * n_pairs:2]
    assert ((keys >= VOCAB.keys.start) & (keys < VOCAB.keys.stop)).all()
    assert ((values >= VOCAB.values.start) & (values < VOCAB.values.stop)).all()
    assert all(len(set(row)) == n_pairs for row in keys.tolist())                 # distinct keys
    asked = labels != mqar.IGNORE
    assert (asked.sum(-1) == n_pairs).all() and not asked[:, :2 * n_pairs].any()  # labels only at the questions
    assert (tokens[:, 2 * n_pairs:][~asked[:, 2 * n_pairs:]] == 0).all()          # everything else after the pairs is blank
    for row_tokens, row_labels, row_keys, row_values in zip(tokens.tolist(), labels.tolist(), keys.tolist(), values.tolist()):
        answer = dict(zip(row_keys, row_values))
        questions = [(t, l) for t, l in zip(row_tokens, row_labels) if l != mqar.IGNORE]
        assert sorted(t for t, _ in questions) == sorted(row_keys)                 # every key asked once
        assert all(answer[t] == l for t, l in questions)                          # labelled with its own value
    if placement == "end":
        assert asked[:, 2 * n_pairs:3 * n_pairs].all()


def test_task_is_seeded_and_on_the_device():
    a = mqar.mqar(8, 4, vocab=VOCAB, seed=5, device=CPU)
    b = mqar.mqar(8, 4, vocab=VOCAB, seed=5, device=CPU)
    c = mqar.mqar(8, 4, vocab=VOCAB, seed=6, device=CPU)
    assert all(torch.equal(x, y) for x, y in zip(a, b)) and not torch.equal(a[0], c[0])
    assert mqar.mqar(2, 2, vocab=VOCAB, seed=0)[0].device.type == pv.default_device().type


def test_random_placement_scatters_the_questions():
    _, labels = mqar.mqar(64, 4, vocab=VOCAB, length=64, placement="random", seed=1, device=CPU)
    positions = (labels != mqar.IGNORE).nonzero()[:, 1]
    assert positions.min() >= 8 and positions.max() > 12        # not all right after the pairs


@pytest.mark.parametrize("kwargs, match", [
    ({"batch": 0}, "batch"), ({"n_pairs": 17}, "n_pairs"), ({"n_pairs": 0}, "n_pairs"), ({"length": 8}, "length"),
    ({"placement": "middle"}, "placement"), ({"vocab": (16, 12)}, "vocab"), ({"seed": -1}, "seed"),
])
def test_task_rejects_bad_input(kwargs, match):
    args = {"batch": 2, "n_pairs": 3, "vocab": VOCAB, "seed": 0, "device": CPU, **kwargs}
    with pytest.raises((ValueError, TypeError), match=match):
        mqar.mqar(args.pop("batch"), args.pop("n_pairs"), **args)


def test_vocabulary_rejects_bad_sizes():
    with pytest.raises(ValueError, match="n_keys"):
        mqar.Vocabulary(0, 4)
    with pytest.raises(TypeError, match="n_values"):
        mqar.Vocabulary(4, 2.5)


@pytest.mark.parametrize("layer", mqar.LAYERS)
def test_model_forward_and_backward_on_every_layer(layer):
    model = mqar.build(VOCAB, layer=layer, d_key=8, d_model=16, layers=2, seed=0, device=CPU)
    tokens, labels = mqar.mqar(4, 6, vocab=VOCAB, length=70, seed=2, device=CPU)   # longer than a chunk
    assert model(tokens).shape == (4, 70, VOCAB.size)
    loss, accuracy = mqar.loss_and_accuracy(model, tokens, labels)
    loss.backward()
    assert math.isfinite(loss.item()) and accuracy.shape == (4,) and ((accuracy >= 0) & (accuracy <= 1)).all()
    for name, parameter in model.named_parameters():
        assert parameter.grad is not None and torch.isfinite(parameter.grad).all(), name
    memory = model.memories[0]
    assert memory.query.weight.grad.abs().sum() > 0 and memory.key.weight.grad.abs().sum() > 0


@pytest.mark.parametrize("stacked", [False, True])
@pytest.mark.parametrize("layer", mqar.LAYERS)
def test_one_product_gives_each_map_its_own_output(layer, stacked):
    # the memory layer reads its query, key, value and rate maps as one product with their weights side by side:
    # each output must be its own map's (and a rate's with its bias), to rounding, alone and in a stack
    model = mqar.build(VOCAB, layer=layer, d_key=8, d_model=16, seed=0, device=CPU).double()
    if stacked:
        model = batched.stack([model, mqar.build(VOCAB, layer=layer, d_key=8, d_model=16, seed=1, device=CPU).double()])
    memory = model.memories[0]
    x = torch.randn(*((2,) if stacked else ()), 3, 7, 16, dtype=torch.float64, generator=torch.Generator().manual_seed(0))
    together = memory.projections(x)
    alone = [memory.query(x), memory.key(x), memory.value(x), *(memory.rates[n](x) for n in memory._rate_names())]
    assert len(together) == len(alone) == 3 + len(memory.rates)
    for a, b in zip(together, alone):
        assert a.shape == b.shape and rel_err(a, b) < 1e-14


def test_model_is_causal():
    # changing a later token never changes an earlier position's logits
    model = mqar.build(VOCAB, layer="delta", d_key=8, d_model=16, seed=0, device=CPU)
    tokens, _ = mqar.mqar(2, 5, vocab=VOCAB, seed=4, device=CPU)
    changed = tokens.clone()
    changed[:, 9] = 0
    with torch.no_grad():
        assert torch.allclose(model(tokens)[:, :9], model(changed)[:, :9], atol=1e-6)
        assert not torch.allclose(model(tokens)[:, 9:], model(changed)[:, 9:])


def test_build_is_seeded_and_leaves_the_global_random_state_alone():
    state = torch.random.get_rng_state()
    a = mqar.build(VOCAB, layer="hebbian", d_key=4, seed=1, device=CPU)
    b = mqar.build(VOCAB, layer="hebbian", d_key=4, seed=1, device=CPU)
    assert torch.equal(torch.random.get_rng_state(), state)
    assert all(torch.equal(x, y) for x, y in zip(a.state_dict().values(), b.state_dict().values()))


def test_model_rejects_bad_input():
    with pytest.raises(ValueError, match="layer"):
        mqar.build(VOCAB, layer="lstm", d_key=4, seed=0, device=CPU)
    with pytest.raises(ValueError, match="d_key"):
        mqar.build(VOCAB, layer="hebbian", d_key=0, seed=0, device=CPU)
    with pytest.raises(ValueError, match="pairs"):
        mqar.train(VOCAB, layer="hebbian", d_key=4, pairs=(), steps=1, device=CPU)
    with pytest.raises(ValueError, match="lr"):
        mqar.train(VOCAB, layer="hebbian", d_key=4, pairs=(2,), steps=1, lr=-1.0, device=CPU)


@pytest.mark.parametrize("layer", ["hebbian", "softmax"])
def test_a_tiny_model_learns_two_pairs(layer):
    vocab = mqar.Vocabulary(4, 4)
    trained = mqar.train(vocab, layer=layer, d_key=8, d_model=32, pairs=(2,), steps=150, batch=32, lr=1e-2,
                         seed=0, device=CPU)
    accuracy = mqar.accuracy(trained.model, 2, sequences=256, seed=9)
    # chance is 1/4 (one of four values); a trained store answers every question
    assert accuracy.mean().item() > 0.95, accuracy.mean().item()
    assert trained.losses[-1] < trained.losses[0] / 10


@pytest.mark.parametrize("layer", ["delta", "softmax"])
def test_accuracy_read_in_batches_is_the_accuracy_read_at_once(layer):
    model = mqar.build(VOCAB, layer=layer, d_key=4, seed=0, device=CPU)
    tokens, labels = mqar.mqar(50, 5, vocab=VOCAB, seed=3, device=CPU)
    with torch.no_grad():
        at_once = mqar.loss_and_accuracy(model, tokens, labels)[1]
    for batch in (1, 7, 50, 64):
        assert torch.equal(mqar.accuracy(model, 5, sequences=50, seed=3, batch=batch), at_once)
    with pytest.raises(ValueError, match="batch"):
        mqar.accuracy(model, 5, sequences=50, seed=3, batch=0)


def test_geometry():
    model = mqar.build(VOCAB, layer="hebbian", d_key=8, seed=0, device=CPU)
    geometry = mqar.geometry(model)
    assert geometry.keys.shape == (VOCAB.n_keys, VOCAB.n_keys) and geometry.values.shape == (VOCAB.n_values,) * 2
    assert torch.allclose(geometry.values.diagonal(), torch.ones(VOCAB.n_values))       # cosines of unit vectors
    # crosstalk: 0 for orthonormal vectors, 1/d for many random ones, the Welch bound for a simplex
    assert mqar.Geometry.crosstalk(torch.eye(6)) == 0.0
    x = torch.nn.functional.normalize(torch.randn(2000, 10, generator=pv.generator(1, CPU)), dim=-1)
    assert mqar.Geometry.crosstalk(x @ x.T) * 10 == pytest.approx(1.0, abs=0.02)
    assert mqar.Geometry.crosstalk(torch.ones(3, 3) + torch.eye(3)) == pytest.approx(0.25)   # off 1 over diagonal 2, squared
    assert mqar.Geometry.fourth_moment(x @ x.T) * 10 * 12 / 3 == pytest.approx(1.0, abs=0.05)  # 3 / (d (d + 2))


def test_one_mean_square_two_coherences():
    # four copies of an orthonormal basis sit at the mean-square Welch bound, yet pairs overlap fully
    d, copies = 4, 4
    frame = torch.eye(d, dtype=torch.float64).repeat(copies, 1)                  # N = 16 unit vectors
    gram = frame @ frame.T
    n = d * copies
    assert mqar.Geometry.crosstalk(gram) == pytest.approx((n - d) / (d * (n - 1)))
    assert mqar.Geometry.coherence(gram) == 1.0


def test_experiment_and_accuracy_curve():
    runs = mqar.experiment(VOCAB, layers=("hebbian", "delta"), d_keys=(4,), train_pairs=(2,), test_pairs=(1, 2, 4),
                           steps=2, seeds=2, sequences=8, device=CPU)
    assert [(r.layer, r.seed) for r in runs] == [("hebbian", 0), ("hebbian", 1), ("delta", 0), ("delta", 1)]
    pairs, mean, se = mqar.accuracy_curve(runs, "delta", 4)
    assert pairs == [1, 2, 4] and mean.shape == se.shape == (3,)
    # over training runs: the mean and standard error of the two models' own means
    per_model = torch.stack([torch.stack([r.accuracy[n].mean() for n in pairs]) for r in runs if r.layer == "delta"])
    assert torch.allclose(mean, per_model.mean(0)) and torch.allclose(se, per_model.std(0) / math.sqrt(2))
    with pytest.raises(ValueError, match="layer"):
        mqar.accuracy_curve(runs, "softmax", 4)


def test_collapse_point():
    assert mqar.collapse_point([2, 4, 8], [1.0, 0.5, 0.2]) == pytest.approx(4.0)
    assert mqar.collapse_point([2, 4, 8], [1.0, 0.9, 0.8]) == math.inf
    assert mqar.collapse_point([2, 4, 8], [0.4, 0.3, 0.2]) == 2


def test_recall_accuracy():
    assert theory.recall_accuracy(1, key_overlap=0.1, value_overlap=0.1) == 1.0
    for d, n in ((8, 4), (32, 64)):
        assert theory.recall_accuracy(n, key_overlap=1 / d, value_overlap=1 / d) == theory.hebbian_decoding_accuracy(d, n)
    # tighter packing helps; more competing values in the vocabulary hurt
    loose = theory.recall_accuracy(16, key_overlap=1 / 16, value_overlap=1 / 16, n_values=64)
    assert theory.recall_accuracy(16, key_overlap=0.8 / 16, value_overlap=1 / 16, n_values=64) > loose
    assert theory.recall_accuracy(16, key_overlap=1 / 16, value_overlap=1 / 16, n_values=256) < loose
    with pytest.raises(ValueError, match="n_values"):
        theory.recall_accuracy(16, key_overlap=0.1, value_overlap=0.1, n_values=8)
    with pytest.raises(ValueError, match="key_overlap"):
        theory.recall_accuracy(16, key_overlap=0.0, value_overlap=0.1)


def test_welch_bound_is_met_by_a_simplex_and_beaten_by_no_random_frame():
    # d + 1 vertices of a regular simplex in d dimensions: every squared overlap is 1/d^2, the bound exactly
    d = 5
    simplex = torch.eye(d + 1, dtype=torch.float64) - 1 / (d + 1)
    simplex = torch.nn.functional.normalize(simplex, dim=-1)          # d + 1 unit vectors in a d-dim subspace
    gram = simplex @ simplex.T
    off = gram[~torch.eye(d + 1, dtype=torch.bool)]
    assert off.pow(2).mean().item() == pytest.approx(theory.welch_bound(d + 1, d), rel=1e-12)
    x = torch.nn.functional.normalize(torch.randn(40, 8, generator=pv.generator(0, CPU), dtype=torch.float64), dim=-1)
    g = x @ x.T
    assert g[~torch.eye(40, dtype=torch.bool)].pow(2).mean().item() >= theory.welch_bound(40, 8)
