"""Facts in a linear memory (chapter 14): the writes, the top-1 read, bits, quantisation and the rank-one edit."""

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st
import torch

from pavlov import batched, facts, theory

D, N, M = 16, 12, 3


def _pairs(n=N, d=D, dtype=torch.float64):
    return (
        facts.unit_vectors(M, n, d, seed=1, dtype=dtype, device="cpu"),
        facts.unit_vectors(M, n, d, seed=2, dtype=dtype, device="cpu"),
    )


def test_unit_vectors_are_unit():
    x = facts.unit_vectors(2, 5, 7, seed=0, device="cpu")
    assert x.shape == (2, 5, 7) and torch.allclose(x.norm(dim=-1), torch.ones(2, 5))


def test_least_squares_recalls_below_d_and_hebbian_is_the_outer_product_sum():
    keys, values = _pairs()
    assert torch.equal(
        facts.recall(facts.write("least_squares", keys, values), keys, values),
        torch.ones(M, dtype=keys.dtype),
    )
    w = facts.write("hebbian", keys, values)
    assert torch.allclose(
        w[0], sum(torch.outer(values[0, i], keys[0, i]) for i in range(N))
    )


def test_training_recalls_what_it_is_given():
    keys, values = _pairs(n=40, dtype=torch.float32)
    w = facts.write("trained", keys, values, steps=200, lr=0.1)
    assert facts.recall(w, keys, values).min() == 1


def test_rome_edit_reads_the_target_and_spares_the_other_keys_below_d():
    keys, values = _pairs()
    w = facts.write("least_squares", keys, values)
    target = values[:, 1]
    for rule in ("rome", "delta"):
        edited = facts.edit(rule, w, keys[:, 0], target, keys=keys)
        assert torch.allclose(
            edited @ keys[:, 0, :, None], target[..., None], atol=1e-10
        )
    edited = facts.edit("rome", w, keys[:, 0], target, keys=keys)
    assert torch.allclose(
        keys[:, 1:] @ edited.mT, keys[:, 1:] @ w.mT, atol=1e-8
    )  # C^+ k_* is orthogonal to the rest


def test_edit_target_makes_the_new_attribute_win():
    keys, values = _pairs()
    w = facts.write("least_squares", keys, values)
    read = facts.edit_target(w, keys[:, 0], values, 5)
    assert ((values @ read[..., None])[..., 0].argmax(-1) == 5).all()


def test_edit_outcome_counts_success_and_damage():
    keys, values = _pairs()
    w = facts.write("least_squares", keys, values)
    before = facts.scores(w, keys, values).argmax(-1)
    edited = facts.edit(
        "rome", w, keys[:, 0], facts.edit_target(w, keys[:, 0], values, 5), keys=keys
    )
    out = facts.edit_outcome(
        edited, keys, values, 0, 5, before, torch.zeros(M, 2, D, dtype=keys.dtype)
    )
    assert (
        out["success"].min() == 1
        and out["paraphrase"].min() == 1
        and out["old"].max() == 0
        and out["damage"].max() == 0
    )


@given(st.integers(0, 10_000), st.integers(0, 7))
def test_flip_strength_is_the_least_strength_that_flips(seed, new):
    read, direction = (
        facts.unit_vectors(M, 1, D, seed=seed + i, dtype=torch.float64, device="cpu")[
            :, 0
        ]
        * 3
        for i in range(2)
    )
    vocabulary = facts.unit_vectors(
        M, 8, D, seed=seed + 2, dtype=torch.float64, device="cpu"
    )
    s = facts.flip_strength(read, direction, vocabulary, new)
    assert (s >= 0).all()

    def answer(f):
        x = read + torch.nan_to_num(s, posinf=0.0)[:, None] * f * direction
        return (vocabulary @ x[..., None])[..., 0].argmax(-1)

    finite = s.isfinite()
    assert (answer(1 + 1e-6)[finite] == new).all()
    positive = finite & (s > 0)
    assert (answer(1 - 1e-6)[positive] != new).all()


def test_a_permutation_holds_log2_n_factorial_bits_and_fano_bounds_what_errors_lose():
    assert facts.permutation_bits(5, 1.0) == pytest.approx(math.log2(120))
    assert facts.permutation_bits(200, 1.0) < facts.fact_bits(200, 1.0, 200)  # fewer than n log2 n
    # errors cost each of the n - 1 facts with a choice h2(a) + (1 - a) log2(its wrong candidates)
    a, n = 0.9, 6
    lost = sum(-(a * math.log2(a) + (1 - a) * math.log2(1 - a)) + (1 - a) * math.log2(k - 1) for k in range(2, n + 1))
    assert facts.permutation_bits(n, a) == pytest.approx(math.log2(math.factorial(n)) - lost)


def test_likelihood_bits_reach_log2_n_factorial_when_certain_and_are_zero_when_uniform():
    keys = facts.unit_vectors(2, 6, 8, seed=0, device="cpu")
    values = facts.unit_vectors(2, 6, 8, seed=1, device="cpu")
    uniform = facts.likelihood_bits(torch.zeros(2, 8, 8), keys, values)  # every answer 1/n: n log2 n of code
    torch.testing.assert_close(uniform, torch.full((2,), math.log2(math.factorial(6)) - 6 * math.log2(6)))
    certain = facts.write("least_squares", keys, values) * 1e3  # the right score far ahead
    torch.testing.assert_close(facts.likelihood_bits(certain, keys, values), torch.full((2,), math.log2(720.0)))


def test_fact_bits_and_quantise():
    assert facts.fact_bits(10, 1.0, 1024) == 100.0
    assert facts.fact_bits(10, 1 / 1024, 1024) == pytest.approx(
        0.0, abs=1e-9
    )  # chance: nothing
    w = torch.randn(2, 4, 4, dtype=torch.float64)
    q = facts.quantise(w, 8)
    assert (q - w).abs().max() <= w.abs().amax() / 127 / 2 + 1e-12
    assert (
        len(torch.unique(facts.quantise(w, 2)[0])) <= 3
    )  # a sign and one magnitude per matrix


def test_a_quantised_layer_rounds_every_matrix_of_every_model_and_leaves_the_layer_alone():
    layer = batched.stack([facts.FactLayer(4, hidden=8, heads=2) for _ in range(3)]).double()
    before = [w.clone() for w in layer.parameters()]
    rounded = facts.quantise_layer(layer, 4)
    for w, r, b in zip(layer.parameters(), rounded.parameters(), before):
        assert torch.equal(w, b)  # the original is untouched
        assert torch.equal(r, facts.quantise(w, 4))
        for m in range(3):  # at most 2^3 - 1 steps each side of zero, per model's matrix
            assert len(torch.unique(r[m])) <= 15


@pytest.mark.parametrize("method", ["rome", "delta"])
def test_a_layer_edit_makes_the_fact_read_its_target_and_changes_only_the_mlp_output(method):
    tokens, vocabulary, answers = facts.fact_table(2, 6, 2, 5, 8, seed=0, dtype=torch.float64)
    layer = facts.train_layers(tokens, vocabulary, answers, hidden=32, heads=4, steps=20)
    target = torch.randn(2, 8, generator=torch.Generator().manual_seed(1), dtype=torch.float64)
    edited = facts.layer_edit(method, layer, tokens, 3, target)
    with torch.no_grad():
        assert torch.allclose(edited(tokens[:, 3]), target, atol=1e-9)
    changed = [
        name for (name, a), b in zip(layer.named_parameters(), edited.parameters()) if not torch.equal(a, b)
    ]
    assert changed == ["down.weight"]
    # the outcome reads the edit through the layer: the fact now answers the target's best attribute
    best = int((vocabulary @ target[..., None])[0, :, 0].argmax())
    before = (layer(tokens) @ vocabulary.mT).argmax(-1)
    noise = torch.zeros(2, 3, 2, 8, dtype=torch.float64)
    outcome = facts.layer_edit_outcome(edited, tokens, vocabulary, 3, best, before, noise)
    assert outcome["success"][0] == 1 and outcome["paraphrase"][0] == 1  # unperturbed paraphrases: the fact itself


def test_top1_threshold_solves_its_equation():
    n = theory.top1_threshold(32)
    assert n * math.log(n) == pytest.approx(32**2 / 2, rel=1e-9)
    assert theory.top1_threshold(32, wide=False) < n


@given(st.floats(4.0, 64.0), st.floats(3.0, 500.0), st.floats(0.5, 4.0))
def test_log_law_capacity_keeps_n_log_n_over_d_squared(d0, n0, factor):
    n = theory.log_law_capacity(d0 * factor, through=(d0, n0))
    assert n * math.log(n) / (d0 * factor) ** 2 == pytest.approx(
        n0 * math.log(n0) / d0**2, rel=1e-9
    )
    assert theory.log_law_capacity(d0, through=(d0, n0)) == pytest.approx(n0, rel=1e-9)


@pytest.mark.parametrize(
    "call, error",
    [
        (lambda: facts.unit_vectors(0, 2, 2, seed=0), ValueError),
        (lambda: facts.write("oja", *_pairs()), ValueError),
        (lambda: facts.write("hebbian", *_pairs(), steps=3), TypeError),
        (
            lambda: facts.write("hebbian", torch.ones(3, 4), torch.ones(3, 4)),
            ValueError,
        ),
        (
            lambda: facts.recall(
                torch.zeros(M, D, D),
                *_pairs(dtype=torch.float32),
                answers=torch.zeros(N),
            ),
            TypeError,
        ),
        (lambda: facts.fact_bits(3, 1.5, 10), ValueError),
        (lambda: facts.fact_bits(3, 0.5, 1), ValueError),
        (lambda: facts.quantise(torch.ones(2, 2), 1), ValueError),
        (
            lambda: facts.edit(
                "rome", torch.zeros(M, D, D), torch.ones(M, D), torch.ones(M, D)
            ),
            ValueError,
        ),
        (
            lambda: facts.edit(
                "delta", torch.zeros(M, D, D), torch.ones(M + 1, D), torch.ones(M, D)
            ),
            ValueError,
        ),
        (
            lambda: facts.edit_target(
                torch.zeros(M, D, D), torch.ones(M, D), torch.ones(M, 4, D), 4
            ),
            ValueError,
        ),
        (lambda: theory.top1_threshold(0), ValueError),
        (lambda: theory.log_law_capacity(0, through=(16, 50)), ValueError),
        (lambda: theory.log_law_capacity(32, through=(16, 1)), ValueError),
        (lambda: theory.log_law_capacity(32, through=[16, 50]), TypeError),
    ],
)
def test_bad_input_is_refused(call, error):
    with pytest.raises(error):
        call()


def test_fact_layer_counts_its_parameters_and_learns_a_small_table():
    tokens, vocabulary, answers = facts.fact_table(2, 6, 2, 8, 8, seed=3, device="cpu")
    assert tokens.shape == (2, 12, 2, 8) and answers.shape == (2, 12)
    assert torch.equal(tokens[:, 5, 0], tokens[:, 4, 0]) and torch.equal(
        tokens[:, 5, 1], tokens[:, 1, 1]
    )  # s R + r
    layer = facts.train_layers(
        tokens, vocabulary, answers, hidden=16, heads=4, steps=200, lr=0.03, seed=1
    )
    assert sum(p[0].numel() for p in layer.parameters()) == facts.parameter_count(8, 16)
    assert facts.layer_recall(layer, tokens, vocabulary, answers).min() == 1
    alone = facts.train_layers(
        tokens[1:],
        vocabulary[1:],
        answers[1:],
        hidden=16,
        heads=4,
        steps=200,
        lr=0.03,
        seed=2,
    )
    assert torch.allclose(
        alone.up.weight[0], layer.up.weight[1], atol=1e-4
    )  # a stack trains each model alone
    start = facts.init_layers(tokens, hidden=16, heads=4, seed=1)
    again = facts.train_layers(
        tokens, vocabulary, answers, hidden=16, heads=4, steps=1, lr=1e-12, seed=1
    )
    assert torch.allclose(start.up.weight, again.up.weight, atol=1e-9)  # its start
    neurons = facts.key_value_neurons(layer, tokens, vocabulary, answers, relations=2)
    assert all(
        v.shape == (2,) and ((v >= 0) & (v <= 1)).all() for v in neurons.values()
    )


def test_removing_a_units_push_is_the_layer_with_that_unit_zeroed():
    torch.manual_seed(0)
    layer = batched.stack([facts.FactLayer(8, hidden=16, heads=2) for _ in range(2)]).double()
    tokens, vocabulary, answers = facts.fact_table(2, 6, 2, 5, 8, seed=1, device="cpu", dtype=torch.float64)
    out = facts.unit_ablations(layer, tokens, vocabulary, answers, seed=0)
    with torch.no_grad():
        before = (layer(tokens) @ vocabulary.mT).argmax(-1)  # (M, n)
        fired = layer.hidden_units(tokens)  # (M, n, h)
        columns = vocabulary @ layer.down.weight  # (M, V, h)
        changed = torch.zeros(2)
        for m in range(2):
            for i in range(tokens.shape[1]):
                unit = (fired[m, i] * columns[m, before[m, i]]).argmax()
                weight = layer.down.weight.clone()
                layer.down.weight[m, :, unit] = 0  # the unit removed from this model
                changed[m] += (layer(tokens)[m, i] @ vocabulary[m].T).argmax() != before[m, i]
                layer.down.weight.copy_(weight)
    torch.testing.assert_close(out["strongest"], changed.double() / tokens.shape[1])
    with torch.no_grad():
        alone = ((layer.attend(tokens) @ vocabulary.mT).argmax(-1) == answers).double().mean(-1)
    torch.testing.assert_close(out["mlp_off"], alone)
