"""pavlov.conditioning experiment helpers: acquisition, response strength, generalisation tests, pairing tables.

Each helper is checked against the definitions it shortcuts: ``acquisition`` against ``condition``
and ``hebbian_store`` + ``respond``; ``store_from_pairings`` against an explicit sum of outer
products; ``generalisation_tests`` against its defining properties (unit norm, exact cosine).
"""

from __future__ import annotations

import math

import pytest
import torch
from conftest import DEVICE, EXACT, FLOAT_DTYPES, PROPERTY, batch_shapes, meta, randn, rel_err, seeds
from hypothesis import given
from hypothesis import strategies as st

import pavlov as pv
from pavlov.conditioning import (acquisition, condition, generalisation_tests, hebbian_store, respond,
                                 response_strength, store_from_pairings)
from pavlov.maps import FEATURE_MAPS, NORMS

F64 = {"dtype": torch.float64, "device": "cpu"}


def tensor(rows) -> torch.Tensor:
    return torch.tensor(rows, **F64)


# --- hand-computed cases ----------------------------------------------------------------------

def test_acquisition_by_hand():
    bell, light, food, shock = torch.eye(4, **F64)
    # bell-food, light-shock, bell-food: the bell's salivation steps 1, 1, 2 (alpha = 1), the light's flinch 0, 1, 1
    cs, us = torch.stack([bell, light, bell]), torch.stack([food, shock, food])
    out = acquisition(torch.stack([bell, light]), cs, us)                   # (T = 3, m = 2, d_v = 4)
    assert out.shape == (3, 2, 4)
    assert out[:, 0].tolist() == [[0, 0, 1, 0], [0, 0, 1, 0], [0, 0, 2, 0]]
    assert out[:, 1].tolist() == [[0, 0, 0, 0], [0, 0, 0, 1], [0, 0, 0, 1]]
    # the learning rate scales every row; a half-similar test retrieves half
    half = tensor([0.5, 0.0, 0.0, 0.0])
    assert acquisition(half[None], cs, us, alpha=3.0)[:, 0, 2].tolist() == [1.5, 1.5, 3.0]


def test_response_strength_by_hand():
    food = tensor([0.0, 2.0])
    assert response_strength(food, food).item() == 1.0                       # the US itself has strength 1
    assert response_strength(tensor([1.0, 3.0]), food).item() == 1.5          # 6 / 4
    assert response_strength(tensor([5.0, 0.0]), food).item() == 0.0          # orthogonal to the US
    # broadcasting: responses (2, 1, d) against US (3, d) give (2, 3)
    responses, us = tensor([[[1.0, 0.0]], [[0.0, 1.0]]]), tensor([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
    assert response_strength(responses, us).tolist() == [[1.0, 0.0, 0.5], [0.0, 1.0, 0.5]]


def test_store_from_pairings_by_hand():
    cs, us = torch.eye(3, **F64), tensor([[1.0, 0.0], [0.0, 2.0]])
    # bell x2 with food, light x1 with food and x3 with shock: S = 2 e1^T food + e2^T food + 3 e2^T shock
    store = store_from_pairings(cs, us, [[2, 0], [1, 3], [0, 0]], alpha=0.5)
    assert store.tolist() == [[1.0, 0.0], [0.5, 3.0], [0.0, 0.0]]
    assert store_from_pairings(cs, us, torch.tensor([[2, 0], [1, 3], [0, 0]])).tolist() == [[2, 0], [1, 6], [0, 0]]
    assert store_from_pairings(cs, us, [[0, 0], [0, 0], [0, 0]]).tolist() == [[0, 0], [0, 0], [0, 0]]


def test_generalisation_tests_endpoints():
    bell = tensor([3.0, 0.0, 0.0])                                             # not a unit vector: its direction counts
    tests = generalisation_tests(bell, [1.0, -1.0, 0.0], generator=pv.generator(0, "cpu"))
    assert tests.shape == (3, 3)
    assert tests[0].tolist() == [1.0, 0.0, 0.0] and tests[1].tolist() == [-1.0, 0.0, 0.0]
    assert tests[2, 0].item() == 0.0 and abs(tests[2].norm().item() - 1) <= EXACT


# --- the helpers agree with the definitions -------------------------------------------------

@PROPERTY
@given(batch=batch_shapes, T=st.integers(1, 8), m=st.integers(1, 3), d_k=st.integers(1, 5), d_v=st.integers(1, 5),
       seed=seeds, f=st.sampled_from(sorted(FEATURE_MAPS)), g=st.sampled_from(sorted(FEATURE_MAPS)),
       alpha=st.floats(-3, 3, allow_nan=False), norm=st.sampled_from(NORMS))
def test_acquisition_is_condition_with_a_fixed_test(batch, T, m, d_k, d_v, seed, f, g, alpha, norm):
    # row i of the acquisition curve is the circuit's output at step i with test_i fixed
    test, cs, us = randn(seed, *batch, m, d_k), randn(seed + 1, *batch, T, d_k), randn(seed + 2, *batch, T, d_v)
    out = acquisition(test, cs, us, f=f, g=g, alpha=alpha, norm=norm)
    assert out.shape == (*batch, T, m, d_v)
    for i in range(m):
        fixed = test[..., i:i + 1, :].expand(*batch, T, d_k)
        assert rel_err(condition(fixed, cs, us, f=f, g=g, alpha=alpha, norm=norm), out[..., i, :]) <= EXACT


@PROPERTY
@given(batch=batch_shapes, T=st.integers(1, 8), m=st.integers(1, 3), d=st.integers(1, 5), seed=seeds,
       f=st.sampled_from(sorted(FEATURE_MAPS)), norm=st.sampled_from(NORMS))
def test_acquisition_ends_at_the_full_store(batch, T, m, d, seed, f, norm):
    test, cs, us = randn(seed, *batch, m, d), randn(seed + 1, *batch, T, d), randn(seed + 2, *batch, T, d)
    store = hebbian_store(cs, us, f=f, g="tanh", alpha=0.7)
    expected = respond(store, test, f=f, norm=norm)
    assert rel_err(expected, acquisition(test, cs, us, f=f, g="tanh", alpha=0.7, norm=norm)[..., -1, :, :]) <= EXACT


def test_acquisition_broadcasts_one_test_set_over_a_batch():
    test, cs, us = randn(0, 2, 4), randn(1, 3, 6, 4), randn(2, 3, 6, 5)
    expected = acquisition(test.expand(3, 2, 4), cs, us)
    assert torch.equal(acquisition(test, cs, us), expected)


@PROPERTY
@given(batch=batch_shapes, n_cs=st.integers(1, 3), n_us=st.integers(1, 3), d_k=st.integers(1, 4),
       d_v=st.integers(1, 4), seed=seeds, data=st.data(), f=st.sampled_from(sorted(FEATURE_MAPS)),
       alpha=st.floats(-3, 3, allow_nan=False))
def test_store_from_pairings_is_the_weighted_sum(batch, n_cs, n_us, d_k, d_v, seed, data, f, alpha):
    counts = data.draw(st.lists(st.lists(st.integers(0, 4), min_size=n_us, max_size=n_us), min_size=n_cs, max_size=n_cs))
    cs, us = randn(seed, *batch, n_cs, d_k), randn(seed + 1, *batch, n_us, d_v)
    phi, gamma = FEATURE_MAPS[f], FEATURE_MAPS["tanh"]
    expected = cs.new_zeros(*batch, d_k, d_v)
    for a in range(n_cs):
        for b in range(n_us):
            expected = expected + alpha * counts[a][b] * torch.einsum("...k,...v->...kv", phi(cs[..., a, :]), gamma(us[..., b, :]))
    store = store_from_pairings(cs, us, counts, f=f, g="tanh", alpha=alpha)
    assert store.shape == (*batch, d_k, d_v)
    if any(any(row) for row in counts) and alpha != 0:
        assert rel_err(expected, store) <= EXACT
    else:
        assert not store.any()


@PROPERTY
@given(batch=batch_shapes, d=st.integers(2, 40), seed=seeds,
       similarity=st.lists(st.floats(-1, 1, allow_nan=False), min_size=1, max_size=6))
def test_generalisation_tests_have_unit_norm_and_the_exact_similarity(batch, d, seed, similarity):
    cs = randn(seed, *batch, d)
    tests = generalisation_tests(cs, similarity, generator=pv.generator(seed + 1, DEVICE))
    assert tests.shape == (*batch, len(similarity), d)
    cosine = tests @ (cs / cs.norm(dim=-1, keepdim=True)).unsqueeze(-1)            # (..., m, 1)
    assert (cosine[..., 0] - tensor(similarity).to(DEVICE)).abs().max().item() <= EXACT
    assert (tests.norm(dim=-1) - 1).abs().max().item() <= EXACT


def test_generalisation_tests_are_isotropic_off_the_cs():
    # The part of t off the CS is a uniform direction in the orthogonal complement, so its overlap with
    # a fixed unit vector a orthogonal to the CS has mean 0 and variance (1 - c^2) / (d - 1).
    d, n, c = 8, 20_000, 0.6
    cs = torch.zeros(n, d, **F64)
    cs[:, 0] = 1.0
    a = torch.zeros(d, **F64)
    a[1] = 1.0
    overlap = generalisation_tests(cs, [c], generator=pv.generator(3, "cpu"))[:, 0] @ a
    var = (1 - c**2) / (d - 1)
    assert abs(overlap.mean().item()) <= pv.claims.tolerance(math.sqrt(var / n))
    # Var of overlap^2 is E[x^4] - var^2 = 2 var^2 (d - 1) / (d + 1) for a uniform direction in R^(d-1)
    assert abs(overlap.pow(2).mean().item() - var) <= pv.claims.tolerance(overlap.pow(2).std().item() / math.sqrt(n))


def test_generalisation_tests_reproducible_with_a_seed():
    cs = randn(0, 4, 6)
    one = generalisation_tests(cs, [0.2, 0.9], generator=pv.generator(7, DEVICE))
    two = generalisation_tests(cs, [0.2, 0.9], generator=pv.generator(7, DEVICE))
    assert torch.equal(one, two)
    assert torch.equal(generalisation_tests(cs, torch.tensor([0.2, 0.9], **F64).to(DEVICE), generator=pv.generator(7, DEVICE)), one)


# --- dtype and device -------------------------------------------------------------------------

CALLS = {
    "acquisition": lambda a, b, c: acquisition(a[..., :2, :], b, c, f="elu+1", norm="rms"),
    "response_strength": lambda a, b, c: response_strength(a, b),
    "generalisation_tests": lambda a, b, c: generalisation_tests(a, [0.0, 0.5],
                                                                 generator=None if a.device.type == "meta" else pv.generator(0, a.device)),
    "store_from_pairings": lambda a, b, c: store_from_pairings(a[..., :2, :], c[..., :3, :], [[1, 0, 2], [0, 1, 0]], g="tanh"),
}


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize("name", list(CALLS))
def test_dtype_and_device_preserved(name, dtype):
    a, b, c = randn(0, 2, 5, 3, dtype=dtype), randn(1, 2, 5, 3, dtype=dtype), randn(2, 2, 5, 4, dtype=dtype)
    out = CALLS[name](a, b, c)
    assert out.dtype == dtype and out.device.type == DEVICE.type
    assert torch.isfinite(out).all()


# --- bad input --------------------------------------------------------------------------------

NAN, INF = float("nan"), float("inf")


def r(*shape, dtype=torch.float64):
    return randn(0, *shape, dtype=dtype, device="cpu")


def with_value(x, value):
    x = x.clone()
    x.view(-1)[0] = value
    return x


BAD_ACQUISITION = [   # (test, cs, us, kwargs, error, parameter)
    (r(3), r(5, 3), r(5, 2), {}, ValueError, "test"),                    # too few dimensions
    (r(2, 4), r(5, 3), r(5, 2), {}, ValueError, "test"),                 # test's d_k is not the CS's
    (r(2, 3), r(5, 3), r(4, 2), {}, ValueError, "us"),                   # one US per pairing
    (r(2, 3), r(2, 5, 3), r(3, 5, 2), {}, ValueError, "us"),             # cs and us share batch dimensions
    (r(4, 2, 3), r(3, 5, 3), r(3, 5, 2), {}, ValueError, "test"),        # test's batch does not broadcast
    (with_value(r(2, 3), NAN), r(5, 3), r(5, 2), {}, ValueError, "test"),
    (r(2, 3), r(5, 3), with_value(r(5, 2), INF), {}, ValueError, "us"),
    (r(2, 3), r(5, 3, dtype=torch.float32), r(5, 2), {}, TypeError, "cs"),
    (r(2, 3), meta(5, 3), r(5, 2), {}, ValueError, "cs"),
    (r(2, 3).tolist(), r(5, 3), r(5, 2), {}, TypeError, "test"),
    (r(2, 3), r(5, 3), r(5, 2), {"alpha": NAN}, ValueError, "alpha"),
    (r(2, 3), r(5, 3), r(5, 2), {"norm": "batch"}, ValueError, "norm"),
    (r(2, 3), r(5, 3), r(5, 2), {"f": "softmax"}, ValueError, "f"),
    (r(2, 3), r(5, 3), r(5, 2), {"eps": -1.0}, ValueError, "eps"),
]


@pytest.mark.parametrize("test, cs, us, kwargs, error, param", BAD_ACQUISITION)
def test_acquisition_bad_input(test, cs, us, kwargs, error, param):
    with pytest.raises(error, match=rf"\b{param}\b"):
        acquisition(test, cs, us, **kwargs)


BAD_STRENGTH = [   # (response, us, error, parameter)
    (r(4, 3), r(4, 2), ValueError, "us"),                               # dimensions differ
    (r(4, 3), torch.zeros(3, **F64), ValueError, "us"),                 # the zero US has no direction
    (r(4, 3), with_value(r(3), NAN), ValueError, "us"),
    (with_value(r(4, 3), INF), r(3), ValueError, "response"),
    (r(4, 3), r(3, dtype=torch.float32), TypeError, "us"),
    (r(4, 3).long(), r(3), TypeError, "response"),
    (r(4, 3), [1.0, 2.0, 3.0], TypeError, "us"),
]


@pytest.mark.parametrize("response, us, error, param", BAD_STRENGTH)
def test_response_strength_bad_input(response, us, error, param):
    with pytest.raises(error, match=rf"\b{param}\b"):
        response_strength(response, us)


BAD_GENERALISATION = [   # (cs, similarity, error, parameter)
    (r(4, 1), [0.5], ValueError, "cs"),                                 # no room for an orthogonal direction
    (torch.zeros(2, 3, **F64), [0.5], ValueError, "cs"),                # the zero CS has no direction
    (with_value(r(2, 3), NAN), [0.5], ValueError, "cs"),
    (r(2, 3).long(), [0.5], TypeError, "cs"),
    (r(2, 3), [1.5], ValueError, "similarity"),                         # not a cosine
    (r(2, 3), [-1.01, 0.0], ValueError, "similarity"),
    (r(2, 3), [], ValueError, "similarity"),
    (r(2, 3), [NAN], ValueError, "similarity"),
    (r(2, 3), ["0.5"], TypeError, "similarity"),
    (r(2, 3), torch.zeros(2, 2), ValueError, "similarity"),             # not 1-D
]


@pytest.mark.parametrize("cs, similarity, error, param", BAD_GENERALISATION)
def test_generalisation_tests_bad_input(cs, similarity, error, param):
    with pytest.raises(error, match=rf"\b{param}\b"):
        generalisation_tests(cs, similarity, generator=pv.generator(0, "cpu"))


BAD_PAIRINGS = [   # (cs, us, counts, kwargs, error, parameter)
    (r(3, 4), r(2, 4), [[1, 0], [0, 1]], {}, ValueError, "counts"),               # one row per CS
    (r(3, 4), r(2, 4), [[1, 0, 0], [0, 1, 0], [0, 0, 0]], {}, ValueError, "counts"),  # one column per US
    (r(3, 4), r(2, 4), [[1, 0], [0, -1], [0, 0]], {}, ValueError, "counts"),       # negative
    (r(3, 4), r(2, 4), [[1, 0], [0, 1.5], [0, 0]], {}, TypeError, "counts"),       # not an integer
    (r(3, 4), r(2, 4), [[True, 0], [0, 1], [0, 0]], {}, TypeError, "counts"),
    (r(3, 4), r(2, 4), torch.ones(3, 2), {}, TypeError, "counts"),                 # a floating tensor
    (r(3, 4), r(2, 4), 5, {}, ValueError, "counts"),
    (r(3, 4), r(2, 4, dtype=torch.float32), [[1, 0], [0, 1], [0, 0]], {}, TypeError, "us"),
    (r(2, 3, 4), r(3, 2, 4), [[1, 0], [0, 1], [0, 0]], {}, ValueError, "counts|cs"),
    (r(3, 4), r(2, 4), [[1, 0], [0, 1], [0, 0]], {"alpha": INF}, ValueError, "alpha"),
    (r(3, 4), r(2, 4), [[0, 0], [0, 0], [0, 0]], {"alpha": INF}, ValueError, "alpha"),
]


@pytest.mark.parametrize("cs, us, counts, kwargs, error, param", BAD_PAIRINGS)
def test_store_from_pairings_bad_input(cs, us, counts, kwargs, error, param):
    with pytest.raises(error, match=rf"\b({param})\b"):
        store_from_pairings(cs, us, counts, **kwargs)
