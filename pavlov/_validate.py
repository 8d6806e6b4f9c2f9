"""Input checks shared by every public function.

Each check raises ``TypeError`` or ``ValueError`` whose message names the parameter, the value
received and what was expected, so that a reader's mistake never becomes a wrong number.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Iterable, Sequence

import torch

FLOAT_DTYPES = (torch.float16, torch.bfloat16, torch.float32, torch.float64)


def tensor(name: str, x, *, min_dim: int = 1, finite: bool = True) -> torch.Tensor:
    """Check that ``x`` is a floating tensor of at least ``min_dim`` dimensions with finite entries."""
    if not isinstance(x, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {type(x).__name__}")
    if x.dtype not in FLOAT_DTYPES:
        raise TypeError(f"{name} must have a floating dtype, got {x.dtype}")
    if x.dim() < min_dim:
        raise ValueError(f"{name} must have at least {min_dim} dimensions, got shape {tuple(x.shape)}")
    if x.numel() == 0:
        raise ValueError(f"{name} must not be empty (every size positive), got shape {tuple(x.shape)}")
    if finite and x.device.type != "meta" and not _all_finite(x):
        raise ValueError(f"{name} must contain only finite values (found NaN or infinity)")
    return x


def _all_finite(x: torch.Tensor) -> bool:
    # NaN propagates through min and max, and an infinity is an extreme: two reductions, no mask copy
    low, high = torch.aminmax(x)
    return bool(torch.isfinite(low) & torch.isfinite(high))


def same_device_dtype(**tensors: torch.Tensor) -> None:
    """Check that all named tensors share one device and one dtype."""
    (first, ref), *rest = tensors.items()
    for name, x in rest:
        if x.device != ref.device:
            raise ValueError(f"{name} is on {x.device} but {first} is on {ref.device}; move them to one device")
        if x.dtype != ref.dtype:
            raise TypeError(f"{name} has dtype {x.dtype} but {first} has {ref.dtype}; use one dtype")


def positive_int(name: str, value) -> int:
    """Check that ``value`` is an integer >= 1 (bools rejected)."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an int, got {type(value).__name__}")
    if value < 1:
        raise ValueError(f"{name} must be a positive integer, got {value}")
    return value


def nonnegative_int(name: str, value) -> int:
    """Check that ``value`` is an integer >= 0 (bools rejected); a ValueError either way."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"{name} must be a non-negative int, got {value!r}")
    return value


def int_between(name: str, value, low: int, high: int, *, high_is: str | None = None) -> int:
    """``value``, an int from ``low`` to ``high`` inclusive, or a ValueError naming ``name`` (``high_is``: how the
    message names the upper bound, e.g. ``"pairs = 8"``)."""
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise ValueError(f"{name} must be an int from {low} to {high_is or high}, got {value!r}")
    return value


def seeds(name: str, value) -> tuple[int, ...]:
    """Check that ``value`` is a non-empty sequence of non-negative ints (the seeds of models trained together)."""
    if isinstance(value, (str, bytes)) or not hasattr(value, "__iter__"):
        raise TypeError(f"{name} must be a sequence of ints, got {type(value).__name__}")
    value = tuple(value)
    if not value or any(isinstance(s, bool) or not isinstance(s, int) or s < 0 for s in value):
        raise ValueError(f"{name} must name at least one seed, each a non-negative int, got {value}")
    return value


def finite_float(name: str, value, *, positive: bool = False, nonnegative: bool = False) -> float:
    """Check that ``value`` is a finite real number (optionally > 0 or >= 0)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):      # numpy scalars count
        raise TypeError(f"{name} must be a real number, got {type(value).__name__}")
    value = float(value)
    if not math.isfinite(value):
        raise ValueError(f"{name} must be finite, got {value}")
    if positive and value <= 0:
        raise ValueError(f"{name} must be positive, got {value}")
    if nonnegative and value < 0:
        raise ValueError(f"{name} must be non-negative, got {value}")
    return value


def probability(name: str, value) -> float:
    """Check that ``value`` is a probability, a real number in [0, 1]."""
    value = finite_float(name, value, nonnegative=True)
    if value > 1:
        raise ValueError(f"{name} must be a probability in [0, 1], got {value}")
    return value


def reals(name: str, values, **bounds) -> list[float]:
    """Check that ``values`` is a sequence of finite real numbers, each as in :func:`finite_float` with ``bounds``."""
    if isinstance(values, (str, bytes)) or not isinstance(values, Iterable):
        raise TypeError(f"{name} must be a sequence of real numbers, got {type(values).__name__}")
    return [finite_float(f"{name}[{i}]", v, **bounds) for i, v in enumerate(values)]


def generator(name: str, gen, device: torch.device) -> None:
    """Check that ``gen`` is ``None`` or a ``torch.Generator`` on the type of ``device``, where it will draw."""
    if gen is None:
        return
    if not isinstance(gen, torch.Generator):
        raise TypeError(f"{name} must be a torch.Generator or None, got {type(gen).__name__}")
    if gen.device.type != device.type:
        raise ValueError(f"{name} is on {gen.device} but device is {device}; create the generator there")


def instance(name: str, value, kind: type):
    """``value`` if it is a ``kind``, else a ``TypeError`` naming ``name`` and the type expected."""
    if not isinstance(value, kind):
        raise TypeError(f"{name} must be a {kind.__module__}.{kind.__qualname__}, got {type(value).__name__}")
    return value


def option(name: str, value, choices: Sequence[str]) -> str:
    """Check that ``value`` is one of the named ``choices``."""
    if value not in choices:
        raise ValueError(f"{name} must be one of {', '.join(map(repr, choices))}; got {value!r}")
    return value


def shape(name: str, x: torch.Tensor, expected: Sequence[int | None], *, against: str) -> None:
    """Check the trailing dimensions of ``x`` against ``expected`` (None matches anything)."""
    got = tuple(x.shape[-len(expected):]) if x.dim() >= len(expected) else tuple(x.shape)
    ok = x.dim() >= len(expected) and all(e is None or g == e for g, e in zip(got, expected))
    if not ok:
        want = tuple("*" if e is None else e for e in expected)
        raise ValueError(f"{name} has trailing shape {got}, expected {want} to match {against}")


def sequences(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> None:
    """Check queries and keys ``[..., T, d_k]`` and values ``[..., T, d_v]`` of one sequence memory."""
    for name, x in (("q", q), ("k", k), ("v", v)):
        tensor(name, x, min_dim=2)
    same_device_dtype(q=q, k=k, v=v)
    if k.shape != q.shape:
        raise ValueError(f"k must have the shape of q {tuple(q.shape)}, got {tuple(k.shape)}")
    if v.shape[:-1] != q.shape[:-1]:
        raise ValueError(f"v must have the leading shape of q {tuple(q.shape[:-1])} (batch..., T), got {tuple(v.shape)}")
