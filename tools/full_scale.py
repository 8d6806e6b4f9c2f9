"""Run chapters at the full scale and record what each used in ``pavlov/data/full_scale.json``.

``python -m tools.full_scale [ch1 ch4 ...] [--timeout SECONDS]`` runs the chapters named (default: all) one
after another, each in a fresh kernel with ``PAVLOV_SCALE=full``, as a reader runs them. For each it records
the time from its first cell to its last, the peak resident memory of its process on the host, the most
memory torch held on a CUDA device at once (:func:`pavlov.runtime.resources`), the machine
(:func:`pavlov.runtime.device_name`, the CPU cores), the date, and whether every cell ran (so every claim
held). A chapter stopped by ``--timeout`` (default 40 minutes) is recorded as such, with the time it had
run. Records of chapters not run are kept, so a GPU session can add the chapters a CPU could not finish.

The GPU page shows the records through :func:`pavlov.book.full_scale`, so it needs no repository files.
"""

from __future__ import annotations

import argparse
import datetime
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
MARK = "pavlov-full-scale-record "
# appended to the chapter: what the run used, measured in the chapter's own process
PROBE = f"""
import json as _json, os as _os, pavlov as _pv
print({MARK!r} + _json.dumps({{**_pv.runtime.resources(), **_pv.runtime.run_info(),
                              "machine": _pv.runtime.device_name(), "cpus": _os.cpu_count()}}))
"""


def chapter_id(path: Path) -> str:
    """``chapters/ch04_mlp_stores.ipynb`` -> ``ch4``."""
    return f"ch{int(path.stem[2:4])}"


def run(path: Path, timeout: float) -> dict:
    """Execute one chapter at the full scale; its record."""
    nb = nbformat.read(path, as_version=4)
    nb.cells.append(nbformat.v4.new_code_cell(PROBE))
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
    probe = [line for o in nb.cells[-1].get("outputs", []) for line in o.get("text", "").splitlines()
             if line.startswith(MARK)]
    record = json.loads(probe[0][len(MARK):]) if probe and not note else {
        "seconds": time.perf_counter() - started, "host_bytes": None, "device_bytes": None}
    return {"chapter": chapter_id(path), "date": datetime.date.today().isoformat(), "machine": device_name(),
            "cpus": os.cpu_count(), "completed": not note and not errors, "note": note, "errors": errors,
            **record}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("chapter", nargs="*", help="chapters to run, e.g. ch1 ch4 (default: all)")
    parser.add_argument("--timeout", type=float, default=2400.0, help="seconds a chapter may run in all")
    args = parser.parse_args(argv)
    paths = [p for p in chapters() if not args.chapter or chapter_id(p) in args.chapter]
    records = {r["chapter"]: r for r in (json.loads(RECORDS.read_text()) if RECORDS.exists() else [])}
    for path in paths:
        record = run(path, args.timeout)
        records[record["chapter"]] = record
        ordered = sorted(records.values(), key=lambda r: int(r["chapter"][2:]))
        RECORDS.write_text(json.dumps(ordered, indent=1) + "\n", encoding="utf-8")
        print(json.dumps(record), flush=True)


if __name__ == "__main__":
    main()
