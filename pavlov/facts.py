r"""Facts in a weight matrix: write them, read them by the best-scoring attribute, count them in bits, edit one.

Chapter 14. A fact is a pair (subject-relation, attribute): its key :math:`k_i` is the embedding of the subject and
relation, its value :math:`u_i` the embedding of the attribute, both drawn uniformly on the unit sphere. A linear
memory :math:`W` (``[d_out, d_in]``) reads a fact by scoring every attribute of the vocabulary against the read
:math:`W k_i` and answering the best (top-1). It is written three ways (:data:`WRITES`): the Hebbian store
:math:`W = \sum_i u_i k_i^\top`, the least-squares store :math:`W = U^\top (K^+)^\top`, and trained from zero by
gradient descent (Adam) on the cross-entropy of the scores. Every function takes a stack of ``M`` independent
memories (one per seed, a leading model axis), trained together as :mod:`pavlov.batched` trains models: the loss is
the sum of each memory's own, so each one's gradient is its own.

One fact is changed by a rank-one write :math:`W \leftarrow W + (v_* - W k_*)\, c^\top / (c^\top k_*)` that makes
:math:`W k_*` read :math:`v_*` (:func:`edit`): :math:`c = C^{-1} k_*` with :math:`C` the keys' second moment is the
update of Meng et al. (ROME), :math:`c = k_*` a delta-rule step; the Hebbian write adds :math:`v_* k_*^\top` alone.
"""

from __future__ import annotations

import copy
import math

import torch
import torch.nn.functional as F
from torch import nn

from . import _validate, batched
from .runtime import generator, resolve, seed_for

WRITES = ("hebbian", "least_squares", "trained")
"""How a memory is written: summed outer products, the least-squares fit, or trained on the cross-entropy."""

EDITS = ("rome", "delta", "hebbian")
"""How one fact is changed: a rank-one least-squares write with the keys' covariance, a delta step, a Hebbian write."""


def unit_vectors(
    models: int, n: int, d: int, *, seed: int, device=None, dtype=None
) -> torch.Tensor:
    """``[models, n, d]`` vectors drawn independently and uniformly on the unit sphere of ``R^d``."""
    models, n, d = (
        _validate.positive_int(k, v)
        for k, v in (("models", models), ("n", n), ("d", d))
    )
    device, dtype = resolve(device, dtype)
    x = torch.randn(
        models, n, d, generator=generator(seed, device), device=device, dtype=dtype
    )
    return x / x.norm(dim=-1, keepdim=True)


def _stack(name: str, x) -> torch.Tensor:
    _validate.tensor(name, x, min_dim=3)
    if x.dim() != 3:
        raise ValueError(f"{name} must be [models, n, d], got shape {tuple(x.shape)}")
    return x


def _pairs(keys, values) -> tuple[torch.Tensor, torch.Tensor]:
    keys, values = _stack("keys", keys), _stack("values", values)
    _validate.same_device_dtype(keys=keys, values=values)
    if values.shape[:2] != keys.shape[:2]:
        raise ValueError(
            f"values must hold one value per key, [models, n] = {tuple(keys.shape[:2])}, got "
            f"{tuple(values.shape[:2])}"
        )
    return keys, values


def scores(
    memory: torch.Tensor, queries: torch.Tensor, vocabulary: torch.Tensor
) -> torch.Tensor:
    r"""``[models, q, V]``: each attribute's score :math:`u_y \cdot W k` for each query (``memory [M, d_out, d_in]``,
    ``queries [M, q, d_in]``, ``vocabulary [M, V, d_out]``)."""
    _stack("memory", memory)
    queries, vocabulary = _stack("queries", queries), _stack("vocabulary", vocabulary)
    _validate.same_device_dtype(memory=memory, queries=queries, vocabulary=vocabulary)
    if memory.shape[0] != queries.shape[0] or memory.shape[0] != vocabulary.shape[0]:
        raise ValueError(
            "memory, queries and vocabulary must have one leading model axis of one size, got "
            f"{memory.shape[0]}, {queries.shape[0]}, {vocabulary.shape[0]}"
        )
    _validate.shape(
        "queries", queries, (memory.shape[-1],), against="memory's input width"
    )
    _validate.shape(
        "vocabulary", vocabulary, (memory.shape[-2],), against="memory's output width"
    )
    return queries @ memory.mT @ vocabulary.mT


def recall(
    memory: torch.Tensor, queries: torch.Tensor, vocabulary: torch.Tensor, answers=None
) -> torch.Tensor:
    """``[models]``: the fraction of queries whose best-scoring attribute is the right one (top-1 accuracy).

    ``answers`` (``[q]`` or ``[models, q]`` attribute indices) defaults to query ``i`` answered by attribute ``i``.
    """
    best = scores(memory, queries, vocabulary).argmax(-1)  # (M, q)
    if answers is None:
        answers = torch.arange(best.shape[1], device=best.device)
    if not isinstance(answers, torch.Tensor) or answers.dtype != torch.long:
        raise TypeError("answers must be a torch.long tensor of attribute indices")
    if answers.shape[-1] != best.shape[1]:
        raise ValueError(
            f"answers must give one attribute per query ({best.shape[1]}), got shape {tuple(answers.shape)}"
        )
    return (best == answers.to(best.device)).to(queries.dtype).mean(-1)


def likelihood_bits(memory: torch.Tensor, keys: torch.Tensor, values: torch.Tensor) -> torch.Tensor:
    r"""``[models]``: the bits the memory saves in coding its facts (fact :math:`i` answered by attribute
    :math:`i`, a permutation), as compression counts them: the permutation's :math:`\log_2 n!` less the code
    length of the answers under the memory's softmax over the scores, :math:`-\sum_i \log_2 p_i(i)`. A lower
    bound, since that code does not use that the attributes are distinct; it is negative where the memory
    codes the facts worse than knowing nothing but that they are a permutation.

    >>> keys = torch.eye(3)[None]
    >>> likelihood_bits(100 * torch.eye(3)[None], keys, keys)  # every answer certain: log2 3! bits
    tensor([2.5850])
    """
    keys, values = _pairs(keys, values)
    logits = scores(memory, keys, values)  # (M, n, n)
    n = logits.shape[1]
    code = -logits.log_softmax(-1).diagonal(0, -2, -1).sum(-1) / math.log(2)
    return math.lgamma(n + 1) / math.log(2) - code


def train(
    keys: torch.Tensor,
    values: torch.Tensor,
    *,
    steps: int = 400,
    lr: float = 0.05,
    vocabulary=None,
    answers=None,
) -> torch.Tensor:
    r"""``[M, d, d]`` memories trained from zero by full-batch Adam on the cross-entropy of the top-1 read.

    Each step shows every fact once (one exposure per fact per step). The logits of query :math:`k_i` are the scores
    :math:`u_y \cdot W k_i` over ``vocabulary`` (default: the stored values); the answer of query ``i`` is ``answers[i]``
    (default ``i``). The loss is the sum over the stack of each memory's mean cross-entropy.
    """
    keys, values = _pairs(keys, values)
    steps = _validate.positive_int("steps", steps)
    lr = _validate.finite_float("lr", lr, positive=True)
    vocabulary = values if vocabulary is None else _stack("vocabulary", vocabulary)
    if answers is None:
        answers = torch.arange(keys.shape[1], device=keys.device)
    models, n, d_in = keys.shape
    memory = torch.zeros(
        models,
        vocabulary.shape[-1],
        d_in,
        device=keys.device,
        dtype=keys.dtype,
        requires_grad=True,
    )
    optimiser = torch.optim.Adam([memory], lr=lr)
    target = answers.expand(models, n).reshape(-1)
    for _ in range(steps):
        logits = scores(memory, keys, vocabulary)  # (M, n, V)
        loss = (
            F.cross_entropy(logits.reshape(models * n, -1), target, reduction="sum") / n
        )
        optimiser.zero_grad(set_to_none=True)
        loss.backward()
        optimiser.step()
    return memory.detach()


def write(
    method: str, keys: torch.Tensor, values: torch.Tensor, **training
) -> torch.Tensor:
    r"""``[M, d_v, d_k]`` memories holding the pairs ``keys [M, n, d_k]`` to ``values [M, n, d_v]`` (:data:`WRITES`).

    ``hebbian``: :math:`W = U^\top K`; ``least_squares``: :math:`W = (K^+ U)^\top`, the fit of least squared error
    (of least norm when :math:`n < d`); ``trained``: :func:`train`, with ``training``'s ``steps`` and ``lr``.
    """
    _validate.option("method", method, WRITES)
    keys, values = _pairs(keys, values)
    if method != "trained" and training:
        raise TypeError(
            f"only the trained write takes training arguments, got {sorted(training)}"
        )
    if method == "hebbian":
        return values.mT @ keys
    if method == "least_squares":
        return (torch.linalg.pinv(keys) @ values).mT
    return train(keys, values, **training)


def fact_bits(n_facts: int, accuracy: float, vocabulary: int) -> float:
    r"""The bits ``n_facts`` facts carry when each is recalled right with probability ``accuracy`` among ``vocabulary``
    equally likely attributes, a wrong answer equally likely to be any other (the symmetric channel):
    :math:`n\,[\log_2 V - h_2(a) - (1 - a)\log_2(V - 1)]`.

    >>> fact_bits(10, 1.0, 1024)
    100.0
    """
    n = _validate.positive_int("n_facts", n_facts)
    a = _validate.probability("accuracy", accuracy)
    v = _validate.positive_int("vocabulary", vocabulary)
    if v < 2:
        raise ValueError(f"vocabulary must be at least 2 attributes, got {v}")
    h2 = 0.0 if a in (0.0, 1.0) else -(a * math.log2(a) + (1 - a) * math.log2(1 - a))
    return n * max(0.0, math.log2(v) - h2 - (1 - a) * math.log2(v - 1))


def permutation_bits(n_facts: int, accuracy: float) -> float:
    r"""The bits ``n_facts`` facts carry when their attributes are all distinct, one per fact (a permutation of
    ``n_facts``), each recalled right with probability ``accuracy``: the permutation's
    :math:`\log_2 n!` less Fano's bound on what the errors lose, fact by fact given the facts before (the
    :math:`k`-th last of them has :math:`k` candidates left),
    :math:`\log_2 n! - (n - 1)\,h_2(a) - (1 - a)\log_2 (n - 1)!`, a lower bound on the information recalled.
    Counting each fact as free among :math:`n` (:func:`fact_bits` with ``vocabulary = n``) would give
    :math:`n \log_2 n`, more than the facts hold.

    >>> round(permutation_bits(4, 1.0), 3)  # log2 4! = log2 24
    4.585
    """
    n = _validate.positive_int("n_facts", n_facts)
    a = _validate.probability("accuracy", accuracy)
    h2 = 0.0 if a in (0.0, 1.0) else -(a * math.log2(a) + (1 - a) * math.log2(1 - a))
    log2_factorial = math.lgamma(n + 1) / math.log(2)
    return max(0.0, log2_factorial - (n - 1) * h2 - (1 - a) * math.lgamma(n) / math.log(2))


def quantise(weights: torch.Tensor, bits: int) -> torch.Tensor:
    r"""``weights`` rounded to ``bits`` bits a number: the symmetric uniform grid of :math:`2^{b-1} - 1` steps each side
    of zero, scaled to each matrix's largest magnitude (the last two axes), as weight-only quantisation does."""
    _validate.tensor("weights", weights, min_dim=2)
    bits = _validate.positive_int("bits", bits)
    if bits < 2:
        raise ValueError(
            f"bits must be at least 2 (a sign and a magnitude), got {bits}"
        )
    levels = 2 ** (bits - 1) - 1
    step = (
        weights.abs()
        .amax(dim=(-2, -1), keepdim=True)
        .clamp_min(torch.finfo(weights.dtype).tiny)
        / levels
    )
    return (weights / step).round().clamp(-levels, levels) * step


def edit_target(
    memory: torch.Tensor,
    key: torch.Tensor,
    vocabulary: torch.Tensor,
    new: int,
    *,
    steps: int = 200,
    lr: float = 0.05,
    margin: float = 1.0,
    offset: torch.Tensor | None = None,
) -> torch.Tensor:
    r"""``[M, d_out]``: the read :math:`v_*` that answers ``new`` for ``key [M, d_in]``, as ROME finds it: from the
    present read :math:`W k_*`, gradient steps on the cross-entropy of ``new`` until its score leads every other by
    ``margin`` (the steps stop changing a memory's read once it does). ``offset [M, d_out]``, where the memory writes
    into a residual stream, is added to the read: the read returned is then the stream's, offset included."""
    _stack("memory", memory)
    _validate.tensor("key", key, min_dim=2)
    _stack("vocabulary", vocabulary)
    if (
        isinstance(new, bool)
        or not isinstance(new, int)
        or not 0 <= new < vocabulary.shape[1]
    ):
        raise ValueError(
            f"new must be an attribute index in [0, {vocabulary.shape[1]}), got {new!r}"
        )
    margin = _validate.finite_float("margin", margin, positive=True)
    read = (memory @ key[..., None])[..., 0]  # (M, d_out)
    if offset is not None:
        _validate.tensor("offset", offset, min_dim=2)
        if offset.shape != read.shape:
            raise ValueError(f"offset must be [models, d_out] = {tuple(read.shape)}, got {tuple(offset.shape)}")
        read = read + offset
    read = read.detach().clone().requires_grad_(True)
    optimiser = torch.optim.Adam(
        [read], lr=_validate.finite_float("lr", lr, positive=True)
    )
    target = torch.full((read.shape[0],), new, device=read.device)
    for _ in range(_validate.positive_int("steps", steps)):
        logits = (vocabulary @ read[..., None])[..., 0]  # (M, V)
        others = logits.detach().clone()
        others[:, new] = -math.inf
        short = (
            logits.detach()[:, new] - others.amax(-1)
        ) < margin  # (M,) still to move
        if not short.any():
            break
        loss = (F.cross_entropy(logits, target, reduction="none") * short).sum()
        optimiser.zero_grad(set_to_none=True)
        loss.backward()
        optimiser.step()
    return read.detach()


def flip_strength(
    read: torch.Tensor, direction: torch.Tensor, vocabulary: torch.Tensor, new: int
) -> torch.Tensor:
    r"""``[M]``: the smallest :math:`s \ge 0` at which the read ``read + s * direction`` (each ``[M, d_out]``) answers
    attribute ``new`` of ``vocabulary [M, V, d_out]`` by top-1. The scores are linear in :math:`s` (:math:`a` those
    of ``read``, :math:`b` those of ``direction``): ``new`` leads :math:`y` where
    :math:`s\,(b_{\text{new}} - b_y) > a_y - a_{\text{new}}`, so it is the largest such bound over the attributes
    gaining on ``new``'s score less fast; ``inf`` where no strength makes ``new`` lead every other. The strength that makes a write just succeed, for comparing writes at equal success."""
    vocabulary = _stack("vocabulary", vocabulary)
    for name, x in (("read", read), ("direction", direction)):
        _validate.tensor(name, x, min_dim=2)
        if x.shape != (vocabulary.shape[0], vocabulary.shape[-1]):
            raise ValueError(
                f"{name} must be [models, d_out] = {(vocabulary.shape[0], vocabulary.shape[-1])}, "
                f"got {tuple(x.shape)}"
            )
    _validate.same_device_dtype(read=read, direction=direction, vocabulary=vocabulary)
    if (
        isinstance(new, bool)
        or not isinstance(new, int)
        or not 0 <= new < vocabulary.shape[1]
    ):
        raise ValueError(
            f"new must be an attribute index in [0, {vocabulary.shape[1]}), got {new!r}"
        )
    a = (vocabulary @ read[..., None])[..., 0]  # (M, V)
    b = (vocabulary @ direction[..., None])[..., 0]
    gap = a - a[:, new : new + 1]  # new leads y at strength s once s * gain > gap
    gain = b[:, new : new + 1] - b
    ratio = gap / torch.where(gain == 0, 1.0, gain)
    inf = torch.full_like(ratio, math.inf)
    others = torch.ones_like(gap, dtype=torch.bool)
    others[:, new] = False
    low = torch.where(others & (gain > 0), ratio, -inf).amax(-1).clamp_min(0.0)
    high = torch.where(others & (gain < 0), ratio, inf).amin(-1)  # y overtakes again
    never = (others & (gain == 0) & (gap >= 0)).any(-1) | (low >= high)
    return torch.where(never, math.inf, low)


def edit(
    method: str,
    memory: torch.Tensor,
    key: torch.Tensor,
    target: torch.Tensor,
    *,
    keys=None,
    ridge: float = 0.0,
) -> torch.Tensor:
    r"""``[M, d_out, d_in]``: ``memory`` changed so that ``key [M, d_in]`` reads ``target [M, d_out]`` (:data:`EDITS`).

    * ``rome``: :math:`W + (v_* - W k_*)\, (C^{-1} k_*)^\top / (k_*^\top C^{-1} k_*)`, with
      :math:`C = K^\top K + \lambda I` the second moment of the stored ``keys [M, n, d_in]`` (``ridge`` :math:`\lambda`);
      the change of least squared error on the stored keys among those that make :math:`k_*` read :math:`v_*`
      (Meng et al. 2022). With :math:`C = I` it is
    * ``delta``: :math:`W + (v_* - W k_*)\, k_*^\top / \lVert k_* \rVert^2`, one delta-rule step at full rate;
    * ``hebbian``: :math:`W + v_* k_*^\top / \lVert k_* \rVert^2`, the new pair added, the old read left in place.
    """
    _validate.option("method", method, EDITS)
    _stack("memory", memory)
    for name, x in (("key", key), ("target", target)):
        _validate.tensor(name, x, min_dim=2)
        if x.dim() != 2 or x.shape[0] != memory.shape[0]:
            raise ValueError(
                f"{name} must be [models, d] with models = {memory.shape[0]}, got {tuple(x.shape)}"
            )
    _validate.same_device_dtype(memory=memory, key=key, target=target)
    ridge = _validate.finite_float("ridge", ridge, nonnegative=True)
    if method == "hebbian":
        return (
            memory
            + target[..., None] * key[:, None, :] / key.pow(2).sum(-1)[:, None, None]
        )
    direction = key
    if method == "rome":
        if keys is None:
            raise ValueError(
                "the rome edit needs the stored keys [models, n, d_in] for their covariance"
            )
        keys = _stack("keys", keys)
        eye = torch.eye(keys.shape[-1], device=keys.device, dtype=keys.dtype)
        direction = (
            torch.linalg.pinv(keys.mT @ keys + ridge * eye, hermitian=True)
            @ key[..., None]
        )[..., 0]
    residual = target - (memory @ key[..., None])[..., 0]  # (M, d_out)
    scale = (direction * key).sum(-1)[:, None, None]
    return memory + residual[..., None] * direction[:, None, :] / scale


def edit_outcome(
    memory: torch.Tensor,
    keys: torch.Tensor,
    vocabulary: torch.Tensor,
    fact: int,
    new: int,
    before: torch.Tensor,
    noise: torch.Tensor,
) -> dict[str, torch.Tensor]:
    """What an edit of fact ``fact`` to attribute ``new`` did, each ``[models]``: ``success`` (1 where the key answers
    ``new``), ``paraphrase`` (the fraction of paraphrases, the key plus each row of ``noise [M, p, d_in]`` renormalised,
    that answer ``new``) and ``old`` (the fraction of them that keep the fact's answer before the edit) and ``damage`` (the fraction of
    the other facts whose answer differs from ``before [M, n]``, the answers before the edit)."""
    keys = _stack("keys", keys)
    n = keys.shape[1]
    _index("fact", fact, n)
    _index("new", new, vocabulary.shape[1])
    if not isinstance(before, torch.Tensor) or before.shape != keys.shape[:2]:
        raise ValueError(
            f"before must be the [models, n] = {tuple(keys.shape[:2])} answers before the edit"
        )
    _validate.same_device_dtype(keys=keys, noise=_stack("noise", noise))
    answers = scores(memory, keys, vocabulary).argmax(-1)  # (M, n)
    paraphrases = keys[:, fact, None, :] + noise
    paraphrases = paraphrases / paraphrases.norm(dim=-1, keepdim=True)
    said = scores(memory, paraphrases, vocabulary).argmax(-1)  # (M, p)
    return _outcome(answers, said, fact, new, before, keys.dtype)


def _outcome(answers, said, fact: int, new: int, before, dtype) -> dict[str, torch.Tensor]:
    """An edit's outcomes from the answers to every fact ``[M, n]`` and to the fact's paraphrases ``[M, p]`` after it."""
    others = torch.ones(answers.shape[1], dtype=torch.bool, device=answers.device)
    others[fact] = False
    before = before.to(answers.device)
    return {
        "success": (answers[:, fact] == new).to(dtype),
        "paraphrase": (said == new).to(dtype).mean(-1),
        "old": (said == before[:, fact, None]).to(dtype).mean(-1),
        "damage": (answers[:, others] != before[:, others]).to(dtype).mean(-1),
    }


# --- facts in a transformer layer --------------------------------------------------------------------------------


class FactLayer(nn.Module):
    r"""One transformer layer that reads a fact from its subject and relation tokens: attention, then an MLP.

    The input is the two tokens' embeddings ``[..., 2, d]`` (subject, then relation), fixed random vectors as in
    Nichani et al. (2024); the layer's output at the relation's position, ``[..., d]``, is read against the
    attributes' embeddings by top-1, as :func:`scores` reads a matrix. The relation's query attends over both tokens
    (``heads`` heads of width ``d / heads``), the result is added to the relation's embedding, and the MLP
    (``hidden`` ReLU units; 0 removes it) adds :math:`W_{\text{down}}\, \mathrm{relu}(W_{\text{up}} x)`. No biases:
    the trained parameters are the attention's :math:`4 d^2` and the MLP's :math:`2 d\, h`. Built from
    :mod:`pavlov.batched`'s layers, so :func:`pavlov.batched.stack` trains several as one (:func:`train_layers`).
    """

    def __init__(self, d: int, *, hidden: int, heads: int = 1):
        super().__init__()
        d, heads = (
            _validate.positive_int("d", d),
            _validate.positive_int("heads", heads),
        )
        hidden = _validate.nonnegative_int("hidden", hidden)  # 0: no MLP
        if d % heads:
            raise ValueError(f"heads must divide d = {d}, got {heads}")
        self.heads = heads
        self.query, self.key, self.value, self.out = (
            batched.Linear(d, d, bias=False) for _ in range(4)
        )
        self.up = batched.Linear(d, hidden, bias=False) if hidden else None
        self.down = batched.Linear(hidden, d, bias=False) if hidden else None

    def attend(self, tokens: torch.Tensor) -> torch.Tensor:
        """The residual stream at the relation's position after attention, ``[..., d]``."""
        *lead, two, d = tokens.shape
        heads = self.heads
        q = self.query(tokens[..., 1, :]).reshape(*lead, 1, heads, d // heads)
        k = self.key(tokens).reshape(*lead, two, heads, d // heads)
        v = self.value(tokens).reshape(*lead, two, heads, d // heads)
        weights = torch.softmax(
            (q * k).sum(-1) / math.sqrt(d // heads), dim=-2
        )  # (..., 2, heads)
        mixed = (weights[..., None] * v).sum(-3).reshape(*lead, d)
        return tokens[..., 1, :] + self.out(mixed)

    def hidden_units(self, tokens: torch.Tensor) -> torch.Tensor:
        """The MLP's activations ``[..., hidden]`` for each fact's tokens (the keys, in Geva et al.'s reading)."""
        if self.up is None:
            raise ValueError("hidden_units needs a layer with an MLP (hidden > 0)")
        return torch.relu(self.up(self.attend(tokens)))

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        x = self.attend(tokens)
        return x if self.up is None else x + self.down(torch.relu(self.up(x)))


def fact_table(
    models: int,
    subjects: int,
    relations: int,
    attributes: int,
    d: int,
    *,
    seed: int,
    device=None,
    dtype=None,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    r"""``models`` independent sets of ``subjects x relations`` facts, each answered by an attribute drawn uniformly
    from ``attributes``: the tokens ``[M, n, 2, d]`` (fact :math:`i = s R + r` holds subject :math:`s`'s and relation
    :math:`r`'s embeddings, unit vectors), the attributes' embeddings ``[M, attributes, d]`` and the answers
    ``[M, n]`` (torch.long)."""
    models, subjects, relations, attributes, d = (
        _validate.positive_int(k, v)
        for k, v in (
            ("models", models),
            ("subjects", subjects),
            ("relations", relations),
            ("attributes", attributes),
            ("d", d),
        )
    )
    if attributes < 2:
        raise ValueError(f"attributes must be at least 2, got {attributes}")
    device, dtype = resolve(device, dtype)
    subject = unit_vectors(models, subjects, d, seed=seed, device=device, dtype=dtype)
    relation = unit_vectors(
        models, relations, d, seed=seed + 1, device=device, dtype=dtype
    )
    vocabulary = unit_vectors(
        models, attributes, d, seed=seed + 2, device=device, dtype=dtype
    )
    tokens = torch.stack(
        (
            subject[:, :, None].expand(-1, -1, relations, -1),
            relation[:, None].expand(-1, subjects, -1, -1),
        ),
        dim=3,
    ).reshape(models, subjects * relations, 2, d)
    answers = torch.randint(
        attributes,
        (models, subjects * relations),
        generator=generator(seed + 3, device),
        device=device,
    )
    return tokens, vocabulary, answers


def _facts(
    tokens, vocabulary, answers
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    _validate.tensor("tokens", tokens, min_dim=4)
    if tokens.dim() != 4 or tokens.shape[2] != 2:
        raise ValueError(
            f"tokens must be [models, n, 2, d] (subject, relation), got {tuple(tokens.shape)}"
        )
    vocabulary = _stack("vocabulary", vocabulary)
    _validate.same_device_dtype(tokens=tokens, vocabulary=vocabulary)
    if (
        vocabulary.shape[0] != tokens.shape[0]
        or vocabulary.shape[-1] != tokens.shape[-1]
    ):
        raise ValueError(
            f"vocabulary must be [models, V, d] = [{tokens.shape[0]}, V, {tokens.shape[-1]}], got "
            f"{tuple(vocabulary.shape)}"
        )
    if (
        not isinstance(answers, torch.Tensor)
        or answers.dtype != torch.long
        or answers.shape != tokens.shape[:2]
    ):
        raise TypeError(
            f"answers must be a torch.long tensor [models, n] = {tuple(tokens.shape[:2])}"
        )
    if answers.min() < 0 or answers.max() >= vocabulary.shape[1]:
        raise ValueError(
            f"answers must be attribute indices in [0, {vocabulary.shape[1]})"
        )
    return tokens, vocabulary, answers


def init_layers(
    tokens: torch.Tensor, *, hidden: int, heads: int = 1, seed: int = 0
) -> FactLayer:
    r"""One untrained :class:`FactLayer` per model of the facts' ``tokens [M, n, 2, d]``, stacked, on their device and
    dtype: model ``m`` holds the weights torch draws from ``seed + m``, the start of :func:`train_layers` with the
    same ``seed`` (the control for what training adds)."""
    _validate.tensor("tokens", tokens, min_dim=4)
    if tokens.dim() != 4 or tokens.shape[2] != 2:
        raise ValueError(
            f"tokens must be [models, n, 2, d] (subject, relation), got {tuple(tokens.shape)}"
        )
    seed = _validate.nonnegative_int("seed", seed)
    models, d = tokens.shape[0], tokens.shape[-1]
    layers = []
    for m in range(models):
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed_for(seed + m))
            layers.append(FactLayer(d, hidden=hidden, heads=heads))
    return batched.stack(layers).to(device=tokens.device, dtype=tokens.dtype)


def train_layers(
    tokens: torch.Tensor,
    vocabulary: torch.Tensor,
    answers: torch.Tensor,
    *,
    hidden: int,
    heads: int = 1,
    steps: int = 500,
    lr: float = 0.01,
    seed: int = 0,
) -> FactLayer:
    r"""One :class:`FactLayer` per model of the facts (:func:`fact_table`), trained together as one stack by
    full-batch Adam on the cross-entropy of the top-1 read, the learning rate decaying along a cosine to zero; each
    step shows every fact once. Model ``m`` starts from the weights torch draws from ``seed + m`` (:func:`init_layers`).
    Returns the stack."""
    tokens, vocabulary, answers = _facts(tokens, vocabulary, answers)
    steps = _validate.positive_int("steps", steps)
    lr = _validate.finite_float("lr", lr, positive=True)
    n = tokens.shape[1]
    stacked = init_layers(tokens, hidden=hidden, heads=heads, seed=seed)
    optimiser = torch.optim.Adam(stacked.parameters(), lr=lr)
    schedule = torch.optim.lr_scheduler.CosineAnnealingLR(optimiser, steps)
    for _ in range(steps):
        logits = stacked(tokens) @ vocabulary.mT  # (M, n, V)
        loss = (
            F.cross_entropy(logits.flatten(0, 1), answers.flatten(), reduction="sum")
            / n
        )
        optimiser.zero_grad(set_to_none=True)
        loss.backward()
        optimiser.step()
        schedule.step()
    return stacked


def layer_recall(
    layer: FactLayer,
    tokens: torch.Tensor,
    vocabulary: torch.Tensor,
    answers: torch.Tensor,
) -> torch.Tensor:
    """``[models]``: the fraction of facts whose best-scoring attribute, read from the stacked ``layer``'s output, is
    the answer (top-1 accuracy)."""
    _fact_layer(layer)
    tokens, vocabulary, answers = _facts(tokens, vocabulary, answers)
    with torch.no_grad():
        best = (layer(tokens) @ vocabulary.mT).argmax(-1)
    return (best == answers).to(tokens.dtype).mean(-1)


def quantise_layer(layer: FactLayer, bits: int) -> FactLayer:
    """A copy of the stacked ``layer`` with each of its weight matrices rounded by :func:`quantise` to ``bits`` bits a
    number, one scale per matrix of each model (weight-only quantisation of the whole layer)."""
    _fact_layer(layer)
    rounded = copy.deepcopy(layer)
    with torch.no_grad():
        for weight in rounded.parameters():
            weight.copy_(quantise(weight, bits))
    return rounded


def _fact_layer(layer) -> FactLayer:
    if not isinstance(layer, FactLayer):
        raise TypeError(f"layer must be a FactLayer, got {type(layer).__name__}")
    return layer


def _index(name: str, value, limit: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < limit:
        raise ValueError(f"{name} must be an index in [0, {limit}), got {value!r}")
    return value


def _mlp_layer(layer) -> FactLayer:
    _fact_layer(layer)
    if layer.down is None:
        raise ValueError("layer must have an MLP (hidden > 0): its output matrix is the memory edited")
    return layer


def layer_edit(method: str, layer: FactLayer, tokens: torch.Tensor, fact: int, target: torch.Tensor) -> FactLayer:
    r"""A copy of the stacked ``layer`` whose MLP output matrix :math:`W` is changed by :func:`edit` so that fact
    ``fact`` of ``tokens [M, n, 2, d]`` reads ``target [M, d]`` at the layer's output: the memory's key is the MLP's
    activation :math:`k_*` on the fact's tokens and its read the output less the residual stream there,
    ``target`` :math:`- x_*`. ROME's covariance is that of the activations on every fact's tokens, the layer's own keys."""
    _mlp_layer(layer)
    method = _validate.option("method", method, EDITS)
    tokens = _validate.tensor("tokens", tokens, min_dim=4)
    _index("fact", fact, tokens.shape[1])
    edited = copy.deepcopy(layer)
    with torch.no_grad():
        keys = layer.hidden_units(tokens)                          # (M, n, h)
        stream = layer.attend(tokens[:, fact])                     # (M, d)
        weight = edited.down.weight                                # (M, d, h)
        weight.copy_(edit(method, weight, keys[:, fact], target - stream, keys=keys))
    return edited


def layer_edit_outcome(layer: FactLayer, tokens: torch.Tensor, vocabulary: torch.Tensor, fact: int, new: int,
                       before: torch.Tensor, noise: torch.Tensor) -> dict[str, torch.Tensor]:
    """:func:`edit_outcome` for an edited :class:`FactLayer`, read through the whole layer: ``success``,
    ``paraphrase`` (the fact's two tokens, each plus its row of ``noise [M, p, 2, d]`` and renormalised), ``old`` and
    ``damage`` (the other facts whose answer differs from ``before [M, n]``), each ``[models]``."""
    _fact_layer(layer)
    tokens = _validate.tensor("tokens", tokens, min_dim=4)
    vocabulary = _stack("vocabulary", vocabulary)
    n = tokens.shape[1]
    _index("fact", fact, n)
    _index("new", new, vocabulary.shape[1])
    if not isinstance(before, torch.Tensor) or before.shape != tokens.shape[:2]:
        raise ValueError(f"before must be the [models, n] = {tuple(tokens.shape[:2])} answers before the edit")
    noise = _validate.tensor("noise", noise, min_dim=4)
    if noise.shape[0] != tokens.shape[0] or noise.shape[2:] != tokens.shape[2:]:
        raise ValueError(f"noise must be [models, p, 2, d] = [{tokens.shape[0]}, p, 2, {tokens.shape[-1]}], "
                         f"got {tuple(noise.shape)}")
    _validate.same_device_dtype(tokens=tokens, vocabulary=vocabulary, noise=noise)
    with torch.no_grad():
        answers = (layer(tokens) @ vocabulary.mT).argmax(-1)       # (M, n)
        paraphrases = tokens[:, fact, None] + noise                # (M, p, 2, d)
        said = (layer(paraphrases / paraphrases.norm(dim=-1, keepdim=True)) @ vocabulary.mT).argmax(-1)
    return _outcome(answers, said, fact, new, before, tokens.dtype)


def parameter_count(d: int, hidden: int) -> int:
    """The trained numbers of one :class:`FactLayer` of width ``d`` with ``hidden`` MLP units: :math:`4 d^2` for
    attention and :math:`2 d h` for the MLP.

    >>> parameter_count(16, 64)
    3072
    """
    d = _validate.positive_int("d", d)
    hidden = _validate.nonnegative_int("hidden", hidden)  # 0: no MLP
    return 4 * d * d + 2 * d * hidden


def key_value_neurons(
    layer: FactLayer,
    tokens: torch.Tensor,
    vocabulary: torch.Tensor,
    answers: torch.Tensor,
    *,
    relations: int,
) -> dict[str, torch.Tensor]:
    r"""Geva et al.'s reading of the MLP of a stacked ``layer`` as keys and values, each measure ``[models]``, over
    the hidden units that fire on some fact (the live ones):

    * ``agreement``: the fraction whose value, the unit's column of :math:`W_{\text{down}}` scored against the
      attributes, scores highest the answer of the fact that fires the unit most (chance: one over the attributes);
    * ``subject``: of the ``relations - 1`` facts that fire a unit most after its first, the fraction that share the
      first's subject (the unit responds to a subject, as a key to a pattern; chance about ``relations / n``);
    * ``active``: the fraction of the units that fire on a fact, averaged over the facts.
    """
    _fact_layer(layer)
    tokens, vocabulary, answers = _facts(tokens, vocabulary, answers)
    relations = _validate.positive_int("relations", relations)
    if relations < 2 or tokens.shape[1] % relations:
        raise ValueError(
            f"relations must be at least 2 and divide the {tokens.shape[1]} facts, got {relations}"
        )
    with torch.no_grad():
        fired = layer.hidden_units(tokens)  # (M, n, h)
        live = (fired.amax(1) > 0).to(tokens.dtype)  # (M, h)
        order = fired.argsort(1, descending=True)[
            :, :relations
        ]  # (M, relations, h): the facts that fire it most
        values = (vocabulary @ layer.down.weight).argmax(
            1
        )  # (M, h): each unit's strongest attribute
        agree = (answers.gather(1, order[:, 0]) == values).to(tokens.dtype)
        subject = order // relations
        shared = (subject[:, 1:] == subject[:, :1]).to(tokens.dtype).mean(1)
        per_live = live.sum(-1).clamp_min(1)
        return {
            "agreement": (agree * live).sum(-1) / per_live,
            "subject": (shared * live).sum(-1) / per_live,
            "active": (fired > 0).to(tokens.dtype).mean((1, 2)),
        }


def unit_ablations(
    layer: FactLayer,
    tokens: torch.Tensor,
    vocabulary: torch.Tensor,
    answers: torch.Tensor,
    *,
    seed: int = 0,
) -> dict[str, torch.Tensor]:
    """What the MLP's units do to the facts of a stacked ``layer``, causally, each ``[models]``:

    * ``mlp_off``: the top-1 accuracy with the MLP removed (attention alone);
    * ``strongest``: the fraction of facts whose answer changes when the one unit that pushes the answer's score
      up most is removed, for each fact its own;
    * ``random``: the same with one unit drawn at random (from ``seed``) for each fact.

    Removing a unit subtracts its push, its activation times its column of :math:`W_{\text{down}}`, from the
    read; a layer that gave each fact a unit of its own would change about one fact in ``hidden`` when a random
    unit goes.
    """
    _fact_layer(layer)
    if layer.up is None:
        raise ValueError("layer must have an MLP (hidden > 0) to remove its units")
    tokens, vocabulary, answers = _facts(tokens, vocabulary, answers)
    seed = _validate.nonnegative_int("seed", seed)
    with torch.no_grad():
        attended = layer.attend(tokens)  # (M, n, d)
        fired = torch.relu(layer.up(attended))  # (M, n, h)
        scores = (attended + layer.down(fired)) @ vocabulary.mT  # (M, n, V)
        before = scores.argmax(-1)
        push = fired[:, :, None, :] * (vocabulary @ layer.down.weight)[:, None]  # (M, n, V, h)
        units = push.shape[-1]
        on_answer = push.gather(2, before[..., None, None].expand(-1, -1, 1, units))[:, :, 0]
        drawn = torch.randint(units, before.shape, generator=generator(seed, tokens.device),
                              device=tokens.device)

        def changed(unit):  # (M, n): the unit removed for each fact
            pushed = push.gather(3, unit[..., None, None].expand(-1, -1, push.shape[2], 1))[..., 0]
            return ((scores - pushed).argmax(-1) != before).to(tokens.dtype).mean(-1)

        alone = ((attended @ vocabulary.mT).argmax(-1) == answers).to(tokens.dtype).mean(-1)
        return {"mlp_off": alone, "strongest": changed(on_answer.argmax(-1)), "random": changed(drawn)}

