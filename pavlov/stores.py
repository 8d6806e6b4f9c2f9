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

The stores differ in their weights :math:`w_i(q)`:

* ``"hebbian"``: :math:`k_i \cdot q`; ``"least_squares"``: :math:`a_i \cdot q` with the dual keys
  :math:`a_i`, the columns of the pseudo-inverse :math:`K^+` (the keys, whitened); ``"ridge"`` (``lam``
  :math:`\lambda`): the same with :math:`K^+` regularised to :math:`(K^\top K + \lambda I)^{-1} K^\top`. All three read
  through one matrix, as a linear layer does.
* ``"relu"``, ``"relu2"`` and ``"polynomial"`` (``degree`` :math:`p`): :math:`\max(0, k_i \cdot q)`, its
  square, and :math:`(k_i \cdot q)^p`: an MLP whose first layer holds the keys and second the values.
* ``"softmax"`` (``beta``, default :math:`\sqrt{d_k}`): :math:`e^{\beta k_i \cdot q} / \sum_l e^{\beta k_l \cdot q}`,
  attention over the stored memories.

The kernel stores (:class:`KernelStore`) never form the ``[..., m, n]`` matrix of weights: they stream
over chunks of memories, the softmax store with a running log-sum-exp, so they need the memory of the
keys and values plus a buffer of at most :data:`CHUNK_ELEMENTS` entries, however many memories they hold.

:func:`erase` asks whether one association can be removed on purpose from a least-squares store, and at
what cost to the others, for the write rules of :mod:`pavlov.rules` (:data:`ERASE_RULES`).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator
from typing import NamedTuple

import torch

from . import _validate, rules, theory
from ._precision import accumulator
from .runtime import generator, resolve, seed_or_fresh
from .stats import mean_and_se
from .stimuli import KINDS, random_stimuli


def _check_memories(keys: torch.Tensor, values: torch.Tensor) -> None:
    _validate.tensor("keys", keys, min_dim=2)
    _validate.tensor("values", values, min_dim=2)
    _validate.same_device_dtype(keys=keys, values=values)
    if values.shape[:-1] != keys.shape[:-1]:
        raise ValueError(f"values must have the leading shape of keys {tuple(keys.shape[:-1])} (batch..., n), "
                         f"got {tuple(values.shape[:-1])}")


def _check_queries(store, queries: torch.Tensor) -> None:
    _validate.tensor("queries", queries, min_dim=2)
    _validate.same_device_dtype(keys=store.keys, queries=queries)
    _validate.shape("queries", queries, (store.keys.shape[-1],), against=f"the key dimension {store.keys.shape[-1]}")


def _check_read(store, queries: torch.Tensor, targets: torch.Tensor) -> None:
    _check_queries(store, queries)
    if not isinstance(targets, torch.Tensor) or targets.dtype != torch.long:
        raise TypeError("targets must be a tensor of memory indices (torch.long)")
    if targets.shape != queries.shape[:-1]:
        raise ValueError(f"targets must have the shape of queries without the last dimension "
                         f"{tuple(queries.shape[:-1])}, got {tuple(targets.shape)}")
    n = store.keys.shape[-2]
    if targets.device.type != "meta" and targets.numel() and not bool(((targets >= 0) & (targets < n)).all()):
        raise ValueError(f"targets must index stored memories, in [0, {n})")


def _overlap_with(vectors: torch.Tensor, queries: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """The overlap ``[..., m]`` of each query ``[..., m, d_k]`` with stored vector ``targets`` of ``vectors`` ``[..., n, d_k]``."""
    return (queries * torch.take_along_dim(vectors, targets.unsqueeze(-1), dim=-2)).sum(-1)


class HebbianStore:
    r"""The Hebbian (outer-product) store :math:`W = \sum_i v_i^\top k_i`, read as :math:`r = q W`.

    The weights are the overlaps :math:`w_i(q) = k_i \cdot q`. Reading goes through the matrix ``W``
    ``[..., d_k, d_v]``, as a linear layer would; the target's weight is its overlap with the query.
    A linear store in general writes :math:`W = \sum_i v_i^\top a_i` with *dual keys* :math:`a_i`
    (:meth:`dual_keys`) and weighs memory :math:`i` by :math:`a_i \cdot q`; Hebbian writing has :math:`a_i = k_i`.

    >>> keys = values = torch.eye(3, dtype=torch.float64)
    >>> HebbianStore(keys, values).read(keys, torch.arange(3))[1]
    tensor([1., 1., 1.], dtype=torch.float64)
    """

    name = "hebbian"

    def __init__(self, keys: torch.Tensor, values: torch.Tensor):
        _check_memories(keys, values)
        self.keys, self.values = keys, values
        self.duals = self.dual_keys(keys)                                 # (..., n, d_k)
        self.matrix = self.duals.transpose(-1, -2) @ values               # W = A^T V, (..., d_k, d_v)

    @staticmethod
    def dual_keys(keys: torch.Tensor) -> torch.Tensor:
        r"""The vectors :math:`a_i` ``[..., n, d_k]`` that weigh the memories, :math:`w_i(q) = a_i \cdot q`: the keys."""
        return keys

    def read(self, queries: torch.Tensor, targets: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Retrieve for ``queries`` ``[..., m, d_k]``; also return the weight of memory ``targets`` ``[..., m]``."""
        _check_read(self, queries, targets)
        return queries @ self.matrix, _overlap_with(self.duals, queries, targets)   # (..., m, d_v), (..., m)


class LeastSquaresStore(HebbianStore):
    r"""The optimal linear store :math:`W = K^+ V`, which minimises :math:`\lVert K W - V \rVert`, read as :math:`r = q W`.

    The dual keys :math:`a_i` are the columns of the pseudo-inverse :math:`K^+` ``[d_k, n]`` of the keys
    ``[..., n, d_k]``: the keys whitened, since :math:`a_i \cdot k_j = P_{ji}` with :math:`P = K K^+` the
    projection onto the span of the keys' columns (the hat matrix). For :math:`n \le d_k` independent
    keys :math:`P = I`, and every stored key retrieves its value exactly; beyond, the stored key
    :math:`k_j` weighs memory :math:`i` by :math:`P_{ij}`.

    >>> keys = torch.tensor([[1.0, 0.0], [1.0, 1.0]], dtype=torch.float64)   # not orthogonal
    >>> retrieved, weight = LeastSquaresStore(keys, torch.eye(2, dtype=torch.float64)).read(keys, torch.arange(2))
    >>> torch.allclose(retrieved, torch.eye(2, dtype=torch.float64)), torch.allclose(weight, torch.ones(2, dtype=torch.float64))
    (True, True)
    """

    name = "least_squares"

    @staticmethod
    def dual_keys(keys: torch.Tensor) -> torch.Tensor:
        """The columns of :math:`K^+` as rows, ``[..., n, d_k]`` (computed in at least float32, as ``pinv`` needs)."""
        work = torch.promote_types(keys.dtype, torch.float32)
        return torch.linalg.pinv(keys.to(work)).transpose(-1, -2).to(keys.dtype)


class RidgeStore(HebbianStore):
    r"""The ridge store :math:`W = (K^\top K + \lambda I)^{-1} K^\top V`, which minimises
    :math:`\lVert K W - V \rVert^2 + \lambda \lVert W \rVert^2`, read as :math:`r = q W`.

    ``lam`` :math:`\lambda > 0` runs from least squares (:math:`\lambda \to 0`) to the Hebbian store's direction
    (:math:`\lambda \to \infty`, where :math:`W \to K^\top V / \lambda`). Its dual keys are the rows of
    :math:`K (K^\top K + \lambda I)^{-1}` (computed in at least float32). For cues :math:`q = k_j + \sigma z/\sqrt{d_k}`,
    :math:`j` uniform, the expected squared error of the read is
    :math:`\lVert K W - V \rVert^2 / n + (\sigma^2/d_k) \lVert W \rVert^2`, so :math:`\lambda = n \sigma^2 / d_k`
    (``theory.matched_ridge``) gives the linear read of least mean squared error.

    >>> keys = values = torch.eye(2, dtype=torch.float64)
    >>> RidgeStore(keys, values, lam=1.0).read(keys, torch.arange(2))[1]      # 1 / (1 + lam)
    tensor([0.5000, 0.5000], dtype=torch.float64)
    """

    name = "ridge"

    def __init__(self, keys: torch.Tensor, values: torch.Tensor, *, lam: float):
        self.lam = _validate.finite_float("lam", lam, positive=True)
        super().__init__(keys, values)

    def dual_keys(self, keys: torch.Tensor) -> torch.Tensor:
        r"""The rows of :math:`K (K^\top K + \lambda I)^{-1}`, ``[..., n, d_k]``."""
        work = keys.to(torch.promote_types(keys.dtype, torch.float32))
        gram = work.transpose(-1, -2) @ work
        gram = gram + self.lam * torch.eye(gram.shape[-1], device=gram.device, dtype=gram.dtype)
        return torch.linalg.solve(gram, work.transpose(-1, -2)).transpose(-1, -2).to(keys.dtype)
class MatrixStore:
    r"""Any matrix :math:`W` ``[..., d_k, d_v]`` (a learned weight matrix) read as a store of given pairs, :math:`r = q W`.

    ``keys`` ``[..., n, d_k]`` and ``values`` ``[..., n, d_v]`` (linearly independent, so :math:`n \le d_v`) name
    the pairs the matrix is asked to hold. The weight of memory :math:`i` in a retrieval is the coefficient of
    :math:`v_i` when :math:`r` is written on the values (least squares, :math:`r V^+`); what the values do not span
    is interference too. For the Hebbian matrix :math:`K^\top V` of the same pairs the weights are the overlaps
    :math:`k_i \cdot q`, as in :class:`HebbianStore`, so :func:`interference_to_signal` measures both alike.

    >>> keys = values = torch.eye(3, dtype=torch.float64)
    >>> MatrixStore(2 * torch.eye(3, dtype=torch.float64), keys, values).read(keys, torch.arange(3))[1]
    tensor([2., 2., 2.], dtype=torch.float64)
    """

    name = "matrix"

    def __init__(self, matrix: torch.Tensor, keys: torch.Tensor, values: torch.Tensor):
        _check_memories(keys, values)
        _validate.tensor("matrix", matrix, min_dim=2)
        _validate.same_device_dtype(keys=keys, matrix=matrix)
        if matrix.shape[-2:] != (keys.shape[-1], values.shape[-1]):
            raise ValueError(f"matrix must be [..., d_k, d_v] = [..., {keys.shape[-1]}, {values.shape[-1]}], "
                             f"got {tuple(matrix.shape)}")
        if values.shape[-2] > values.shape[-1]:
            raise ValueError(f"values must be at most d_v = {values.shape[-1]} (linearly independent), "
                             f"got {values.shape[-2]}")
        self.matrix, self.keys, self.values = matrix, keys, values
        work = torch.promote_types(values.dtype, torch.float32)                  # pinv needs at least float32
        self.coefficients = torch.linalg.pinv(values.to(work)).to(values.dtype)  # V^+ (..., d_v, n)

    def read(self, queries: torch.Tensor, targets: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Retrieve for ``queries`` ``[..., m, d_k]``; also return the weight of memory ``targets`` ``[..., m]``."""
        _check_read(self, queries, targets)
        retrieved = queries @ self.matrix                                   # (..., m, d_v)
        weights = retrieved @ self.coefficients                             # (..., m, n)
        return retrieved, weights.gather(-1, targets.unsqueeze(-1)).squeeze(-1)


CHUNK_ELEMENTS = 2**22
"""Entries of a kernel store's largest streaming buffer ``[..., m, chunk]`` by default (16 MiB in float32)."""


def chunk_length(n_memories: int, rows: int, chunk_size: int | None = None) -> int:
    """Memories per chunk when ``rows`` queries (all batches together) stream over ``n_memories``.

    ``chunk_size`` if given, else as many as keep the ``rows x chunk`` buffer within
    :data:`CHUNK_ELEMENTS` entries; at least one and at most ``n_memories``.

    >>> chunk_length(2**20, 128)
    32768
    """
    n_memories = _validate.positive_int("n_memories", n_memories)
    rows = _validate.positive_int("rows", rows)
    chunk = CHUNK_ELEMENTS // rows if chunk_size is None else _validate.positive_int("chunk_size", chunk_size)
    return max(1, min(n_memories, chunk))


MEMORY_ELEMENTS = 2**27
"""The most key and value entries :func:`measure_isr` (and :func:`pavlov.stacking.head_margins`) draws at once
(512 MiB in float32): it draws, writes and reads its trials in blocks that hold at most this many (or one trial),
so that its memory does not grow with the trials. A measurement that fits in one block draws exactly what it
would unblocked."""


def trial_blocks(trials: int, trial_elements: int, budget: int | None = None) -> list[int]:
    """The sizes of the consecutive blocks ``trials`` trials of ``trial_elements`` entries each are run in: as many
    trials a block as hold at most ``budget`` entries (default :data:`CHUNK_ELEMENTS`), and at least one.

    >>> trial_blocks(400, 100 * 64, 2**20)
    [163, 163, 74]
    """
    trials = _validate.positive_int("trials", trials)
    trial_elements = _validate.positive_int("trial_elements", trial_elements)
    budget = CHUNK_ELEMENTS if budget is None else _validate.positive_int("budget", budget)
    block = max(1, budget // trial_elements)
    return [min(block, trials - first) for first in range(0, trials, block)]


def _streamed_argmax(chunks: Iterable[tuple[int, torch.Tensor]]) -> torch.Tensor:
    """The index of the largest score over all chunks ``(start, scores [..., m, chunk])`` of consecutive memories."""
    best = best_index = None
    for start, scores in chunks:
        top, index = scores.max(dim=-1)
        if best is None:
            best, best_index = top, index + start
        else:   # strictly better only: ties keep the earlier memory, as a dense argmax does
            better = top > best
            best, best_index = torch.where(better, top, best), torch.where(better, index + start, best_index)
    return best_index


class KernelStore:
    r"""A store whose weights are a kernel of the overlaps, :math:`w_i(q) = \kappa(k_i \cdot q)`, read in chunks.

    The retrieval :math:`r(q) = \sum_i \kappa(k_i \cdot q)\, v_i = \kappa(q K^\top)\, V` is an MLP with one
    hidden layer of :math:`n` units, the keys ``[..., n, d_k]`` as its first layer and the values
    ``[..., n, d_v]`` as its second. Reading streams over chunks of memories (:func:`chunk_length`, with
    ``chunk_size`` or the default buffer), so the ``[..., m, n]`` weights never exist at once;
    ``buffer_elements`` records the entries of the last read's overlap buffer. Subclasses define :meth:`kernel`.
    """

    name = "kernel"

    def __init__(self, keys: torch.Tensor, values: torch.Tensor, *, chunk_size: int | None = None):
        _check_memories(keys, values)
        self.keys, self.values = keys, values
        self.chunk_size = None if chunk_size is None else _validate.positive_int("chunk_size", chunk_size)
        self.buffer_elements = 0

    def kernel(self, overlaps: torch.Tensor) -> torch.Tensor:
        r"""The weights :math:`\kappa(c)` of the overlaps :math:`c` (any shape)."""
        raise NotImplementedError

    def _order(self, overlaps: torch.Tensor) -> torch.Tensor:
        """Scores in the order of the weights of ``overlaps``, for :meth:`strongest`: the weights themselves."""
        return self.kernel(overlaps)

    def _chunks(self, queries: torch.Tensor) -> Iterator[tuple[int, torch.Tensor, torch.Tensor]]:
        """``(start, keys [..., chunk, d_k], values [..., chunk, d_v])`` for consecutive chunks of memories.

        Yields views, not buffers: the caller makes each chunk's ``[..., m, chunk]`` overlaps and weights,
        which are freed as the next chunk's are made, so a read holds a few such buffers at most.
        """
        n = self.keys.shape[-2]
        rows = torch.broadcast_shapes(self.keys.shape[:-2], queries.shape[:-2]).numel() * queries.shape[-2]
        chunk = chunk_length(n, rows, self.chunk_size)
        self.buffer_elements = rows * chunk
        for start in range(0, n, chunk):
            yield start, self.keys[..., start:start + chunk, :], self.values[..., start:start + chunk, :]

    def read(self, queries: torch.Tensor, targets: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Retrieve for ``queries`` ``[..., m, d_k]``; also return the weight of memory ``targets`` ``[..., m]``."""
        _check_read(self, queries, targets)
        work = accumulator(queries.dtype)     # half inputs: the chunks' sum runs in float32
        retrieved = 0
        for _, keys, values in self._chunks(queries):
            retrieved = retrieved + (self.kernel(queries @ keys.transpose(-1, -2)) @ values).to(work)   # (..., m, d_v)
        return retrieved.to(queries.dtype), self.kernel(_overlap_with(self.keys, queries, targets))

    def strongest(self, queries: torch.Tensor) -> torch.Tensor:
        """The index ``[..., m]`` of the memory that each of ``queries`` ``[..., m, d_k]`` weighs most (the first, on ties)."""
        _check_queries(self, queries)
        return _streamed_argmax((start, self._order(queries @ keys.transpose(-1, -2)))
                                for start, keys, _ in self._chunks(queries))


class ReluStore(KernelStore):
    r"""The ReLU MLP store, :math:`w_i(q) = \max(0, k_i \cdot q)`: ``Linear(keys) -> ReLU -> Linear(values)``.

    >>> keys = values = torch.eye(2, dtype=torch.float64)
    >>> ReluStore(keys, values).read(-keys, torch.arange(2))[0]     # negative overlaps are cut
    tensor([[0., 0.],
            [0., 0.]], dtype=torch.float64)
    """

    name = "relu"

    def kernel(self, overlaps: torch.Tensor) -> torch.Tensor:
        return torch.relu(overlaps)


class SquaredReluStore(KernelStore):
    r"""The squared-ReLU store, :math:`w_i(q) = \max(0, k_i \cdot q)^2`: a GLU whose gate and input share the keys.

    :math:`\mathrm{ReLU}(c)\, c = \max(0, c)^2`, so a ReGLU layer :math:`(\mathrm{ReLU}(q W_1) \odot q W_3) W_2`
    with :math:`W_1 = W_3 = K^\top` and :math:`W_2 = V` is this store.
    """

    name = "relu2"

    def kernel(self, overlaps: torch.Tensor) -> torch.Tensor:
        return torch.relu(overlaps).square_()      # in place: one buffer fewer


class PolynomialStore(KernelStore):
    r"""The polynomial-kernel store, :math:`w_i(q) = (k_i \cdot q)^p` with ``degree`` :math:`p \ge 1` (dense associative memory).

    Degree 1 is the Hebbian store, read memory by memory instead of through :math:`W`.
    """

    name = "polynomial"

    def __init__(self, keys: torch.Tensor, values: torch.Tensor, *, degree: int, chunk_size: int | None = None):
        super().__init__(keys, values, chunk_size=chunk_size)
        self.degree = _validate.positive_int("degree", degree)

    def kernel(self, overlaps: torch.Tensor) -> torch.Tensor:
        return overlaps.pow(self.degree)


class SoftmaxStore(KernelStore):
    r"""The softmax store (attention over the memories), :math:`w_i(q) = e^{\beta k_i \cdot q} / \sum_l e^{\beta k_l \cdot q}`.

    ``beta`` > 0 is the inverse temperature (default :math:`\sqrt{d_k}`, attention's :math:`1/\sqrt{d_k}` on
    unscaled logits of unit-variance entries). Reading streams over chunks with a running log-sum-exp:
    with :math:`\mu` the largest logit so far, it keeps :math:`Z = \sum_i e^{\beta c_i - \mu}` and
    :math:`R = \sum_i e^{\beta c_i - \mu} v_i`, rescaling both by :math:`e^{\mu - \mu'}` when a chunk raises
    :math:`\mu` to :math:`\mu'`, and returns :math:`R / Z`: no exponential overflows, whatever ``beta``.

    >>> keys = values = torch.eye(2, dtype=torch.float64)
    >>> SoftmaxStore(keys, values, beta=math.log(3.0)).read(keys, torch.arange(2))[1]     # 3 / (3 + 1)
    tensor([0.7500, 0.7500], dtype=torch.float64)
    """

    name = "softmax"

    def __init__(self, keys: torch.Tensor, values: torch.Tensor, *, beta: float | None = None,
                 chunk_size: int | None = None):
        super().__init__(keys, values, chunk_size=chunk_size)
        self.beta = math.sqrt(keys.shape[-1]) if beta is None else _validate.finite_float("beta", beta, positive=True)

    def kernel(self, overlaps: torch.Tensor) -> torch.Tensor:
        r"""The unnormalised weights :math:`e^{\beta c}` (they overflow for large :math:`\beta c`; reading never forms them)."""
        return torch.exp(self.beta * overlaps)

    def _order(self, overlaps: torch.Tensor) -> torch.Tensor:
        return overlaps      # exp is increasing: the overlaps order the weights, and cannot overflow

    def read(self, queries: torch.Tensor, targets: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Retrieve for ``queries`` ``[..., m, d_k]``; also return the weight of memory ``targets`` ``[..., m]``."""
        _check_read(self, queries, targets)
        work = accumulator(queries.dtype)     # half inputs: logits, weights and sums in float32
        top = total = retrieved = None
        for _, keys, values in self._chunks(queries):
            logits = (queries @ keys.transpose(-1, -2)).to(work).mul_(self.beta)   # (..., m, chunk)
            values = values.to(work)
            chunk_top = logits.amax(-1)
            new_top = chunk_top if top is None else torch.maximum(top, chunk_top)
            weights = logits.sub_(new_top.unsqueeze(-1)).exp_()                # e^(beta c - mu') <= 1
            if top is None:
                total, retrieved = weights.sum(-1), weights @ values
            else:                                                              # earlier chunks: from mu to mu'
                rescale = torch.exp(top - new_top)
                total = total * rescale + weights.sum(-1)
                retrieved = retrieved * rescale.unsqueeze(-1) + weights @ values
            top = new_top
        target_weight = torch.exp(self.beta * _overlap_with(self.keys, queries, targets).to(work) - top) / total
        return (retrieved / total.unsqueeze(-1)).to(queries.dtype), target_weight.to(queries.dtype)


STORES: dict[str, type] = {store.name: store for store in (HebbianStore, LeastSquaresStore, RidgeStore, ReluStore,
                                                           SquaredReluStore, PolynomialStore, SoftmaxStore)}


def build(store: str, keys: torch.Tensor, values: torch.Tensor, **params):
    """Write ``keys`` ``[..., n, d_k]`` and ``values`` ``[..., n, d_v]`` into the store named ``store``."""
    _validate.option("store", store, tuple(STORES))
    return STORES[store](keys, values, **params)


def linear_read_isr(keys: torch.Tensor, read: torch.Tensor) -> torch.Tensor:
    r"""The item-averaged ISR, over values uniform on the sphere, of the linear read ``read`` :math:`A` ``[..., d_k, n]``.

    Queried with its stored key :math:`k_j`, a linear store weighs memory :math:`i` by :math:`(k_j A)_i`; with
    :math:`M = K A` the mean ISR of item :math:`j` over the values is :math:`\sum_{i \ne j} M_{ji}^2 / M_{jj}^2`
    (chapter 4's lemma on the values). :math:`A = K^\top` is the Hebbian store, :math:`A = K^+` least squares.
    Returns ``[...]``: the mean over the :math:`n` items.

    >>> keys = torch.eye(3, dtype=torch.float64)
    >>> linear_read_isr(keys, keys.T)          # orthonormal keys: no crosstalk
    tensor(0., dtype=torch.float64)
    """
    if not isinstance(keys, torch.Tensor) or not keys.is_floating_point() or keys.dim() < 2:
        raise TypeError(f"keys must be a floating tensor [..., n, d_k], got {keys!r:.60}")
    if not isinstance(read, torch.Tensor) or read.shape[-2:] != keys.shape[-1:] + keys.shape[-2:-1]:
        raise ValueError(f"read must be a tensor [..., d_k, n] = [..., {keys.shape[-1]}, {keys.shape[-2]}], got "
                         f"{tuple(read.shape) if isinstance(read, torch.Tensor) else type(read).__name__}")
    weights = keys @ read                                                # (..., n, n): M = K A
    signal = torch.diagonal(weights, dim1=-2, dim2=-1)
    return (weights.pow(2).sum(-1) / signal.pow(2) - 1).mean(-1)


def optimal_linear_read(keys: torch.Tensor, *, steps: int = 20) -> tuple[torch.Tensor, torch.Tensor]:
    """The linear read :math:`A` ``[..., d_k, n]`` with the least item-averaged ISR for ``keys`` ``[..., n, d_k]``, found numerically.

    Minimises :func:`linear_read_isr` by L-BFGS from the least-squares read :math:`K^+`, every key set at
    once (their objectives are separate), for ``steps`` rounds of at most 500 iterations. Returns the
    read and its ISR ``[...]``. Use float64: the optimum is where the ISR's gradient vanishes, which
    float32 cannot resolve finely.

    >>> keys = torch.nn.functional.normalize(torch.randn(2, 8, 4, dtype=torch.float64), dim=-1)
    >>> read, isr = optimal_linear_read(keys)   # isr ~ 8/4 - 1 = 1 for each set: the bound is attained
    """
    if not isinstance(keys, torch.Tensor) or not keys.is_floating_point() or keys.dim() < 2:
        raise TypeError(f"keys must be a floating tensor [..., n, d_k], got {keys!r:.60}")
    steps = _validate.positive_int("steps", steps)
    read = torch.linalg.pinv(keys).detach().requires_grad_(True)
    optimiser = torch.optim.LBFGS([read], max_iter=500, tolerance_grad=1e-12, tolerance_change=1e-15,
                                  line_search_fn="strong_wolfe")

    def objective():
        optimiser.zero_grad()
        loss = linear_read_isr(keys, read).sum()
        loss.backward()
        return loss

    with torch.enable_grad():
        for _ in range(steps):
            optimiser.step(objective)
    read = read.detach()
    return read, linear_read_isr(keys, read)


class IsrMeasurement(NamedTuple):
    r"""The result of :func:`measure_isr`.

    ``mean`` and ``se``: the mean ISR and its standard error over trials (each trial's queries are
    averaged first, since they share a store); ``values``: the ISR of every query ``[trials, m]``;
    ``correct``: whether each retrieval is nearest (largest inner product) to its own value among all
    stored values ``[trials, m]``; ``seed``: the seed used; ``landed``: for noisy cues, whether each cue is
    nearer its own key than every other stored key (largest inner product) ``[trials, m]``, else None;
    ``error``: the squared error :math:`\lVert r - v_j \rVert^2` of every read ``[trials, m]``.
    """

    mean: float
    se: float
    values: torch.Tensor
    correct: torch.Tensor
    seed: int
    landed: torch.Tensor | None = None
    error: torch.Tensor | None = None

    @property
    def mse(self) -> tuple[float, float]:
        r"""The mean squared error of the reads, :math:`\mathbb E \lVert r - v_j \rVert^2`, and its standard error over trials."""
        if self.error is None:
            raise ValueError("this measurement holds no read errors")
        mean, se = mean_and_se(self.error.double().mean(-1))
        return mean.item(), se.item()

    @property
    def accuracy(self) -> float:
        """The fraction of queries decoded to the right value."""
        return self.correct.float().mean().item()

    def deviation(self, predicted: float) -> float:
        """The mean ISR's deviation from ``predicted``, in standard errors: ``(mean - predicted) / se``."""
        return (self.mean - _validate.finite_float("predicted", predicted)) / self.se


def _nearest_is_target(retrieved: torch.Tensor, values: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """Whether each retrieval's largest inner product over all values is with its target, streamed over memories."""
    n = values.shape[-2]
    chunk = chunk_length(n, retrieved.shape[:-1].numel())      # the buffer of a kernel store's read, no more
    return _streamed_argmax((start, retrieved @ values[..., start:start + chunk, :].transpose(-1, -2))
                            for start in range(0, n, chunk)) == targets


def random_memories(trials: int, n_memories: int, d_key: int, *, d_value: int | None = None, keys: str = "sphere",
                    seed: int, device=None, dtype=None) -> tuple[torch.Tensor, torch.Tensor]:
    """The memories :func:`measure_isr` draws: keys ``[trials, n, d_key]`` and values ``[trials, n, d_value]``.

    Keys from the ensemble ``keys`` (``"sphere"`` or ``"gaussian"``), values uniform on the unit sphere
    in ``d_value`` dimensions (default ``d_key``), all from one generator seeded with ``seed``.

    >>> keys, values = random_memories(2, 100, 64, seed=0, device="cpu")
    """
    trials, n_memories, d_key = (_validate.positive_int(name, x) for name, x in
                                 (("trials", trials), ("n_memories", n_memories), ("d_key", d_key)))
    _validate.option("keys", keys, KINDS)
    d_value = d_key if d_value is None else _validate.positive_int("d_value", d_value)
    device, dtype = resolve(device, dtype)
    return _draw_memories(generator(seed, device), trials, n_memories, d_key, d_value, keys, device, dtype)


def _draw_memories(gen, trials, n_memories, d_key, d_value, keys, device, dtype):
    key_set = random_stimuli(trials, n_memories, d_key, kind=keys, generator=gen, device=device, dtype=dtype)
    return key_set, random_stimuli(trials, n_memories, d_value, generator=gen, device=device, dtype=dtype)


def noisy_cues(keys: torch.Tensor, sigma: float, *, generator: torch.Generator | None = None,
               renormalise: bool = True) -> torch.Tensor:
    r"""Cues near ``keys`` ``[..., d_k]``: :math:`k + \sigma z/\sqrt{d_k}` with :math:`z` standard normal, rescaled
    to the norm of :math:`k`, so that a unit key gets a unit cue (``renormalise=False``: not rescaled, the
    cue of the Bayes temperature ``theory.bayes_temperature``).

    ``sigma`` = 0 returns the keys themselves. The noise has squared norm :math:`\sigma^2` on average, so
    for a unit key and small :math:`\sigma` the cue lies about :math:`\sigma` from its key (an angle of about
    :math:`\sigma` radians); for keys of another norm the noise is the same, and the rescaling keeps the
    cue at the key's norm.

    >>> keys = torch.nn.functional.normalize(torch.randn(3, 5, 8, dtype=torch.float64), dim=-1)
    >>> torch.allclose(noisy_cues(keys, 0.5).norm(dim=-1), torch.ones(3, 5, dtype=torch.float64))
    True
    """
    if not isinstance(keys, torch.Tensor) or not keys.is_floating_point() or keys.dim() < 1:
        raise TypeError(f"keys must be a floating tensor [..., d_k], got {keys!r:.60}")
    sigma = _validate.finite_float("sigma", sigma, nonnegative=True)
    if sigma == 0:
        return keys
    z = torch.randn(keys.shape, generator=generator, device=keys.device, dtype=keys.dtype)
    cues = keys + sigma * z / math.sqrt(keys.shape[-1])
    if not isinstance(renormalise, bool):
        raise TypeError(f"renormalise must be True or False, got {renormalise!r}")
    if not renormalise:
        return cues
    return cues * (keys.norm(dim=-1, keepdim=True) / cues.norm(dim=-1, keepdim=True))


def interference_to_signal(memory, n_queries: int | None = None, *, query_noise: float = 0.0,
                           generator: torch.Generator | None = None, queries: torch.Tensor | None = None,
                           candidates: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    r"""Query a built store with its first ``n_queries`` stored keys (default: all): each query's ISR and decoding.

    With ``query_noise`` = :math:`\sigma > 0` each query is a noisy cue of its key (:func:`noisy_cues`, drawn
    from ``generator``); its target is still that key's memory. ``queries`` ``[..., m, d_k]`` gives the cues
    instead (query :math:`j` aimed at memory :math:`j`, for the first ``m`` memories; then ``n_queries`` and
    ``query_noise`` stay at their defaults).

    Returns ``(isr [..., m], correct [..., m])``: the ISR of every query, with the signal :math:`w_j v_j`
    from the weight the store gives the target, and whether each retrieval is nearest (largest inner
    product) to its own value among all stored values, or among ``candidates`` ``[..., N, d_v]`` where given:
    values whose first ``n_memories`` are the stored ones and the rest distractors (a vocabulary).

    >>> keys, values = random_memories(2, 10, 64, seed=0, device="cpu")
    >>> isr, correct = interference_to_signal(build("hebbian", keys, values), 4)     # isr: [2, 4]
    """
    if not all(hasattr(memory, name) for name in ("keys", "values", "read")):
        raise TypeError(f"memory must be a store made by build, got {type(memory).__name__}")
    n_memories = memory.keys.shape[-2]
    query_noise = _validate.finite_float("query_noise", query_noise, nonnegative=True)
    if queries is not None:
        _check_queries(memory, queries)
        if n_queries is not None or query_noise:
            raise ValueError("queries replaces n_queries and query_noise: leave those at their defaults")
        if queries.shape[:-2] != memory.keys.shape[:-2] or queries.shape[-2] > n_memories:
            raise ValueError(f"queries must be [..., m, d_k] with the batch {tuple(memory.keys.shape[:-2])} of the "
                             f"store and m <= {n_memories}, got {tuple(queries.shape)}")
        n_queries = queries.shape[-2]
    n_queries = n_memories if n_queries is None else _validate.positive_int("n_queries", n_queries)
    if n_queries > n_memories:
        raise ValueError(f"n_queries must be at most n_memories = {n_memories}, got {n_queries}")
    if queries is None:
        queries = noisy_cues(memory.keys[..., :n_queries, :], query_noise, generator=generator)
    if candidates is not None:
        _validate.tensor("candidates", candidates, min_dim=2)
        if (candidates.shape[:-2] != memory.values.shape[:-2] or candidates.shape[-1] != memory.values.shape[-1]
                or candidates.shape[-2] < n_memories or not torch.equal(candidates[..., :n_memories, :], memory.values)):
            raise ValueError(f"candidates must be [..., N, d_v] with the store's batch, d_v and its {n_memories} values "
                             f"first, got {tuple(candidates.shape)}")
    return _score(memory, queries, candidates)[:2]


def _score(memory, queries: torch.Tensor, candidates: torch.Tensor | None = None):
    r"""``(isr, correct, error)`` ``[..., m]`` of the reads of ``queries`` aimed at the first ``m`` memories: the ISR,
    whether the read is nearest its own value among ``candidates`` (default the stored values), and the squared
    error :math:`\lVert r - v_j \rVert^2` of the read."""
    n_queries = queries.shape[-2]
    stored = memory.values[..., :n_queries, :]
    targets = torch.arange(n_queries, device=queries.device).expand(queries.shape[:-1])   # (..., m)
    retrieved, weight = memory.read(queries, targets)                  # (..., m, d_v), (..., m)
    signal = weight.unsqueeze(-1) * stored                             # w_j v_j
    isr = (retrieved - signal).pow(2).sum(-1) / signal.pow(2).sum(-1)  # (..., m)
    correct = _nearest_is_target(retrieved, memory.values if candidates is None else candidates, targets)
    return isr, correct, (retrieved - stored).pow(2).sum(-1)


def measure_isr(store: str, d_key: int, n_memories: int, *, trials: int, keys: str = "sphere",
                seed: int | None = None, device=None, dtype=None, n_queries: int | None = None,
                d_value: int | None = None, query_noise: float = 0.0, renormalise_cues: bool = True,
                **params) -> IsrMeasurement:
    r"""Measure a store's ISR by querying it with its own stored keys, or noisy cues of them, over independent trials.

    Each trial draws ``n_memories`` keys (``keys="sphere"``: uniform unit vectors; ``"gaussian"``:
    entries ``N(0, 1/d_key)``) and as many values uniform on the unit sphere in ``d_value``
    dimensions (default ``d_key``) (:func:`random_memories`), writes them into the store, and queries
    it with the first ``n_queries`` stored keys (default: all; the keys are i.i.d., so these are a
    random sample) (:func:`interference_to_signal`). The trials are drawn and read in blocks of at most
    :data:`MEMORY_ELEMENTS` key and value entries, so the memory a measurement needs does not grow with ``trials``.

    Args:
        store: a name from :data:`STORES`.
        d_key, n_memories, trials: sizes, each a positive int.
        keys: the key ensemble, ``"sphere"`` or ``"gaussian"``.
        seed: seeds the draws (default: a fresh random seed, returned in the result).
        device, dtype: where and in what precision (default: the package device, float32).
        query_noise: :math:`\sigma \ge 0`; each query is then :math:`k_j + \sigma z/\sqrt{d_k}` rescaled to the
            norm of :math:`k_j` (:func:`noisy_cues`), with its target still memory :math:`j`. At 0 (the
            default) the queries are the stored keys, and a store is probed only where it is a lookup table.
        renormalise_cues: False leaves the noisy cues unrescaled, :math:`k_j + \sigma z/\sqrt{d_k}` (the cue for
            which softmax at ``theory.bayes_temperature`` is the posterior-mean read).
        params: passed to the store (e.g. ``beta`` for a softmax store, ``degree`` for a polynomial
            one, ``chunk_size`` for any kernel store).

    Returns:
        An :class:`IsrMeasurement`. A query whose ISR exceeds the float range (a softmax store so sharp that the
        target's weight underflows) has ISR ``inf``, and then so have the mean and its standard error.

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
    query_noise = _validate.finite_float("query_noise", query_noise, nonnegative=True)
    if not isinstance(renormalise_cues, bool):
        raise TypeError(f"renormalise_cues must be True or False, got {renormalise_cues!r}")
    d_value = d_key if d_value is None else _validate.positive_int("d_value", d_value)
    seed = seed_or_fresh(seed)
    device, dtype = resolve(device, dtype)
    # one generator: each block's memories, then its cues' noise, so that noise 0 draws the same memories
    gen = generator(seed, device)
    reads = [_read_block(store, gen, size, n_memories, d_key, d_value, keys, n_queries, (query_noise, renormalise_cues),
                         device, dtype, params)
             for size in trial_blocks(trials, n_memories * (d_key + d_value), MEMORY_ELEMENTS)]
    isr, correct, landed, error = (torch.cat(part) if part[0] is not None else None for part in zip(*reads))
    per_trial = isr.mean(-1)
    # an ISR beyond the float range (a target weight that underflows in a sharp softmax) is inf, and so is the mean
    mean, se = mean_and_se(per_trial) if bool(torch.isfinite(per_trial).all()) else (isr.new_tensor(math.inf),) * 2
    return IsrMeasurement(mean.item(), se.item(), isr, correct, seed, landed, error)


def _read_block(store, gen, trials, n_memories, d_key, d_value, keys, n_queries, cue_noise, device, dtype, params):
    """One block of :func:`measure_isr`'s trials: ``(isr, correct, landed, error)``, ``landed`` None without query
    noise; ``cue_noise`` is ``(sigma, renormalise)``."""
    query_noise, renormalise = cue_noise
    key_set, value_set = _draw_memories(gen, trials, n_memories, d_key, d_value, keys, device, dtype)
    cues = noisy_cues(key_set[..., :n_queries, :], query_noise, generator=gen, renormalise=renormalise)
    isr, correct, error = _score(build(store, key_set, value_set, **params), cues)
    landed = None
    if query_noise:             # whether each cue's largest inner product is with its own key
        targets = torch.arange(n_queries, device=cues.device).expand(cues.shape[:-1])
        landed = _nearest_is_target(cues, key_set, targets)
    return isr, correct, landed, error


class CapacityMeasurement(NamedTuple):
    """The result of :func:`measure_capacity`: the capacity and its standard error, and the two measurements it interpolates."""

    capacity: float
    se: float
    below: IsrMeasurement
    above: IsrMeasurement
    n_memories: tuple[int, int]


def measure_capacity(store: str, d_key: int, *, around: float, trials: int, threshold: float = 1.0,
                     spread: float = 1.25, seed: int = 0, n_queries: int | None = None,
                     **options) -> CapacityMeasurement:
    r"""Measure the number of memories at which a store's mean ISR reaches ``threshold``.

    Measures the ISR (:func:`measure_isr`, with ``options``) at :math:`n_1 = \text{around}/\text{spread}` and
    :math:`n_2 = \text{around} \cdot \text{spread}` memories, which should bracket the crossing, and
    interpolates linearly in :math:`n` (every store's mean ISR is linear in :math:`n` beyond :math:`d_k`):

    .. math:: n^* = n_1 + (\varepsilon - I_1)\, \frac{n_2 - n_1}{I_2 - I_1},

    with a standard error propagated from those of :math:`I_1` and :math:`I_2` (independent draws,
    seeds ``seed`` and ``seed + 1``). Each size is queried with at most ``n_queries`` of its keys. Where the
    two means do not rise (near a small crossing, a heavy-tailed ISR's mean over few trials can fall from
    :math:`n_1` to :math:`n_2`), both are measured again with twice the trials, and again, up to eight times
    ``trials``; past that the error says so.

    >>> c = measure_capacity("relu", 32, around=65, trials=50, device="cpu")   # c.capacity ~ 2 d + 1
    """
    around = _validate.finite_float("around", around, positive=True)
    spread = _validate.finite_float("spread", spread, positive=True)
    if spread <= 1:
        raise ValueError(f"spread must exceed 1 (the two sizes must differ), got {spread}")
    threshold = _validate.finite_float("threshold", threshold, positive=True)
    n1, n2 = max(2, round(around / spread)), max(3, round(around * spread))
    if n_queries is not None:
        n_queries = _validate.positive_int("n_queries", n_queries)
    trials = _validate.positive_int("trials", trials)
    for more in (1, 2, 4, 8):
        below, above = (measure_isr(store, d_key, n, trials=more * trials, seed=seed + i,
                                    n_queries=None if n_queries is None else min(n, n_queries), **options)
                        for i, n in enumerate((n1, n2)))
        rise = above.mean - below.mean
        if rise > 0:
            break
    else:
        raise ValueError(f"the ISR did not grow from n = {n1} to n = {n2} ({below.mean:.3g} to {above.mean:.3g}) "
                         f"even with {8 * trials} trials; measure with more trials or a larger spread")
    n_star = n1 + (threshold - below.mean) * (n2 - n1) / rise
    d_below = (n2 - n1) * (threshold - above.mean) / rise**2      # dn*/dI_1
    d_above = -(n2 - n1) * (threshold - below.mean) / rise**2     # dn*/dI_2
    se = math.hypot(d_below * below.se, d_above * above.se)
    return CapacityMeasurement(n_star, se, below, above, (n1, n2))


# --- erasing one association ---

ERASE_RULES: dict[str, dict[str, float | int]] = {
    "delta_zero": {"beta": 1.0, "steps": 1},
    "delta_neutral": {"beta": 1.0, "steps": 1},
    "anti_hebbian": {"alpha": 1.0},
    "kalman": {"noise": 1.0, "steps": 1, "ridge": 0.0},
    "downdate": {},
    "retrain": {},
}
"""The rules :func:`erase` erases with, and their parameters with their defaults; ``"retrain"`` is the baseline,
the store written again without the pair (the store that never learned it), and ``"downdate"`` the one rank-one
write that reaches it from the stored one."""

ERASE_STORES = {"least_squares": LeastSquaresStore, "hebbian": HebbianStore}
"""The stores :func:`erase` writes the memories into before erasing one."""

_ERASE_CHECKS = {
    "beta": lambda x: _validate.finite_float("beta", x, nonnegative=True),
    "alpha": lambda x: _validate.finite_float("alpha", x, nonnegative=True),
    "noise": lambda x: _validate.finite_float("noise", x, positive=True),
    "ridge": lambda x: _validate.finite_float("ridge", x, nonnegative=True),
    "steps": lambda x: _validate.positive_int("steps", x),
}


class Erasure(NamedTuple):
    r"""The result of :func:`erase`: means over trials, each with its standard error, and the seed used.

    ``residual``: what the target still recalls, :math:`(k_t S) \cdot v_t`; ``damage``: the mean over the
    other pairs of their loss of recall, :math:`(k_i S_0 - k_i S) \cdot v_i`; ``change``: the mean over the
    other pairs of the squared change of their read-out, :math:`\lVert k_i (S - S_0) \rVert^2`; ``error``: the
    mean over the other pairs of the change of their squared recall error,
    :math:`\lVert k_i S - v_i \rVert^2 - \lVert k_i S_0 - v_i \rVert^2` (negative: they are recalled better);
    ``gap``: the mean over the other pairs of :math:`\lVert k_i (S - S_r) \rVert^2`, how far their read-outs are
    from those of the store retrained without the pair, :math:`S_r` (0: as if it had never been learned).
    """

    residual: float
    residual_se: float
    damage: float
    damage_se: float
    change: float
    change_se: float
    error: float
    error_se: float
    gap: float
    gap_se: float
    seed: int


def _overlapping_keys(trials: int, n_memories: int, d_key: int, overlap: float, gen, device, dtype) -> torch.Tensor:
    r"""Unit keys ``[trials, n, d_key]`` :math:`k_i = \sqrt\rho\, c + \sqrt{1 - \rho}\, g_i`, :math:`\rho` = ``overlap``.

    :math:`c` is uniform on the sphere, one per trial, and the :math:`g_i` uniform on the unit sphere of
    the :math:`d - 1` dimensions orthogonal to it, so every key is a unit vector and
    :math:`k_i \cdot k_j = \rho + (1 - \rho)\, g_i \cdot g_j`, of mean :math:`\rho` exactly.
    """
    work = accumulator(dtype)                  # half keys: made in float32, then rounded
    shared = random_stimuli(trials, 1, d_key, generator=gen, device=device, dtype=work)        # c, [trials, 1, d]
    own = random_stimuli(trials, n_memories, d_key, generator=gen, device=device, dtype=work)
    own = torch.nn.functional.normalize(own - (own @ shared.mT) * shared, dim=-1)             # g_i, orthogonal to c
    return (math.sqrt(overlap) * shared + math.sqrt(1 - overlap) * own).to(dtype)


def _retrained(store: HebbianStore, target: int) -> torch.Tensor:
    """The state ``[..., d_k, d_v]`` of ``store``'s kind written from its memories without memory ``target``."""
    others = torch.arange(store.keys.shape[-2], device=store.keys.device) != target
    return type(store)(store.keys[..., others, :], store.values[..., others, :]).matrix


def _downdate(store: HebbianStore, key: torch.Tensor, value: torch.Tensor) -> torch.Tensor:
    r"""The least-squares store without the pair ``(key, value)`` (``[..., 1, d]``), reached by one rank-one write.

    The write runs along :math:`u = P k_t^\top`, :math:`P = (K^\top K)^+` the state the Kalman write carries, with
    leverage :math:`h = k_t P k_t^\top`. Beyond capacity (:math:`h < 1`) it is the recursive-least-squares downdate
    (Sherman-Morrison), a Kalman write of the pair's own value at noise :math:`-1`:
    :math:`S_0 - u\, (v_t - k_t S_0) / (1 - h)`. Below capacity :math:`h = 1` and :math:`k_t S_0 = v_t`; the retrained
    store differs from :math:`S_0` only along :math:`u`, the one direction of the keys' span that the other keys
    do not see, and is :math:`S_0` projected off it: :math:`S_0 - u\, (u^\top S_0) / \lVert u \rVert^2`.
    """
    state = store.matrix
    u = store.duals.mT @ (store.duals @ key.mT)                                # P k_t^T, [..., d_k, 1]
    if store.keys.shape[-2] <= store.keys.shape[-1]:                           # n <= d: the keys span no more than n
        return state - u @ (u.mT @ state) / u.pow(2).sum(-2, keepdim=True)
    leverage = key @ u                                                          # h, [..., 1, 1]
    return state - u @ (value - key @ state) / (1 - leverage)


def _erased_store(rule: str, store: HebbianStore, target: int, params: dict) -> torch.Tensor:
    """The state ``[..., d_k, d_v]`` after ``rule`` erases memory ``target`` from ``store``, written from its matrix."""
    keys, values, state = store.keys, store.values, store.matrix
    if rule == "retrain":
        return _retrained(store, target)
    key, value = keys[..., target:target + 1, :], values[..., target:target + 1, :]         # [..., 1, d]
    if rule == "downdate":
        return _downdate(store, key, value)
    if rule == "anti_hebbian":                 # S0 - alpha k_t^T v_t: the Hebbian write of (k_t, -v_t)
        return rules.hebbian(key, key, -value, alpha=params["alpha"], initial_state=state)[1]
    key = key.expand(*key.shape[:-2], params["steps"], -1)                                 # the same pairing, repeated
    if rule == "delta_neutral":                # u: the mean of the other values
        neutral = (values.sum(-2, keepdim=True) - value) / (keys.shape[-2] - 1)
        return rules.delta(key, key, neutral.expand_as(key), beta=params["beta"], initial_state=state)[1]
    zero = values.new_zeros(*key.shape[:-1], values.shape[-1])
    if rule == "delta_zero":
        return rules.delta(key, key, zero, beta=params["beta"], initial_state=state)[1]
    # kalman: the posterior covariance after the n stored pairs (unit noise), (K^T K + ridge I)^-1; at ridge 0
    # its limit on the keys' span, (K^T K)^+ = K^+ (K^+)^T
    if params["ridge"] == 0:
        cov = store.duals.mT @ store.duals
    else:
        work = accumulator(keys.dtype)
        gram = keys.mT.to(work) @ keys.to(work)
        gram = gram + params["ridge"] * torch.eye(keys.shape[-1], dtype=work, device=keys.device)
        cov = torch.cholesky_inverse(torch.linalg.cholesky(gram)).to(keys.dtype)
    return rules.kalman(key, key, zero, noise=params["noise"], initial_state=(state, cov))[1][0]


def erase(rule: str, d_key: int, n_memories: int, *, trials: int, target: int = 0, overlap: float | None = None,
          store: str = "least_squares", seed: int | None = 0, device=None, dtype=None, **params) -> Erasure:
    r"""Store random associations, erase one of them with a write rule, and measure what is left and the collateral damage.

    Each trial draws ``n_memories`` unit keys in ``d_key`` dimensions and as many values uniform on the unit
    sphere (in ``d_key`` dimensions), and writes them into the least-squares store :math:`S_0 = K^+ V`
    (:class:`LeastSquaresStore`), which the delta rule reaches when it writes them to convergence from zero
    (beyond ``d_key`` memories, with a decaying rate). The
    keys are uniform on the sphere (``overlap=None``), or with ``overlap`` :math:`\rho \in (0, 1)` share a
    direction: :math:`k_i = \sqrt\rho\, c + \sqrt{1-\rho}\, g_i` with :math:`c` uniform on the sphere and the
    :math:`g_i` uniform on the unit sphere orthogonal to it, so that every key is a unit vector and every
    pairwise cosine has mean :math:`\rho` exactly (and mean square :math:`\rho^2 + (1-\rho)^2/(d-1)`).

    With ``store="hebbian"`` the memories are written into the Hebbian store :math:`S_0 = K^\top V` instead (linear
    attention, the store the sources write), where the anti-Hebbian write *is* the retrained store. The Kalman
    write needs the least-squares store's posterior covariance, and is refused there.

    Then ``rule`` erases memory ``target`` (:data:`ERASE_RULES`; parameters in ``params``), through :mod:`pavlov.rules`:

    * ``"delta_zero"``: ``steps`` delta-rule writes of :math:`(k_t, 0)` at rate ``beta`` (default one exact step,
      :math:`\beta = 1 = 1/\lVert k_t \rVert^2`): :math:`S = S_0 - (1 - (1-\beta)^s)\, k_t^\top (k_t S_0)`.
    * ``"delta_neutral"``: the same writes of :math:`(k_t, u)`, with the neutral value :math:`u` the mean of the
      other :math:`n - 1` values, what the store recalls on average.
    * ``"anti_hebbian"``: the Hebbian write of :math:`(k_t, -v_t)` at rate ``alpha`` (default 1),
      :math:`S = S_0 - \alpha\, k_t^\top v_t`: exactly what a Hebbian write of the pair added is taken away.
    * ``"retrain"``: the baseline, no write but the store written again from the other :math:`n - 1` memories,
      the store that never learned the pair.
    * ``"downdate"``: one rank-one write that lands on it, along :math:`u = P k_t^\top` with the Kalman write's
      state :math:`P = (K^\top K)^+` and :math:`h = k_t P k_t^\top`: :math:`S_0 - u\, (v_t - k_t S_0)/(1 - h)` beyond
      capacity (the recursive-least-squares downdate), :math:`S_0 - u\, (u^\top S_0)/\lVert u \rVert^2` below it,
      where :math:`h = 1`. Like the anti-Hebbian write it needs the pair's value, and like the Kalman write :math:`P`.
    * ``"kalman"``: ``steps`` Kalman writes of :math:`(k_t, 0)` with observation noise ``noise``, from the
      posterior covariance after the :math:`n` stored pairs at unit noise, :math:`P = (K^\top K + \mathrm{ridge}\, I)^{-1}`
      (``ridge = 0``, the default: its limit on the keys' span, :math:`(K^\top K)^+`). The erasing pairings
      count against the stored one as its noise against theirs: for :math:`n \le d`, at ``noise = 1`` one step
      halves the target, and :math:`s` steps leave :math:`\mathrm{noise} / (\mathrm{noise} + s)` of it.

    Args:
        rule: a name from :data:`ERASE_RULES`.
        d_key, n_memories, trials: sizes; at least 2 memories (others to damage) and 2 trials (a standard error).
        target: the index of the memory erased (the memories are exchangeable: any one is typical).
        overlap: the keys' mean pairwise cosine :math:`\rho \in (0, 1)`, or None for independent keys.
        store: ``"least_squares"`` (default) or ``"hebbian"`` (:data:`ERASE_STORES`).
        seed: seeds the draws (None: a fresh random seed, returned in the result).
        device, dtype: where and in what precision (default: the package device, float32).
        params: the rule's parameters (``beta``, ``steps``, ``alpha``, ``noise``, ``ridge``; see :data:`ERASE_RULES`).

    Returns:
        An :class:`Erasure`: the target's residual recall :math:`(k_t S) \cdot v_t` (1 before erasure for
        :math:`n \le d`, :math:`d/n` on average beyond), the other pairs' mean loss of recall
        :math:`(k_i S_0 - k_i S) \cdot v_i`, mean squared change :math:`\lVert k_i (S - S_0) \rVert^2`, mean change of
        squared recall error and mean squared distance from the retrained store's read-outs, each the mean over
        trials with its standard error. :mod:`pavlov.theory` predicts them
        (:func:`~pavlov.theory.erasure_residual`, :func:`~pavlov.theory.erasure_damage`, :func:`~pavlov.theory.erasure_change`).

    >>> e = erase("delta_zero", 32, 16, trials=200, device="cpu", dtype=torch.float64)   # e.change ~ 1/32
    >>> abs(e.residual) < 1e-9                   # one exact step: nothing of the target is left
    True
    >>> e = erase("kalman", 32, 16, trials=20, device="cpu", dtype=torch.float64)
    >>> round(e.residual, 9), round(e.change, 9)     # half the target left, and no other pair touched
    (0.5, 0.0)
    """
    _validate.option("rule", rule, tuple(ERASE_RULES))
    _validate.option("store", store, tuple(ERASE_STORES))
    if store == "hebbian" and rule in ("kalman", "downdate"):
        raise ValueError(f"store must be 'least_squares' for the {rule} write: its covariance is the least-squares "
                         "store's posterior, which the Hebbian store does not carry")
    d_key = _validate.positive_int("d_key", d_key)
    n_memories = _validate.positive_int("n_memories", n_memories)
    if n_memories < 2:
        raise ValueError(f"n_memories must be at least 2 (one to erase, others to damage), got {n_memories}")
    trials = _validate.positive_int("trials", trials)
    if trials < 2:
        raise ValueError(f"trials must be at least 2 for a standard error, got {trials}")
    if isinstance(target, bool) or not isinstance(target, int):
        raise TypeError(f"target must be an int, got {type(target).__name__}")
    if not 0 <= target < n_memories:
        raise ValueError(f"target must index a stored memory, in [0, {n_memories}), got {target}")
    theory.key_overlap_moments(d_key, overlap)          # checks overlap, and d_key >= 2 where it is given
    unknown = sorted(set(params) - set(ERASE_RULES[rule]))
    if unknown:
        raise TypeError(f"{unknown[0]} is not a parameter of rule {rule!r}, which takes {', '.join(ERASE_RULES[rule])}")
    params = {name: _ERASE_CHECKS[name](value) for name, value in {**ERASE_RULES[rule], **params}.items()}
    seed = seed_or_fresh(seed)
    device, dtype = resolve(device, dtype)
    gen = generator(seed, device)
    if overlap is None:
        keys = random_stimuli(trials, n_memories, d_key, generator=gen, device=device, dtype=dtype)
    else:
        keys = _overlapping_keys(trials, n_memories, d_key, overlap, gen, device, dtype)
    values = random_stimuli(trials, n_memories, d_key, generator=gen, device=device, dtype=dtype)
    memories = ERASE_STORES[store](keys, values)
    after = _erased_store(rule, memories, target, params)
    retrained = _retrained(memories, target)
    work = accumulator(dtype)
    keys, values = keys.to(work), values.to(work)
    after, before, retrained = after.to(work), memories.matrix.to(work), retrained.to(work)
    moved = keys @ (after - before)                                             # k_i (S - S0), [trials, n, d_v]
    residual = ((keys[:, target, None, :] @ after).squeeze(-2) * values[:, target]).sum(-1)
    others = torch.arange(n_memories, device=device) != target
    damage = -(moved * values).sum(-1)[:, others].mean(-1)
    change = moved.pow(2).sum(-1)[:, others].mean(-1)
    # the squared recall errors after and before: (e + m)^2 - e^2 = m (2 e + m), e = k_i S0 - v_i, m the move
    error = (moved * (2 * (keys @ before - values) + moved)).sum(-1)[:, others].mean(-1)
    gap = (keys @ (after - retrained)).pow(2).sum(-1)[:, others].mean(-1)
    measured = [(m.item(), se.item()) for m, se in map(mean_and_se, (residual, damage, change, error, gap))]
    return Erasure(*(x for pair in measured for x in pair), seed)
