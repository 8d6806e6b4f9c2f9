r"""The conditioning circuit, in the vocabulary of Pavlovian conditioning.

A conditioned stimulus (CS, the bell) is paired with an unconditioned stimulus (US, the food); the
pairing is written into a Hebbian store, and a test stimulus (ringing the bell again) reads it out.
In the source's row-vector notation, with feature maps :math:`f` (test and CS) and :math:`g` (US)
and learning rate :math:`\alpha`:

.. math::

    S_i = \alpha \sum_{j \le i} f(\mathrm{cs}_j)^\top g(\mathrm{us}_j), \qquad
    r_i = f(\mathrm{test}_i)\, S_i, \qquad o_i = \mathrm{Norm}(r_i).

Shapes: stimuli are ``[..., n, d]`` with any leading batch dimensions; a store is ``[..., d_k, d_v]``.
The code follows the definition literally (a sum of outer products), not the recurrence
:math:`S_i = S_{i-1} + \alpha f(\mathrm{cs}_i)^\top g(\mathrm{us}_i)`: chapter 2 proves, and checks,
that the two and the forms of linear attention agree.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from . import _validate
from .maps import feature_map, output_norm


def _stimuli(**named: torch.Tensor) -> None:
    for name, x in named.items():
        _validate.tensor(name, x, min_dim=2)
    _validate.same_device_dtype(**named)


def hebbian_store(cs: torch.Tensor, us: torch.Tensor, *, f=None, g=None, alpha: float = 1.0) -> torch.Tensor:
    r"""The Hebbian store of ``n`` pairings, :math:`S = \alpha \sum_j f(\mathrm{cs}_j)^\top g(\mathrm{us}_j)`.

    Args:
        cs: conditioned stimuli ``[..., n, d_k]``.
        us: unconditioned stimuli ``[..., n, d_v]``, paired row by row with ``cs``.
        f, g: feature maps (a name from :data:`pavlov.maps.FEATURE_MAPS`, a callable, or ``None`` for identity).
        alpha: learning rate :math:`\alpha`.

    Returns:
        The store ``[..., d_k, d_v]``.
    """
    _stimuli(cs=cs, us=us)
    _validate.shape("us", us, (cs.shape[-2], None), against=f"the {cs.shape[-2]} pairings in cs")
    if cs.shape[:-2] != us.shape[:-2]:
        raise ValueError(f"cs and us must share batch dimensions, got {tuple(cs.shape[:-2])} and {tuple(us.shape[:-2])}")
    alpha = _validate.finite_float("alpha", alpha)
    f, g = feature_map(f, parameter="f"), feature_map(g, parameter="g")
    return alpha * f(cs).transpose(-1, -2) @ g(us)


def respond(store: torch.Tensor, test: torch.Tensor, *, f=None, norm: str = "none", eps: float = 1e-6) -> torch.Tensor:
    r"""The response to test stimuli, :math:`o = \mathrm{Norm}(f(\mathrm{test})\, S)`.

    Args:
        store: a store ``[..., d_k, d_v]`` from :func:`hebbian_store`.
        test: test stimuli ``[..., m, d_k]``.
        f: the feature map used when the store was written.
        norm: ``"none"``, ``"rms"`` or ``"layer"`` (see :func:`pavlov.maps.output_norm`).

    Returns:
        Responses ``[..., m, d_v]``.
    """
    _stimuli(store=store, test=test)
    _validate.shape("test", test, (store.shape[-2],), against=f"the store's key dimension {store.shape[-2]}")
    return output_norm(feature_map(f, parameter="f")(test) @ store, norm, eps)


def condition(test: torch.Tensor, cs: torch.Tensor, us: torch.Tensor, *, f=None, g=None, alpha: float = 1.0,
              norm: str = "none", eps: float = 1e-6) -> torch.Tensor:
    r"""Run the circuit over a sequence: at step ``i``, pair ``cs[i]`` with ``us[i]``, then present ``test[i]``.

    Computes :math:`o_i = \mathrm{Norm}(f(\mathrm{test}_i) S_i)` with
    :math:`S_i = \alpha \sum_{j \le i} f(\mathrm{cs}_j)^\top g(\mathrm{us}_j)` built as a cumulative sum of
    outer products (``[..., T, d_k, d_v]`` in memory: a reference, not a fast form).

    Args:
        test: test stimuli ``[..., T, d_k]``.
        cs: conditioned stimuli ``[..., T, d_k]``.
        us: unconditioned stimuli ``[..., T, d_v]``.

    Returns:
        Responses ``[..., T, d_v]``.
    """
    _stimuli(test=test, cs=cs, us=us)
    if test.shape != cs.shape:
        raise ValueError(f"test must have the shape of cs {tuple(cs.shape)}, got {tuple(test.shape)}")
    if us.shape[:-1] != cs.shape[:-1]:
        raise ValueError(f"us must have the leading shape of cs {tuple(cs.shape[:-1])}, got {tuple(us.shape[:-1])}")
    alpha = _validate.finite_float("alpha", alpha)
    f, g = feature_map(f, parameter="f"), feature_map(g, parameter="g")
    pairings = f(cs).unsqueeze(-1) * g(us).unsqueeze(-2)          # (..., T, d_k, d_v)
    stores = alpha * pairings.cumsum(dim=-3)                      # S_i, (..., T, d_k, d_v)
    r = (f(test).unsqueeze(-2) @ stores).squeeze(-2)              # (..., T, d_v)
    return output_norm(r, norm, eps)


@dataclass
class ConditioningCircuit:
    r"""The source's circuit with its projections: test :math:`X W_Q`, CS :math:`Y W_K`, US :math:`Z W_V`.

    Calling the circuit on ``x`` alone is self-attention (:math:`X = Y = Z`); passing ``y`` and ``z``
    conditions on another sequence (cross-attention).

    Attributes:
        W_Q, W_K: ``[d_model, d_k]``; W_V: ``[d_model, d_v]``.
        f, g, alpha, norm, eps: as in :func:`condition`.
    """

    W_Q: torch.Tensor
    W_K: torch.Tensor
    W_V: torch.Tensor
    f: object = None
    g: object = None
    alpha: float = 1.0
    norm: str = "none"
    eps: float = 1e-6

    def __post_init__(self):
        for name in ("W_Q", "W_K", "W_V"):
            _validate.tensor(name, getattr(self, name), min_dim=2)
            if getattr(self, name).dim() != 2:
                raise ValueError(f"{name} must be a matrix [d_model, d], got shape {tuple(getattr(self, name).shape)}")
        _validate.same_device_dtype(W_Q=self.W_Q, W_K=self.W_K, W_V=self.W_V)
        if not (self.W_Q.shape[0] == self.W_K.shape[0] == self.W_V.shape[0]):
            raise ValueError("W_Q, W_K and W_V must share d_model (their first dimension), got "
                             f"{self.W_Q.shape[0]}, {self.W_K.shape[0]}, {self.W_V.shape[0]}")
        if self.W_Q.shape[1] != self.W_K.shape[1]:
            raise ValueError(f"W_Q and W_K must share d_k, got {self.W_Q.shape[1]} and {self.W_K.shape[1]}")

    def __call__(self, x: torch.Tensor, y: torch.Tensor | None = None, z: torch.Tensor | None = None) -> torch.Tensor:
        """Responses ``[..., T, d_v]`` to the sequence ``x`` ``[..., T, d_model]`` (and ``y``, ``z``, default ``x``)."""
        y = x if y is None else y
        z = y if z is None else z
        for name, s in (("x", x), ("y", y), ("z", z)):
            _validate.tensor(name, s, min_dim=2)
            _validate.shape(name, s, (self.W_Q.shape[0],), against="d_model of the projections")
        _validate.same_device_dtype(W_Q=self.W_Q, x=x, y=y, z=z)
        return condition(x @ self.W_Q, y @ self.W_K, z @ self.W_V, f=self.f, g=self.g, alpha=self.alpha,
                         norm=self.norm, eps=self.eps)
