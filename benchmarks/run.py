r"""The benchmark suite: the write rules' chunkwise forms and the streaming softmax store, timed against peers.

``python -m benchmarks.run [--size tiny|cpu|gpu] [--out DIR] [--threads N] [--chunk-size C]`` writes
``results.json`` (a list of records, :data:`FIELDS`), ``machine.json`` (where and when it ran) and a
readable ``RESULTS.md`` into ``DIR`` (default: ``pavlov/data/benchmarks``, where the package ships them,
so that the appendix page reads them through :func:`pavlov.book.benchmarks` even when opened on its own).

* **Write rules** (:data:`benchmarks.peers.OPERATIONS`): the package's chunkwise form of each linear
  rule, forward (``fwd``) and forward plus the backward of the outputs' sum with respect to ``q, k, v``
  and the rates (``fwdbwd``), against the package's recurrent form and fla-core's recurrent and
  chunkwise references. Every peer's outputs (and, with the backward, gradients) are compared with
  the package's (``max_rel_err``, the largest :func:`pavlov.stats.relative_error` among them).
* **Softmax store** (:class:`pavlov.stores.SoftmaxStore`): a batch of queries read from ``n``
  memories; throughput in memories x queries per second and the peak memory a read adds to the
  keys and values, measured in a fresh process (CPU) or by the CUDA allocator.
* **Roofline**: plain ``torch.matmul`` products of comparable size, timed in the same run; the best
  one's GFLOP/s is every record's ``roofline_gflops``. The ``matmul/chunks`` record times a batch of
  chunk-sized (C x C) products, the size the chunkwise forms are made of: its fraction of the roofline
  bounds theirs.

Each comparison is timed round-robin in one :func:`pavlov.timing.time_calls` call (warm-up, repeats,
medians), so a burst of load on a shared machine slows both sides alike; ``ratio`` is the peer's
median time over ours (above 1: ours is faster). Recurrent peers step through time one pairing at a
time and are timed with fewer repeats, in their own call with ours. Everything runs in float32 on
:func:`pavlov.default_device`, with the number of torch threads fixed at the start (``--threads``;
two by default on a CPU). The sizes (:data:`SIZES`) leave out the slowest forms at the longest
lengths; their records hold None and a ``note`` that says why.
"""

from __future__ import annotations

import functools
import argparse
import datetime
import json
import math
import os
import platform
import re
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple

import torch

import pavlov as pv
from pavlov import _validate, stores, timing

from .peers import OPERATIONS, Operation, Peer

HERE = Path(__file__).resolve().parent
DTYPE = torch.float32
FIELDS = ("name", "shape", "time_s", "peer", "peer_time_s", "ratio", "max_rel_err", "gflops", "roofline_gflops",
          "roofline_fraction", "peak_mem_bytes", "kv_bytes", "throughput_per_s", "note")
"""The keys of every record; a field that does not apply to a record is None."""


class Size(NamedTuple):
    """The sizes of one run of the suite."""

    lengths: tuple[int, ...]             # sequence lengths T
    dims: tuple[int, ...]                # head dimensions d = d_k = d_v
    batch: int                           # B; batch x heads sequences run at once
    heads: int                           # H
    chunk_size: int
    max_length: dict                     # the longest T at which a pass runs at all, by pass
    recurrent_max: dict                  # the longest T at which recurrent peers run, by pass
    memories: tuple[int, ...]            # the softmax store's n
    queries: int                         # m, the queries read at once
    store_dim: int                       # d_k = d_v of the store
    roofline: tuple[tuple[tuple[int, ...], tuple[int, ...]], ...]   # matmul operand shapes
    repeats: int                         # timed rounds of the fast calls
    slow_repeats: int                    # timed rounds of calls with a recurrent peer
    min_time: float                      # seconds a sample of a fast call lasts at least


SIZES = {
    "tiny": Size(lengths=(64,), dims=(16,), batch=2, heads=4, chunk_size=16,
                 max_length={"fwd": 64, "fwdbwd": 64}, recurrent_max={"fwd": 64, "fwdbwd": 64},
                 memories=(2**14,), queries=256, store_dim=16,
                 roofline=(((8, 128, 128), (8, 128, 16)), ((256, 256), (256, 256)), ((32, 16, 16), (32, 16, 16))),
                 repeats=3, slow_repeats=2, min_time=0.005),
    # within about 10 minutes on one CPU thread: the backward of long sequences and the recurrent
    # forms' Python step per pairing cost the most, so they stop at shorter lengths
    "cpu": Size(lengths=(1024, 4096, 16384), dims=(64, 128), batch=2, heads=4, chunk_size=64,
                max_length={"fwd": 16384, "fwdbwd": 4096}, recurrent_max={"fwd": 4096, "fwdbwd": 1024},
                memories=(2**16, 2**18, 2**20, 2**22), queries=256, store_dim=64,
                roofline=(((8, 1024, 1024), (8, 1024, 64)), ((8, 1024, 1024), (8, 1024, 128)),
                          ((2048, 2048), (2048, 2048)), ((512, 64, 64), (512, 64, 64))),
                repeats=3, slow_repeats=2, min_time=0.05),
    "gpu": Size(lengths=(4096, 16384, 65536), dims=(64, 128), batch=4, heads=8, chunk_size=64,
                max_length={"fwd": 65536, "fwdbwd": 16384}, recurrent_max={"fwd": 16384, "fwdbwd": 4096},
                memories=(2**18, 2**20, 2**22, 2**24), queries=1024, store_dim=64,
                roofline=(((32, 4096, 4096), (32, 4096, 128)), ((8192, 8192), (8192, 8192)),
                          ((32768, 64, 64), (32768, 64, 64))),
                repeats=10, slow_repeats=2, min_time=0.05),
}
PASSES = ("fwd", "fwdbwd")
BACKWARD_FACTOR = 3
"""Forward plus backward counts three forwards of flops: each product's backward is two products of its size."""


def chunk_flops(op: Operation, batch: int, length: int, d_k: int, d_v: int, chunk_size: int) -> int:
    r"""Floating-point operations of the package's chunkwise form of ``op``, forward, over ``batch`` sequences.

    The matrix products of each chunk of :math:`C` steps, with 2 flops per multiply-add; a padded last
    chunk counts whole, and elementwise work (gates, decays, masks) is not counted:

    ==========================================  ================================  ==============
    product                                     flops per chunk                   rules
    ==========================================  ================================  ==============
    scores :math:`Q K^\top`                     :math:`2 C^2 d_k`                 all
    system :math:`K K^\top`                     :math:`2 C^2 d_k`                 delta rules
    triangular solve for :math:`[U', W]`        :math:`C (C - 1) (d_v + d_k)`     delta rules
    scores :math:`\times W`                     :math:`2 C^2 d_k`                 delta rules
    scores :math:`\times U`                     :math:`2 C^2 d_v`                 all
    state reads :math:`Q S`                     :math:`2 C d_k d_v`               all
    corrections :math:`W S`                     :math:`2 C d_k d_v`               delta rules
    state update :math:`K^\top U`               :math:`2 C d_k d_v`               all
    ==========================================  ================================  ==============

    (The products with :math:`C \times C` scores count whole, as they are computed, although only
    their lower triangle is used; the solve's unit lower-triangular system costs
    :math:`C (C - 1)/2` multiply-adds per right-hand column.) The delta rules are those that
    correct the write, ``delta`` and ``gated_delta``.

    >>> chunk_flops(OPERATIONS["linear"], 1, 64, 64, 64, 64)     # 2 C^2 (d_k + d_v) + 4 C d_k d_v
    2097152
    """
    c = chunk_size
    flops = 2 * c * c * (d_k + d_v) + 4 * c * d_k * d_v
    if op.rule in ("delta", "gated_delta"):
        flops += 4 * c * c * d_k + c * (c - 1) * (d_v + d_k) + 2 * c * d_k * d_v
    return batch * math.ceil(length / c) * flops


def store_flops(n_memories: int, n_queries: int, d_k: int, d_v: int) -> int:
    """Flops of a softmax-store read: per query the logits ``q K^T`` and the sum ``w V``, 2 per multiply-add."""
    return 2 * n_memories * n_queries * (d_k + d_v)


def record(name: str, shape: dict, time_s: float | None, **fields) -> dict:
    """One row of ``results.json``: every field of :data:`FIELDS`, None where it does not apply."""
    row = dict.fromkeys(FIELDS)
    row.update(name=name, shape=shape, time_s=time_s, **fields)
    if row["peer_time_s"] is not None and time_s:
        row["ratio"] = row["peer_time_s"] / time_s
    if row["gflops"] is not None and row["roofline_gflops"]:
        row["roofline_fraction"] = row["gflops"] / row["roofline_gflops"]
    return row


# --- the roofline -------------------------------------------------------------------------------

def roofline(size: Size, device: torch.device) -> list[dict]:
    """Records of plain ``torch.matmul`` products of ``size.roofline``'s shapes, timed round-robin."""
    gen = pv.generator(0, device)
    operands = [(torch.randn(a, generator=gen, device=device, dtype=DTYPE),
                 torch.randn(b, generator=gen, device=device, dtype=DTYPE)) for a, b in size.roofline]
    calls = {i: (lambda a=a, b=b: torch.matmul(a, b)) for i, (a, b) in enumerate(operands)}
    times = timing.time_calls(calls, repeats=size.repeats, min_time=size.min_time, device=device)
    rows = []
    for i, (a, b) in enumerate(size.roofline):
        flops = 2 * math.prod(a) * b[-1]
        form = "square" if len(a) == 2 else "chunks" if a[-1] == a[-2] == size.chunk_size else "batched"
        rows.append(record(f"matmul/{form}/fwd", {"a": list(a), "b": list(b)}, times[i].median,
                           gflops=flops / times[i].median / 1e9))
    best = max(row["gflops"] for row in rows)
    return [record(**{**row, "roofline_gflops": best}) for row in rows]


# --- the write rules ----------------------------------------------------------------------------

def rule_inputs(op: Operation, shape: dict, *, seed: int, device, requires_grad: bool):
    """``q, k, v [B, H, T, d]`` (unit vectors, as the delta rules expect) and the rates ``{name: [B, H, T]}``.

    Write rates :math:`\\alpha, \\beta` uniform in [0, 1); gates :math:`\\gamma` uniform in (0.9, 1]: a memory
    of tens of steps, whose products over a chunk of 64 stay far from underflow.
    """
    gen = pv.generator(seed, device)
    steps = (shape["B"], shape["H"], shape["T"])
    q, k, v = (pv.random_stimuli(*steps, shape[d], generator=gen, device=device, dtype=DTYPE)
               for d in ("d_k", "d_k", "d_v"))
    draw = {"alpha": lambda u: u, "beta": lambda u: u, "gamma": lambda u: 1 - 0.1 * u}
    rates = {name: draw[name](torch.rand(steps, generator=gen, device=device, dtype=DTYPE)) for name in op.rates}
    for x in (q, k, v, *rates.values()):
        x.requires_grad_(requires_grad)
    return q, k, v, rates


def _pass(forward: Callable, q, k, v, rates: dict, chunk_size: int, backward: bool) -> Callable[[], tuple]:
    """A call of ``forward``: its outputs; with ``backward``, also the gradients of their sum."""
    leaves = (q, k, v, *rates.values())

    def call():
        out = forward(q, k, v, rates, chunk_size)
        if not backward:
            return (out,)
        return (out.detach(), *torch.autograd.grad(out.sum(), leaves))
    return call


def _max_rel_err(ours: tuple, peer: tuple) -> float:
    return max(pv.stats.relative_error(a, b) for a, b in zip(ours, peer, strict=True))


def _compare(calls: dict, *, repeats: int, min_time: float, device) -> tuple[dict, dict]:
    """Time ``calls`` (``"ours"`` and peers) round-robin; the medians and each peer's error against ours.

    The last output of every call is kept, so the outputs compared are those of the calls timed.
    """
    outputs = {}

    def keep(name, fn):
        def call():
            outputs[name] = fn()
        return call
    times = timing.time_calls({name: keep(name, fn) for name, fn in calls.items()}, repeats=repeats,
                              min_time=min_time, device=device)
    errors = {name: _max_rel_err(outputs["ours"], outputs[name]) for name in calls if name != "ours"}
    return {name: t.median for name, t in times.items()}, errors


def benchmark_rule(name: str, op: Operation, shape: dict, backward: bool, size: Size, roof: float,
                   device) -> list[dict]:
    """Records of ``op``'s chunkwise form on ``shape``, one per peer: fast peers together, recurrent ones apart."""
    pass_name, length, chunk = PASSES[backward], shape["T"], shape["chunk_size"]
    notes = {peer.name: _skip_note(peer, shape, pass_name, size) for peer in op.peers}
    timed, errors = {}, {}
    if length <= size.max_length[pass_name]:
        q, k, v, rates = rule_inputs(op, shape, seed=length + shape["d_k"], device=device, requires_grad=backward)
        ours = _pass(op.forward, q, k, v, rates, chunk, backward)
        for recurrent, repeats, min_time in ((False, size.repeats, size.min_time), (True, size.slow_repeats, 0.0)):
            group = [p for p in op.peers if p.recurrent == recurrent and notes[p.name] is None]
            if group or not recurrent:        # ours is timed even when no fast peer runs
                calls = {"ours": ours, **{p.name: _pass(p.forward, q, k, v, rates, chunk, backward) for p in group}}
                medians, errs = _compare(calls, repeats=repeats, min_time=min_time, device=device)
                for p in medians:           # "ours" from the first group, which times it most often
                    timed.setdefault(p, (medians["ours"], medians[p]))
                errors.update(errs)
    flops = chunk_flops(op, shape["B"] * shape["H"], length, shape["d_k"], shape["d_v"], chunk)
    flops *= BACKWARD_FACTOR if backward else 1
    ours_alone = timed.get("ours", (None,))[0]
    rows = []
    for peer in op.peers:
        ours_s, peer_s = timed.get(peer.name, (ours_alone, None))
        rows.append(record(f"{name}/chunk/{pass_name}", shape, ours_s, peer=peer.name, peer_time_s=peer_s,
                           max_rel_err=errors.get(peer.name), note=notes[peer.name],
                           gflops=flops / ours_s / 1e9 if ours_s else None, roofline_gflops=roof))
    return rows


def _skip_note(peer: Peer, shape: dict, pass_name: str, size: Size) -> str | None:
    """Why ``peer`` does not run on ``shape`` (None: it runs)."""
    if shape["T"] > size.max_length[pass_name]:
        return f"not run: {pass_name} above T = {size.max_length[pass_name]} (time budget)"
    if not peer.supports(shape["T"], shape["chunk_size"]):
        return f"not run: T must be a multiple of {peer.multiple(shape['chunk_size'])}"
    if peer.recurrent and shape["T"] > size.recurrent_max[pass_name]:
        return f"not run: recurrent {pass_name} above T = {size.recurrent_max[pass_name]} (time budget)"
    return None


# --- the softmax store --------------------------------------------------------------------------

def _store(n_memories: int, n_queries: int, dim: int, device):
    """A softmax store of ``n_memories`` unit keys and values in ``dim`` dimensions; its first ``n_queries`` keys."""
    keys, values = stores.random_memories(1, n_memories, dim, seed=n_memories, device=device, dtype=DTYPE)
    store = stores.build("softmax", keys, values)
    queries = keys[..., :n_queries, :]
    targets = torch.arange(n_queries, device=device).expand(queries.shape[:-1])
    return store, queries, targets


def _high_water_bytes() -> int:
    """This process's peak resident memory so far (``VmHWM``, Linux)."""
    return 1024 * int(re.search(r"VmHWM:\s*(\d+)\s*kB", Path("/proc/self/status").read_text()).group(1))


def store_peak_cpu(n_memories: int, n_queries: int, dim: int) -> int:
    """The peak resident memory a read adds to a softmax store's keys and values, in bytes (in a fresh process)."""
    store, queries, targets = _store(n_memories, n_queries, dim, torch.device("cpu"))
    # A first read loads the libraries' code, whose pages count as resident memory too; its buffers
    # go back to the system (see store_peak_bytes), so the second read cannot reuse them unseen.
    store.read(queries, targets)
    # forget the peak of drawing the memories (Linux: "5" resets VmHWM to the current resident size)
    Path("/proc/self/clear_refs").write_text("5")
    before = _high_water_bytes()
    store.read(queries, targets)
    return _high_water_bytes() - before


def store_peak_bytes(n_memories: int, size: Size, threads: int, device) -> int | None:
    """The peak memory a read of the softmax store adds to its keys and values (CUDA: allocator; CPU: a subprocess).

    None on other devices, whose memory neither measure sees.
    """
    if device.type not in ("cpu", "cuda"):
        return None
    if device.type == "cuda":
        store, queries, targets = _store(n_memories, size.queries, size.store_dim, device)
        torch.cuda.synchronize(device)
        torch.cuda.reset_peak_memory_stats(device)
        before = torch.cuda.memory_allocated(device)
        store.read(queries, targets)
        torch.cuda.synchronize(device)
        return torch.cuda.max_memory_allocated(device) - before
    # A fresh process: this one's high-water mark holds every earlier benchmark. A fixed mmap threshold
    # (glibc) returns every freed buffer to the system, so no earlier buffer's pages are reused unseen
    # and the resident size follows the buffers alive.
    code = (f"import torch; torch.set_num_threads({threads}); from benchmarks.run import store_peak_cpu; "
            f"print(store_peak_cpu({n_memories}, {size.queries}, {size.store_dim}))")
    done = subprocess.run([sys.executable, "-c", code], cwd=HERE.parent, capture_output=True, text=True, check=True,
                          env={**os.environ, "MALLOC_MMAP_THRESHOLD_": str(2**16)})
    return int(done.stdout.split()[-1])


def benchmark_store(n_memories: int, size: Size, roof: float, threads: int, device) -> dict:
    """The record of a softmax-store read of ``size.queries`` queries over ``n_memories`` memories."""
    store, queries, targets = _store(n_memories, size.queries, size.store_dim, device)
    seconds = timing.time_call(functools.partial(store.read, queries, targets), repeats=size.repeats, min_time=size.min_time,
                               device=device).median
    del store, queries, targets
    shape = {"n": n_memories, "m": size.queries, "d_k": size.store_dim, "d_v": size.store_dim}
    return record("softmax_store/stream/fwd", shape, seconds,
                  gflops=store_flops(n_memories, size.queries, size.store_dim, size.store_dim) / seconds / 1e9,
                  roofline_gflops=roof, throughput_per_s=n_memories * size.queries / seconds,
                  kv_bytes=2 * n_memories * size.store_dim * DTYPE.itemsize,
                  peak_mem_bytes=store_peak_bytes(n_memories, size, threads, device))


# --- the report ---------------------------------------------------------------------------------

def machine(device, threads: int, size_name: str, chunk_size: int) -> dict:
    """Where and when the suite ran."""
    return {"device": pv.runtime.device_name(device), "threads": threads, "torch": torch.__version__,
            "python": platform.python_version(), "date": datetime.datetime.now().isoformat(timespec="seconds"),
            "size": size_name, "chunk_size": chunk_size, "dtype": str(DTYPE).removeprefix("torch.")}


def _fmt(x, spec: str = ".3g") -> str:
    return "n/a" if x is None else format(x, spec)


def _ms(seconds: float | None) -> float | None:
    return None if seconds is None else seconds * 1e3


def _mib(size: int | None) -> float | None:
    return None if size is None else size / 2**20


def _table(header: list[str], rows: list[list[str]]) -> list[str]:
    return ["| " + " | ".join(header) + " |", "|" + "---|" * len(header), *("| " + " | ".join(r) + " |" for r in rows)]


def markdown(records: list[dict], info: dict, size: Size) -> str:
    """``RESULTS.md``: the machine, the roofline, the write rules against their peers, the softmax store."""
    lines = ["# Benchmark results", "",
             f"Device {info['device']}; {info['threads']} thread(s); torch {info['torch']}; Python {info['python']}; "
             f"{info['date']}; size `{info['size']}`, {info['dtype']}, chunk size {info['chunk_size']}; "
             f"the whole run took {info['wall_s']:.0f} s.", "",
             "Times are medians of round-robin samples (`pavlov.timing.time_calls`); ratio = peer time / our time "
             "(above 1: ours is faster); relative error = rms(peer - ours) / rms(ours), the largest over the "
             "outputs and, for fwdbwd, the gradients with respect to q, k, v and the rates.", "",
             "## Roofline: plain matmuls", ""]
    lines += _table(["record", "shapes", "time (ms)", "GFLOP/s"],
                    [[r["name"], f"{r['shape']['a']} @ {r['shape']['b']}", _fmt(_ms(r["time_s"]), ".4g"),
                      _fmt(r["gflops"])]
                     for r in records if r["name"].startswith("matmul/")])
    lines += ["", "## Write rules: chunkwise forms against their peers", ""]
    rule_rows = [r for r in records if "/chunk/" in r["name"]]
    lines += _table(["record", "T", "d", "ours (ms)", "GFLOP/s", "of roofline", "peer", "peer (ms)", "ratio",
                     "rel. error"],
                    [[r["name"], str(r["shape"]["T"]), str(r["shape"]["d_k"]), _fmt(_ms(r["time_s"]), ".4g"),
                      _fmt(r["gflops"]), _fmt(r["roofline_fraction"], ".1%"), r["peer"],
                      _fmt(_ms(r["peer_time_s"]), ".4g"), _fmt(r["ratio"]), _fmt(r["max_rel_err"], ".1e")]
                     for r in rule_rows])
    lines += ["", f"Each comparison: one warm-up round, then {size.repeats} timed rounds with the chunkwise peers, "
              f"{size.slow_repeats} with the recurrent ones, which step through time one pairing at a time (and "
              "whose backward keeps every step's state). Ours (ms) and its GFLOP/s are from the round-robin call "
              "that timed that row's peer."]
    notes = sorted({r["note"] for r in rule_rows if r["note"]})
    if notes:
        lines += ["", "Not run (n/a above), to keep the whole run short: "
                  + "; ".join(note.removeprefix("not run: ") for note in notes) + "."]
    lines += ["", "## Softmax store: streaming reads", ""]
    lines += _table(["record", "n", "queries", "keys+values (MiB)", "time (ms)", "memories x queries / s", "GFLOP/s",
                     "of roofline", "peak extra memory (MiB)"],
                    [[r["name"], str(r["shape"]["n"]), str(r["shape"]["m"]), _fmt(_mib(r["kv_bytes"]), ".4g"),
                      _fmt(_ms(r["time_s"]), ".4g"), _fmt(r["throughput_per_s"]), _fmt(r["gflops"]),
                      _fmt(r["roofline_fraction"], ".1%"), _fmt(_mib(r["peak_mem_bytes"]), ".4g")]
                     for r in records if r["name"].startswith("softmax_store/")])
    return "\n".join(lines) + "\n"


def run(size_name: str, out: Path, *, threads: int, chunk_size: int | None = None, log=print) -> list[dict]:
    """Run the suite at ``size_name`` and write ``results.json``, ``machine.json`` and ``RESULTS.md`` into ``out``."""
    start = time.perf_counter()

    def say(line: str) -> None:
        log(f"[{time.perf_counter() - start:4.0f} s] {line}")

    size = SIZES[_validate.option("size_name", size_name, tuple(SIZES))]
    torch.set_num_threads(_validate.positive_int("threads", threads))
    device = pv.default_device()
    chunk = size.chunk_size if chunk_size is None else _validate.positive_int("chunk_size", chunk_size)
    records = roofline(size, device)
    roof = records[0]["roofline_gflops"]
    say(f"roofline: {roof:.1f} GFLOP/s ({threads} thread(s), {device})")
    for backward in (False, True):
        for name, op in OPERATIONS.items():
            for length in size.lengths:
                for d in size.dims:
                    shape = {"B": size.batch, "H": size.heads, "T": length, "d_k": d, "d_v": d, "chunk_size": chunk}
                    rows = benchmark_rule(name, op, shape, backward, size, roof, device)
                    records += rows
                    say(f"{rows[0]['name']} T={length} d={d}: ours {_fmt(_ms(rows[0]['time_s']))} ms; " + ", ".join(
                        f"{r['peer'].split(':', 1)[1]} x{_fmt(r['ratio'])}" for r in rows))
    for n in size.memories:
        records.append(benchmark_store(n, size, roof, threads, device))
        say(f"softmax store n={n}: {_fmt(_ms(records[-1]['time_s']))} ms, "
            f"peak +{_fmt(_mib(records[-1]['peak_mem_bytes']))} MiB")
    info = {**machine(device, threads, size_name, chunk), "wall_s": time.perf_counter() - start}
    out.mkdir(parents=True, exist_ok=True)
    (out / "results.json").write_text(json.dumps(records, indent=1) + "\n")
    (out / "machine.json").write_text(json.dumps(info, indent=1) + "\n")
    (out / "RESULTS.md").write_text(markdown(records, info, size))
    say(f"wrote {out}/results.json, machine.json and RESULTS.md in {info['wall_s']:.0f} s")
    return records


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.run", description=__doc__.splitlines()[0])
    parser.add_argument("--size", choices=tuple(SIZES), default=None,
                        help="tiny (a smoke test), cpu, gpu; default: gpu on CUDA, else cpu")
    parser.add_argument("--out", type=Path, default=HERE.parent / "pavlov" / "data" / "benchmarks",
                        help="folder for the results (default: pavlov/data/benchmarks/, shipped with the package)")
    # Two threads by default on a CPU, the cores of the machines the book is tested on. On a machine
    # shared with other jobs a second worker thread can be descheduled, which stalls every small
    # operation of the recurrent forms (tens of times slower): use --threads 1 there.
    parser.add_argument("--threads", type=int, default=None,
                        help="torch threads (default: 2 on a CPU, torch's default on a GPU machine)")
    parser.add_argument("--chunk-size", type=int, default=None, help="chunk length of the chunkwise forms")
    args = parser.parse_args(argv)
    cuda = pv.default_device().type == "cuda"
    size = args.size or ("gpu" if cuda else "cpu")
    threads = args.threads or (torch.get_num_threads() if cuda else min(2, os.cpu_count() or 1))
    run(size, args.out, threads=threads, chunk_size=args.chunk_size, log=lambda s: print(s, flush=True))


if __name__ == "__main__":
    main(sys.argv[1:])
