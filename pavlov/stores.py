r"""Associative stores: write key-value pairs, read them back, and measure the interference.

Every store holds ``n`` memories, keys ``[..., n, d_k]`` and values ``[..., n, d_v]``, batched over
independent trials in the leading dimensions, and retrieves a weighted sum of its values,

.. math::

    r(q) = \sum_i w_i(q)\, v_i ,

with weights that depend on the store (Hebbian: :math:`w_i = k_i \cdot q`). Queried with a stored key
:math:`k_j`, the retrieval splits into the **signal** :math:`w_j v_j` and the **interference**
:math:`r - w_j v_j` from every other memory. Their ratio of squared norms is the
interference-to-signal ratio (ISR),

.. math::

    \mathrm{ISR}_j = \frac{\lVert r(k_j) - w_j(k_j)\, v_j \rVert^2}{\lVert w_j(k_j)\, v_j \rVert^2}.

A store is a class with ``__init__(keys, values, **params)`` and
``read(queries, targets) -> (retrieved [..., m, d_v], target_weight [..., m])``, registered in
:data:`STORES` under its name; :func:`build` makes one and :func:`measure_isr` measures it.
"""

from __future__ import annotations

import os
from typing import NamedTuple

import torch

from . import _validate
from .runtime import generator, resolve
from .stats import mean_and_se
from .stimuli import KINDS, random_stimuli


def _check_memories(keys: torch.Tensor, values: torch.Tensor) -> None:
    _validate.tensor("keys", keys, min_dim=2)
    _validate.tensor("values", values, min_dim=2)
    _validate.same_device_dtype(keys=keys, values=values)
    if values.shape[:-1] != keys.shape[:-1]:
        raise ValueError(f"values must have the leading shape of keys {tuple(keys.shape[:-1])} (batch..., n), "
                         f"got {tuple(values.shape[:-1])}")


def _check_read(store, queries: torch.Tensor, targets: torch.Tensor) -> None:
    _validate.tensor("queries", queries, min_dim=2)
    _validate.same_device_dtype(keys=store.keys, queries=queries)
    _validate.shape("queries", queries, (store.keys.shape[-1],), against=f"the key dimension {store.keys.shape[-1]}")
    if not isinstance(targets, torch.Tensor) or targets.dtype != torch.long:
        raise TypeError("targets must be a tensor of memory indices (torch.long)")
    if targets.shape != queries.shape[:-1]:
        raise ValueError(f"targets must have the shape of queries without the last dimension "
                         f"{tuple(queries.shape[:-1])}, got {tuple(targets.shape)}")
    n = store.keys.shape[-2]
    if targets.device.type != "meta" and targets.numel() and not bool(((targets >= 0) & (targets < n)).all()):
        raise ValueError(f"targets must index stored memories, in [0, {n})")


class HebbianStore:
    r"""The Hebbian (outer-product) store :math:`W = \sum_i v_i^\top k_i`, read as :math:`r = q W`.

    The weights are the overlaps :math:`w_i(q) = k_i \cdot q`. Reading goes through the matrix ``W``
    ``[..., d_k, d_v]``, as a linear layer would; the target's weight is its overlap with the query.

    >>> keys = values = torch.eye(3, dtype=torch.float64)
    >>> HebbianStore(keys, values).read(keys, torch.arange(3))[1]
    tensor([1., 1., 1.], dtype=torch.float64)
    """

    name = "hebbian"

    def __init__(self, keys: torch.Tensor, values: torch.Tensor):
        _check_memories(keys, values)
        self.keys, self.values = keys, values
        self.matrix = keys.transpose(-1, -2) @ values                    # W = K^T V, (..., d_k, d_v)

    def read(self, queries: torch.Tensor, targets: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Retrieve for ``queries`` ``[..., m, d_k]``; also return the weight of memory ``targets`` ``[..., m]``."""
        _check_read(self, queries, targets)
        retrieved = queries @ self.matrix                                 # (..., m, d_v)
        target_keys = torch.take_along_dim(self.keys, targets.unsqueeze(-1), dim=-2)   # (..., m, d_k)
        return retrieved, (queries * target_keys).sum(-1)


STORES: dict[str, type] = {"hebbian": HebbianStore}


def build(store: str, keys: torch.Tensor, values: torch.Tensor, **params):
    """Write ``keys`` ``[..., n, d_k]`` and ``values`` ``[..., n, d_v]`` into the store named ``store``."""
    _validate.option("store", store, tuple(STORES))
    return STORES[store](keys, values, **params)


class IsrMeasurement(NamedTuple):
    """The result of :func:`measure_isr`.

    ``mean`` and ``se``: the mean ISR and its standard error over trials (each trial's queries are
    averaged first, since they share a store); ``values``: the ISR of every query ``[trials, m]``;
    ``correct``: whether each retrieval is nearest (largest inner product) to its own value among all
    stored values ``[trials, m]``; ``seed``: the seed used.
    """

    mean: float
    se: float
    values: torch.Tensor
    correct: torch.Tensor
    seed: int

    @property
    def accuracy(self) -> float:
        """The fraction of queries decoded to the right value."""
        return self.correct.float().mean().item()


def _nearest_is_target(retrieved: torch.Tensor, values: torch.Tensor, targets: torch.Tensor,
                       chunk: int = 4096) -> torch.Tensor:
    """Whether each retrieval's largest inner product over all values is with its target, streamed over memories."""
    best = torch.full(retrieved.shape[:-1], float("-inf"), device=retrieved.device, dtype=retrieved.dtype)
    best_index = torch.zeros(retrieved.shape[:-1], device=retrieved.device, dtype=torch.long)
    for start in range(0, values.shape[-2], chunk):
        scores = retrieved @ values[..., start:start + chunk, :].transpose(-1, -2)   # (..., m, chunk)
        top, index = scores.max(dim=-1)
        better = top > best
        best = torch.where(better, top, best)
        best_index = torch.where(better, index + start, best_index)
    return best_index == targets


def measure_isr(store: str, d_key: int, n_memories: int, *, trials: int, keys: str = "sphere",
                seed: int | None = None, device=None, dtype=None, n_queries: int | None = None,
                d_value: int | None = None, **params) -> IsrMeasurement:
    """Measure a store's ISR by querying it with its own stored keys, over independent trials.

    Each trial draws ``n_memories`` keys (``keys="sphere"``: uniform unit vectors; ``"gaussian"``:
    entries ``N(0, 1/d_key)``) and as many values uniform on the unit sphere in ``d_value``
    dimensions (default ``d_key``), writes them into the store, and queries it with the first
    ``n_queries`` stored keys (default: all; the keys are i.i.d., so these are a random sample).

    Args:
        store: a name from :data:`STORES`.
        d_key, n_memories, trials: sizes, each a positive int.
        keys: the key ensemble, ``"sphere"`` or ``"gaussian"``.
        seed: seeds the draws (default: a fresh random seed, returned in the result).
        device, dtype: where and in what precision (default: the package device, float32).
        params: passed to the store (e.g. ``beta`` for a softmax store).

    Returns:
        An :class:`IsrMeasurement`.

    >>> m = measure_isr("hebbian", 64, 32, trials=100, seed=0, device="cpu")   # m.mean ~ (32 - 1) / 64
    """
    _validate.option("store", store, tuple(STORES))
    d_key = _validate.positive_int("d_key", d_key)
    n_memories = _validate.positive_int("n_memories", n_memories)
    trials = _validate.positive_int("trials", trials)
    if trials < 2:
        raise ValueError(f"trials must be at least 2 for a standard error, got {trials}")
    _validate.option("keys", keys, KINDS)
    n_queries = n_memories if n_queries is None else _validate.positive_int("n_queries", n_queries)
    if n_queries > n_memories:
        raise ValueError(f"n_queries must be at most n_memories = {n_memories}, got {n_queries}")
    d_value = d_key if d_value is None else _validate.positive_int("d_value", d_value)
    if seed is None:
        seed = int.from_bytes(os.urandom(4), "little")
    device, dtype = resolve(device, dtype)
    gen = generator(seed, device)
    key_set = random_stimuli(trials, n_memories, d_key, kind=keys, generator=gen, device=device, dtype=dtype)
    value_set = random_stimuli(trials, n_memories, d_value, generator=gen, device=device, dtype=dtype)
    memory = build(store, key_set, value_set, **params)
    targets = torch.arange(n_queries, device=device).expand(trials, n_queries)          # (trials, m)
    retrieved, weight = memory.read(key_set[:, :n_queries], targets)                   # (trials, m, d_v), (trials, m)
    signal = weight.unsqueeze(-1) * value_set[:, :n_queries]                           # w_j v_j
    isr = (retrieved - signal).pow(2).sum(-1) / signal.pow(2).sum(-1)                 # (trials, m)
    mean, se = mean_and_se(isr.mean(-1))                                                # over trials
    correct = _nearest_is_target(retrieved, value_set, targets)
    return IsrMeasurement(mean.item(), se.item(), isr, correct, seed)
