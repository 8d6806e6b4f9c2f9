r"""Feature maps and output normalisations shared by the conditioning circuit and attention.

Feature maps (the source's :math:`f` on test stimuli and CS, :math:`g` on the US; :math:`\phi` in
linear attention) act on the last dimension. Output normalisations act on each retrieved vector:

* ``"none"``: :math:`o = r`;
* ``"rms"`` (RMSNorm without gain): :math:`o = r / \sqrt{\overline{r^2} + \epsilon}`;
* ``"layer"`` (LayerNorm without gain or bias):
  :math:`o = (r - \bar r) / \sqrt{\overline{(r - \bar r)^2} + \epsilon}`.

With :math:`\epsilon = 0` both norms are invariant to a positive rescaling of :math:`r`, a fact
chapter 2 uses.
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from . import _validate

NORMS = ("none", "rms", "layer")


def identity(x: torch.Tensor) -> torch.Tensor:
    """The identity map, :math:`f(x) = x`."""
    return x


def elu_plus_one(x: torch.Tensor) -> torch.Tensor:
    r"""The positive feature map of Katharopoulos et al. (2020), :math:`\phi(x) = \mathrm{elu}(x) + 1`.

    Computed as :math:`e^{\min(x, 0)} + \max(x, 0)`, the same function, because ``elu(x) + 1``
    rounds to exactly 0 for very negative ``x`` and would break the positivity the denominator needs.
    """
    _validate.tensor("x", x, min_dim=0, finite=False)
    return torch.exp(x.clamp(max=0)) + x.clamp(min=0)


FEATURE_MAPS: dict[str, Callable[[torch.Tensor], torch.Tensor]] = {
    "identity": identity,
    "elu+1": elu_plus_one,
    "relu": torch.relu,
    "exp": torch.exp,
    "tanh": torch.tanh,
}


def feature_map(name_or_fn, *, parameter: str = "feature_map") -> Callable[[torch.Tensor], torch.Tensor]:
    """Return a feature map given by name (a key of :data:`FEATURE_MAPS`), as a callable, or ``None`` (identity).

    ``parameter`` is the caller's name for the argument, used in the error message.
    """
    if name_or_fn is None:
        return identity
    if callable(name_or_fn):
        return name_or_fn
    _validate.option(parameter, name_or_fn, tuple(FEATURE_MAPS))
    return FEATURE_MAPS[name_or_fn]


def output_norm(r: torch.Tensor, norm: str = "none", eps: float = 1e-6) -> torch.Tensor:
    """Normalise each retrieved vector ``r`` ``[..., d_v]`` by ``norm`` (``"none"``, ``"rms"``, ``"layer"``)."""
    _validate.tensor("r", r)
    _validate.option("norm", norm, NORMS)
    eps = _validate.finite_float("eps", eps, nonnegative=True)
    if norm == "none":
        return r
    if norm == "layer":
        r = r - r.mean(dim=-1, keepdim=True)
    return r * torch.rsqrt(r.pow(2).mean(dim=-1, keepdim=True) + eps)
