"""Models trained as one stack train as they would alone (pavlov.batched, pavlov.mqar.train_together).

The stack's layers reduce to torch's for one model, read each model's inputs with its own parameters, and a
training step of the stack is, to rounding, a step of each model on its own batch: in float64 every
parameter after three AdamW steps agrees with the separately trained model's to 1e-12 of its scale (each
step's rounding is of order 1e-16 per operation; a wrong pairing of models and data, or any coupling
between models, moves parameters by order 1e-3, the learning rate).
"""

from __future__ import annotations

import pytest
import torch
from conftest import EXACT, rel_err

from pavlov import batched, mqar

VOCAB = mqar.Vocabulary(12, 12)
SMALL = {"d_key": 8, "d_model": 16, "layers": 2}
SEEDS = (3, 0, 7)


def models(layer: str) -> list[mqar.Model]:
    return [mqar.build(VOCAB, layer=layer, seed=s, device="cpu", **SMALL).double() for s in SEEDS]


def batches(step: int, n_pairs: int = 3) -> list[tuple[torch.Tensor, torch.Tensor]]:
    return [mqar.mqar(6, n_pairs, vocab=VOCAB, seed=s * 1_000_003 + step, device="cpu") for s in SEEDS]


@pytest.mark.parametrize("layer", mqar.LAYERS)
def test_a_stack_reads_each_models_tokens_with_that_models_parameters(layer):
    alone = models(layer)
    stacked = batched.stack(alone)
    tokens = torch.stack([t for t, _ in batches(0)])                    # [M, batch, T]
    together = stacked(tokens)
    for m, model in enumerate(alone):
        assert rel_err(model(tokens[m]), together[m]) < EXACT


@pytest.mark.parametrize("layer", mqar.LAYERS)
def test_a_step_of_the_stack_is_a_step_of_each_model(layer):
    alone, stacked = models(layer), batched.stack(models(layer))
    optimisers = [torch.optim.AdamW(m.parameters(), lr=1e-2) for m in alone]
    together = torch.optim.AdamW(stacked.parameters(), lr=1e-2)
    for step in range(3):
        drawn = batches(step)
        for model, optimiser, (tokens, labels) in zip(alone, optimisers, drawn):
            loss, _ = mqar.loss_and_accuracy(model, tokens, labels)
            optimiser.zero_grad()
            loss.backward()
            optimiser.step()
        tokens, labels = (torch.stack(part) for part in zip(*drawn))
        losses, _ = mqar.loss_and_accuracy(stacked, tokens, labels)
        assert losses.shape == (len(SEEDS),)
        together.zero_grad()
        losses.sum().backward()
        together.step()
    moved = 0.0
    for model, start, back in zip(alone, models(layer), batched.unstack(stacked)):
        for (name, p), q, r in zip(model.named_parameters(), start.parameters(), back.parameters()):
            p, q, r = (x.reshape(-1) for x in (p, q, r))             # a learned temperature is a scalar
            assert rel_err(p, r) < EXACT, name
            moved = max(moved, rel_err(p, q))
    assert moved > 1e-4, "the steps moved no parameter: the comparison would pass on anything"


def test_train_together_gives_each_seed_the_model_train_gives_it():
    settings = dict(layer="delta", pairs=(2, 3), steps=4, batch=4, device="cpu", **SMALL)
    together = mqar.train_together(VOCAB, seeds=SEEDS, **settings)
    for trained, seed in zip(together, SEEDS):
        alone = mqar.train(VOCAB, seed=seed, **settings)
        assert trained.seed == seed and len(trained.losses) == 4
        assert trained.losses == pytest.approx(alone.losses, rel=1e-5)     # float32: rounding of other sums
        for p, q in zip(trained.model.parameters(), alone.model.parameters()):
            assert rel_err(q.double().reshape(-1), p.double().reshape(-1)) < 1e-5


def test_stack_and_unstack_round_trip_and_leave_the_models_alone():
    alone = models("softmax")
    before = [[p.clone() for p in m.parameters()] for m in alone]
    stacked = batched.stack(alone)
    assert all(p.shape[0] == len(SEEDS) for p in stacked.parameters())
    with torch.no_grad():
        for p in stacked.parameters():
            p.add_(1.0)
    for model, saved in zip(alone, before):
        assert all(torch.equal(p, q) for p, q in zip(model.parameters(), saved))
    for back, saved in zip(batched.unstack(stacked), before):
        assert all(torch.equal(p, q + 1.0) for p, q in zip(back.parameters(), saved))


@pytest.mark.parametrize("placement", ["end", "random"])
@pytest.mark.parametrize("layers", [1, 2])
@pytest.mark.parametrize("layer", mqar.LAYERS)
def test_reading_only_the_questions_gives_the_loss_gradients_and_accuracy_of_reading_everywhere(layer, placement, layers):
    # the last block's MLP and the readout act on each position alone: reading them only at the questions
    # changes nothing the questions see, so training and testing may skip the rest
    model = mqar.build(VOCAB, layer=layer, seed=1, device="cpu", d_key=8, d_model=16, layers=layers).double()
    tokens, labels = mqar.mqar(6, 3, vocab=VOCAB, length=12, placement=placement, seed=2, device="cpu")
    full_loss, full_accuracy = mqar.loss_and_accuracy(model, tokens, labels)
    full = torch.autograd.grad(full_loss, list(model.parameters()))
    asked_loss = mqar._loss_asked(model, tokens, labels)
    asked = torch.autograd.grad(asked_loss, list(model.parameters()))
    assert abs(asked_loss - full_loss).item() < EXACT * full_loss.item()
    for name, g, h in zip([n for n, _ in model.named_parameters()], full, asked):
        assert rel_err(g.reshape(-1), h.reshape(-1)) < EXACT, name
    assert torch.equal(mqar._answered(model, tokens, labels), full_accuracy)


def test_a_stack_reads_only_the_questions_model_by_model():
    alone = models("delta")
    drawn = batches(0)
    tokens, labels = (torch.stack(part) for part in zip(*drawn))
    together = mqar._loss_asked(batched.stack(alone), tokens, labels)
    for m, (model, (t, y)) in enumerate(zip(alone, drawn)):
        assert abs(together[m] - mqar.loss_and_accuracy(model, t, y)[0]).item() < EXACT


def test_questions_that_a_stack_or_a_batch_cannot_share_are_refused():
    stacked = batched.stack(models("hebbian"))
    tokens, labels = (torch.stack(part) for part in zip(*batches(0)))
    uneven = labels != mqar.IGNORE
    uneven[0, 0, :] = False                          # the first model asked fewer questions than the others
    with pytest.raises(ValueError, match="asked"):
        stacked(tokens, uneven)
    one = models("hebbian")[0]
    t, y = batches(0)[0]
    y = y.clone()
    y[0, y[0] != mqar.IGNORE] = mqar.IGNORE          # a sequence that asks nothing
    with pytest.raises(ValueError, match="labels"):
        mqar._answered(one, t, y)


def test_a_stacked_embedding_refuses_an_id_out_of_range_instead_of_reading_the_next_model():
    stacked = batched.stack(models("hebbian"))
    tokens = torch.stack([t for t, _ in batches(0)])
    tokens[0, 0, 0] = VOCAB.size                     # one past model 0's vocabulary: model 1's first row
    with pytest.raises(IndexError):
        stacked(tokens)


def test_stack_refuses_models_of_different_dtypes():
    a, b = models("hebbian")[:2]
    with pytest.raises(ValueError, match="models"):
        batched.stack([a, b.float()])
