r"""Two memories in one transformer: the context, written in one forward pass, and the weights, written by training.

**The task** (Reddy 2023's in-context classification, after Chan et al. 2022). ``K`` classes (the bells), each a
fixed random vector :math:`\mu_k \in \mathbb R^D` with a fixed label (its food) among ``L`` labels, each label also a
fixed random vector. A sequence holds ``N`` exemplar-label pairs and then a query exemplar; an exemplar of class
:math:`k` is :math:`(\mu_k + \varepsilon \eta) / \sqrt{1 + \varepsilon^2}` with fresh Gaussian noise :math:`\eta`, and the
model must name the query's label. *Burstiness* ``B``: a training context holds ``B`` exemplars of the query's class
and the rest in groups of ``B`` exemplars of other classes (Reddy's design), so that the query's class is shown no
more often than another and counting the labels shown does not find the answer; with ``B = 0`` every exemplar is of
another class, drawn independently. Classes are drawn with Zipf exponent :math:`\alpha` (0: uniformly). Items and
labels enter as fixed vectors, not learned embeddings, so the weights' memory does not grow with ``K``.

A query can be answered two ways: from the weights, which can learn each class's label, or from the context, where a
class's exemplars stand beside its label. :func:`sequences` draws the two tests apart: ``"in_context"`` (classes never
trained, with labels drawn for the sequence: only the context answers) and ``"in_weights"`` (trained classes, no
exemplar of the query's class in the context: only the weights answer); and ``"conflict"`` (trained classes shown with
another label in the context: which memory wins).

**The model**: the book's attention-only transformer (:class:`pavlov.induction.Attention`, no MLP, no layer norm), on
the vectors plus a learned position embedding, with a linear readout to the ``L`` labels at the query. Built from
:mod:`pavlov.batched`'s layers, so :func:`train_together` trains one model per seed (and per task) as one stack.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import torch
import torch.nn.functional as F
from torch import nn

from . import _validate, batched, runtime
from .induction import Attention, _heads
from .runtime import generator

KINDS = ("train", "in_context", "in_weights", "conflict", "decoy")
"""The sequences :func:`sequences` draws: the training distribution, and the tests."""


@dataclass(frozen=True)
class Task:
    """The classes, labels and data of one in-context classification task (module docstring).

    ``classes`` K, ``labels`` L, ``dim`` D (the vectors' width, the model's), ``pairs`` N exemplar-label pairs before
    the query, ``bursty`` B exemplars of the query's class in a training context (0: none, so the context never
    answers), ``noise`` ε, ``zipf`` α; the class vectors, their labels and the label vectors are drawn from ``seed``.
    """

    classes: int
    labels: int = 32
    dim: int = 32
    pairs: int = 8
    bursty: int = 4
    noise: float = 0.1
    zipf: float = 0.0
    seed: int = 0
    device: torch.device | str | None = None
    means: torch.Tensor = field(init=False, repr=False)
    class_labels: torch.Tensor = field(init=False, repr=False)
    label_vectors: torch.Tensor = field(init=False, repr=False)

    def __post_init__(self):
        for name, low in (("classes", 2), ("labels", 2), ("dim", 1), ("pairs", 1)):
            value = _validate.positive_int(name, getattr(self, name))
            if value < low:
                raise ValueError(f"{name} must be at least {low}, got {value}")
        bursty = _validate.int_between("bursty", self.bursty, 0, self.pairs, high_is=f"pairs = {self.pairs}")
        if bursty and self.classes - 1 < -(-(self.pairs - bursty) // bursty):
            raise ValueError(f"classes must leave {-(-(self.pairs - bursty) // bursty)} others to show beside the "
                             f"query's in groups of bursty = {bursty}, got {self.classes}")
        _validate.finite_float("noise", self.noise, nonnegative=True)
        _validate.finite_float("zipf", self.zipf, nonnegative=True)
        device = runtime.device_of(self.device)
        gen = generator(self.seed, device)
        object.__setattr__(self, "device", device)
        object.__setattr__(self, "means", _vectors(self.classes, self.dim, gen, device))
        object.__setattr__(self, "label_vectors", _vectors(self.labels, self.dim, gen, device))
        object.__setattr__(self, "class_labels",
                           torch.randint(self.labels, (self.classes,), generator=gen, device=device))

    @property
    def length(self) -> int:
        """The tokens of a sequence: ``N`` exemplars and their labels, then the query."""
        return 2 * self.pairs + 1

    def frequencies(self) -> torch.Tensor:
        """The probability of each class, :math:`\\propto k^{-\\alpha}` for the ``k``-th class."""
        rank = torch.arange(1, self.classes + 1, device=self.device, dtype=torch.float64)
        p = rank.pow(-self.zipf)
        return p / p.sum()


def _vectors(count: int, dim: int, gen: torch.Generator, device) -> torch.Tensor:
    """``count`` Gaussian vectors in ``dim`` dimensions with entries of variance 1/dim (about unit norm)."""
    return torch.randn(count, dim, generator=gen, device=device) / math.sqrt(dim)


def _others(task: Task, p: torch.Tensor, query: torch.Tensor, count: int, gen: torch.Generator,
            distinct: bool) -> torch.Tensor:
    """For each query class ``[S]``, ``count`` classes drawn from ``p`` with the query's own excluded, ``distinct``
    (without replacement) or independently: ``[S, count]``."""
    if not count:
        return query[:, None][:, :0]
    if task.zipf == 0 and not distinct:  # uniform: a nonzero offset from the query, uniform among the others
        offset = torch.randint(1, task.classes, (len(query), count), generator=gen, device=query.device)
        return (query[:, None] + offset) % task.classes
    if distinct:  # the largest `count` of log p plus Gumbel noise: a draw by p without replacement
        u = torch.rand(len(query), task.classes, generator=gen, device=query.device).clamp_min(1e-12)
        keys = p.to(torch.float32).log() - (-u.log()).log()
        return keys.scatter_(1, query[:, None], float("-inf")).topk(count, 1).indices
    weights = p.to(torch.float32).expand(len(query), -1).clone()
    weights.scatter_(1, query[:, None], 0.0)
    return torch.multinomial(weights, count, replacement=True, generator=gen)


def sequences(task: Task, count: int, *, seed: int, kind: str = "train",
              bursty: int | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """``count`` sequences of ``task``: the inputs ``[count, 2N + 1, D]`` (exemplar, label, ..., query) and the query's
    label ``[count]``.

    ``kind``: ``"train"`` (the query's class drawn by its frequency, ``bursty`` exemplars of it in the context, default
    the task's B); ``"in_context"`` (classes never trained, ``bursty`` exemplars of the query's, default one, the others
    in groups of as many, each class with a label drawn for the sequence, all different while there are labels
    enough: with one exemplar each and N = L, every label is shown once, so that no count of the labels shown finds
    the answer and chance is 1/L); ``"in_weights"`` (no exemplar of the query's class in the context); ``"conflict"``
    (``bursty`` exemplars of a trained query class, at least one, all shown with another label, the answer the context
    gives); ``"decoy"`` (its control: the other label shown as often, beside another trained class's exemplars, and
    none of the query's)."""
    return _draw(task, count, seed, kind, bursty)[:2]


def _draw(task: Task, count: int, seed: int, kind: str, bursty: int | None):
    """:func:`sequences`, with a third tensor ``[count, N]`` marking the exemplars of the query's class and a fourth
    ``[count]``, the query's class."""
    if not isinstance(task, Task):
        raise TypeError(f"task must be an icl.Task, got {type(task).__name__}")
    count = _validate.positive_int("count", count)
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {KINDS}, got {kind!r}")
    shown = _validate.int_between("bursty", task.bursty if bursty is None else bursty, 0, task.pairs,
                                  high_is=f"pairs = {task.pairs}")
    if kind == "in_weights":
        shown = 0
    elif kind == "in_context" and bursty is None:
        shown = 1
    elif kind != "train":
        shown = max(shown, 1)
    gen, device, n = generator(seed, task.device), task.device, task.pairs
    rows = torch.arange(count, device=device)[:, None]
    if kind == "in_context":  # fresh classes: the query's is 0, the others 1..N, labels drawn for the sequence
        query = torch.zeros(count, dtype=torch.long, device=device)
        # the other classes in groups of `shown`, so that the query's class is shown no more often than another
        groups = -(-(n - shown) // shown)
        others = torch.arange(1, groups + 1, device=device).repeat_interleave(shown)[: n - shown]
        others = others.expand(count, -1)
        means = _vectors(count * (n + 1), task.dim, gen, device).view(count, n + 1, task.dim)
        distinct = torch.rand(count, task.labels, generator=gen, device=device).argsort(1)  # as many as there are
        extra = torch.randint(task.labels, (count, max(n + 1 - task.labels, 0)), generator=gen, device=device)
        names, first = torch.cat([distinct, extra], 1)[:, : n + 1], query
    else:
        p = task.frequencies()
        query = (torch.randint(task.classes, (count,), generator=gen, device=device) if task.zipf == 0 else
                 torch.multinomial(p.to(torch.float32), count, replacement=True, generator=gen))
        # the other classes, each drawn by frequency: where the query's is shown, distinct classes in groups of as
        # many examples, so that the query's class is shown no more often than another; else independently
        group, decoy = max(shown, 1), int(kind == "decoy")
        others = _others(task, p, query, -(-(n - shown) // group) + decoy, gen, distinct=shown > 0)
        first = others[:, 0] if decoy else query  # the class shown `shown` times: the decoy replaces the query's
        others = others[:, decoy:].repeat_interleave(group, 1)[:, : n - shown]
        means, names = task.means.expand(count, -1, -1), task.class_labels.expand(count, -1)
        if kind in ("conflict", "decoy"):  # that class shown with another label than the query's, in every exemplar
            shift = torch.randint(1, task.labels, (count, 1), generator=gen, device=device)
            moved = (names.gather(1, query[:, None]) + shift) % task.labels
            names = torch.where(torch.arange(task.classes, device=device) == first[:, None], moved, names)
    classes = torch.cat([first[:, None].expand(-1, shown), others], 1)  # [count, N]
    order = torch.rand(count, n, generator=gen, device=device).argsort(1)
    classes = classes.gather(1, order)
    items = torch.cat([classes, query[:, None]], 1)  # [count, N + 1]
    noise = _vectors(count * (n + 1), task.dim, gen, device).view(count, n + 1, task.dim)
    exemplars = (means[rows, items] + task.noise * noise) / math.sqrt(1 + task.noise**2)
    label_ids = names[rows, items]  # [count, N + 1]: each example's label, and the query's answer
    if kind == "decoy":  # the answer the context would give: the label shown beside the decoy
        label_ids[:, -1] = names.gather(1, first[:, None])[:, 0]
    inputs = torch.empty(count, task.length, task.dim, device=device)
    inputs[:, 0:-1:2], inputs[:, 1:-1:2], inputs[:, -1] = (exemplars[:, :-1], task.label_vectors[label_ids[:, :-1]],
                                                           exemplars[:, -1])
    return inputs, label_ids[:, -1], classes == query[:, None], query


class Model(nn.Module):
    """The attention-only transformer of the chapter: the input vectors plus a learned position embedding, ``layers``
    attention layers of ``heads`` heads added to the residual stream, and a linear readout to the ``labels`` at the
    last position. Stacked (:func:`pavlov.batched.stack`), it reads inputs ``[M, batch, T, D]``."""

    def __init__(self, dim: int, length: int, labels: int, *, layers: int = 2, heads: int = 1):
        super().__init__()
        dim, length, labels, layers = (_validate.positive_int(n, v) for n, v in
                                       (("dim", dim), ("length", length), ("labels", labels), ("layers", layers)))
        self.length = length
        self.position = batched.Embedding(length, dim)
        nn.init.normal_(self.position.weight, std=1 / math.sqrt(dim))
        self.attentions = nn.ModuleList(Attention(dim, heads) for _ in range(layers))
        self.readout = batched.Linear(dim, labels, bias=False)

    def forward(self, inputs: torch.Tensor, *, ablate: tuple = (), patterns: list | None = None) -> torch.Tensor:
        """The logits over the labels at the last position, ``[batch, L]`` (stacked ``[M, batch, L]``). ``ablate``:
        ``(layer, head)`` pairs whose output is zeroed; ``patterns``: a list that receives each layer's attention
        weights ``[..., heads, T, T]``, the last layer's only at the query ``[..., heads, 1, T]``."""
        if not isinstance(inputs, torch.Tensor) or not inputs.is_floating_point():
            raise TypeError(f"inputs must be a floating-point tensor, got {getattr(inputs, 'dtype', inputs)!r}")
        if inputs.shape[-2] != self.length:
            raise ValueError(f"inputs must be {self.length} long, got {inputs.shape[-2]}")
        models = self.position.weight.shape[:-2]
        positions = torch.arange(self.length, device=inputs.device).expand(*models, self.length)
        x = inputs + self.position(positions).unsqueeze(-3)
        ablate = _heads(self, ablate)
        for layer, attention in enumerate(self.attentions):
            keep = torch.tensor([(layer, h) not in ablate for h in range(attention.heads)], device=inputs.device)
            last = layer == len(self.attentions) - 1  # the readout reads the query's position alone
            x = (x[..., -1:, :] if last else x) + attention(x, None if keep.all() else keep, patterns, last=last)
        return self.readout(x[..., -1, :])


def build(task: Task, *, seed: int, **kwargs) -> Model:
    """A :class:`Model` for ``task`` initialised from ``seed`` (the global random state left as it was)."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(runtime.seed_for(seed))
        model = Model(task.dim, task.length, task.labels, **kwargs)
    return model.to(task.device)


@dataclass
class Trained:
    """One trained model, its task, its seed, and, recorded every ``every`` steps, its accuracy on each of
    :data:`TESTS` and its induction head's mass (:func:`head_mass`) on the in-context tests."""

    model: Model
    task: Task
    seed: int
    steps: list[int]
    curves: dict[str, list[float]]


TESTS = ("in_context", "in_weights")
"""The accuracies :func:`train_together` records: only the context can answer, only the weights can."""


def _model_and_task(model, task) -> None:
    """Check that ``model`` is a :class:`Model` (one, not a stack) and ``task`` a :class:`Task` it reads."""
    if not isinstance(model, Model) or model.position.weight.dim() != 2:
        raise TypeError(f"model must be one icl.Model, got {type(model).__name__}")
    if not isinstance(task, Task):
        raise TypeError(f"task must be an icl.Task, got {type(task).__name__}")
    if (task.length, task.dim, task.labels) != (model.length, model.position.weight.shape[1],
                                                model.readout.weight.shape[0]):
        raise ValueError(f"task must be of the model's length, width and labels, got {task.length}, {task.dim}, "
                         f"{task.labels}")


def _mass(weights: torch.Tensor, same: torch.Tensor) -> torch.Tensor:
    """The share of one head's attention at the query (``weights [..., T, T]``'s last row) on the labels of the
    query's class's exemplars (``same [..., N]``), averaged over the sequences (the second-last axis of ``same``)."""
    return (weights[..., -1, 1:-1:2] * same.to(weights.dtype)).sum(-1).mean(-1)


def head_mass(model: Model, task: Task, *, count: int = 512, seed: int = 2**31) -> float:
    """The induction head's mass: the share of the last layer's first head's attention at the query that lands on
    the labels of the query's class's exemplars, over ``count`` in-context test sequences (classes never trained)."""
    _model_and_task(model, task)
    inputs, _, same, _ = _draw(task, count, seed, "in_context", None)
    patterns = []
    with torch.no_grad():
        model(inputs, patterns=patterns)
    return _mass(patterns[-1][..., 0, :, :], same).item()


def accuracy(model: Model, task: Task, kind: str, *, count: int = 512, seed: int = 2**31, **kwargs) -> float:
    """The fraction of ``count`` fresh sequences of ``kind`` whose label ``model`` names (``kwargs``: the model's
    ``ablate``, or :func:`sequences`' ``bursty``)."""
    _model_and_task(model, task)
    ablate = kwargs.pop("ablate", ())
    inputs, answers = sequences(task, count, seed=seed, kind=kind, **kwargs)
    with torch.no_grad():
        return (model(inputs, ablate=ablate).argmax(-1) == answers).double().mean().item()


def conflict(model: Model, task: Task, *, shown: int, decoy: bool = False, count: int = 512,
             seed: int = 2**31) -> tuple[float, float]:
    """Which memory wins when they disagree: over ``count`` conflict sequences, each with ``shown`` exemplars of a
    trained class all shown with another label, the fraction of queries answered with the context's label and the
    fraction answered with the weights' (the class's label in training). ``decoy``: the control, in which the other
    label is shown as often beside another class's exemplars, so that only its count can make it the answer."""
    _model_and_task(model, task)
    _validate.int_between("shown", shown, 1, task.pairs, high_is=f"pairs = {task.pairs}")
    inputs, shown_label, _, query = _draw(task, count, seed, "decoy" if decoy else "conflict", shown)
    with torch.no_grad():
        named = model(inputs).argmax(-1)
    return ((named == shown_label).double().mean().item(),
            (named == task.class_labels[query]).double().mean().item())


CHUNK = 25
"""The training steps whose batches :func:`train_together` draws at once."""


def train_together(tasks, *, steps: int, seeds, batch: int = 64, lr: float = 1e-3, every: int = 50,
                   weight_decay: float = 0.0, tests: int = 256, **kwargs) -> list[Trained]:
    """Train one :class:`Model` per seed, each on its own task (one :class:`Task`, or one per seed, of one width,
    length and number of labels), all at once as one stack with AdamW on fresh batches; every ``every`` steps record
    each model's accuracy on ``tests`` fixed test sequences of each of :data:`TESTS`. ``kwargs``: the model's
    (``layers``, ``heads``)."""
    seeds = _validate.seeds("seeds", seeds)
    tasks = [tasks] * len(seeds) if isinstance(tasks, Task) else list(tasks)
    if len(tasks) != len(seeds) or not all(isinstance(t, Task) for t in tasks) or len(
            {(t.dim, t.length, t.labels, t.device) for t in tasks}) != 1:
        raise ValueError(f"tasks must be a Task or one Task per seed, of one dim, length, labels and device: got "
                         f"{len(tasks)} for {len(seeds)} seeds")
    steps, batch, every, tests = (_validate.positive_int(n, v) for n, v in
                                  (("steps", steps), ("batch", batch), ("every", every), ("tests", tests)))
    lr = _validate.finite_float("lr", lr, positive=True)
    weight_decay = _validate.finite_float("weight_decay", weight_decay, nonnegative=True)
    stacked = batched.stack([build(t, seed=s, **kwargs) for t, s in zip(tasks, seeds)])
    optimiser = torch.optim.AdamW(stacked.parameters(), lr=lr, weight_decay=weight_decay)
    held = {kind: [_draw(t, tests, 2**30 + s, kind, None)[:3] for t, s in zip(tasks, seeds)] for kind in TESTS}
    held = {kind: tuple(torch.stack(x) for x in zip(*drawn)) for kind, drawn in held.items()}
    recorded, curves = [], {name: [] for name in (*TESTS, "induction")}
    for step in range(steps + 1):
        if step % every == 0 or step == steps:
            with torch.no_grad():
                for kind, (inputs, answers, same) in held.items():
                    patterns = []
                    curves[kind].append((stacked(inputs, patterns=patterns).argmax(-1) == answers).double().mean(-1))
                    if kind == "in_context":
                        curves["induction"].append(_mass(patterns[-1][..., 0, :, :], same))
            recorded.append(step)
        if step == steps:
            break
        if step % CHUNK == 0:  # the next CHUNK steps' batches, drawn at once: one draw per task, not per step
            drawn = [sequences(t, batch * CHUNK, seed=s * 1_000_003 + step) for t, s in zip(tasks, seeds)]
            chunk = [torch.stack(x).unflatten(1, (CHUNK, batch)) for x in zip(*drawn)]
        inputs, answers = (x[:, step % CHUNK] for x in chunk)
        loss = F.cross_entropy(stacked(inputs).flatten(0, 1), answers.flatten(), reduction="sum") / batch
        optimiser.zero_grad(set_to_none=True)
        loss.backward()
        optimiser.step()
    per_model = {name: torch.stack(values, 1).tolist() for name, values in curves.items()}
    return [Trained(model, task, seed, recorded, {name: values[m] for name, values in per_model.items()})
            for m, (model, task, seed) in enumerate(zip(batched.unstack(stacked), tasks, seeds))]
