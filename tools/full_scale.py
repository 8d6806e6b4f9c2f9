"""Run chapters at the full scale and record what each used in ``pavlov/data/full_scale.json``.

``python -m tools.full_scale [ch1 ch4 ...] [--timeout SECONDS]`` runs the chapters named (default: all) one
after another, each in a fresh kernel with ``PAVLOV_SCALE=full``, as a reader runs them. For each it records
the time from its first cell to its last, the peak resident memory of its process on the host, the most
memory torch held on a CUDA device at once (:func:`pavlov.runtime.resources`), the machine
(:func:`pavlov.runtime.device_name`, the CPU cores), the date, and whether every cell ran (so every claim
held). A chapter stopped by ``--timeout`` (default 40 minutes) is recorded as such, with the time it had
run. Records of chapters not run are kept, so a GPU session can add the chapters a CPU could not finish.

``--work`` runs them with every op tallied (:mod:`tools.work`): the record gains the ops' count, arithmetic,
traffic and roofline times on this machine and on a T4, and its time is the run's without the tally's own
cost; when the chapter sets torch's number of threads, this CPU's rates are measured again. It goes to
``pavlov/data/work.json`` as well as to the full-scale records. Chapter 9's trainings run ``SAMPLE`` steps
and then ``2 SAMPLE``, and the rest are counted at what the second run's extra steps took (a step's work does
not depend on the weights), so that building a model and its first steps' warm-up are counted once.

The GPU page and the performance appendix show the records through :func:`pavlov.book.full_scale` and :func:`pavlov.book.work`, so they
need no repository files.
"""

from __future__ import annotations

import argparse
import datetime
import fcntl
import json
import os
import time
from pathlib import Path

import nbformat
from nbclient import NotebookClient
from nbclient.exceptions import CellTimeoutError, DeadKernelError

from pavlov.runtime import device_name

from .book_data import ROOT, chapters

RECORDS = ROOT / "pavlov" / "data" / "full_scale.json"
WORK_RECORDS = ROOT / "pavlov" / "data" / "work.json"
MARK = "pavlov-full-scale-record "
# appended to the chapter: what the run used, measured in the chapter's own process
PROBE = f"""
import json as _json, os as _os, pavlov as _pv
print({MARK!r} + _json.dumps({{**_pv.runtime.resources(), **_pv.runtime.run_info(),
                              "machine": _pv.runtime.device_name(), "cpus": _os.cpu_count()}}))
"""


# --work: prepended to the chapter, so that every op it runs is counted (tools/work.py); a sampled
# function runs SAMPLE repetitions and then 2 SAMPLE, and counts the rest at what the second run added
WORK_PRELUDE = f"""
import sys as _sys
_sys.path.insert(0, {str(ROOT)!r})
from tools import work as _work
_work_mode = _work.Work(_work.here())
_work_mode.measure_cost()
_work_mode.__enter__()
_set_num_threads = _work.torch.set_num_threads


def _rethreaded(count):
    # the chapter changes torch's threads (most do on a CPU): this CPU's rates change with them
    _set_num_threads(count)
    _work_mode.remeasure()


_work.torch.set_num_threads = _rethreaded


def _sampled(module, name, argument, sample):
    original = getattr(module, name)

    def counted(*args, **kwargs):
        repeats = kwargs[argument]
        if repeats <= 2 * sample:
            return original(*args, **kwargs)
        return _work_mode.extrapolated(lambda n: original(*args, **{{**kwargs, argument: n}}),
                                       sample, 2 * sample, repeats)

    setattr(module, name, counted)
"""
WORK_PROBE = f"""
_work_mode.__exit__(None, None, None)
print({MARK!r} + _json.dumps({{"machines": [m._asdict() for m in _work_mode.machines], **_work_mode.totals,
                              "wall": _work_mode.wall(), "tally_cost": _work_mode.cost,
                              "threads": _work.torch.get_num_threads()}}))
"""
# the functions that repeat one step many times, and the argument that counts the steps, by chapter
SAMPLED = {"ch9": [("pavlov.mqar", "train_together", "steps")],
           "ch13": [("pavlov.induction", "train_together", "steps")],
           "ch14": [("pavlov.facts", "train", "steps"), ("pavlov.facts", "train_layers", "steps")]}
SAMPLE = 12  # a multiple of chapter 9's cycle of six numbers of pairs


def chapter_id(path: Path) -> str:
    """``chapters/ch04_mlp_stores.ipynb`` -> ``ch4``."""
    return f"ch{int(path.stem[2:4])}"


def run(path: Path, timeout: float, work: bool = False) -> dict:
    """Execute one chapter at the full scale; its record (with ``work``, of its ops' work instead)."""
    nb = nbformat.read(path, as_version=4)
    nb.cells.append(nbformat.v4.new_code_cell(PROBE))
    sampled = SAMPLED.get(chapter_id(path), []) if work else []
    if work:
        nb.cells.insert(0, nbformat.v4.new_code_cell(WORK_PRELUDE + "".join(
            f"import {module}\n_sampled({module}, {name!r}, {argument!r}, {SAMPLE})\n"
            for module, name, argument in sampled)))
        nb.cells[-1].source += WORK_PROBE
    started, note = time.perf_counter(), ""
    # the timeout bounds the whole chapter: every cell gets what is left of it
    client = NotebookClient(nb, timeout_func=lambda cell: max(1, int(started + timeout - time.perf_counter())),
                            allow_errors=True, kernel_name="python3",
                            resources={"metadata": {"path": str(path.parent)}})
    try:
        client.execute(env={**os.environ, "PAVLOV_SCALE": "full", "PAVLOV_PROGRESS": "0"})
    except CellTimeoutError:
        note = f"ran past the {timeout:.0f} s limit"
    except (DeadKernelError, RuntimeError) as stopped:
        died = time.perf_counter() - started
        note = f"its kernel died after {died:.0f} s ({type(stopped).__name__}; out of memory?)"
    errors = [o["ename"] for cell in nb.cells if cell.cell_type == "code"
              for o in cell.get("outputs", []) if o.get("output_type") == "error"]
    probe = [json.loads(line[len(MARK):]) for o in nb.cells[-1].get("outputs", [])
             for line in o.get("text", "").splitlines() if line.startswith(MARK)]
    record = {k: v for line in probe for k, v in line.items()} if probe and not note else {
        "seconds": time.perf_counter() - started, "host_bytes": None, "device_bytes": None}
    if "wall" in record:  # timed under the tally: its own cost taken off (tools/work.py)
        record["seconds"] = record["wall"]
    if sampled:
        names = " and ".join(f"{module}.{name}" for module, name, _ in sampled)
        note = note or (f"{names} ran {SAMPLE} and {2 * SAMPLE} {sampled[0][2]} and counted the "
                        f"rest at what the last {SAMPLE} added")
    return {"chapter": chapter_id(path), "date": datetime.date.today().isoformat(), "machine": device_name(),
            "cpus": os.cpu_count(), "completed": not note and not errors, "note": note, "errors": errors,
            **record}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("chapter", nargs="*", help="chapters to run, e.g. ch1 ch4 (default: all)")
    parser.add_argument("--timeout", type=float, default=2400.0, help="seconds a chapter may run in all")
    parser.add_argument("--work", action="store_true",
                        help=f"count every op's work instead (tools/work.py), into {WORK_RECORDS.name}")
    args = parser.parse_args(argv)
    paths = [p for p in chapters() if not args.chapter or chapter_id(p) in args.chapter]
    for path in paths:
        record = run(path, args.timeout, work=args.work)
        files = [RECORDS, WORK_RECORDS] if args.work else [RECORDS]
        for file in files:
            with open(file, "a+") as lock:  # two runs may finish at once
                fcntl.flock(lock, fcntl.LOCK_EX)
                _merge(file, record)
        print(json.dumps(record), flush=True)


def _merge(file: Path, record: dict) -> None:
    """Put ``record`` in ``file`` in place of its chapter's last one."""
    records = {r["chapter"]: r for r in json.loads(file.read_text() or "[]")}
    records[record["chapter"]] = record
    ordered = sorted(records.values(), key=lambda r: int(r["chapter"][2:]))
    file.write_text(json.dumps(ordered, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
