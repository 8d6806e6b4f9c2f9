r"""Stacked conditioning circuits: :math:`L` layers of :math:`H` heads on a residual stream, and a multi-hop chain task.

**The stack** (the source's stacked circuits, attention only). A residual stream
:math:`X^{(0)} \in \mathbb R^{T \times d}` passes through :math:`L` layers. Layer :math:`l` adds the
responses of its :math:`H` heads, each a conditioning circuit with :math:`f = \phi`, :math:`g` the
identity and :math:`\alpha = 1`, hence causal linear attention (chapter 2), written back into the
stream by an output projection:

.. math::

    X^{(l)} = X^{(l-1)} + \sum_{h=1}^{H} o^{(l,h)} W_O^{(l,h)}, \qquad
    o^{(l,h)} = \mathrm{Norm}\big(\mathrm{LinAttn}_\phi(X^{(l-1)} W_Q^{(l,h)}, X^{(l-1)} W_K^{(l,h)},
    X^{(l-1)} W_V^{(l,h)})\big).

Summing the projected heads is concatenating them and applying one :math:`W_O \in \mathbb R^{H d_v \times d}`.

**The chain task** (animal -> mammal -> dog). Items sit at :math:`L + 1` levels, :math:`n` per level, and
hop :math:`l` associates item :math:`i` of level :math:`l - 1` with item :math:`i` of level :math:`l`
(the codes are random, so pairing equal indices loses nothing against a random pairing). Each head
sees an item through its own codes, unit vectors of dimension :math:`d_k` drawn independently per
head: a *key code*, where the item is a hop's source, and an independent *value code*, where it is
a hop's target (:math:`W_K` and :math:`W_V` read one embedding through different projections). The
stream holds the concatenation of an item's :math:`H` codes, and head :math:`h` reads block :math:`h`
(the heads partition the width, :math:`H d_k = d`, as in a transformer). Head :math:`h` of layer
:math:`l` holds the :math:`n` associations of hop :math:`l`, :math:`S = \sum_i k_i^\top v_i`, and is
queried with the key code of the current item. Between layers a clean-up decodes the layer's output
to the nearest item of the level, which the next layer queries. The layer's output is read in one
of two ways (:data:`READOUTS`):

* ``"sum"``: the heads' retrievals summed through :math:`W_O` and decoded once, item
  :math:`\arg\max_j \sum_h r_h \cdot v_{j,h}`: real multi-head attention;
* ``"any"``: the source's argument, a layer fails only when all :math:`H` heads decode a wrong item.
  It is an oracle that knows which head to trust; no circuit reads its heads that way.

A hop fails when the layer's item is not the associate of its input, and a chain when any hop fails.
Without the clean-up (``cleanup=False``) each head's retrieval, signal and crosstalk together, is
passed on through the exact linear map from the hop's value codes to the next hop's key codes, and
the chain fails at depth :math:`l` when the item decoded there is not the start item's associate.
:func:`run_chain` computes the chain store by store; :func:`reference_chain` runs the literal stack
(:class:`ConditioningStack`, :func:`chain_stack`) on the token sequence (:func:`chain_sequence`) and must agree.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import NamedTuple

import torch

from . import _validate, runtime, stores
from .attention import linear_attention
from .maps import NORMS
from .maps import feature_map as _feature_map
from .runtime import resolve
from .stats import golden_section_min, mean_and_se
from .stimuli import random_stimuli

READOUTS = ("sum", "any")


class ConditioningStack:
    r"""``layers`` layers of ``heads`` conditioning circuits on a residual stream of width ``d_model``.

    Args:
        W_Q, W_K: ``[L, H, d_model, d_k]``; W_V: ``[L, H, d_model, d_v]``; W_O: ``[L, H, d_v, d_model]``.
        feature_map: :math:`\phi` on the queries and keys (the circuit's :math:`f`): a name, a callable or ``None``.
        norm, eps: each head's output norm (``"none"``, ``"rms"``, ``"layer"``), as in the circuit.

    >>> stack = ConditioningStack.random(2, 4, 32, 8, generator=torch.Generator().manual_seed(0), device="cpu")
    >>> stack(torch.zeros(3, 10, 32)).shape              # (batch, T, d_model)
    torch.Size([3, 10, 32])
    """

    def __init__(self, W_Q: torch.Tensor, W_K: torch.Tensor, W_V: torch.Tensor, W_O: torch.Tensor, *,
                 feature_map=None, norm: str = "none", eps: float = 1e-6):
        for name, W in (("W_Q", W_Q), ("W_K", W_K), ("W_V", W_V), ("W_O", W_O)):
            _validate.tensor(name, W, min_dim=4)
            if W.dim() != 4:
                raise ValueError(f"{name} must have 4 dimensions [layers, heads, in, out], got shape {tuple(W.shape)}")
        _validate.same_device_dtype(W_Q=W_Q, W_K=W_K, W_V=W_V, W_O=W_O)
        layers, heads, d_model, _ = W_Q.shape
        if W_K.shape != W_Q.shape:
            raise ValueError(f"W_K must have the shape of W_Q {tuple(W_Q.shape)}, got {tuple(W_K.shape)}")
        if W_V.shape[:3] != (layers, heads, d_model):
            raise ValueError(f"W_V must have shape ({layers}, {heads}, {d_model}, d_v) like W_Q, "
                             f"got {tuple(W_V.shape)}")
        if W_O.shape != (layers, heads, W_V.shape[-1], d_model):
            raise ValueError(f"W_O must have shape {(layers, heads, W_V.shape[-1], d_model)} (layers, heads, d_v, "
                             f"d_model), got {tuple(W_O.shape)}")
        self.W_Q, self.W_K, self.W_V, self.W_O = W_Q, W_K, W_V, W_O
        _feature_map(feature_map)
        self.feature_map = feature_map
        self.norm = _validate.option("norm", norm, NORMS)
        self.eps = _validate.finite_float("eps", eps, nonnegative=True)

    @classmethod
    def random(cls, layers: int, heads: int, d_model: int, d_k: int, d_v: int | None = None, *,
               generator: torch.Generator | None = None, device=None, dtype=None, **options) -> ConditioningStack:
        r"""A stack with random weights, drawn from ``generator`` on ``device`` in ``dtype``.

        Entries of :math:`W_Q, W_K, W_V` are :math:`\mathcal N(0, 1/d)` and of :math:`W_O`
        :math:`\mathcal N(0, 1/(H d_v))`: the scales keep projected stimuli and each layer's update of order one. ``d_v`` defaults to ``d_k``;
        ``options`` go to the constructor (``feature_map``, ``norm``, ``eps``).
        """
        layers, heads, d_model, d_k = (_validate.positive_int(name, x) for name, x in
                                       (("layers", layers), ("heads", heads), ("d_model", d_model), ("d_k", d_k)))
        d_v = d_k if d_v is None else _validate.positive_int("d_v", d_v)
        device, dtype = resolve(device, dtype)
        _validate.generator("generator", generator, device)

        def normal(std, *shape):
            return std * torch.randn(shape, generator=generator, device=device, dtype=dtype)

        inward = 1 / math.sqrt(d_model)
        return cls(normal(inward, layers, heads, d_model, d_k), normal(inward, layers, heads, d_model, d_k),
                   normal(inward, layers, heads, d_model, d_v),
                   normal(1 / math.sqrt(heads * d_v), layers, heads, d_v, d_model), **options)

    @property
    def layers(self) -> int:
        return self.W_Q.shape[0]

    @property
    def heads(self) -> int:
        return self.W_Q.shape[1]

    @property
    def d_model(self) -> int:
        return self.W_Q.shape[2]

    def _check(self, x: torch.Tensor, layer: int) -> None:
        _validate.tensor("x", x, min_dim=2)
        _validate.shape("x", x, (self.d_model,), against="the stack's d_model")
        _validate.same_device_dtype(W_Q=self.W_Q, x=x)
        if isinstance(layer, bool) or not isinstance(layer, int) or not 0 <= layer < self.layers:
            raise ValueError(f"layer must be an int in [0, {self.layers}), got {layer!r}")

    def head_responses(self, x: torch.Tensor, layer: int) -> torch.Tensor:
        """Every head's response ``[..., H, T, d_v]`` in ``layer`` (from 0) to the stream ``x`` ``[..., T, d_model]``."""
        self._check(x, layer)
        q, k, v = (torch.einsum("...td,hde->...hte", x, W[layer]) for W in (self.W_Q, self.W_K, self.W_V))
        return linear_attention(q, k, v, feature_map=self.feature_map, norm=self.norm, eps=self.eps)

    def layer(self, x: torch.Tensor, layer: int) -> torch.Tensor:
        """The stream ``[..., T, d_model]`` after ``layer``: ``x`` plus the heads' responses through ``W_O``."""
        return x + torch.einsum("...hte,hed->...td", self.head_responses(x, layer), self.W_O[layer])

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        """The stream ``[..., T, d_model]`` after all layers, from ``x`` ``[..., T, d_model]``."""
        for layer in range(self.layers):
            x = self.layer(x, layer)
        return x


# --- The chain task ---


class ChainRun(NamedTuple):
    """What one pass along a batch of chains decoded.

    ``items`` ``[B, L + 1]``: the start item, then the item each layer passed on; ``head_items``
    ``[B, L, H]``: the item each head decoded on its own; ``retrieved`` ``[B, L, H, d_k]``: each head's retrieval.
    """

    items: torch.Tensor
    head_items: torch.Tensor
    retrieved: torch.Tensor
    cleanup: bool = True

    @property
    def _associates(self) -> torch.Tensor:
        # item i's associate at every level is item i: with the clean-up, the layer's input; without, the start
        return self.items[:, :-1] if self.cleanup else self.items[:, :1].expand(-1, self.items.shape[1] - 1)

    @property
    def head_failed(self) -> torch.Tensor:
        """``[B, L, H]``: head ``h`` of layer ``l`` decoded an item other than the associate of the layer's input."""
        return self.head_items != self._associates[..., None]

    @property
    def layer_failed(self) -> torch.Tensor:
        """``[B, L]``: the layer passed on (without the clean-up: decoded) an item other than the associate."""
        return self.items[:, 1:] != self._associates


def _check_code_shape(codes: torch.Tensor) -> None:
    _validate.tensor("codes", codes, min_dim=6)
    if codes.dim() != 6 or codes.shape[2] != 2:
        raise ValueError(f"codes must have shape [trials, L, 2, H, n, d_k] (keys and values of each hop), got "
                         f"{tuple(codes.shape)}")


def _check_codes(codes: torch.Tensor, start: torch.Tensor) -> None:
    _check_code_shape(codes)
    if not isinstance(start, torch.Tensor) or start.dtype != torch.long:
        raise TypeError("start must be a tensor of item indices (torch.long)")
    if start.shape != codes.shape[:1] or start.device != codes.device:
        raise ValueError(f"start must have shape ({codes.shape[0]},) on {codes.device}, got {tuple(start.shape)} on "
                         f"{start.device}")
    if start.numel() and not bool(((start >= 0) & (start < codes.shape[4])).all()):
        raise ValueError(f"start must index items, in [0, {codes.shape[4]})")


def _decode(scores: torch.Tensor, head_items: torch.Tensor, current: torch.Tensor, readout: str) -> torch.Tensor:
    """The item a layer passes on, from its heads' scores ``[B, H, n]`` against the level's codes."""
    if readout == "sum":       # one decode of the summed (concatenated) retrievals: sum_h r_h . v_{j,h}
        return scores.sum(-2).argmax(-1)
    correct = (head_items == current[:, None]).any(-1)     # the oracle: right if any head is right
    return torch.where(correct, current, head_items[:, 0])


def run_chain(codes: torch.Tensor, start: torch.Tensor, *, readout: str = "sum") -> ChainRun:
    r"""Run a batch of chains store by store: each head's Hebbian store, read with the current item's key code.

    Args:
        codes: ``[B, L, 2, H, n, d_k]``: for every hop, the key codes of its sources and the value codes of
            its targets (index 0 and 1), per head and item (unit vectors, see :func:`chain_codes`).
        start: the first item of each chain ``[B]`` (``torch.long``).
        readout: ``"sum"`` or ``"any"`` (see the module).

    Returns:
        A :class:`ChainRun`. Head :math:`h` of layer :math:`l`, queried with the key code :math:`k_{x,h}` of the
        current item :math:`x`, retrieves :math:`r_h = k_{x,h} S_h = \sum_i (k_{x,h} \cdot k_{i,h})\, v_{i,h}` and
        scores item :math:`j` of the next level by :math:`r_h \cdot v_{j,h}`.

    >>> codes = chain_codes(4, 8, 16, heads=2, layers=3, seed=0, device="cpu")
    >>> run_chain(codes, torch.zeros(4, dtype=torch.long)).items.shape
    torch.Size([4, 4])
    """
    _check_codes(codes, start)
    _validate.option("readout", readout, READOUTS)
    return _run_chain(((hop[:, 0], hop[:, 1]) for hop in codes.unbind(1)), start, readout)


def _run_chain(hops: Iterable[tuple[torch.Tensor, torch.Tensor]], start: torch.Tensor, readout: str,
               cleanup: bool = True) -> ChainRun:
    """:func:`run_chain` on the hops' ``(keys, values)``, each ``[B, H, n, d_k]``, taken one by one from an
    iterable, without the input checks, whose scan of every code would cost more than the run."""
    trials = torch.arange(start.shape[0], device=start.device)
    items, head_items, retrieved = [start], [], []
    r = values = None                                # the last hop's read and values
    for hop, (hop_keys, hop_values) in enumerate(hops):
        if hop == 0:                                 # the first layer queries the start item
            query = hop_keys[trials, :, start]                                          # (B, H, d_k)
        elif cleanup:                                # the next layer queries the clean item
            query = hop_keys[trials, :, items[-1]]
        else:                                        # v_i -> k_i of this hop, exactly (n <= d_k), applied to r
            query = ((r[..., None, :] @ torch.linalg.pinv(values)) @ hop_keys).squeeze(-2)
        keys, values = hop_keys.contiguous(), hop_values.contiguous()                   # (B, H, n, d_k)
        # the Hebbian store read as r = (q K^T) V, without forming S = K^T V: n d_k operations, not n d_k^2;
        # matrix-vector products, since batched products of tiny matrices are slow on a CPU
        overlaps = (keys @ query[..., None]).squeeze(-1)                                # k_i . q, (B, H, n)
        r = (overlaps[..., None, :] @ values).squeeze(-2)                               # (B, H, d_k)
        scores = (values @ r[..., None]).squeeze(-1)                                    # r . v_j, (B, H, n)
        head_items.append(scores.argmax(-1))
        retrieved.append(r)
        items.append(_decode(scores, head_items[-1], items[-1] if cleanup else start, readout))
    return ChainRun(torch.stack(items, 1), torch.stack(head_items, 1), torch.stack(retrieved, 1), cleanup)


def chain_codes(trials: int, n_memories: int, d_key: int, *, heads: int, layers: int, seed: int | None = None,
                generator: torch.Generator | None = None, device=None, dtype=None) -> torch.Tensor:
    """Random codes ``[trials, layers, 2, heads, n_memories, d_key]``, uniform on the unit sphere and independent.

    Index 0 of the third dimension holds each hop's key codes (its sources), index 1 its value codes (its
    targets). From a generator seeded with ``seed``, or from ``generator`` (which then advances): exactly one.

    >>> chain_codes(2, 8, 16, heads=4, layers=3, seed=0, device="cpu").shape
    torch.Size([2, 3, 2, 4, 8, 16])
    """
    trials, n_memories, d_key, heads, layers = (
        _validate.positive_int(name, x) for name, x in (("trials", trials), ("n_memories", n_memories),
                                                         ("d_key", d_key), ("heads", heads), ("layers", layers)))
    device, dtype = resolve(device, dtype)
    if (seed is None) == (generator is None):
        raise ValueError("give exactly one of seed and generator")
    gen = runtime.generator(seed, device) if generator is None else generator
    return random_stimuli(trials, layers, 2, heads, n_memories, d_key, generator=gen, device=device, dtype=dtype)


class ChainMeasurement(NamedTuple):
    """The failures counted by :func:`measure_chain`, with the errors and their standard errors over trials.

    ``head_failed`` ``[trials, L, H]`` and ``layer_failed`` ``[trials, L]``, as in :class:`ChainRun`.
    """

    head_failed: torch.Tensor
    layer_failed: torch.Tensor
    readout: str
    seed: int
    cleanup: bool = True

    @staticmethod
    def _rate(failed: torch.Tensor) -> tuple[float, float]:
        mean, se = mean_and_se(failed.flatten(1).double().mean(1))     # each trial's fraction, then over trials
        return mean.item(), se.item()

    def head_error(self) -> tuple[float, float]:
        """The fraction of heads that decode a wrong item, :math:`p`, with its standard error."""
        return self._rate(self.head_failed)

    def layer_error(self) -> tuple[float, float]:
        """The fraction of layers that pass on a wrong item, with its standard error."""
        return self._rate(self.layer_failed)

    def chain_error(self, layers: int | None = None) -> tuple[float, float]:
        """The fraction of chains that fail within the first ``layers`` hops (default: all), and its s.e.

        With the clean-up a chain fails when any of those hops fails; without it, when the item decoded
        at depth ``layers`` is wrong.
        """
        layers = self.layer_failed.shape[1] if layers is None else _validate.positive_int("layers", layers)
        if layers > self.layer_failed.shape[1]:
            raise ValueError(f"layers must be at most the {self.layer_failed.shape[1]} measured, got {layers}")
        failed = self.layer_failed[:, :layers] if self.cleanup else self.layer_failed[:, layers - 1:layers]
        return self._rate(failed.any(1, keepdim=True))


def measure_chain(n_memories: int, d_key: int, *, heads: int, layers: int, trials: int, readout: str = "sum",
                  seed: int | None = None, device=None, dtype=None, cleanup: bool = True) -> ChainMeasurement:
    r"""Count the failing heads, layers and chains of ``trials`` independent chains (:func:`run_chain`).

    Each chain draws a uniformly random start item and fresh codes, hop by hop as it reaches them
    (as :func:`chain_codes` would, in another order); trials run in batches of at most
    :data:`pavlov.stores.CHUNK_ELEMENTS` entries per hop, all from one generator seeded with ``seed`` (default: a
    fresh random seed, returned in the result).

    Args:
        n_memories: associations per head's store, :math:`n`; d_key: code dimension :math:`d_k` (at least 2:
            in one dimension the unit codes are :math:`\pm 1` and decoding ties).
        heads, layers: :math:`H` and :math:`L`; trials: at least 2; readout: ``"sum"`` or ``"any"``.
        cleanup: decode each layer's output to the nearest item before the next layer (the default), or
            pass the retrieval on through the exact linear map to the next hop's key codes, which needs
            :math:`n \le d_k` and the ``"sum"`` readout.

    >>> m = measure_chain(16, 16, heads=2, layers=4, trials=1000, seed=0, device="cpu")
    >>> p, se = m.head_error()                          # about 0.1
    """
    n_memories, d_key, heads, layers, trials = (
        _validate.positive_int(name, x) for name, x in (("n_memories", n_memories), ("d_key", d_key),
                                                         ("heads", heads), ("layers", layers), ("trials", trials)))
    if d_key < 2:
        raise ValueError(f"d_key must be at least 2 (unit codes in one dimension are +-1, and decoding ties), "
                         f"got {d_key}")
    if trials < 2:
        raise ValueError(f"trials must be at least 2 for a standard error, got {trials}")
    _validate.option("readout", readout, READOUTS)
    if not isinstance(cleanup, bool):
        raise TypeError(f"cleanup must be True or False, got {cleanup!r}")
    if not cleanup and n_memories > d_key:
        raise ValueError(f"n_memories must be at most d_key = {d_key} without the clean-up (the map from one "
                         f"hop's value codes to the next hop's keys is exact only then), got {n_memories}")
    if not cleanup and readout != "sum":
        raise ValueError(f"readout must be 'sum' without the clean-up (no layer passes on an item), got {readout!r}")
    device, dtype = resolve(device, dtype)
    seed = runtime.seed_or_fresh(seed)
    gen = runtime.generator(seed, device)
    head_failed, layer_failed = [], []
    for size in stores.trial_blocks(trials, 2 * heads * n_memories * d_key):     # one hop's codes a block
        start = torch.randint(n_memories, (size,), generator=gen, device=device)
        hops = (random_stimuli(2, size, heads, n_memories, d_key, generator=gen, device=device, dtype=dtype)
                for _ in range(layers))                             # keys and values, drawn as the chain reaches them
        run = _run_chain(hops, start, readout, cleanup)
        head_failed.append(run.head_failed)
        layer_failed.append(run.layer_failed)
    return ChainMeasurement(torch.cat(head_failed), torch.cat(layer_failed), readout, seed, cleanup)


# --- The literal stack that runs the chain task ---


def _blocks(layers: int, heads: int, d_key: int, slot, codes: torch.Tensor) -> torch.Tensor:
    """``[layers, heads, d_model, d_key]``: head ``h`` of layer ``l`` reads block ``h`` of slot ``slot(l)``."""
    width = heads * d_key
    W = codes.new_zeros(layers, heads, (layers + 3) * width, d_key)
    eye = torch.eye(d_key, device=codes.device, dtype=codes.dtype)
    for layer in range(layers):
        for head in range(heads):
            row = slot(layer) * width + head * d_key
            W[layer, head, row:row + d_key] = eye
    return W


CURRENT, NEXT, TARGET, SOURCE = 0, 1, 2, 3
"""The residual stream's slots, each ``H d_k`` wide: the current item, the layer's output, a fact's target,
then one source slot per hop (slot ``SOURCE + l`` for hop ``l``)."""


def chain_stack(codes: torch.Tensor) -> ConditioningStack:
    r"""The stack that runs the chain task on :func:`chain_sequence`: block weights, no feature map, no norm.

    The stream has ``L + 3`` slots of width :math:`H d_k` (:data:`CURRENT`, :data:`NEXT`, :data:`TARGET`,
    then :data:`SOURCE` ``+ l``). Head :math:`h` of layer :math:`l` takes its query from block :math:`h` of the
    current item, its keys from block :math:`h` of hop :math:`l`'s source slot (zero in every token but
    that hop's facts, so the store holds only them) and its values from block :math:`h` of the target
    slot, and writes its response into block :math:`h` of the output slot.

    Args:
        codes: ``[B, L, 2, H, n, d_k]`` (only its sizes, device and dtype are used).
    """
    _check_code_shape(codes)
    _, layers, _, heads, _, d_key = codes.shape
    W_Q = _blocks(layers, heads, d_key, lambda l: CURRENT, codes)
    W_K = _blocks(layers, heads, d_key, lambda l: SOURCE + l, codes)
    W_V = _blocks(layers, heads, d_key, lambda l: TARGET, codes)
    W_O = _blocks(layers, heads, d_key, lambda l: NEXT, codes).transpose(-1, -2)
    return ConditioningStack(W_Q, W_K, W_V, W_O)


def _embed(codes: torch.Tensor, hop: int, role: int, items: torch.Tensor | None = None) -> torch.Tensor:
    """The stream's blocks ``[B, n or 1, H d_k]`` for hop ``hop``'s key (``role`` 0) or value (1) codes of all its
    items, or of ``items`` ``[B]``: the heads' codes, concatenated."""
    hop_codes = codes[:, hop, role]                                                # (B, H, n, d_k)
    if items is not None:
        index = items[:, None, None, None].expand(-1, hop_codes.shape[1], 1, hop_codes.shape[-1])
        hop_codes = torch.take_along_dim(hop_codes, index, dim=-2)
    return hop_codes.transpose(1, 2).flatten(-2)


def chain_sequence(codes: torch.Tensor, start: torch.Tensor) -> torch.Tensor:
    """The token sequence ``[B, n L + 1, (L + 3) H d_k]``: every hop's facts, then the query holding the start item.

    The fact of hop ``l`` for item ``i`` holds the key code of its source in source slot ``l`` and the value
    code of its target in the target slot; the last token holds the start item's key code in the current slot.
    """
    _check_codes(codes, start)
    batch, layers, _, heads, n, d_key = codes.shape
    width = heads * d_key
    x = codes.new_zeros(batch, n * layers + 1, (layers + 3) * width)
    for layer in range(layers):
        facts = slice(layer * n, (layer + 1) * n)
        x[:, facts, (SOURCE + layer) * width:(SOURCE + layer + 1) * width] = _embed(codes, layer, 0)
        x[:, facts, TARGET * width:(TARGET + 1) * width] = _embed(codes, layer, 1)
    x[:, -1, CURRENT * width:(CURRENT + 1) * width] = _embed(codes, 0, 0, start)[:, 0]
    return x


def reference_chain(codes: torch.Tensor, start: torch.Tensor, *, readout: str = "sum") -> ChainRun:
    """Run the chains through the literal stack (:func:`chain_stack` on :func:`chain_sequence`), with the clean-up.

    After layer ``l`` the query token's output slot is decoded against the value codes of hop ``l``'s
    targets (``"sum"``; ``"any"`` decodes each head's response), and the clean-up writes the decoded item's
    key code for the next hop into the current slot and clears the output slot. Slow; it checks :func:`run_chain`.
    """
    _check_codes(codes, start)
    _validate.option("readout", readout, READOUTS)
    stack, x = chain_stack(codes), chain_sequence(codes, start)
    width = codes.shape[3] * codes.shape[5]
    items, head_items, retrieved = [start], [], []
    for layer in range(stack.layers):
        responses = stack.head_responses(x, layer)[..., -1, :]                       # the query token, (B, H, d_k)
        x = stack.layer(x, layer)
        output = x[:, -1, NEXT * width:(NEXT + 1) * width]                            # sum_h r_h W_O, (B, H d_k)
        candidates = codes[:, layer, 1]                                               # value codes, (B, H, n, d_k)
        scores = (responses[:, :, None, :] @ candidates.transpose(-1, -2)).squeeze(-2)   # (B, H, n)
        head_items.append(scores.argmax(-1))
        retrieved.append(responses)
        if readout == "sum":
            items.append((output[:, None, :] @ _embed(codes, layer, 1).transpose(-1, -2)).squeeze(-2).argmax(-1))
        else:
            items.append(_decode(scores, head_items[-1], items[-1], readout))
        x = x.clone()                      # the clean-up: the decoded item becomes current, the output slot clears
        if layer + 1 < stack.layers:
            x[:, -1, CURRENT * width:(CURRENT + 1) * width] = _embed(codes, layer + 1, 0, items[-1])[:, 0]
        x[:, -1, NEXT * width:(NEXT + 1) * width] = 0
    return ChainRun(torch.stack(items, 1), torch.stack(head_items, 1), torch.stack(retrieved, 1))


# --- Summing heads: the exponential rate of a sum of independent margins ---


def head_margins(n_memories: int, d_key: int, *, trials: int, seed: int, device=None, dtype=None) -> torch.Tensor:
    r"""One head's decoding margins ``[trials, n - 1]``: the target's score minus each other item's.

    A store of ``n_memories`` random associations (codes uniform on the sphere in ``d_key`` dimensions,
    drawn in blocks of at most :data:`pavlov.stores.MEMORY_ELEMENTS` entries) is queried with its first key;
    the margin against item :math:`l` is
    :math:`\Delta_l = r \cdot v_1 - r \cdot v_l`, and the head decodes wrongly when some :math:`\Delta_l < 0`.
    With :math:`H` independent heads summed, item :math:`l` beats the target when :math:`\sum_h \Delta_{l,h} < 0`.

    >>> head_margins(8, 16, trials=3, seed=0, device="cpu").shape
    torch.Size([3, 7])
    """
    n_memories, d_key, trials = (_validate.positive_int(name, x) for name, x in
                                 (("n_memories", n_memories), ("d_key", d_key), ("trials", trials)))
    if n_memories < 2:
        raise ValueError(f"n_memories must be at least 2 for a margin against another item, got {n_memories}")
    device, dtype = resolve(device, dtype)
    gen = runtime.generator(seed, device)
    # in blocks of trials, as stores.measure_isr draws them: one block draws what the whole would
    return torch.cat([_margins(gen, size, n_memories, d_key, device, dtype)
                      for size in stores.trial_blocks(trials, 2 * n_memories * d_key, stores.MEMORY_ELEMENTS)])


def _margins(gen, trials, n_memories, d_key, device, dtype) -> torch.Tensor:
    keys, values = (random_stimuli(trials, n_memories, d_key, generator=gen, device=device, dtype=dtype)
                    for _ in range(2))
    r = (keys[:, :1] @ keys.transpose(-1, -2)) @ values                     # query with the first key, (B, 1, d_k)
    scores = (r @ values.transpose(-1, -2)).squeeze(-2)                      # (B, n)
    return scores[:, :1] - scores[:, 1:]


class CramerRate(NamedTuple):
    r"""The result of :func:`cramer_rate`: :math:`\rho`, its standard error, and the tilt :math:`t^*` attaining it."""

    rate: float
    se: float
    tilt: float


def cramer_rate(margins: torch.Tensor, *, iterations: int = 100) -> CramerRate:
    r"""The exponential rate of :math:`P(\Delta_1 + \dots + \Delta_H < 0)` from samples of :math:`\Delta`.

    The rate is :math:`\rho = \min_{t \ge 0} \mathbb E\, e^{-t \Delta}`.

    For independent copies :math:`\Delta_h` of a margin with :math:`\mathbb E \Delta > 0`, Cramér's theorem
    gives :math:`P(\sum_{h \le H} \Delta_h < 0) = \rho^{H + o(H)}`, and Chernoff's bound
    :math:`P(\sum_h \Delta_h < 0) \le \rho^H` holds for every :math:`H`. The empirical moment generating
    function is convex in :math:`t`, so its minimum is found by golden-section search (in logarithms, to
    avoid overflow) on an interval doubled until the function rises.

    Args:
        margins: samples ``[trials, m]``, independent across trials (the ``m`` of one trial may be dependent).

    Returns:
        A :class:`CramerRate`; the standard error is that of the mean of :math:`e^{-t^* \Delta}` over trials,
        which, at the minimum, is the first-order error of :math:`\hat\rho`. Without a negative sample the
        estimate is :math:`\hat\rho = 0`, approached as :math:`t \to \infty`.

    >>> margins = torch.tensor([[-1.0], [3.0]], dtype=torch.float64)   # rho = (3^(1/4) + 3^(-3/4)) / 2
    >>> round(cramer_rate(margins).rate, 6)
    0.877383
    """
    _validate.tensor("margins", margins, min_dim=2)
    if margins.dim() != 2 or margins.shape[0] < 2:
        raise ValueError(f"margins must have shape [trials >= 2, m], got {tuple(margins.shape)}")
    iterations = _validate.positive_int("iterations", iterations)
    samples = margins.double().flatten()
    if not bool((samples < 0).any()):       # the empirical function falls to 0 as t -> inf
        return CramerRate(0.0, 0.0, math.inf)
    if not samples.mean() > 0:
        raise ValueError("margins must have a positive mean: otherwise the sum fails with probability >= 1/2")

    def log_mgf(t: float) -> float:
        return (torch.logsumexp(-t * samples, 0) - math.log(samples.numel())).item()

    low, high = 0.0, 1.0 / samples.abs().mean().item()
    while log_mgf(2 * high) < log_mgf(high):        # the minimum lies below 2 * high once the function rises
        low, high = high, 2 * high
    tilt = golden_section_min(log_mgf, low, 2 * high, iterations=iterations)
    mean, se = mean_and_se(torch.exp(-tilt * margins.double()).mean(1))
    return CramerRate(math.exp(log_mgf(tilt)), se.item(), tilt)
