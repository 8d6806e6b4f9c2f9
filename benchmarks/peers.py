r"""The write rules' peers: fla-core's pure-torch references, adapted to compute exactly the package's functions.

fla-core (the kernels of flash-linear-attention) keeps a slow, obviously correct reference beside
every fast kernel, in ``fla/ops/<op>/naive.py``. Those files are plain torch, but ``import fla``
imports triton, which a CPU machine lacks; :func:`fla_reference` therefore finds the installed
package without executing it (``importlib.util.find_spec``) and loads the one file it needs.

Each operation (:data:`OPERATIONS`) is one of :mod:`pavlov.rules`, run chunkwise, and its peers:
the same rule run recurrently, and fla's recurrent and chunkwise references. Every peer takes the
package's inputs, ``q, k [B, H, T, d_k]``, ``v [B, H, T, d_v]`` and rates ``[B, H, T]``, and returns
the outputs ``[B, H, T, d_v]``; its adapter undoes the conventions in which fla differs:

======================  ==========================  ===============================================
convention              pavlov.rules                fla's references
======================  ==========================  ===============================================
layout                  ``[B, H, T, d]``            ``[B, T, H, d]``; the delta rule ``[B, H, T, d]``
query scale             none                        ``scale``, default :math:`d_k^{-1/2}`; the delta
                                                    rule's is fixed, so its adapter passes
                                                    :math:`\sqrt{d_k}\, q`
forgetting              gate :math:`\gamma_t`       log-gate :math:`g_t = \log \gamma_t`
Hebbian write rate      :math:`\alpha_t`            none; linear attention writes
                                                    :math:`k_t^\top (\alpha_t v_t)` instead
chunk length            any ``chunk_size``          linear attention: fixed at 64; the delta rule:
                                                    ``T`` a multiple of ``chunk_size`` (no padding)
precision               the inputs' dtype           float32, whatever the inputs
======================  ==========================  ===============================================

>>> op = OPERATIONS["delta"]
>>> [peer.name for peer in op.peers]
['pavlov:delta (recurrent)', 'fla-core:delta_rule_recurrence', 'fla-core:delta_rule_chunkwise']
"""

from __future__ import annotations

import functools
import importlib.util
from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple

import torch

from pavlov import rules

Forward = Callable[[torch.Tensor, torch.Tensor, torch.Tensor, dict, int], torch.Tensor]


class Peer(NamedTuple):
    """A computation that a benchmark times against the package's chunkwise form.

    ``forward(q, k, v, rates, chunk_size) -> outputs [B, H, T, d_v]`` on the package's layout;
    ``recurrent``: whether it steps through time one pairing at a time (slow: timed less often);
    ``multiple``: ``multiple(chunk_size)``, the number the length ``T`` must be a multiple of (1: any).
    """

    name: str
    forward: Forward
    recurrent: bool
    multiple: Callable[[int], int] = lambda chunk_size: 1

    def supports(self, length: int, chunk_size: int) -> bool:
        """Whether the peer runs on ``length`` steps with ``chunk_size``."""
        return length % self.multiple(chunk_size) == 0


class Operation(NamedTuple):
    """One of the package's rules (``rule``, with per-step ``rates``) and the peers it is timed against."""

    rule: str
    rates: tuple[str, ...]
    peers: tuple[Peer, ...]

    def forward(self, q, k, v, rates: dict, chunk_size: int | None) -> torch.Tensor:
        """The package's outputs ``[B, H, T, d_v]``: chunkwise with ``chunk_size``, recurrent with None."""
        return rules.RULES[self.rule](q, k, v, **rates, chunk_size=chunk_size)[0]


def fla_reference(op: str, function: str) -> Callable:
    """The function ``function`` of ``fla/ops/<op>/naive.py`` from the installed fla-core, without importing ``fla``.

    >>> fla_reference("delta_rule", "delta_rule_recurrence").__name__
    'delta_rule_recurrence'
    """
    return getattr(_naive(op), function)


@functools.cache
def _naive(op: str):
    spec = importlib.util.find_spec("fla")      # locates the package; its __init__ (and triton) stays unrun
    if spec is None or not spec.submodule_search_locations:
        raise ModuleNotFoundError("fla-core is not installed: pip install --no-deps -r benchmarks/requirements.txt")
    path = Path(next(iter(spec.submodule_search_locations))) / "ops" / op / "naive.py"
    module_spec = importlib.util.spec_from_file_location(f"fla_naive_{op}", path)
    module = importlib.util.module_from_spec(module_spec)
    module_spec.loader.exec_module(module)
    return module


def _swap(*tensors: torch.Tensor):
    """Between the package's ``[B, H, T, ...]`` and fla's ``[B, T, H, ...]`` (views; the swap is its own inverse)."""
    swapped = tuple(x.transpose(1, 2) for x in tensors)
    return swapped if len(swapped) > 1 else swapped[0]


def _first(out) -> torch.Tensor:
    """The outputs of a reference that returns ``(outputs, state)`` or the outputs alone."""
    return out if isinstance(out, torch.Tensor) else out[0]


def _linear_attn(fn, q, k, v, rates, chunk):
    # fla has no write rate: alpha_t k_t^T v_t = k_t^T (alpha_t v_t)
    return _swap(_first(fn(*_swap(q, k, v * rates["alpha"][..., None]), scale=1.0, **chunk)))


def _simple_gla(fn, q, k, v, rates, chunk):
    return _swap(_first(fn(*_swap(q, k, v, rates["gamma"].log()), scale=1.0, **chunk)))


def _delta_rule(fn, q, k, v, rates, chunk):
    # the package's layout already; the query scale d_k^-1/2 is fixed inside, so undo it on the way in
    return _first(fn(q * q.shape[-1] ** 0.5, k, v, rates["beta"], **chunk))


def _gated_delta_rule(fn, q, k, v, rates, chunk):
    q, k, v, beta, g = _swap(q, k, v, rates["beta"], rates["gamma"].log())
    return _swap(_first(fn(q, k, v, beta=beta, g=g, scale=1.0, **chunk)))


def _fla(op: str, function: str, adapt: Callable, *, recurrent: bool, fixed_chunk: int | None = None,
         pads: bool = True) -> Peer:
    """fla's reference ``fla/ops/<op>/naive.py:function`` behind the adapter ``adapt(fn, q, k, v, rates, chunk)``.

    A chunkwise reference gets the package's ``chunk_size`` unless it has a ``fixed_chunk`` of its own;
    one that does not ``pads`` its last chunk needs ``T`` to be a multiple of the chunk length.
    """
    def forward(q, k, v, rates, chunk_size):
        chunk = {} if recurrent or fixed_chunk else {"chunk_size": chunk_size}
        return adapt(fla_reference(op, function), q, k, v, rates, chunk)

    def multiple(chunk_size: int) -> int:
        return fixed_chunk or (1 if recurrent or pads else chunk_size)
    return Peer(f"fla-core:{function}", forward, recurrent, multiple)


def _recurrent_self(rule: str) -> Peer:
    """The package's own recurrent form of ``rule``, the reference its chunkwise form must reproduce."""
    return Peer(f"pavlov:{rule} (recurrent)",
                lambda q, k, v, rates, chunk_size: rules.RULES[rule](q, k, v, **rates)[0], recurrent=True)


OPERATIONS: dict[str, Operation] = {
    "linear": Operation("hebbian", ("alpha",), (
        _recurrent_self("hebbian"),
        _fla("linear_attn", "naive_recurrent_linear_attn", _linear_attn, recurrent=True),
        _fla("linear_attn", "naive_chunk_linear_attn", _linear_attn, recurrent=False, fixed_chunk=64),
    )),
    "decay": Operation("decay", ("gamma",), (
        _recurrent_self("decay"),
        _fla("simple_gla", "naive_recurrent_simple_gla", _simple_gla, recurrent=True),
        _fla("simple_gla", "naive_chunk_simple_gla", _simple_gla, recurrent=False),
    )),
    "delta": Operation("delta", ("beta",), (
        _recurrent_self("delta"),
        _fla("delta_rule", "delta_rule_recurrence", _delta_rule, recurrent=True),
        _fla("delta_rule", "delta_rule_chunkwise", _delta_rule, recurrent=False, pads=False),
    )),
    "gated_delta": Operation("gated_delta", ("gamma", "beta"), (
        _recurrent_self("gated_delta"),
        _fla("gated_delta_rule", "naive_recurrent_gated_delta_rule", _gated_delta_rule, recurrent=True),
        _fla("gated_delta_rule", "naive_chunk_gated_delta_rule", _gated_delta_rule, recurrent=False),
    )),
}
"""The benchmarked operations by record name: the package's rule and its peers."""
