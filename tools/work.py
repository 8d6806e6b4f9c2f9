"""Count the work a computation asks of torch, op by op, and time it on a machine's roofline.

A chapter's full-scale time on a GPU nobody here has is estimated from what the chapter asks of
torch. :class:`Work` sits under autograd (a ``TorchDispatchMode``) and sees every kernel-level op of
the forward and backward passes. For each op it takes

* the floating-point operations of the products (``torch.utils.flop_counter``'s formulas; the
  elementwise ops and reductions are bounded by their memory traffic instead),
* the bytes it reads and writes (the distinct elements of every tensor argument and result; a view
  moves none),

and charges each :class:`Machine` the op's roofline time: the largest of its arithmetic at the
machine's rate for the op's dtype, its traffic at the machine's memory bandwidth, and the host's
cost of issuing one op. The sum is what the ops take at the machine's peaks when none overlap; a
real run takes longer (kernels below peak, the chapter's own Python, memory first touched), and
:func:`this_cpu` measures the same rates here so that the model can be checked against this CPU's
own time for the same run. The first machine is the one the tally runs on: each other machine's
*estimate* (``"<name>, estimated"``) sums every op's time here scaled by the ratio of its roofline time
on that machine to its roofline time here, so that each op is assumed as far from the other machine's
peaks as it ran from this one's.
"""

from __future__ import annotations

import functools
import time
from typing import NamedTuple

import torch
from torch.utils._python_dispatch import TorchDispatchMode, _get_current_dispatch_mode_stack
from torch.utils._pytree import tree_flatten
from torch.utils.flop_counter import flop_registry


class Machine(NamedTuple):
    name: str
    flops: dict  # floating-point operations per second, by dtype name (float32 for any other)
    bandwidth: float  # bytes per second to and from memory
    overhead: float  # seconds the host takes to issue one op

    def seconds(self, flops: float, dtype: torch.dtype, nbytes: float) -> float:
        rate = self.flops.get(str(dtype).removeprefix("torch."), self.flops["float32"])
        return max(self.overhead, flops / rate, nbytes / self.bandwidth)


def t4(overhead: float) -> Machine:
    """An NVIDIA T4 (Colab's free GPU) at its datasheet peaks: 8.1 TFLOP/s in float32, 1/32 of that
    in float64, 65 TFLOP/s in half precision, 320 GB/s; issuing an op costs the host ``overhead``
    (this CPU's) and a CUDA launch, about 5 microseconds."""
    return Machine("NVIDIA T4 (datasheet peaks)", {"float32": 8.1e12, "float64": 8.1e12 / 32,
                                                   "float16": 65e12, "bfloat16": 65e12}, 320e9, overhead + 5e-6)


def _best_seconds(fn, repeats: int = 5) -> float:
    fn()
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def _tiny_steps(count: int = 300) -> None:
    """``count`` forward and backward passes of a layer of width 4: little but issuing ops."""
    x, w = torch.ones(4, 4), torch.ones(4, 4, requires_grad=True)
    for _ in range(count):
        (x @ w).tanh().sum().backward()


def this_cpu() -> Machine:
    """This CPU's rates, measured: products of 2048 x 2048 matrices in float32 and float64, a
    256 MiB copy, and the time per op of a one-number model's forward and backward passes (the cost
    of issuing an op through autograd)."""
    rates = {}
    for dtype in (torch.float32, torch.float64):
        a = torch.randn(2048, 2048, dtype=dtype)
        rates[str(dtype).removeprefix("torch.")] = 2 * 2048**3 / _best_seconds(functools.partial(torch.matmul, a, a))
    x, y = torch.empty(2**26), torch.empty(2**26)
    bandwidth = 2 * x.nbytes / _best_seconds(lambda: y.copy_(x))
    with Work([]) as tally:
        _tiny_steps()
    overhead = _best_seconds(_tiny_steps) / tally.totals["ops"]
    from pavlov.runtime import device_name

    return Machine(device_name(), rates, bandwidth, overhead)


def here() -> list[Machine]:
    """This CPU, measured at torch's current number of threads, and a T4 fed by it."""
    cpu = this_cpu()
    return [cpu, t4(cpu.overhead)]


def _extent(t: torch.Tensor) -> int:
    """Bytes of distinct elements a tensor covers (a broadcast view covers fewer than it shows)."""
    if t.numel() == 0:
        return 0
    span = 1 + sum((size - 1) * abs(stride) for size, stride in zip(t.shape, t.stride()))
    return min(t.numel(), span) * t.element_size()


class Work(TorchDispatchMode):
    """Tally ops, arithmetic, traffic, the seconds the ops took here (``measured``; ``tally``: the
    seconds this tally spent on them), each machine's roofline seconds and, for every machine after the
    first (this one), the ops' estimated seconds there while active."""

    def __init__(self, machines: list[Machine]):
        super().__init__()
        self.machines = machines
        self.totals = dict.fromkeys(["ops", "flops", "bytes", "measured", "tally", *(m.name for m in machines),
                                     *(f"{m.name}, estimated" for m in machines[1:])], 0.0)
        self.started, self.extra, self.cost = time.perf_counter(), 0.0, 0.0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        start = time.perf_counter()
        out = func(*args, **kwargs)
        done = time.perf_counter()
        self.totals["measured"] += done - start
        tensors = [t for t in tree_flatten((args, kwargs, out))[0] if isinstance(t, torch.Tensor)]
        formula = flop_registry.get(func.overloadpacket)
        flops = formula(*args, **kwargs, out_val=out) if formula else 0
        nbytes = 0 if func.is_view else sum(_extent(t) for t in tensors)
        dtype = tensors[-1].dtype if tensors else torch.float32
        self.totals["ops"] += 1
        self.totals["flops"] += flops
        self.totals["bytes"] += nbytes
        roofline = [machine.seconds(flops, dtype, nbytes) for machine in self.machines]
        for machine, seconds in zip(self.machines, roofline):
            self.totals[machine.name] += seconds
        for machine, seconds in zip(self.machines[1:], roofline[1:]):
            # the op as far from this machine's roofline as it ran from the first's
            self.totals[f"{machine.name}, estimated"] += (done - start) * seconds / roofline[0]
        self.totals["tally"] += time.perf_counter() - done
        return out

    def measure_cost(self) -> None:
        """Measure the seconds that passing each op through this tally adds beyond the tally's own
        bookkeeping (which it times as it goes), so that :meth:`wall` can take both off."""
        plain = _best_seconds(_tiny_steps)
        before = dict(self.totals)
        with self:
            start = time.perf_counter()
            _tiny_steps()
            counted = time.perf_counter() - start
        ops, tally = self.totals["ops"] - before["ops"], self.totals["tally"] - before["tally"]
        self.totals = before
        self.cost = max(0.0, counted - tally - plain) / ops
        self.started = time.perf_counter()

    def remeasure(self, measure=here) -> None:
        """Charge later ops at the rates of ``measure()`` (machines of the same names as before): a run
        that changes torch's number of threads measures this CPU again. The time measuring takes, and its
        ops, are left out of the tally, active or not."""
        start = time.perf_counter()
        active = self in _get_current_dispatch_mode_stack()
        if active:
            self.__exit__(None, None, None)
        try:
            machines = measure()
        finally:
            if active:
                self.__enter__()
        if [m.name for m in machines] != [m.name for m in self.machines]:
            raise ValueError(f"measure must return machines named {[m.name for m in self.machines]}")
        self.machines = machines
        self.extra -= time.perf_counter() - start

    def extrapolated(self, run, short: int, long: int, total: int):
        """``run(long)``, counted (its ops and its time) as if it had been ``run(total)``. What each
        repetition adds is measured as ``run(long)`` less ``run(short)``, so that what the run does once
        (building a model, the first repetitions' warm-up) is counted once; ``run(short)`` itself is not
        counted."""
        if not 0 < short < long <= total:
            raise ValueError(f"need 0 < short < long <= total, got {short}, {long}, {total}")
        start, before = time.perf_counter(), dict(self.totals)
        run(short)
        middle, shorter = time.perf_counter(), dict(self.totals)
        result = run(long)
        more = (total - long) / (long - short)  # the repetitions to add, in units of long - short
        for key, value in self.totals.items():
            first, second = shorter[key] - before[key], value - shorter[key]
            self.totals[key] = before[key] + second + more * (second - first)
        first, second = middle - start, time.perf_counter() - middle
        self.extra += more * (second - first) - first
        return result

    def wall(self) -> float:
        """Seconds since :meth:`measure_cost`, as the run would have taken them untallied (and with
        every sampled repetition run)."""
        elapsed = time.perf_counter() - self.started + self.extra
        return elapsed - self.totals["tally"] - self.totals["ops"] * self.cost
