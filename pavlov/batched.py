r"""Many small models trained as one: the same architecture with a leading model dimension.

A chapter that makes a claim about what training finds trains several models (one per seed) and reports
statistics over them. Small models trained one after another spend their time in the overhead of many
tiny operations; trained together, each operation acts on all of them at once. :func:`stack` turns ``M``
models of one architecture into one whose every parameter has a leading dimension of size ``M``, and
:func:`unstack` gives them back. Nothing couples the models: the loss of a stack is the sum of each
model's own loss, so each model's gradient is its own, and AdamW acts on every number separately, so a
step of the stack is, to rounding, a step of each model (``tests/test_batched.py`` checks it).

The layers below are torch's, with a forward that also accepts weights with a leading model dimension:
a model built from them runs alone on inputs ``[B, T, ...]`` exactly as torch's layers do, and stacked
on inputs ``[M, B, T, ...]``, model ``m`` reading ``inputs[m]``.
"""

from __future__ import annotations

import copy

import torch
import torch.nn.functional as F
from torch import nn

from . import _validate


def _per_model(weight: torch.Tensor, x: torch.Tensor, dims: int) -> torch.Tensor:
    """``weight [M, *rest]`` shaped to broadcast over ``x [M, ..., *rest]``, whose last ``dims`` axes are ``rest``."""
    return weight.reshape(weight.shape[0], *([1] * (x.dim() - 1 - dims)), *weight.shape[1:])


def linear(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None = None) -> torch.Tensor:
    """``F.linear`` for one model's ``weight [out, in]``, or model by model for a stack's ``[M, out, in]`` (bias
    ``[M, out]``) on ``x [M, ..., in]``."""
    if weight.dim() == 2:
        return F.linear(x, weight, bias)
    rows = x.reshape(x.shape[0], -1, x.shape[-1])                                       # (M, rows, in)
    out = (rows @ weight.mT if bias is None
           else torch.baddbmm(bias[:, None, :], rows, weight.mT))                      # (M, rows, out)
    return out.reshape(*x.shape[:-1], out.shape[-1])


class Linear(nn.Linear):
    """``torch.nn.Linear``; stacked, weight ``[M, out, in]`` maps ``x [M, ..., in]`` model by model."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return linear(x, self.weight, self.bias)


class LayerNorm(nn.LayerNorm):
    """``torch.nn.LayerNorm`` over the last axis; stacked, weight and bias ``[M, d]``."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.weight.dim() == 1:
            return super().forward(x)
        normed = F.layer_norm(x, self.normalized_shape, eps=self.eps)
        return torch.addcmul(_per_model(self.bias, x, 1), normed, _per_model(self.weight, x, 1))


class Embedding(nn.Embedding):
    """``torch.nn.Embedding``; stacked, weight ``[M, V, d]`` looks up ids ``[M, ...]`` model by model."""

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        if self.weight.dim() == 2:
            return super().forward(ids)
        # one lookup in the models' tables end to end, model m's ids offset by m tables (a faster backward than
        # indexing per model); an id out of range becomes one past the last table, so it raises, as for one model,
        # and never reads another model's row
        models, size = self.weight.shape[:2]
        first = torch.arange(0, models * size, size, device=ids.device).reshape(models, *([1] * (ids.dim() - 1)))
        return F.embedding(ids.where((ids >= 0) & (ids < size), models * size) + first, self.weight.flatten(0, 1))


def per_model(parameter: torch.Tensor, x: torch.Tensor, dims: int = 0) -> torch.Tensor:
    """A parameter of one model (``dims`` trailing axes) or of a stack (one more, leading), shaped to broadcast over
    ``x``, whose leading axis is the models' in a stack: how a model's own scalars (a learned temperature) meet its
    activations."""
    for name, tensor in (("parameter", parameter), ("x", x)):
        if not isinstance(tensor, torch.Tensor):
            raise TypeError(f"{name} must be a torch.Tensor, got {type(tensor).__name__}")
    dims = _validate.nonnegative_int("dims", dims)
    if parameter.dim() not in (dims, dims + 1):
        raise ValueError(f"parameter must have {dims} axes (one model) or {dims + 1} (a stack), got {parameter.dim()}")
    return parameter if parameter.dim() == dims else _per_model(parameter, x, dims)


def _models(models) -> list[nn.Module]:
    if isinstance(models, nn.Module) or not hasattr(models, "__iter__"):
        raise TypeError(f"models must be a sequence of torch modules, got {type(models).__name__}")
    models = list(models)
    if not models or not all(isinstance(m, nn.Module) for m in models):
        raise TypeError("models must be a non-empty sequence of torch modules")
    def layout(m: nn.Module) -> list:
        return ([(name, p.shape, p.dtype, p.device) for name, p in m.named_parameters()]
                + [(name, b.shape, b.dtype) for name, b in m.named_buffers()] + [repr(m)])

    if any(layout(m) != layout(models[0]) for m in models[1:]):
        raise ValueError("models must share one architecture: the same layers, parameters and buffers, with the same "
                         "shapes, dtypes and device")
    return models


def stack(models) -> nn.Module:
    """One module whose every parameter is the stack of ``models``' ``[M, ...]`` (copies: the models are left as they
    were). The models must share one architecture built from this module's layers (or ones without parameters)."""
    models = _models(models)
    stacked = copy.deepcopy(models[0])
    params = [dict(m.named_parameters()) for m in models]
    for name, _ in list(stacked.named_parameters()):
        owner, _, attribute = name.rpartition(".")
        module = stacked.get_submodule(owner)
        setattr(module, attribute, nn.Parameter(torch.stack([p[name].detach() for p in params])))
    return stacked


def unstack(stacked: nn.Module) -> list[nn.Module]:
    """The models of a :func:`stack`, each a module of its own with copies of its parameters."""
    if not isinstance(stacked, nn.Module):
        raise TypeError(f"stacked must be a torch module, got {type(stacked).__name__}")
    sizes = {p.shape[0] for p in stacked.parameters() if p.dim() > 0}
    if len(sizes) != 1:
        raise ValueError(f"stacked must have one leading model dimension on every parameter, got sizes {sorted(sizes)}")
    models = []
    for m in range(sizes.pop()):
        model = copy.deepcopy(stacked)
        for name, p in list(model.named_parameters()):
            owner, _, attribute = name.rpartition(".")
            setattr(model.get_submodule(owner), attribute, nn.Parameter(p.detach()[m].clone()))
        models.append(model)
    return models
