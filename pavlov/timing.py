"""Wall-clock timing of computations, fair to asynchronous devices and to shared machines.

Three precautions make timings on a busy machine comparable:

* a GPU returns control before its kernels finish, so the device is synchronised before the clock
  starts and before it stops;
* :func:`time_calls` times several computations round-robin, one sample of each per round, so that
  a burst of load slows all of them alike instead of corrupting one, and the median over the rounds
  ignores the bursts;
* with ``min_time``, each sample repeats a short call until it lasts that long (as ``timeit``'s
  autorange does): a call shorter than the operating system's time slice often runs without being
  preempted while a long one never does, which would make long calls look slower than they are.

(On a shared CPU, consider ``torch.set_num_threads(1)`` too: a descheduled second worker thread stalls
every operation.)

What no load can change is the arithmetic: :func:`multiply_adds` counts the multiply-adds of the
matrix products a computation runs, on tensors that carry shapes only.
"""

from __future__ import annotations

import math
import statistics
import time
from collections.abc import Callable, Hashable, Mapping
from typing import NamedTuple

import torch

from . import _validate
from .runtime import default_device


class Timing(NamedTuple):
    """Seconds per call: the median over the timed samples, every sample, and the calls per sample."""

    median: float
    times: tuple[float, ...]
    number: int = 1


def _synchronize(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    elif device.type == "mps":
        torch.mps.synchronize()


def _device(device) -> torch.device:
    if device is None:
        return default_device()
    if not isinstance(device, (str, torch.device)):
        raise TypeError(f"device must be a torch.device or a string such as 'cuda', got {type(device).__name__}")
    try:
        return torch.device(device)
    except RuntimeError as err:
        raise ValueError(f"device must name a torch device such as 'cpu' or 'cuda', got {device!r}") from err


def _seconds(fn: Callable[[], object], number: int, device: torch.device) -> float:
    """Seconds per call of ``number`` back-to-back calls of ``fn``."""
    _synchronize(device)          # no earlier work may leak into this sample
    start = time.perf_counter()
    for _ in range(number):
        fn()
    _synchronize(device)          # the calls' kernels must finish inside the sample
    return (time.perf_counter() - start) / number


def time_calls(calls: Mapping[Hashable, Callable[[], object]], *, repeats: int = 5, warmup: int = 1,
               min_time: float = 0.0, device=None) -> dict[Hashable, Timing]:
    """Time each ``fn()`` of ``calls`` round-robin: ``warmup`` untimed rounds, then ``repeats`` timed ones.

    Args:
        calls: named callables taking no arguments (wrap arguments with a ``lambda``).
        repeats: timed rounds (at least 1); each round takes one sample of every callable.
        warmup: untimed rounds first (at least 0, at least 1 with ``min_time``), so one-off costs
            (allocation, kernel compilation, caches) are not timed.
        min_time: seconds a sample should last at least; a call that the last warm-up round timed
            shorter is repeated ``ceil(min_time / t)`` times per sample. 0 (default): one call.
        device: the device the calls run on (default: :func:`pavlov.default_device`); CUDA and
            MPS are synchronised around each sample.

    Returns:
        ``{name: Timing(median, times, number)}``, in seconds per call, in the order of ``calls``.

    >>> x = torch.randn(256, 256, dtype=torch.float64)
    >>> t = time_calls({"matmul": lambda: x @ x, "sum": x.sum}, repeats=3, min_time=1e-3, device="cpu")
    >>> len(t["matmul"].times), t["sum"].median > 0, t["sum"].number >= 1
    (3, True, True)
    """
    if not isinstance(calls, Mapping) or not calls:
        raise TypeError(f"calls must be a non-empty mapping of names to callables, got {type(calls).__name__}")
    for name, fn in calls.items():
        if not callable(fn):
            raise TypeError(f"calls[{name!r}] must be callable, got {type(fn).__name__}")
    repeats = _validate.positive_int("repeats", repeats)
    if isinstance(warmup, bool) or not isinstance(warmup, int):
        raise TypeError(f"warmup must be an int, got {type(warmup).__name__}")
    if warmup < 0:
        raise ValueError(f"warmup must be a non-negative integer, got {warmup}")
    min_time = _validate.finite_float("min_time", min_time, nonnegative=True)
    if min_time > 0 and warmup < 1:
        raise ValueError("min_time needs warmup >= 1: the last warm-up round measures how long each call takes")
    device = _device(device)

    number, seconds = dict.fromkeys(calls, 1), {}
    for _ in range(warmup):
        seconds = {name: _seconds(fn, 1, device) for name, fn in calls.items()}
    if min_time > 0:
        number = {name: max(1, math.ceil(min_time / max(t, 1e-9))) for name, t in seconds.items()}
    times = {name: [] for name in calls}
    for _ in range(repeats):
        for name, fn in calls.items():
            times[name].append(_seconds(fn, number[name], device))
    return {name: Timing(statistics.median(ts), tuple(ts), number[name]) for name, ts in times.items()}


def time_call(fn: Callable[[], object], *, repeats: int = 5, warmup: int = 1, min_time: float = 0.0,
              device=None) -> Timing:
    """Time ``fn()``: ``warmup`` untimed calls, then ``repeats`` timed samples (see :func:`time_calls`).

    >>> time_call(lambda: torch.ones(8, device="cpu").sum(), repeats=3, device="cpu").median > 0
    True
    """
    if not callable(fn):
        raise TypeError(f"fn must be callable, got {type(fn).__name__}")
    return time_calls({"fn": fn}, repeats=repeats, warmup=warmup, min_time=min_time, device=device)["fn"]


def multiply_adds(fn: Callable[..., object], shapes: tuple[tuple[int, ...], ...], **kwargs) -> int:
    """The multiply-adds of the matrix products that ``fn(*tensors, **kwargs)`` runs, with one float32
    tensor of each shape in ``shapes``.

    The tensors live on the ``meta`` device, which carries shapes and no data: nothing is computed, and
    the count (torch's ``FlopCounterMode``, which sees every matrix product the code dispatches,
    ``mm``, ``bmm``, ``matmul`` and their fused forms, at two flops per multiply-add) is the same on
    every machine and under any load. Elementwise operations are not counted.

    >>> multiply_adds(torch.matmul, ((8, 4), (4, 3)))
    96
    """
    if not callable(fn):
        raise TypeError(f"fn must be callable, got {type(fn).__name__}")
    if (not isinstance(shapes, tuple) or not shapes
            or not all(isinstance(s, tuple) and s and all(type(n) is int and n > 0 for n in s) for s in shapes)):
        raise ValueError(f"shapes must be a tuple of one or more shapes, tuples of positive ints, got {shapes!r}")
    from torch.utils.flop_counter import FlopCounterMode

    tensors = [torch.empty(s, device="meta", dtype=torch.float32) for s in shapes]
    with FlopCounterMode(display=False) as counter:
        fn(*tensors, **kwargs)
    return counter.get_total_flops() // 2
