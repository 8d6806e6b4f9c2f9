"""Half-precision inputs computed with float32 accumulation.

Float16 and bfloat16 keep about three significant digits: a state summed over thousands of steps in
either loses the signal (a bfloat16 decay ``0.99 * S`` rounds back to ``S``, so nothing is forgotten),
and some kernels (the triangular solve) do not exist for them. The sequence memories therefore run
half-precision inputs in float32 and return their results in the inputs' dtype.
"""

from __future__ import annotations

import functools

import torch

HALF = (torch.float16, torch.bfloat16)


def accumulator(dtype: torch.dtype) -> torch.dtype:
    """The dtype sums of ``dtype`` values run in: float32 for the half formats, ``dtype`` itself otherwise."""
    return torch.promote_types(dtype, torch.float32)


def _convert(x, source: torch.dtype, target: torch.dtype):
    """``x`` (a tensor, or a tuple of them, as BCM's state) with every ``source`` tensor cast to ``target``."""
    if isinstance(x, tuple):
        return tuple(_convert(item, source, target) for item in x)
    return x.to(target) if isinstance(x, torch.Tensor) and x.dtype == source else x


def _tensors(x):
    if isinstance(x, tuple):
        return [t for item in x for t in _tensors(item)]
    return [x] if isinstance(x, torch.Tensor) else []


def float32_accumulation(function):
    """Run ``function(q, k, v, **kwargs)`` in float32 when every tensor argument is of one half dtype.

    Results (a tensor, or a tuple of tensors and states) come back in that dtype. Mixed dtypes are
    passed through untouched, so the function's own check reports them.
    """
    @functools.wraps(function)
    def wrapper(q, k, v, **kwargs):
        dtypes = {t.dtype for t in _tensors((q, k, v, *kwargs.values()))}
        if len(dtypes) != 1 or (half := dtypes.pop()) not in HALF:
            return function(q, k, v, **kwargs)
        result = function(*(_convert(x, half, torch.float32) for x in (q, k, v)),
                          **{name: _convert(value, half, torch.float32) for name, value in kwargs.items()})
        return _convert(result, torch.float32, half)
    return wrapper
