r"""The induction head: a transformer trained from scratch learns to pair each bell with its food.

**The task** (Bietti et al. 2023, *Birth of a Transformer: A Memory Viewpoint*). Sequences over a
vocabulary of ``V`` tokens follow fixed *global bigram* statistics, :math:`x_{t+1} \sim \pi(\cdot \mid x_t)`,
an association the model can only hold in its weights, except after a few *trigger* tokens: within each
sequence, trigger :math:`q` is always followed by one output token :math:`o_q`, drawn afresh (uniformly) for
that sequence from the non-trigger tokens. The pairing :math:`q \to o_q` is an *in-context* association, the CS-US pairing of one
session: at a trigger's second and later occurrences the output is predictable from the context alone,
and from nothing else (chance is :math:`1/(V - K)` for ``K`` triggers).

**The model**: a decoder-only transformer with token and position embeddings (trained, or frozen at random,
as in Bietti's model), ``layers`` blocks of causal multi-head attention (``heads`` heads) each optionally
followed by an MLP, all residual and without layer norms, and a linear readout to the vocabulary. It is built
from :mod:`pavlov.batched`'s layers, so :func:`train_together` trains one model per seed as one stack.

**Reading it** (:func:`attention_maps`, :func:`head_scores`, :func:`evaluate` with ``ablate``, :func:`memory_recall`,
:func:`memory_isr`, :func:`induction_reading`): the
first layer's *previous-token head* and the second layer's *induction head* (Elhage et al. 2021, Olsson et al.
2022), and the weight matrices read as associative memories of token pairs.
"""

from __future__ import annotations

import copy
import math
from dataclasses import dataclass, field

import torch
import torch.nn.functional as F
from torch import nn

from . import _validate, batched, runtime, stores
from .runtime import generator

IGNORE = -100
"""The label of positions that are not scored (``torch.nn.functional.cross_entropy``'s ignore index)."""


def _count(name: str, value, low: int = 1) -> int:
    value = _validate.positive_int(name, value)
    if value < low:
        raise ValueError(f"{name} must be at least {low}, got {value}")
    return value


@dataclass(frozen=True)
class Task:
    """The bigram-with-triggers task: ``vocab`` tokens, ``n_triggers`` triggers, sequences of ``length`` tokens.

    The transition matrix ``[vocab, vocab]`` has rows drawn from a Dirichlet distribution with concentration
    ``concentration`` (small: peaked, learnable bigrams) from ``seed``; the triggers are the ``n_triggers`` tokens
    most frequent under its stationary distribution (as in Bietti et al.), and every row then gives them
    ``trigger_mass`` more probability, shared, so that they recur within a short sequence.

    ``fixed_triggers=False``: Bietti et al.'s default data instead. Each sequence draws its own ``n_triggers``
    triggers from the stationary distribution, without replacement, and its outputs from every token but those;
    ``triggers`` is then the most frequent ``n_triggers`` tokens, the likeliest draw (``trigger_mass`` and
    ``held_out`` need fixed triggers).

    ``held_out``: the share of the non-trigger tokens (drawn from ``seed``) that are never a trigger's output in the
    sequences a model trains on (:func:`sequences` with ``outputs="trained"``, the default); ``outputs="held_out"``
    draws the outputs from them alone, to ask whether a circuit copies a token it never copied in training.

    >>> task = Task(vocab=16, n_triggers=2, length=32, device="cpu")
    >>> task.transitions.shape, task.triggers.shape
    (torch.Size([16, 16]), torch.Size([2]))
    """

    vocab: int
    n_triggers: int
    length: int
    concentration: float = 0.5
    trigger_mass: float = 0.0
    held_out: float = 0.0
    fixed_triggers: bool = True
    seed: int = 0
    device: torch.device | str | None = None
    transitions: torch.Tensor = field(init=False, repr=False, compare=False)
    triggers: torch.Tensor = field(init=False, repr=False, compare=False)
    stationary: torch.Tensor = field(init=False, repr=False, compare=False)
    outputs: dict = field(init=False, repr=False, compare=False)

    def __post_init__(self):
        vocab = _count("vocab", self.vocab, 2)
        n_triggers = _validate.positive_int("n_triggers", self.n_triggers)
        if n_triggers >= vocab:
            raise ValueError(
                f"n_triggers must be below vocab = {vocab}, got {n_triggers}"
            )
        _count("length", self.length, 2)
        concentration = _validate.finite_float(
            "concentration", self.concentration, positive=True
        )
        device = runtime.device_of(self.device)
        gen = generator(self.seed, device)
        # Dirichlet rows: normalised Gamma(concentration) draws (torch's Gamma sampler takes no generator)
        gamma = _gamma(
            torch.full(
                (vocab, vocab), concentration, dtype=torch.float64, device=device
            ),
            gen,
        )
        mass = _validate.probability("trigger_mass", self.trigger_mass)
        fixed = _validate.instance("fixed_triggers", self.fixed_triggers, bool)
        if not fixed and (mass or self.held_out):
            raise ValueError("trigger_mass and held_out need fixed_triggers=True: with triggers drawn per sequence, "
                             f"got trigger_mass = {mass}, held_out = {self.held_out}")
        transitions = gamma / gamma.sum(-1, keepdim=True)
        triggers = (
            _stationary(transitions).argsort(descending=True)[:n_triggers].sort().values
        )
        # every row sends trigger_mass more to the triggers, so that they recur within a short sequence
        transitions = (1 - mass) * transitions
        transitions[:, triggers] += mass / n_triggers
        object.__setattr__(self, "device", device)
        object.__setattr__(self, "transitions", transitions)
        object.__setattr__(self, "stationary", _stationary(transitions))
        object.__setattr__(self, "triggers", triggers)
        others = torch.ones(vocab, dtype=torch.bool, device=device)
        others[triggers] = False
        others = others.nonzero().squeeze(1)
        held = round(_validate.probability("held_out", self.held_out) * len(others))
        if held == len(others):
            raise ValueError(f"held_out must leave some of the {len(others)} non-trigger tokens as outputs, "
                             f"got {self.held_out}")
        shuffled = others[torch.randperm(len(others), generator=gen, device=device)]
        object.__setattr__(self, "outputs", {"trained": shuffled[held:].sort().values,
                                             "held_out": shuffled[:held].sort().values})

    def bigram_entropy(self) -> float:
        r"""The bigram floor: :math:`H(x_{t+1} \mid x_t)` in nats, averaged over non-trigger :math:`x_t` under the
        stationary distribution: the least loss a model can reach at a position after a non-trigger token."""
        weights = self._after_non_triggers()
        return float((weights * _entropy(self.transitions)).sum())

    def unigram_entropy(self) -> float:
        r"""The loss after a non-trigger token of a model that ignores which token it is: the entropy of the next
        token's distribution over all such positions, :math:`H(\sum_x w_x \pi(\cdot \mid x))`."""
        return float(_entropy(self._after_non_triggers() @ self.transitions))

    def _after_non_triggers(self) -> torch.Tensor:
        """The stationary distribution restricted to non-trigger tokens, normalised ``[vocab]``."""
        weights = self.stationary.clone()
        weights[self.triggers] = 0
        return weights / weights.sum()


def _entropy(p: torch.Tensor) -> torch.Tensor:
    """Entropy in nats of each distribution along the last axis."""
    return -(p * p.clamp_min(1e-300).log()).sum(-1)


def _stationary(transitions: torch.Tensor) -> torch.Tensor:
    """The stationary distribution of a Markov chain (power iteration: these chains mix in a few steps)."""
    stationary = torch.full(
        transitions.shape[:1],
        1 / transitions.shape[0],
        dtype=transitions.dtype,
        device=transitions.device,
    )
    for _ in range(200):
        stationary = stationary @ transitions
    return stationary


def _gamma(concentration: torch.Tensor, gen: torch.Generator) -> torch.Tensor:
    """Gamma(concentration, 1) draws from ``gen`` (Marsaglia-Tsang, boosted below 1), elementwise."""
    alpha = concentration + (concentration < 1).to(concentration.dtype)
    d = alpha - 1 / 3
    c = 1 / (9 * d).sqrt()
    out = torch.zeros_like(alpha)
    todo = torch.ones_like(alpha, dtype=torch.bool)
    while bool(todo.any()):
        z = torch.randn(
            alpha.shape, generator=gen, device=alpha.device, dtype=alpha.dtype
        )
        u = torch.rand(
            alpha.shape, generator=gen, device=alpha.device, dtype=alpha.dtype
        )
        v = (1 + c * z) ** 3
        ok = (v > 0) & (
            u.clamp_min(1e-300).log()
            < 0.5 * z**2 + d - d * v + d * v.clamp_min(1e-300).log()
        )
        take = todo & ok
        out[take] = (d * v)[take]
        todo &= ~ok
    boost = torch.rand(
        alpha.shape, generator=gen, device=alpha.device, dtype=alpha.dtype
    )
    small = concentration < 1
    out[small] *= boost[small] ** (1 / concentration[small])
    return out


def _task(task) -> Task:
    return _validate.instance("task", task, Task)


def sequences(
    task: Task, batch: int, *, seed: int, n_triggers: int | None = None, outputs: str = "trained"
) -> tuple[torch.Tensor, torch.Tensor]:
    """``batch`` sequences of the task: tokens ``[batch, length]`` and the in-context labels ``[batch, length]``.

    After a trigger comes that sequence's output for it; after any other token, a draw from the bigram row.
    The label at position ``t`` is the next token where ``x_t`` is a trigger seen before in the sequence (its
    output is then known from the context), :data:`IGNORE` elsewhere. With ``n_triggers`` (at most the task's),
    only the first ``n_triggers`` triggers act as triggers in these sequences (the rest follow the bigrams).
    ``outputs``: ``"trained"`` or ``"held_out"``, the task's tokens that the outputs are drawn from.
    """
    _task(task)
    batch = _validate.positive_int("batch", batch)
    active = (
        task.n_triggers
        if n_triggers is None
        else _validate.positive_int("n_triggers", n_triggers)
    )
    if active > task.n_triggers:
        raise ValueError(
            f"n_triggers must be at most the task's {task.n_triggers}, got {active}"
        )
    allowed = task.outputs[_validate.option("outputs", outputs, ("trained", "held_out"))]
    if not len(allowed):
        raise ValueError('outputs="held_out" needs a task with held_out > 0')
    return _walk([_draws(task, batch, seed, active, allowed)])


def _draws(task: Task, batch: int, seed: int, active: int, allowed: torch.Tensor) -> dict:
    """What :func:`sequences` draws from ``seed`` for ``batch`` sequences, in its order: each sequence's triggers
    (``trigger_of [batch, vocab]``: token -> trigger index, or -1) and outputs, first tokens and uniforms."""
    gen, device = generator(seed, task.device), task.device
    if task.fixed_triggers:
        chosen = task.triggers[:active].expand(batch, active)
    else:  # Bietti et al.'s default: each sequence its own triggers
        chosen = torch.multinomial(task.stationary.expand(batch, -1), active, generator=gen)
    trigger_of = torch.full((batch, task.vocab), -1, dtype=torch.long, device=device)
    trigger_of.scatter_(1, chosen, torch.arange(active, device=device).expand(batch, active))
    # outputs are non-trigger tokens: a trigger as output would chain triggers (q -> q -> q ...)
    if task.fixed_triggers:
        outputs = allowed[torch.randint(len(allowed), (batch, active), generator=gen, device=device)]
    else:
        outputs = torch.multinomial((trigger_of < 0).double(), active, replacement=True, generator=gen)
    first = torch.multinomial(task.stationary, batch, replacement=True, generator=gen)
    uniforms = torch.rand(task.length, batch, 1, generator=gen, device=device, dtype=task.transitions.dtype)
    return {"cumulative": task.transitions.cumsum(-1), "trigger_of": trigger_of, "outputs": outputs,
            "first": first, "uniforms": uniforms}


def _walk(draws: list[dict]) -> tuple[torch.Tensor, torch.Tensor]:
    """The sequences of several :func:`_draws` (tasks of one vocabulary and length), walked together: tokens and
    labels ``[all their sequences, length]``, each batch's rows in turn."""
    trigger_of = torch.cat([d["trigger_of"] for d in draws])
    width = max(d["outputs"].shape[1] for d in draws)
    outputs = torch.cat([F.pad(d["outputs"], (0, width - d["outputs"].shape[1])) for d in draws])
    uniforms = torch.cat([d["uniforms"] for d in draws], 1)
    cumulative = torch.stack([d["cumulative"] for d in draws])  # [batches, vocab, vocab]
    rows, vocab = trigger_of.shape
    length, device = uniforms.shape[0], trigger_of.device
    batch_of = torch.cat([torch.full((len(d["first"]),), i, device=device) for i, d in enumerate(draws)])
    tokens = torch.empty(rows, length, dtype=torch.long, device=device)
    tokens[:, 0] = torch.cat([d["first"] for d in draws])
    for t in range(length - 1):
        current = tokens[:, t]
        drawn = torch.searchsorted(cumulative[batch_of, current], uniforms[t]).squeeze(-1).clamp_max(vocab - 1)
        which = trigger_of.gather(1, current[:, None]).squeeze(1)
        fixed = outputs.gather(1, which.clamp_min(0)[:, None]).squeeze(1)
        tokens[:, t + 1] = torch.where(which >= 0, fixed, drawn)
    # asked: a trigger seen earlier in its sequence, with a next token to predict
    earlier = torch.ones(length, length, dtype=torch.bool, device=device).tril(-1)
    seen = ((tokens[:, :, None] == tokens[:, None, :]) & earlier).any(-1)  # [rows, t]
    asked = (trigger_of.gather(1, tokens) >= 0) & seen
    asked[:, -1] = False
    return tokens, torch.where(asked, tokens.roll(-1, 1), IGNORE)


class Attention(nn.Module):
    r"""Causal multi-head attention: :math:`\mathrm{softmax}(q_t \cdot k_s / \sqrt{d_h})` over :math:`s \le t`, ``heads``
    heads of width ``d_model // heads``, their outputs summed through :math:`W_O`.

    ``shift``: the keys read the previous position's state, :math:`k_s = W_K x_{s-1}` (zero at the first position):
    chapter 9's token shift, which hands the layer the pairing of each token with the one before it."""

    def __init__(self, d_model: int, heads: int, shift: bool = False):
        super().__init__()
        self.heads = _validate.positive_int("heads", heads)
        self.shift = shift
        if d_model % heads:
            raise ValueError(f"heads must divide d_model = {d_model}, got {heads}")
        self.query, self.key, self.value, self.out = (
            batched.Linear(d_model, d_model, bias=False) for _ in range(4)
        )

    def split(self, x: torch.Tensor) -> torch.Tensor:
        """``[..., T, d_model]`` to ``[..., heads, T, d_head]``."""
        return x.unflatten(-1, (self.heads, -1)).transpose(-3, -2)

    def pattern(self, x: torch.Tensor, cut: torch.Tensor | None = None,
                only: torch.Tensor | None = None, last: bool = False) -> torch.Tensor:
        """The attention weights ``[..., heads, T, T]`` (row ``t``: where position ``t`` looks).

        ``cut``: a ``[heads]`` mask of the heads whose weight on ``t - 1`` is removed, the rest renormalised (the
        score masked before the softmax); ``only``: a ``[heads]`` mask of the heads that put all their weight on
        ``t - 1`` (the first position on itself), everything else they read removed. ``last``: the last position's
        row alone, ``[..., heads, 1, T]`` (a readout of the last position needs no other)."""
        if last and (cut is not None or only is not None):
            raise ValueError("last reads one row; cut and only change the whole pattern: pass last=False")
        keys = F.pad(x, (0, 0, 1, 0))[..., :-1, :] if self.shift else x
        q, k = self.split(self.query(x[..., -1:, :] if last else x)), self.split(self.key(keys))
        scores = q @ k.transpose(-1, -2) / math.sqrt(q.shape[-1])
        rows, length = scores.shape[-2:]
        allowed = torch.ones(rows, length, dtype=torch.bool, device=x.device).tril(length - rows)
        if cut is not None:
            previous = (
                torch.ones(length, length, dtype=torch.bool, device=x.device)
                .tril(-1)
                .triu(-1)
            )
            allowed = allowed & ~(
                previous & cut.to(torch.bool)[:, None, None]
            )  # [H, T, T]
        weights = scores.masked_fill(~allowed, float("-inf")).softmax(-1)
        if only is not None:
            previous = torch.eye(length, dtype=weights.dtype, device=x.device).roll(-1, -1).tril()
            previous[0, 0] = 1
            weights = torch.where(only.to(torch.bool)[:, None, None], previous, weights)
        return weights

    def forward(
        self,
        x: torch.Tensor,
        keep: torch.Tensor | None = None,
        patterns: list | None = None,
        cut: torch.Tensor | None = None,
        only: torch.Tensor | None = None,
        last: bool = False,
    ) -> torch.Tensor:
        """``keep``: a ``[heads]`` mask of the heads whose output is kept (ablation zeroes the others); ``cut``,
        ``only`` and ``last`` (the output ``[..., 1, d_model]`` at the last position alone): as in :meth:`pattern`."""
        weights = self.pattern(x, cut, only, last)
        if patterns is not None:
            patterns.append(weights.detach())
        heads = weights @ self.split(self.value(x))  # (..., H, T, d_head)
        if keep is not None:
            heads = heads * keep.to(heads.dtype)[:, None, None]
        return self.out(heads.transpose(-3, -2).flatten(-2))


class Transformer(nn.Module):
    """Token and position embeddings, ``layers`` blocks (attention, then an MLP if ``mlp``), a readout.

    ``frozen``: the embeddings and the readout keep their random initial values (Bietti et al.'s model), so that
    the trained attention matrices can be read against fixed token vectors. ``shift``: the first layer's keys read
    the previous position (:class:`Attention`), the pairing handed to the model instead of learned. Built from :mod:`pavlov.batched`'s
    layers: stacked (:func:`pavlov.batched.stack`), it reads tokens ``[M, batch, T]``.
    """

    def __init__(
        self,
        vocab: int,
        length: int,
        *,
        d_model: int = 64,
        layers: int = 2,
        heads: int = 1,
        mlp: bool = False,
        frozen: bool = False,
        shift: bool = False,
    ):
        super().__init__()
        vocab, length = (
            _count("vocab", vocab, 2),
            _validate.positive_int("length", length),
        )
        d_model, layers = (
            _validate.positive_int("d_model", d_model),
            _validate.positive_int("layers", layers),
        )
        for name, flag in (("mlp", mlp), ("frozen", frozen), ("shift", shift)):
            if not isinstance(flag, bool):
                raise TypeError(f"{name} must be a bool, got {type(flag).__name__}")
        self.frozen, self.length = frozen, length
        self.embed, self.position = (
            batched.Embedding(vocab, d_model),
            batched.Embedding(length, d_model),
        )
        for table in (
            self.embed,
            self.position,
        ):  # unit-scale random vectors, nearly orthogonal in d_model
            nn.init.normal_(table.weight, std=1 / math.sqrt(d_model))
        self.attentions = nn.ModuleList(
            Attention(d_model, heads, shift=shift and i == 0) for i in range(layers)
        )
        self.mlps = nn.ModuleList(
            nn.Sequential(
                batched.Linear(d_model, 4 * d_model),
                nn.ReLU(),
                batched.Linear(4 * d_model, d_model),
            )
            for _ in range(layers if mlp else 0)
        )
        self.readout = batched.Linear(d_model, vocab, bias=False)

    def frozen_names(self) -> tuple[str, ...]:
        """The parameters that training leaves as they are."""
        return (
            ("embed.weight", "position.weight", "readout.weight") if self.frozen else ()
        )

    def forward(
        self,
        tokens: torch.Tensor,
        *,
        ablate: tuple = (),
        cut_previous: tuple = (),
        only_previous: tuple = (),
        patterns: list | None = None,
    ) -> torch.Tensor:
        """Logits ``[batch, T, vocab]`` for tokens ``[batch, T]`` (stacked: ``[M, batch, T, vocab]``).

        ``ablate``: ``(layer, head)`` pairs whose output is zeroed; ``cut_previous``: ``(layer, head)`` pairs whose
        weight on the previous position is removed and the rest renormalised (the head keeps everything else);
        ``only_previous``: ``(layer, head)`` pairs that keep only that weight, all of it on the previous position;
        ``patterns``: a list that receives each layer's attention weights ``[..., heads, T, T]``.
        """
        if not isinstance(tokens, torch.Tensor) or tokens.dtype != torch.long:
            raise TypeError(
                f"tokens must be a tensor of token ids (torch.long), got {getattr(tokens, 'dtype', tokens)}"
            )
        if tokens.shape[-1] > self.length:
            raise ValueError(
                f"tokens must be at most {self.length} long, got {tokens.shape[-1]}"
            )
        models = self.embed.weight.shape[:-2]
        positions = torch.arange(tokens.shape[-1], device=tokens.device).expand(
            *models, tokens.shape[-1]
        )
        x = self.embed(tokens) + self.position(positions).unsqueeze(-3)
        chosen = {name: _heads(self, pairs, name) for name, pairs in
                  (("ablate", ablate), ("cut_previous", cut_previous), ("only_previous", only_previous))}

        def heads(name, layer):
            """A [heads] mask of the heads ``name`` picks in ``layer`` (None when it picks none anywhere)."""
            if not chosen[name]:
                return None
            mask = torch.zeros(self.attentions[layer].heads, dtype=torch.bool, device=tokens.device)
            for at, head in chosen[name]:
                mask[head] |= at == layer
            return mask

        for layer, attention in enumerate(self.attentions):
            ablated = heads("ablate", layer)
            keep = None if ablated is None else ~ablated
            x = x + attention(x, keep, patterns, heads("cut_previous", layer), heads("only_previous", layer))
            if self.mlps:
                x = x + self.mlps[layer](x)
        return self.readout(x)


def build(vocab: int, length: int, *, seed: int, device=None, **kwargs) -> Transformer:
    """A :class:`Transformer` initialised from ``seed`` (the global random state is left as it was), on ``device``."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(runtime.seed_for(seed))
        model = Transformer(vocab, length, **kwargs)
    return model.to(runtime.device_of(device))


def _scores(
    model: Transformer,
    tokens: torch.Tensor,
    labels: torch.Tensor,
    is_trigger: torch.Tensor,
    **interventions,
) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    """The mean next-token loss ``[...]`` (differentiable) and, detached: ``loss``, ``bigram_loss`` (after
    non-trigger tokens) and ``in_context`` (accuracy at the labelled positions), each ``[...]`` over the batch axis.
    ``interventions``: :meth:`Transformer.forward`'s keywords."""
    logits = model(tokens, **interventions)
    per_token = F.cross_entropy(
        logits[..., :-1, :].flatten(0, -2), tokens[..., 1:].flatten(), reduction="none"
    ).view(tokens[..., 1:].shape)
    loss = per_token.mean((-2, -1))
    with torch.no_grad():
        bigram = ~is_trigger.gather(-1, tokens[..., :-1].flatten(-2)).view_as(tokens[..., :-1])
        asked = labels != IGNORE
        right = (logits.argmax(-1) == labels) & asked
        scores = {
            "loss": loss.detach(),
            "bigram_loss": (per_token * bigram).sum((-2, -1)) / bigram.sum((-2, -1)),
            "in_context": right.sum((-2, -1)) / asked.sum((-2, -1)),
        }
    return loss, scores


def _is_trigger(task: Task) -> torch.Tensor:
    is_trigger = torch.zeros(task.vocab, dtype=torch.bool, device=task.device)
    is_trigger[task.triggers] = True
    return is_trigger


@dataclass
class Trained:
    """One trained model, its training curves (one entry per ``every`` steps) and its seed.

    ``curves``: ``loss`` (all positions), ``bigram_loss`` (after non-trigger tokens), ``in_context`` (accuracy at the
    labelled positions), and each probe of :func:`memory_recall` (frozen models), measured on the training batch;
    with two layers or more, ``previous_trigger`` and ``induction``: :func:`head_scores`' of the first head of the
    first and second layers, on the same batch; with MLPs, ``adam_cosine``: the cosine between Adam's step on the
    last MLP's output matrix (:func:`output_gradient`'s) and minus its gradient, the direction of the delta rule's
    step (NaN at the last record, which takes no step).
    """

    model: Transformer
    steps: list[int]
    curves: dict[str, list[float]]
    seed: int


def train_together(
    task: Task,
    *,
    steps: int,
    seeds,
    batch: int = 32,
    lr: float = 1e-3,
    every: int = 10,
    **kwargs,
) -> list[Trained]:
    """Train one :class:`Transformer` per seed, all at once as one stack (:mod:`pavlov.batched`), with Adam on
    fresh batches of the task, the full next-token loss. ``task``: a :class:`Task`, or one per seed (of one
    vocabulary and length) to train models on different data in one stack.

    Each model is the one :func:`build` makes from its seed, and draws its own batches (seeded by its seed and the
    step); every ``every`` steps its curves are recorded. ``kwargs``: the model's (``d_model``, ``layers``,
    ``heads``, ``mlp``, ``frozen``).
    """
    seeds = _validate.seeds("seeds", seeds)
    tasks = [task] * len(seeds) if isinstance(task, Task) else list(task)
    if len(tasks) != len(seeds) or {(_task(t).vocab, t.length) for t in tasks} != {(tasks[0].vocab, tasks[0].length)}:
        raise ValueError(f"task must be a Task or one Task per seed, of one vocab and length: got {len(tasks)} tasks "
                         f"for {len(seeds)} seeds")
    steps, batch, every = (
        _validate.positive_int(n, v)
        for n, v in (("steps", steps), ("batch", batch), ("every", every))
    )
    lr = _validate.finite_float("lr", lr, positive=True)
    task = tasks[0]
    models = [
        build(task.vocab, task.length, seed=seed, device=task.device, **kwargs)
        for seed in seeds
    ]
    stacked = batched.stack(models)
    for name, p in stacked.named_parameters():
        p.requires_grad_(name not in models[0].frozen_names())
    optimiser = torch.optim.Adam(
        [p for p in stacked.parameters() if p.requires_grad], lr=lr
    )
    is_trigger, recorded, curves = torch.stack([_is_trigger(t) for t in tasks]), [], {}  # [M, V]
    for step in range(steps + 1):
        drawn = [_draws(t, batch, seed * 1_000_003 + step, t.n_triggers, t.outputs["trained"])
                 for t, seed in zip(tasks, seeds)]  # each model's own batch, walked together
        tokens, labels = (x.view(len(seeds), batch, -1) for x in _walk(drawn))  # [M, batch, T]
        record = step % every == 0 or step == steps
        patterns = [] if record and len(stacked.attentions) >= 2 else None
        loss, row = _scores(stacked, tokens, labels, is_trigger, patterns=patterns)  # [M]
        if record:
            if patterns is not None:  # the heads, read on the training batch
                heads = [_scores_of(w, x, y, t) for w, x, y, t in
                         zip(torch.stack(patterns, 2), tokens, labels, is_trigger)]
                row |= {"previous_trigger": torch.stack([h["previous_trigger"][0, 0] for h in heads]),
                        "induction": torch.stack([h["induction"][1, 0] for h in heads])}
            if stacked.frozen and len(stacked.attentions) >= 2:
                weights = {name: p.detach() for name, p in stacked.named_parameters()}
                probes = [
                    _probes(
                        {n: p[m] for n, p in weights.items()},
                        stacked.attentions[0].heads,
                        tasks[m].triggers,
                    )
                    for m in range(len(seeds))
                ]
                row |= {name: torch.stack([p[name] for p in probes]) for name in PROBES}
            recorded.append(step)
            for name, values in row.items():
                curves.setdefault(name, []).append(values)
        if step == steps:
            if record and stacked.mlps:
                curves.setdefault("adam_cosine", []).append(torch.full_like(loss, float("nan")).detach())
            break
        optimiser.zero_grad(set_to_none=True)
        loss.sum().backward()
        written = stacked.mlps[-1][-1].weight if stacked.mlps else None  # the delta rule's matrix
        before = written.detach().clone() if record and written is not None else None
        optimiser.step()
        if before is not None:  # Adam's step against the gradient's direction, per model
            curves.setdefault("adam_cosine", []).append(
                F.cosine_similarity((written.detach() - before).flatten(1), -written.grad.flatten(1), dim=1))
    per_model = {
        name: torch.stack(values, 1).tolist() for name, values in curves.items()
    }
    return [
        Trained(model, recorded, {name: per_model[name][m] for name in per_model}, seed)
        for m, (model, seed) in enumerate(zip(batched.unstack(stacked), seeds))
    ]


PROBES = ("previous_token", "induction_key", "output_copy")
"""The memory-recall probes of :func:`memory_recall`."""


@torch.no_grad()
def memory_recall(model: Transformer, task: Task) -> dict[str, torch.Tensor]:
    r"""Bietti et al.'s memory-recall probes of a two-layer model with frozen embeddings: how many of the pairs the
    induction circuit needs each weight matrix holds, read with the fixed token and position vectors.

    * ``previous_token`` (layer 1, :math:`W_Q^1, W_K^1`): the fraction of positions :math:`t` whose query
      :math:`W_Q^1 p_t` scores highest the key of position :math:`t - 1` among :math:`s \le t`.
    * ``induction_key`` (layer 2, :math:`W_K^2` with layer 1's :math:`W_O^1 W_V^1`): the fraction of triggers
      :math:`q` whose query :math:`W_Q^2 e_q` scores highest the key written after :math:`q`,
      :math:`W_K^2 W_O^1 W_V^1 e_q`, among those written after every token.
    * ``output_copy`` (layer 2, :math:`W_O^2 W_V^2`): the fraction of tokens :math:`j` that the readout maps back to
      themselves, :math:`\arg\max_i u_i \cdot W_O^2 W_V^2 e_j = j`.

    Heads are summed (each probe reads the layer's whole :math:`W_O W_V` or the best head's scores). Returns
    tensors (0-dim) so that they can be stacked over models.
    """
    if not _transformer(model).frozen or len(model.attentions) < 2:
        raise ValueError(
            "model must be a Transformer with frozen embeddings and at least two layers"
        )
    return _probes(
        {name: p.detach() for name, p in model.named_parameters()},
        model.attentions[0].heads,
        _task(task).triggers,
    )


def _probes(
    w: dict[str, torch.Tensor], heads: int, triggers: torch.Tensor
) -> dict[str, torch.Tensor]:
    """:func:`memory_recall` on one model's weights ``w`` (by parameter name)."""
    embed, position, readout = (
        w["embed.weight"],
        w["position.weight"],
        w["readout.weight"],
    )
    d_head = embed.shape[-1] // heads

    def per_head(matrix):  # [d_model, d_model] rows split by head: [H, d_head, d_model]
        return matrix.view(heads, d_head, -1)

    # previous token: the best head's position scores
    q1, k1 = (
        per_head(w["attentions.0.query.weight"]) @ position.T,
        per_head(w["attentions.0.key.weight"]) @ position.T,
    )
    scores = q1.transpose(-1, -2) @ k1  # [H, T, T]
    causal = torch.ones(
        scores.shape[-2:], dtype=torch.bool, device=scores.device
    ).tril()
    best = scores.masked_fill(~causal, float("-inf")).argmax(-1)[:, 1:]  # [H, T - 1]
    target = torch.arange(scores.shape[-1] - 1, device=scores.device)
    previous = (best == target).double().mean(-1).max()
    # induction key: what layer 1 writes at the position after token j, W_O^1 W_V^1 e_j, as layer 2's key
    written = (
        embed @ (w["attentions.0.out.weight"] @ w["attentions.0.value.weight"]).T
    )  # [V, d]
    q2 = per_head(w["attentions.1.query.weight"]) @ embed[triggers].T  # [H, d_head, K]
    k2 = per_head(w["attentions.1.key.weight"]) @ written.T  # [H, d_head, V]
    hits = (q2.transpose(-1, -2) @ k2).argmax(-1) == triggers  # [H, K]
    induction = hits.double().mean(-1).max()
    # output copy: layer 2's OV circuit read through the readout
    copy = (
        readout
        @ w["attentions.1.out.weight"]
        @ w["attentions.1.value.weight"]
        @ embed.T
    )  # [V, V]: column j
    output = (
        (copy.argmax(0) == torch.arange(copy.shape[0], device=copy.device))
        .double()
        .mean()
    )
    return {
        "previous_token": previous,
        "induction_key": induction,
        "output_copy": output,
    }


@torch.no_grad()
def memory_isr(
    model: Transformer, task: Task, *, draws: int = 16, seed: int = 0
) -> dict[str, dict[str, torch.Tensor]]:
    r"""The ISR of each of the circuit's three weight memories read as a store of the pairs :func:`memory_recall`
    probes (:class:`pavlov.stores.MatrixStore`), beside the Hebbian store :math:`\sum_i k_i^\top v_i` of the same pairs.

    * ``previous_token``: :math:`W_Q^{1\top} W_K^1` per head, keys the positions :math:`p_t` (:math:`t \ge 1`), values
      :math:`p_{t-1}`, decoded among all positions.
    * ``induction_key``: :math:`W_Q^{2\top} W_K^2` per head, keys the triggers' embeddings :math:`e_q`, values the
      traces :math:`W_O^1 W_V^1 e_q` they leave on the next position, decoded among the traces of all tokens.
    * ``output_copy``: :math:`(W_O^2 W_V^2)^\top` (one "head": the layer's whole map), keys every token's
      embedding :math:`e_j`, values the readout's rows :math:`u_j`, decoded among them.

    Returns, per memory, ``learned`` ``[heads, n]`` and ``hebbian`` ``[n]``: each pair's ISR
    (:func:`pavlov.stores.interference_to_signal`), and ``learned_correct``, ``hebbian_correct``: whether it decodes;
    ``random`` ``[draws, n]``: the same pairs read from ``draws`` matrices of independent Gaussian entries (from
    ``seed``), the store that holds nothing, so that the learned matrix can be placed between the two.
    """
    draws = _validate.positive_int("draws", draws)
    if not _transformer(model).frozen or len(model.attentions) < 2:
        raise ValueError(
            "model must be a Transformer with frozen embeddings and at least two layers"
        )
    w = {name: p.detach() for name, p in model.named_parameters()}
    triggers = _task(task).triggers
    embed, position, readout = (
        w["embed.weight"],
        w["position.weight"],
        w["readout.weight"],
    )
    heads = model.attentions[0].heads

    def bilinear(layer):  # W_Q^T W_K per head: [H, d_model, d_model]
        q, k = (
            w[f"attentions.{layer}.{name}.weight"].view(heads, -1, embed.shape[-1])
            for name in ("query", "key")
        )
        return q.transpose(-1, -2) @ k

    written = (
        embed @ (w["attentions.0.out.weight"] @ w["attentions.0.value.weight"]).T
    )  # [V, d]
    others = torch.ones(task.vocab, dtype=torch.bool, device=embed.device)
    others[triggers] = False
    pairs = {
        "previous_token": (bilinear(0), position[1:], position[:-1], position),
        "induction_key": (
            bilinear(1),
            embed[triggers],
            written[triggers],
            torch.cat([written[triggers], written[others]]),
        ),
        "output_copy": (
            (w["attentions.1.out.weight"] @ w["attentions.1.value.weight"]).T[None],
            embed,
            readout,
            readout,
        ),
    }
    gen, out = generator(seed, embed.device), {}
    for name, (matrix, keys, values, candidates) in pairs.items():
        noise = torch.randn(
            (draws, *matrix.shape[-2:]),
            generator=gen,
            device=matrix.device,
            dtype=matrix.dtype,
        )

        learned, random = (
            _read_matrix(m, keys, values, candidates) for m in (matrix, noise)
        )
        hebbian = stores.interference_to_signal(
            stores.build("hebbian", keys, values), candidates=candidates
        )
        out[name] = {
            "learned": learned[0],
            "hebbian": hebbian[0],
            "random": random[0],
            "learned_correct": learned[1],
            "hebbian_correct": hebbian[1],
        }
    return out


def _read_matrix(
    matrix: torch.Tensor,
    keys: torch.Tensor,
    values: torch.Tensor,
    candidates: torch.Tensor,
):
    """:func:`pavlov.stores.interference_to_signal` of ``matrix [H, d, d]`` read as a store of the pairs, per head."""
    stacked = [x.expand(matrix.shape[0], *x.shape) for x in (keys, values, candidates)]
    return stores.interference_to_signal(
        stores.MatrixStore(matrix, *stacked[:2]), candidates=stacked[2]
    )


@torch.no_grad()
def evaluate(
    model: Transformer,
    task: Task,
    *,
    count: int = 256,
    seed: int = 2**31,
    ablate: tuple = (),
    cut_previous: tuple = (),
    only_previous: tuple = (),
    n_triggers: int | None = None,
    outputs: str = "trained",
) -> dict[str, float]:
    """``loss``, ``bigram_loss`` (after non-trigger tokens, nats) and ``in_context`` accuracy (a trigger's second and
    later occurrences) of ``model`` on ``count`` fresh sequences (``n_triggers`` and ``outputs`` as in
    :func:`sequences`); ``ablate``, ``cut_previous``, ``only_previous``: as in :meth:`Transformer.forward`."""
    tokens, labels = sequences(
        task, _validate.positive_int("count", count), seed=seed, n_triggers=n_triggers, outputs=outputs
    )
    _, scores = _scores(
        _transformer(model), tokens, labels, _is_trigger(task), ablate=ablate, cut_previous=cut_previous,
        only_previous=only_previous,
    )
    return {name: value.item() for name, value in scores.items()}


def _heads(model: Transformer, ablate, name: str = "ablate") -> tuple:
    """``ablate`` (the parameter ``name``) checked: ``(layer, head)`` pairs of ``model``'s."""
    if isinstance(ablate, (str, bytes)) or not hasattr(ablate, "__iter__"):
        raise TypeError(
            f"{name} must be a sequence of (layer, head) pairs, got {type(ablate).__name__}"
        )
    ablate = tuple(tuple(pair) for pair in ablate)
    for pair in ablate:
        if (
            len(pair) != 2
            or not all(isinstance(i, int) and not isinstance(i, bool) for i in pair)
            or not 0 <= pair[0] < len(model.attentions)
            or not 0 <= pair[1] < model.attentions[pair[0]].heads
        ):
            raise ValueError(
                f"{name} must name (layer, head) pairs of this model's {len(model.attentions)} layers "
                f"of {model.attentions[0].heads} heads, got {pair}"
            )
    return ablate


def _transformer(model) -> Transformer:
    return _validate.instance("model", model, Transformer)


@torch.no_grad()
def attention_maps(model: Transformer, tokens: torch.Tensor) -> list[torch.Tensor]:
    """Each layer's attention weights ``[heads, T, T]`` on one sequence ``tokens [T]``."""
    if not isinstance(tokens, torch.Tensor) or tokens.dim() != 1:
        raise TypeError("tokens must be one sequence of token ids, a 1-d tensor")
    patterns = []
    _transformer(model)(tokens[None], patterns=patterns)
    return [p[0] for p in patterns]


@torch.no_grad()
def head_scores(
    model: Transformer, task: Task, *, count: int = 64, seed: int = 2**31, outputs: str = "trained"
) -> dict[str, torch.Tensor]:
    """Per layer and head ``[layers, heads]``: ``previous_token``, the mean attention from position ``t`` to ``t - 1``;
    ``previous_trigger``, the same where the token at ``t - 1`` is a trigger (the positions where the circuit needs
    it), and beside it ``self_trigger`` and ``two_back_trigger``, the weight on ``t`` and on ``t - 2`` there (a head
    that merely favours recent positions puts as much on them); ``induction``, the mean attention from a labelled position (a trigger seen before) to the positions right
    after the trigger's earlier occurrences; ``uniform_previous_token``, ``uniform_previous_trigger`` and
    ``uniform_induction`` (0-dim): the same scores of a uniform causal map (``1/(t+1)`` to each earlier position) on
    the same sequences, the alternative a head must beat. ``outputs``: as in :func:`sequences`."""
    tokens, labels = sequences(
        _task(task), _validate.positive_int("count", count), seed=seed, outputs=outputs
    )
    patterns = []
    _transformer(model)(tokens, patterns=patterns)
    weights = torch.stack(patterns, 1)  # [B, L, H, T, T]
    length = tokens.shape[-1]
    uniform = torch.ones(length, length, device=tokens.device).tril()
    uniform = (uniform / uniform.sum(-1, keepdim=True)).expand(
        weights.shape[0], 1, 1, length, length
    )
    return {
        name: value[0, 0] if name.startswith("uniform") else value
        for name, value in _head_scores(
            weights, tokens, labels, uniform, _is_trigger(task)
        ).items()
    }


def _head_scores(
    weights: torch.Tensor,
    tokens: torch.Tensor,
    labels: torch.Tensor,
    uniform: torch.Tensor,
    is_trigger: torch.Tensor,
) -> dict[str, torch.Tensor]:
    """:func:`head_scores` of attention weights ``[B, L, H, T, T]``, and of a uniform causal map beside them."""
    scores = {}
    for prefix, maps in (("", weights), ("uniform_", uniform)):
        scores |= {
            prefix + name: value
            for name, value in _scores_of(maps, tokens, labels, is_trigger).items()
        }
    return scores


def _after_earlier(tokens: torch.Tensor) -> torch.Tensor:
    """``[B, t, s]``: whether position ``s - 1`` is an earlier occurrence of the token at ``t`` (``tokens [B, T]``)."""
    length = tokens.shape[-1]
    same = tokens[:, :, None] == tokens[:, None, :]  # [B, t, s]: x_s == x_t
    earlier = torch.ones(length, length, dtype=torch.bool, device=tokens.device).tril(
        -1
    )
    return F.pad(same & earlier, (1, 0))[..., :-1]


def _scores_of(
    weights: torch.Tensor,
    tokens: torch.Tensor,
    labels: torch.Tensor,
    is_trigger: torch.Tensor,
) -> dict[str, torch.Tensor]:
    on_previous = weights.diagonal(-1, -2, -1)  # [B, L, H, T - 1]: t's weight on t - 1
    previous = on_previous.mean((0, -1))  # [L, H]
    after = is_trigger.expand(len(tokens), -1).gather(1, tokens[:, :-1])[:, None, None].to(
        weights.dtype
    )  # [B, 1, 1, T - 1]: x_{t-1} a trigger
    previous_trigger = (on_previous * after).sum((0, -1)) / after.sum()
    on_self = weights.diagonal(0, -2, -1)[..., 1:]  # [B, L, H, T - 1]: t's weight on t, t >= 1
    self_trigger = (on_self * after).sum((0, -1)) / after.sum()
    on_two_back = weights.diagonal(-2, -2, -1)  # [B, L, H, T - 2]: t's weight on t - 2, t >= 2
    two_back_trigger = (on_two_back * after[..., 1:]).sum((0, -1)) / after[..., 1:].sum()
    after = _after_earlier(tokens)  # [B, t, s]
    asked = labels != IGNORE  # [B, T]
    mass = (weights * after[:, None, None]).sum(-1)  # [B, L, H, T]
    induction = (mass * asked[:, None, None]).sum((0, -1)) / asked.sum()
    return {
        "previous_token": previous,
        "previous_trigger": previous_trigger,
        "self_trigger": self_trigger,
        "two_back_trigger": two_back_trigger,
        "induction": induction,
    }


@torch.no_grad()
def induction_reading(
    model: Transformer,
    task: Task,
    *,
    count: int = 256,
    seed: int = 2**31,
    n_triggers: int | None = None,
) -> dict[str, torch.Tensor]:
    r"""The second layer's head read as a softmax store, per head ``[heads]``, over the labelled positions of ``count``
    sequences (``n_triggers`` as in :func:`sequences`).

    * ``beta``: its learned inverse temperature, the gap between the mean attention score (logit) of the positions
      right after the trigger's earlier occurrences and that of the other positions. A softmax store of unit keys
      queried with a stored key scores its target :math:`\beta` and the others :math:`\beta c` with overlaps
      :math:`c` of mean 0: the same gap is its :math:`\beta`.
    * ``retrieved``: the fraction of labelled positions whose largest attention weight is on such a position (the
      store's target wins).
    * ``memories`` (0-dim): the mean number of positions a labelled position attends over (the memories it reads).
    * ``queries``: each labelled position on its own, to set the head beside a store of its own statistics:
      ``memories`` ``[N]``, the positions it reads, ``others`` ``[N]``, those that are not targets, and per head
      ``[heads, N]``: ``wins`` (a target gets the largest weight), ``gap`` (the best target's score less the mean
      of the others') and ``spread`` (the standard deviation of the others' scores).

    Read in double precision on a copy of the model (differences of log-weights are differences of scores).
    """
    _transformer(model)
    if len(model.attentions) < 2:
        raise ValueError("model must be a Transformer with at least two layers")
    tokens, labels = sequences(
        _task(task),
        _validate.positive_int("count", count),
        seed=seed,
        n_triggers=n_triggers,
    )
    patterns = []
    copy.deepcopy(model).double()(tokens, patterns=patterns)
    logits = patterns[1].clamp_min(1e-300).log()  # [B, H, T, T]: scores less a constant
    target = _after_earlier(tokens)[:, None]  # [B, 1, T, T]
    causal = torch.ones(
        target.shape[-2:], dtype=torch.bool, device=tokens.device
    ).tril()
    asked = (labels != IGNORE)[:, None]  # [B, 1, T]

    def mean_of(values, mask):
        return (values * mask).sum(-1) / mask.sum(-1).clamp_min(1)

    def over_asked(values):
        return (values * asked).sum((0, -1)) / asked.sum((0, -1))

    gap = mean_of(logits, target) - mean_of(logits, causal & ~target)
    wins = target.gather(-1, patterns[1].argmax(-1, keepdim=True)).squeeze(-1)
    positions = torch.arange(
        1, tokens.shape[-1] + 1, device=tokens.device, dtype=logits.dtype
    )
    others = causal & ~target
    centred = logits - mean_of(logits, others)[..., None]
    count_others = others.sum(-1).expand(logits.shape[:-1])  # [B, H, T]
    spread = ((centred**2 * others).sum(-1) / (count_others - 1).clamp_min(1)).sqrt()
    best = centred.masked_fill(~target, float("-inf")).amax(-1)
    chosen = asked[:, 0]  # [B, T]

    def per_query(values):  # [B, H, T] -> [H, N]
        return values.transpose(0, 1)[:, chosen]

    return {
        "beta": over_asked(gap),
        "retrieved": over_asked(wins.to(logits.dtype)),
        "memories": over_asked(positions)[0],
        "queries": {
            "memories": positions.expand(chosen.shape)[chosen],
            "others": per_query(count_others.to(logits.dtype))[0],
            "wins": per_query(wins),
            "gap": per_query(best),
            "spread": per_query(spread),
        },
    }


def output_gradient(
    model: Transformer, tokens: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    r"""The gradient of the summed next-token loss on ``tokens [batch, T]`` with respect to a matrix training writes,
    the last MLP's output matrix :math:`W` (its input :math:`a_t`, the MLP's hidden units), by autograd and as a sum
    of outer products :math:`\sum_t \delta_t a_t^\top` with :math:`\delta_t = W_U^\top (p_t - y_t)`: the prediction
    error carried back through the readout :math:`W_U` (the MLP's output is added to the state the readout reads).

    Returns ``(autograd, outer_products, hebbian)``, each ``[d_model, 4 d_model]``; ``hebbian`` is
    :math:`-\sum_t W_U^\top y_t a_t^\top`, the same sum with the prediction left out.
    """
    model = _transformer(model)
    if not model.mlps:
        raise ValueError("model must be a Transformer with MLPs (mlp=True)")
    layer = model.mlps[-1][-1]
    captured = {}
    handle = layer.register_forward_hook(
        lambda module, inputs, out: captured.update(a=inputs[0])
    )
    try:
        logits = model(tokens)
    finally:
        handle.remove()
    loss = F.cross_entropy(
        logits[..., :-1, :].flatten(0, -2), tokens[..., 1:].flatten(), reduction="sum"
    )
    (autograd,) = torch.autograd.grad(loss, layer.weight)
    a = captured["a"][..., :-1, :].flatten(0, -2).detach()  # (N, 4d)
    readout = model.readout.weight.detach()  # W_U [vocab, d]
    target = F.one_hot(tokens[..., 1:].flatten(), readout.shape[0]).to(a.dtype)  # y
    error = logits[..., :-1, :].flatten(0, -2).detach().softmax(-1) - target  # p - y
    return autograd, (error @ readout).T @ a, -(target @ readout).T @ a
