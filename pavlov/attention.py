r"""Causal linear attention in three forms that agree, and softmax attention for contrast.

**State convention** (used throughout the book). Queries, keys and values are row vectors,
``q, k: [..., T, d_k]`` and ``v: [..., T, d_v]`` with any leading batch/head dimensions. After
step :math:`t` the fast-weight state is

.. math::

    S_t = \sum_{j \le t} \phi(k_j)^\top v_j \in \mathbb R^{d_k \times d_v}, \qquad r_t = \phi(q_t)\, S_t ,

so the state maps a (featurised) key to a value, exactly as the conditioning circuit's store does.
With ``denominator=True`` the output is divided by Katharopoulos et al.'s normaliser
:math:`z_t = \phi(q_t) \sum_{j \le t} \phi(k_j)^\top`; then an output norm (``"none"``, ``"rms"``,
``"layer"``) is applied. The three forms compute the same :math:`r_t`:

* ``"recurrent"``: :math:`S_t = S_{t-1} + \phi(k_t)^\top v_t`, one step at a time (:math:`O(T d_k d_v)`, sequential);
* ``"parallel"``: :math:`R = (\phi(Q) \phi(K)^\top \odot M) V` with the causal mask :math:`M` (:math:`O(T^2 d)`);
* ``"chunkwise"``: the recurrence across chunks of ``chunk_size`` steps and the parallel form inside
  each (:math:`O(T C d + T d_k d_v)`); the last chunk may be shorter.
"""

from __future__ import annotations

import math

import torch

from . import _validate
from ._precision import float32_accumulation
from .maps import feature_map as _feature_map
from .maps import output_norm

FORMS = ("recurrent", "parallel", "chunkwise")


def _recurrent(q, k, v, chunk_size=None):
    state = q.new_zeros(*q.shape[:-2], q.shape[-1], v.shape[-1])       # S_0 = 0, (..., d_k, d_v)
    outputs = []
    for t in range(q.shape[-2]):
        state = state + k[..., t, :, None] @ v[..., t, None, :]        # S_t = S_{t-1} + k_t^T v_t
        outputs.append((q[..., t, None, :] @ state).squeeze(-2))      # r_t = q_t S_t
    return torch.stack(outputs, dim=-2)


def _parallel(q, k, v, chunk_size=None):
    return (q @ k.transpose(-1, -2)).tril_() @ v                      # causal: keep j <= i, (..., T, T)


def _chunkwise(q, k, v, chunk_size):
    state = q.new_zeros(*q.shape[:-2], q.shape[-1], v.shape[-1])
    outputs = []
    for start in range(0, q.shape[-2], chunk_size):
        qc, kc, vc = (x[..., start:start + chunk_size, :] for x in (q, k, v))   # (..., C, d)
        # earlier chunks through the state, this chunk through the masked parallel form
        outputs.append(qc @ state + _parallel(qc, kc, vc))
        state = state + kc.transpose(-1, -2) @ vc
    return torch.cat(outputs, dim=-2)


_FORMS = {"recurrent": _recurrent, "parallel": _parallel, "chunkwise": _chunkwise}


@float32_accumulation
def linear_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, *, form: str = "chunkwise",
                     chunk_size: int = 64, feature_map=None, denominator: bool = False, norm: str = "none",
                     eps: float = 1e-6) -> torch.Tensor:
    r"""Causal linear attention :math:`o_t = \mathrm{Norm}(\phi(q_t) S_t / z_t)` in the chosen ``form``.

    Args:
        q, k: queries and keys ``[..., T, d_k]``; v: values ``[..., T, d_v]``.
        form: ``"recurrent"``, ``"parallel"`` or ``"chunkwise"``; all compute the same outputs.
        chunk_size: steps per chunk of the chunkwise form (any positive size; need not divide ``T``).
        feature_map: :math:`\phi` applied to ``q`` and ``k`` (a name, a callable, or ``None`` for identity).
        denominator: divide by :math:`z_t = \phi(q_t) \sum_{j\le t} \phi(k_j)^\top` (Katharopoulos et al.);
            meaningful for a positive feature map such as ``"elu+1"``.
        norm, eps: output normalisation, see :func:`pavlov.maps.output_norm`.

    Returns:
        Outputs ``[..., T, d_v]`` on the inputs' device, in their dtype (half-precision inputs are
        computed in float32: the state accumulates there).

    >>> q = k = v = torch.randn(2, 4, 10, 8, dtype=torch.float64)   # (batch, heads, T, d)
    >>> o = linear_attention(q, k, v, form="chunkwise", chunk_size=3, feature_map="elu+1", denominator=True)
    """
    _validate.sequences(q, k, v)
    _validate.option("form", form, FORMS)
    chunk_size = _validate.positive_int("chunk_size", chunk_size)
    if not isinstance(denominator, bool):
        raise TypeError(f"denominator must be a bool, got {type(denominator).__name__}")
    phi = _feature_map(feature_map)
    q, k = phi(q), phi(k)
    if denominator:   # carry z_t as one extra value column: S' = sum phi(k)^T [v, 1]
        v = torch.cat([v, v.new_ones(*v.shape[:-1], 1)], dim=-1)
    r = _FORMS[form](q, k, v, chunk_size)
    if denominator:
        r, z = r[..., :-1], r[..., -1:]
        if z.device.type != "meta" and not bool((z > 0).all()):
            raise ValueError("denominator needs z_t = phi(q_t) . sum_j phi(k_j) > 0 at every step; "
                             f"feature_map {feature_map!r} gave z_t <= 0 (use a positive map such as 'elu+1')")
        r = r / z
    return output_norm(r, norm, eps)


def softmax_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, *, causal: bool = True,
                      scale: float | None = None) -> torch.Tensor:
    r"""Softmax attention :math:`o_t = \sum_{j} \mathrm{softmax}_j(\beta\, q_t \cdot k_j)\, v_j` (over :math:`j \le t` if causal).

    Args:
        q, k: ``[..., T, d_k]``; v: ``[..., T, d_v]``.
        causal: attend only to earlier and current steps.
        scale: inverse temperature :math:`\beta` (default :math:`1/\sqrt{d_k}`).

    Returns:
        Outputs ``[..., T, d_v]``.
    """
    _validate.sequences(q, k, v)
    if not isinstance(causal, bool):
        raise TypeError(f"causal must be a bool, got {type(causal).__name__}")
    scale = 1 / math.sqrt(q.shape[-1]) if scale is None else _validate.finite_float("scale", scale, positive=True)
    logits = scale * (q @ k.transpose(-1, -2))                            # (..., T, T)
    if causal:
        future = torch.ones(q.shape[-2], q.shape[-2], dtype=torch.bool, device=q.device).triu_(1)
        logits = logits.masked_fill(future, float("-inf"))
    return torch.softmax(logits, dim=-1) @ v
