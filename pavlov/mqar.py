r"""Multi-query associative recall (MQAR): small trained sequence models against the stores' theory.

**The task** (Arora et al. 2023, the Zoology benchmark). A sequence first shows ``n_pairs`` key-value
pairs, :math:`k_1 v_1 k_2 v_2 \dots`, with distinct keys drawn from a key vocabulary and values drawn
from a value vocabulary; then it asks for them: each key appears once more, in random order, and the
model must predict the value that followed it. Only those query positions carry a label; every
other position has the label :data:`IGNORE`. Queries come right after the pairs (``placement="end"``)
or scattered over the rest of the sequence among blank tokens (``placement="random"``).

Token ids: ``0`` is the blank, ``1 .. n_keys`` the keys, then the ``n_values`` values.

**The model**: an embedding, ``layers`` residual blocks of one memory layer and an MLP, a readout to the
vocabulary. The memory layer is one of the book's: the write rules of :mod:`pavlov.rules`
(``hebbian`` is linear attention, ``decay``, ``delta``, ``gated_delta``) or ``softmax`` attention
(:func:`pavlov.attention.softmax_attention`). Queries and keys are unit vectors in ``d_key``
dimensions, as in the stores of chapters 3 and 4, and the key of step :math:`t` is computed from
the token before it (a token shift, the short convolution of Zoology's models), so one layer can
store "value :math:`t` follows key :math:`t-1`". Rates are data-dependent: the delta rules' write rate
:math:`\beta_t` and the decay rules' :math:`\gamma_t` are sigmoids of a projection of the input, softmax
attention has a learned inverse temperature, initially :math:`\sqrt{d_k}`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import NamedTuple

import torch
import torch.nn.functional as F
from torch import nn

from . import _validate, attention, batched, rules, runtime, stats
from .runtime import generator, progress

IGNORE = -100
"""The label of positions that are not queries (``torch.nn.functional.cross_entropy``'s ignore index)."""

PLACEMENTS = ("end", "random")
LAYERS = ("hebbian", "decay", "delta", "gated_delta", "softmax")
CHUNK_SIZE = 32    # the chunkwise forms' chunk: sequences of 12 to 96 steps pad to less of it than to 64


@dataclass(frozen=True)
class Vocabulary:
    """Token ids: the blank ``0``, keys ``1 .. n_keys``, values ``n_keys + 1 .. n_keys + n_values``."""

    n_keys: int
    n_values: int

    def __post_init__(self):
        _validate.positive_int("n_keys", self.n_keys)
        _validate.positive_int("n_values", self.n_values)

    @property
    def size(self) -> int:
        return 1 + self.n_keys + self.n_values

    @property
    def keys(self) -> range:
        return range(1, 1 + self.n_keys)

    @property
    def values(self) -> range:
        return range(1 + self.n_keys, self.size)


def _vocabulary(vocab) -> Vocabulary:
    if not isinstance(vocab, Vocabulary):
        raise TypeError(f"vocab must be a pavlov.mqar.Vocabulary, got {type(vocab).__name__}")
    return vocab


def _pair_counts(name: str, values, vocab: Vocabulary | None = None) -> tuple[int, ...]:
    """A non-empty sequence of positive ints (at most ``vocab.n_keys``, where keys must be distinct)."""
    if isinstance(values, (str, bytes)) or not hasattr(values, "__iter__"):
        raise TypeError(f"{name} must be a sequence of ints, got {type(values).__name__}")
    values = tuple(_validate.positive_int(f"{name}[{i}]", v) for i, v in enumerate(values))
    if not values:
        raise ValueError(f"{name} must name at least one number")
    if vocab is not None and max(values) > vocab.n_keys:
        raise ValueError(f"{name} must be at most vocab.n_keys = {vocab.n_keys} (keys are distinct), got {max(values)}")
    return values


def _model(model) -> Model:
    if not isinstance(model, Model):
        raise TypeError(f"model must be a pavlov.mqar.Model, got {type(model).__name__}")
    return model


def mqar(batch: int, n_pairs: int, *, vocab: Vocabulary, length: int | None = None, placement: str = "end",
         seed: int = 0, device=None) -> tuple[torch.Tensor, torch.Tensor]:
    """``batch`` MQAR sequences: tokens and labels, both ``[batch, length]`` (int64).

    Args:
        n_pairs: key-value pairs per sequence, at most ``vocab.n_keys`` (keys are distinct).
        length: the sequence length, at least ``3 * n_pairs`` (default): pairs, then queries and blanks.
        placement: ``"end"``: queries right after the pairs; ``"random"``: at random positions after them.
        seed, device: the data's seed and device (default :func:`pavlov.default_device`).

    >>> tokens, labels = mqar(2, 3, vocab=Vocabulary(8, 8), seed=1, device="cpu")
    >>> tokens.shape, int((labels != IGNORE).sum())
    (torch.Size([2, 9]), 6)
    """
    batch = _validate.positive_int("batch", batch)
    n_pairs = _validate.positive_int("n_pairs", n_pairs)
    _vocabulary(vocab)
    if n_pairs > vocab.n_keys:
        raise ValueError(f"n_pairs must be at most vocab.n_keys = {vocab.n_keys} (keys are distinct), got {n_pairs}")
    length = 3 * n_pairs if length is None else _validate.positive_int("length", length)
    if length < 3 * n_pairs:
        raise ValueError(f"length must be at least 3 * n_pairs = {3 * n_pairs}, got {length}")
    _validate.option("placement", placement, PLACEMENTS)
    device = runtime.device_of(device)
    gen = generator(seed, device)

    # distinct keys: the first n_pairs of a random permutation of the key vocabulary
    keys = torch.rand(batch, vocab.n_keys, generator=gen, device=device).argsort(-1)[:, :n_pairs] + vocab.keys.start
    values = torch.randint(vocab.values.start, vocab.size, (batch, n_pairs), generator=gen, device=device)
    order = torch.rand(batch, n_pairs, generator=gen, device=device).argsort(-1)      # the queries' order
    tail = length - 2 * n_pairs
    if placement == "end":
        slots = torch.arange(n_pairs, device=device).expand(batch, n_pairs)
    else:   # n_pairs distinct positions among the tail, in increasing order
        slots = torch.rand(batch, tail, generator=gen, device=device).argsort(-1)[:, :n_pairs].sort(-1).values
    tokens = torch.zeros(batch, length, dtype=torch.long, device=device)
    labels = torch.full((batch, length), IGNORE, dtype=torch.long, device=device)
    tokens[:, 0:2 * n_pairs:2], tokens[:, 1:2 * n_pairs:2] = keys, values
    positions = 2 * n_pairs + slots
    tokens.scatter_(1, positions, keys.gather(1, order))
    labels.scatter_(1, positions, values.gather(1, order))
    return tokens, labels


class MemoryLayer(nn.Module):
    """One memory layer: unit queries and keys ``[..., T, d_key]`` (keys from the previous token), values, a write rule."""

    def __init__(self, layer: str, d_model: int, d_key: int, d_value: int):
        super().__init__()
        self.layer = _validate.option("layer", layer, LAYERS)
        for name, size in (("d_model", d_model), ("d_key", d_key), ("d_value", d_value)):
            _validate.positive_int(name, size)
        linear = batched.Linear
        self.query, self.key = linear(d_model, d_key, bias=False), linear(d_model, d_key, bias=False)
        self.value, self.out = linear(d_model, d_value, bias=False), linear(d_value, d_model, bias=False)
        self.rates = nn.ModuleDict({name: linear(d_model, 1) for name in self._rate_names()})
        if "gamma" in self.rates:   # start remembering (gamma = sigmoid(4) = 0.98), as gated models are initialised
            nn.init.constant_(self.rates["gamma"].bias, 4.0)
        if layer == "softmax":
            self.log_beta = nn.Parameter(torch.tensor(0.5 * math.log(d_key)))

    def _rate_names(self) -> tuple[str, ...]:
        return {"decay": ("gamma",), "delta": ("beta",), "gated_delta": ("gamma", "beta")}.get(self.layer, ())

    def _maps(self) -> tuple[nn.Module, ...]:
        return (self.query, self.key, self.value, *(self.rates[name] for name in self._rate_names()))

    def projections(self, x: torch.Tensor) -> tuple[torch.Tensor, ...]:
        """The query, key and value maps of each token and the rates' logits, as one product with the maps' weights
        side by side (the rates' biases after zeros for the maps without): each output is its own map's, to rounding.
        """
        maps = self._maps()
        weight = torch.cat([m.weight for m in maps], -2)
        bias = None
        if len(maps) > 3:
            unbiased = sum(m.weight.shape[-2] for m in maps[:3])
            bias = torch.cat([weight.new_zeros(*weight.shape[:-2], unbiased), *(m.bias for m in maps[3:])], -1)
        return batched.linear(x, weight, bias).split([m.weight.shape[-2] for m in maps], -1)

    def read(self, x: torch.Tensor) -> torch.Tensor:
        """What the memory returns at each step, before the output map (``forward`` is ``out(read(x))``).

        Queries are unit vectors from each token, keys unit vectors from the token before it (zero input at the first
        step): the key map has no bias, so shifting its outputs is shifting its inputs.
        """
        q, k, v, *logits = self.projections(x)
        q, k = F.normalize(q, dim=-1), F.normalize(F.pad(k, (0, 0, 1, 0))[..., :-1, :], dim=-1)
        if self.layer == "softmax":
            beta = batched.per_model(self.log_beta.exp(), q)
            return attention.softmax_attention(q * beta, k, v, scale=1.0)
        rates = {name: torch.sigmoid(logit).squeeze(-1) for name, logit in zip(self._rate_names(), logits)}
        out, _ = rules.RULES[self.layer](q, k, v, chunk_size=CHUNK_SIZE, **rates)
        return out

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.out(self.read(x))


class Model(nn.Module):
    """Embedding, ``layers`` blocks (memory layer and MLP, each residual after a layer norm), readout to the vocabulary.

    Built from :mod:`pavlov.batched`'s layers, so that :func:`pavlov.batched.stack` makes several models one, which
    reads tokens ``[M, batch, T]`` (:func:`train_together`).
    """

    def __init__(self, vocab: Vocabulary, *, layer: str, d_key: int, d_value: int | None = None, d_model: int = 64,
                 layers: int = 1):
        super().__init__()
        d_model, layers = _validate.positive_int("d_model", d_model), _validate.positive_int("layers", layers)
        d_value = d_key if d_value is None else d_value          # the memory layers check d_key and d_value
        self.vocab = _vocabulary(vocab)
        self.embed = batched.Embedding(vocab.size, d_model)
        self.memories = nn.ModuleList(MemoryLayer(layer, d_model, d_key, d_value) for _ in range(layers))
        linear, norm = batched.Linear, batched.LayerNorm
        self.mlps = nn.ModuleList(nn.Sequential(norm(d_model), linear(d_model, 4 * d_model), nn.GELU(),
                                                linear(4 * d_model, d_model)) for _ in range(layers))
        self.norms = nn.ModuleList(norm(d_model) for _ in range(layers))
        self.readout = nn.Sequential(norm(d_model), linear(d_model, vocab.size))

    def forward(self, tokens: torch.Tensor, asked: torch.Tensor | None = None) -> torch.Tensor:
        """Logits ``[batch, T, vocab.size]`` for tokens ``[batch, T]`` (stacked: ``[M, batch, T, vocab.size]``).

        With ``asked``, a boolean mask of the tokens' shape that picks as many positions for every model, only the
        logits there, ``[count, vocab.size]`` (stacked: ``[M, count, vocab.size]``), in the mask's order: the last
        block's memory output map, MLP and readout act on each position alone, so they run only where they are read
        (in training, the queries: a third of the positions, and most of the arithmetic).
        """
        if asked is not None:
            if not isinstance(asked, torch.Tensor) or asked.dtype != torch.bool or asked.shape != tokens.shape:
                raise TypeError(f"asked must be a boolean mask of the tokens' shape {tuple(tokens.shape)}")
            counts = asked.flatten(len(tokens.shape) - 2).sum(-1)                   # per model
            if counts.dim() and bool((counts != counts[0]).any()):
                raise ValueError(f"asked must pick as many positions for every model, got {counts.tolist()}")
        def at_asked(x: torch.Tensor) -> torch.Tensor:
            return x[asked].view(*tokens.shape[:-2], -1, x.shape[-1])        # one count per model, checked above

        x = self.embed(tokens)
        for block, (norm, memory, mlp) in enumerate(zip(self.norms, self.memories, self.mlps)):
            if asked is not None and block == len(self.mlps) - 1:         # the memory's output map too
                x = at_asked(x) + memory.out(at_asked(memory.read(norm(x))))
            else:
                x = x + memory(norm(x))
            x = x + mlp(x)
        return self.readout(x)


def build(vocab: Vocabulary, *, layer: str, d_key: int, seed: int, device=None, **kwargs) -> Model:
    """A :class:`Model` initialised from ``seed`` (the global random state is left as it was), on ``device``."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(runtime.seed_for(seed))
        model = Model(vocab, layer=layer, d_key=d_key, **kwargs)
    return model.to(runtime.device_of(device))


def loss_and_accuracy(model: Model, tokens: torch.Tensor, labels: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Cross-entropy over the query positions and, per sequence, the fraction of queries answered right ``[batch]``.

    For a stack of ``M`` models (:func:`pavlov.batched.stack`) tokens and labels are ``[M, batch, T]``, model ``m``
    reading ``tokens[m]``: the loss is then each model's own ``[M]`` and the accuracy ``[M, batch]``.
    """
    models = _model(model).embed.weight.shape[:-2]              # () for one model, (M,) for a stack
    shape = "[models, batch, T]" if models else "[batch, T]"
    for name, x in (("tokens", tokens), ("labels", labels)):
        if not isinstance(x, torch.Tensor) or x.dtype != torch.long or x.dim() != 2 + len(models):
            raise TypeError(f"{name} must be a {shape} tensor of token ids (torch.long), got "
                            f"{getattr(x, 'dtype', type(x).__name__)} {tuple(getattr(x, 'shape', ()))}")
    if labels.shape != tokens.shape:
        raise ValueError(f"labels must have the shape of tokens {tuple(tokens.shape)}, got {tuple(labels.shape)}")
    if tokens.shape[:len(models)] != models:
        raise ValueError(f"tokens must hold one batch for each of the {models[0]} models, got {tokens.shape[0]}")
    logits = model(tokens)
    asked = labels != IGNORE
    right = (logits.argmax(-1) == labels) & asked
    return _loss(logits, labels), right.sum(-1) / asked.sum(-1)


def _loss(logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """Mean cross-entropy over each model's query positions: a number, or ``[M]`` for a stack."""
    per_token = F.cross_entropy(logits.flatten(0, -2), labels.flatten(), ignore_index=IGNORE, reduction="none")
    return per_token.view(labels.shape).sum((-2, -1)) / (labels != IGNORE).sum((-2, -1))


def _loss_asked(model: Model, tokens: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """:func:`_loss` with the logits computed only at the query positions (every model's sequences ask as many)."""
    asked = labels != IGNORE
    logits = model(tokens, asked)                                        # [..., count, vocab]
    answers = labels[asked].view(logits.shape[:-1])
    return F.cross_entropy(logits.flatten(0, -2), answers.flatten(), reduction="none").view(answers.shape).mean(-1)


@dataclass
class Trained:
    """A trained model, the training losses (one per step) and the seed it was trained with."""

    model: Model
    losses: list[float]
    seed: int


def train_together(vocab: Vocabulary, *, layer: str, d_key: int, pairs: tuple[int, ...], steps: int, seeds,
                   batch: int = 64, lr: float = 3e-3, weight_decay: float = 0.01, device=None, **kwargs) -> list[Trained]:
    """Train one :class:`Model` per seed in ``seeds``, all at once as one stack (:mod:`pavlov.batched`), with AdamW on
    MQAR batches whose number of pairs cycles through ``pairs``.

    Each model is the one :func:`build` makes from its seed, and each step draws it a fresh batch seeded by its seed
    and the step, so it sees new sequences throughout; the learning rate decays along a cosine to zero. The models
    share nothing but the loop: the stack's loss is the sum of theirs, so each trains as it would alone.
    """
    steps, batch = _validate.positive_int("steps", steps), _validate.positive_int("batch", batch)
    pairs = _pair_counts("pairs", pairs, _vocabulary(vocab))
    seeds = _validate.seeds("seeds", seeds)
    models = [build(vocab, layer=layer, d_key=d_key, seed=seed, device=device, **kwargs) for seed in seeds]
    stacked = batched.stack(models)
    device = next(stacked.parameters()).device
    if device.type == "cpu":
        runtime.keep_freed_memory()          # each step frees and remakes megabytes of activations
    # torch's fused AdamW (the same update, in one kernel per step) where it has one for the device
    optimiser = torch.optim.AdamW(stacked.parameters(), lr=_validate.finite_float("lr", lr, positive=True),
                                  weight_decay=_validate.finite_float("weight_decay", weight_decay, nonnegative=True),
                                  fused=device.type in ("cpu", "cuda"))
    schedule = torch.optim.lr_scheduler.CosineAnnealingLR(optimiser, steps)
    losses = []
    for step in range(steps):
        drawn = [mqar(batch, pairs[step % len(pairs)], vocab=vocab, seed=seed * 1_000_003 + step, device=device)
                 for seed in seeds]
        tokens, labels = (torch.stack(part) for part in zip(*drawn))          # [M, batch, T]
        loss = _loss_asked(stacked, tokens, labels)                           # [M]
        optimiser.zero_grad(set_to_none=True)
        loss.sum().backward()
        optimiser.step()
        schedule.step()
        losses.append(loss.detach())
    per_model = torch.stack(losses, 1).tolist()                               # one copy to the host, at the end
    return [Trained(model, curve, seed) for model, curve, seed in zip(batched.unstack(stacked), per_model, seeds)]


def train(vocab: Vocabulary, *, layer: str, d_key: int, pairs: tuple[int, ...], steps: int, batch: int = 64,
          lr: float = 3e-3, weight_decay: float = 0.01, seed: int = 0, device=None, **kwargs) -> Trained:
    """Train one :class:`Model` from ``seed``: :func:`train_together` with one seed."""
    return train_together(vocab, layer=layer, d_key=d_key, pairs=pairs, steps=steps, seeds=(seed,), batch=batch,
                          lr=lr, weight_decay=weight_decay, device=device, **kwargs)[0]


@torch.no_grad()
def accuracy(model: Model, n_pairs: int, *, sequences: int, seed: int, batch: int = 256) -> torch.Tensor:
    """Per-sequence recall accuracy ``[sequences]`` on fresh MQAR sequences of ``n_pairs`` pairs, read
    ``batch`` sequences at a time (a softmax layer's scores grow with the square of the length)."""
    sequences, batch = _validate.positive_int("sequences", sequences), _validate.positive_int("batch", batch)
    device = next(_model(model).parameters()).device
    tokens, labels = mqar(sequences, n_pairs, vocab=model.vocab, seed=seed, device=device)
    return torch.cat([_answered(model, t, y) for t, y in zip(tokens.split(batch), labels.split(batch))])


def _answered(model: Model, tokens: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """Per sequence, the fraction of its questions answered right ``[batch]``: :func:`loss_and_accuracy`'s accuracy,
    with the logits read only at the questions (each sequence of an MQAR batch asks as many)."""
    asked = labels != IGNORE
    questions = asked.sum(-1)
    if bool((questions != questions[0]).any()):
        raise ValueError(f"labels must ask every sequence as many questions, got {questions.tolist()}")
    right = model(tokens, asked).argmax(-1) == labels[asked]
    return right.view(tokens.shape[0], -1).sum(-1) / questions


class Geometry(NamedTuple):
    """The first memory layer's overlaps between the vocabulary's stored vectors (each row and column one token)."""

    keys: torch.Tensor     # [n_keys, n_keys]: q_a . k_b, the query of key token a against the key of key token b
    values: torch.Tensor   # [n_values, n_values]: cosines between the values written for value tokens

    @staticmethod
    def _off_diagonal(overlaps: torch.Tensor) -> torch.Tensor:
        return ~torch.eye(overlaps.shape[0], dtype=torch.bool, device=overlaps.device)

    @classmethod
    def crosstalk(cls, overlaps: torch.Tensor) -> float:
        """Mean squared off-diagonal overlap over the mean squared diagonal one: :math:`1/d` for random unit vectors."""
        return (overlaps[cls._off_diagonal(overlaps)].pow(2).mean() / overlaps.diagonal().pow(2).mean()).item()

    @classmethod
    def coherence(cls, overlaps: torch.Tensor) -> float:
        r"""The largest off-diagonal overlap in units of its row's signal, :math:`\max_{a \ne b} |M_{ab}| / |M_{aa}|`."""
        return (overlaps.abs() / overlaps.diagonal().abs()[:, None])[cls._off_diagonal(overlaps)].max().item()

    @classmethod
    def fourth_moment(cls, overlaps: torch.Tensor) -> float:
        """Mean fourth power of the off-diagonal overlaps over the mean fourth power of the diagonal: :math:`3/(d(d+2))` for
        random unit vectors. Two frames with one mean square can differ here, and in their coherence."""
        return (overlaps[cls._off_diagonal(overlaps)].pow(4).mean() / overlaps.diagonal().pow(4).mean()).item()

    @property
    def key_overlap(self) -> float:
        return self.crosstalk(self.keys)

    @property
    def key_coherence(self) -> float:
        return self.coherence(self.keys)

    @property
    def key_fourth_moment(self) -> float:
        return self.fourth_moment(self.keys)

    @property
    def value_overlap(self) -> float:
        return self.crosstalk(self.values)


@torch.no_grad()
def geometry(model: Model) -> Geometry:
    """The key and value overlaps of ``model``'s first memory layer.

    A key token :math:`b` is written into the memory under the key made from it (it precedes its value)
    and asked for with the query made from it; a value token is written as the value made from it.
    The diagonal of ``keys`` is each pair's signal, the rest its crosstalk.
    """
    memory, norm = _model(model).memories[0], model.norms[0]
    device = next(model.parameters()).device

    def inputs(ids: range) -> torch.Tensor:
        return norm(model.embed(torch.tensor(ids, device=device)))

    keys = inputs(model.vocab.keys)
    q, k = F.normalize(memory.query(keys), dim=-1), F.normalize(memory.key(keys), dim=-1)
    v = F.normalize(memory.value(inputs(model.vocab.values)), dim=-1)
    return Geometry(q @ k.T, v @ v.T)


@dataclass
class Run:
    """One trained model's results: per-sequence accuracy ``[sequences]`` by number of pairs, its geometry, its losses."""

    layer: str
    d_key: int
    seed: int
    accuracy: dict[int, torch.Tensor]
    geometry: Geometry
    losses: list[float]
    beta: float | None       # the softmax layer's learned inverse temperature


def experiment(vocab: Vocabulary, *, layers, d_keys, train_pairs, test_pairs, steps: int, seeds: int = 1,
               sequences: int = 256, device=None, **kwargs) -> list[Run]:
    """Train one model per memory layer, key dimension and seed, then test each at every number of ``test_pairs``.

    The seeds of one layer and key dimension are trained together (:func:`train_together`).

    Test sequences are fresh (seeded apart from the training ones) and the same for every model.
    """
    _vocabulary(vocab)
    if isinstance(layers, str) or not hasattr(layers, "__iter__") or not layers:
        raise TypeError(f"layers must be a non-empty sequence of layer names, got {layers!r}")
    layers = [_validate.option("layers", layer, LAYERS) for layer in layers]
    d_keys = _pair_counts("d_keys", d_keys)
    train_pairs, test_pairs = _pair_counts("train_pairs", train_pairs, vocab), _pair_counts("test_pairs", test_pairs, vocab)
    seeds, sequences = _validate.positive_int("seeds", seeds), _validate.positive_int("sequences", sequences)
    runs = []
    # the seeds of one layer and key dimension train together, as one stack
    for layer, d_key in progress([(layer, d) for d in d_keys for layer in layers], desc="settings"):
        for trained in train_together(vocab, layer=layer, d_key=d_key, pairs=tuple(train_pairs), steps=steps,
                                      seeds=range(seeds), device=device, **kwargs):
            model = trained.model
            accuracies = {n: accuracy(model, n, sequences=sequences, seed=2**31 + n) for n in test_pairs}
            beta = model.memories[0].log_beta.exp().item() if layer == "softmax" else None
            runs.append(Run(layer, d_key, trained.seed, accuracies, geometry(model), trained.losses, beta))
    return runs


def accuracy_curve(runs: list[Run], layer: str, d_key: int) -> tuple[list[int], torch.Tensor, torch.Tensor]:
    """Numbers of pairs, mean accuracy over the seeds' models and its standard error over those models.

    Each model's accuracy is its mean over the test sequences; the standard error is over training runs,
    since a claim about what training finds must carry the spread of training. With one seed the
    standard error is over that model's test sequences instead, which says nothing about training.
    """
    if not isinstance(runs, (list, tuple)) or not all(isinstance(run, Run) for run in runs):
        raise TypeError(f"runs must be a list of pavlov.mqar.Run, got {type(runs).__name__}")
    chosen = [run for run in runs if run.layer == layer and run.d_key == d_key]
    if not chosen:
        raise ValueError(f"runs hold no model with layer={layer!r} and d_key={d_key}")
    pairs = list(chosen[0].accuracy)
    if len(chosen) == 1:
        mean, se = zip(*(stats.mean_and_se(chosen[0].accuracy[n]) for n in pairs))
    else:
        mean, se = zip(*(stats.mean_and_se(torch.stack([run.accuracy[n].mean() for run in chosen])) for n in pairs))
    return pairs, torch.stack(mean), torch.stack(se)


def collapse_point(pairs, accuracies, level: float = 0.5) -> float:
    """The number of pairs at which accuracy first falls to ``level``, interpolated linearly in log pairs.

    ``inf`` when it never falls that far within ``pairs``.

    >>> round(collapse_point([8, 16, 32], [0.9, 0.6, 0.3]), 2)    # 16 * 2 ** (0.1 / 0.3)
    20.16
    """
    pairs = _validate.reals("pairs", pairs, positive=True)
    accuracies = _validate.reals("accuracies", accuracies)
    level = _validate.finite_float("level", level, positive=True)
    if not pairs or len(pairs) != len(accuracies):
        raise ValueError(f"pairs and accuracies must be non-empty and of one length, got {len(pairs)} and {len(accuracies)}")
    if level >= 1:
        raise ValueError(f"level must be an accuracy in (0, 1), got {level}")
    for (n0, a0), (n1, a1) in zip(zip(pairs, accuracies), zip(pairs[1:], accuracies[1:])):
        if a0 >= level > a1:
            return math.exp(math.log(n0) + (a0 - level) / (a0 - a1) * (math.log(n1) - math.log(n0)))
    return pairs[0] if accuracies[0] < level else math.inf
