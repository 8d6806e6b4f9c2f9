"""One execution of each page per environment: the test executes it, the HTML and the PDF show that execution.

Every notebook page of the book (``_toc.yml``) is executed by ``pytest`` (this module's :class:`PageItem`,
collected by the root ``conftest.py``) exactly as the book executes it: in a fresh kernel of this
environment, in the page's folder, with :data:`pavlov.runtime.BOOK` set. A cell that raises (a claim that
fails) fails the test, and so does a page that takes longer than its budget (:data:`BUDGETS`). The executed
page is then stored in the book's jupyter-cache (``_build/.jupyter_cache``), from which ``make html`` and
``make pdf`` take it (``execute_notebooks: cache``) instead of executing it again. A page missing from the
cache is executed by the book build itself, as before.

The cache is only as good as what it was made from. Jupyter-cache matches a page by its code cells; everything
else an execution depends on (the package, the pinned environment, the scale, the seed, the device) is folded
into one :func:`stamp`, and a cache made under another stamp is emptied before it is used, by the tests and by
the book build alike (:func:`open_cache`). The claims ledger and the performance appendix's table of times are read from
the outputs of the executions the pages show (:func:`pavlov.claims.table` writes them into the chapter's last
output while the book is built), so they cannot come from another run.

``python -m tools.execute chapters/ch09_mqar.ipynb ...`` executes pages and prints each cell's time.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import platform
import shutil
import sys
import tempfile
import time
from pathlib import Path

import nbformat
import pytest
from filelock import FileLock
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError

from .book_data import chapters, toc_files

ROOT = Path(__file__).resolve().parents[1]
CACHE = ROOT / "_build" / ".jupyter_cache"
STAMP = "pavlov-stamp.json"
CELL_TIMEOUT_S = 600

# --- the time budget -------------------------------------------------------------------------------------------
# `.ci/run` on a fresh clone must end within CI_LIMIT_S on CI's machine (2 cores). Each page may take its budget to
# execute at the quick scale there, in `make test`'s pinned environment, while the Colab emulation runs beside it
# on the other core (a test fails beyond it): at most MAX_BUDGET_S, and what it took in a fresh clone's `make test`
# on such a machine (runs of `.ci/run` differed by up to 15%) with 30% more for room, rounded up to 5 s (at least
# 10 s).
CI_LIMIT_S = 20 * 60
MAX_BUDGET_S = 90
BUDGETS = {
    "gpu.ipynb": 10, "chapters/ch01_conditioning.ipynb": 15, "chapters/ch02_linear_attention.ipynb": 25,
    "chapters/ch03_capacity.ipynb": 35, "chapters/ch04_mlp_stores.ipynb": 20,
    "chapters/ch05_softmax_store.ipynb": 35, "chapters/ch06_stacking.ipynb": 40,
    "chapters/ch07_learning_rules.ipynb": 20, "chapters/ch08_conditioning.ipynb": 25,
    "chapters/ch09_mqar.ipynb": 90, "chapters/ch10_noisy_cues.ipynb": 55, "chapters/ch11_hopfield.ipynb": 35,
    "chapters/ch12_channel.ipynb": 35, "chapters/ch13_induction.ipynb": 50, "chapters/ch14_facts.ipynb": 50,
    "appendix/benchmarks.ipynb": 10,
}
# What decides an execution besides the page's own code cells (the cache's key): these files, and (stamp()) the
# installed packages, the interpreter, pavlov's switches and the device
STAMPED = ("pavlov", "tools", "_toc.yml", "_config.yml")
# Pages that run on the worker of the Colab emulation (tests/test_colab.py's xdist group) rather than beside it:
# the heaviest, so that its two executions, in the pinned environment and in Colab's, never run at the same time.
BESIDE_COLAB = ("chapters/ch09_mqar.ipynb",)
# The other stages of `.ci/run`, as it prints them, with what each may take on such a machine (measured on a fresh
# clone, with room). The tests' stage runs on two workers: the Colab emulation of every page on one (with the pages of
# BESIDE_COLAB in the pinned environment), the unit tests and the other pages on the other, which also takes unit tests
# from the first when it is ahead (xdist's loadgroup). It takes the longer of the Colab worker's share and half of all
# the work (:func:`tests_budget`). A page's execution in Colab's environment costs what it costs in the pinned one plus
# its %pip install of pavlov (COLAB_INSTALL_S; 3 s measured on the GPU page). The browser tests check every page at
# two widths: 222 s for 16 pages, 14 s a page (BROWSER_PAGE_S, with room).
TESTS_STAGE = "tests: unit tests and every page, in both environments"
UNIT_TESTS_S = 240
COLAB_INSTALL_S = 5
BROWSER_PAGE_S = 18
STAGE_BUDGETS_S = {"setup: both environments": 90, "waiting for Debian's packages": 30, "HTML": 20, "PDF": 35}


def budget(page: str) -> int:
    """The seconds ``page`` (``chapters/ch09_mqar.ipynb``) may take to execute at the quick scale on CI's machine."""
    return BUDGETS[page]


def chapter_budgets() -> dict[str, int]:
    """Each chapter's budget by its id (``"ch9"``), for the performance appendix's table of what each chapter took."""
    from .full_scale import chapter_id

    return {chapter_id(path): budget(str(path.relative_to(ROOT))) for path in chapters()}


def tests_budget() -> int:
    """What the tests' stage of ``.ci/run`` may take on two workers: the longer of the Colab worker's share (every
    page in Colab's environment, and :data:`BESIDE_COLAB` in the pinned one) and half of all the work (the unit tests
    and every page in both environments)."""
    pinned = sum(budget(page) for page in pages())
    colab = pinned + COLAB_INSTALL_S * len(pages())
    return max(colab + sum(budget(page) for page in BESIDE_COLAB), math.ceil((UNIT_TESTS_S + pinned + colab) / 2))


def stage_budgets() -> dict[str, int]:
    """What each stage of ``.ci/run`` may take, by the name it prints: the tests' from the pages' budgets, the browser
    tests' from the number of pages, the rest fixed (:data:`STAGE_BUDGETS_S`). Their sum must fit :data:`CI_LIMIT_S`."""
    return {TESTS_STAGE: tests_budget(), **STAGE_BUDGETS_S, "browser tests": BROWSER_PAGE_S * len(pages())}


def report_stages(times: Path) -> str:
    """The stages ``.ci/run`` timed (a file of ``name<TAB>seconds`` lines) beside their budgets, and the total."""
    budgets = stage_budgets()
    rows = [line.split("\t") for line in times.read_text(encoding="utf-8").splitlines() if line.strip()]
    lines = [f"{'stage':<58}{'seconds':>8}{'budget':>8}"]
    for name, seconds in rows:
        over = budgets.get(name) is not None and int(seconds) > budgets[name]
        lines.append(f"{name:<58}{seconds:>8}{budgets.get(name, '-'):>8}" + ("  over its budget" if over else ""))
    total = sum(int(seconds) for _, seconds in rows)
    lines.append(f"{'all':<58}{total:>8}{CI_LIMIT_S:>8}" + ("  over the limit" if total > CI_LIMIT_S else ""))
    return "\n".join(lines)


def pages() -> list[str]:
    """Every notebook page of the book, in the order of ``_toc.yml``, relative to the root."""
    import yaml

    toc = yaml.safe_load((ROOT / "_toc.yml").read_text(encoding="utf-8"))
    return [f"{f}.ipynb" for f in toc_files(toc) if (ROOT / f"{f}.ipynb").is_file()]


def stamp(book: bool | None = None) -> dict:
    """What an execution depends on besides its page's code: a digest of :data:`STAMPED`, the installed packages and
    their versions, the interpreter, the book's switch (:data:`pavlov.runtime.BOOK`; ``book``, or as this process has
    it), the scale, the seed and the device it runs on."""
    from importlib import metadata

    import pavlov
    from pavlov.runtime import BOOK, device_name

    digest = hashlib.sha256()
    for name in STAMPED:
        path = ROOT / name
        for file in sorted(path.rglob("*") if path.is_dir() else [path]):
            if file.is_file() and "__pycache__" not in file.parts:
                digest.update(str(file.relative_to(ROOT)).encode() + b"\0" + file.read_bytes() + b"\0")
    installed = sorted(f"{d.metadata['Name']}=={d.version}" for d in metadata.distributions())
    return {"files": digest.hexdigest(), "packages": hashlib.sha256("\n".join(installed).encode()).hexdigest(),
            "python": platform.python_version(), "book": bool(os.environ.get(BOOK)) if book is None else book,
            "scale": pavlov.scale(),
            "seed": os.environ.get("PAVLOV_SEED", "").strip(), "device": device_name()}


def open_cache(path: Path = CACHE, current: dict | None = None):
    """The book's jupyter-cache at ``path``, emptied first when it was made under another stamp than ``current``
    (default: this process's :func:`stamp`)."""
    from jupyter_cache import get_cache

    path.parent.mkdir(parents=True, exist_ok=True)
    with FileLock(str(path) + ".lock"):
        current, recorded = current or stamp(), path / STAMP
        if not recorded.is_file() or json.loads(recorded.read_text(encoding="utf-8")) != current:
            shutil.rmtree(path, ignore_errors=True)
            path.mkdir()
            recorded.write_text(json.dumps(current, indent=1), encoding="utf-8")
        return get_cache(str(path))


def forget(path: Path, made_under: dict, cache: Path = CACHE) -> None:
    """Remove from the cache any execution of the notebook at ``path`` (its code as it is now) made under the stamp
    ``made_under``: a page whose test fails must not be shown from an earlier run that passed."""
    opened = open_cache(cache, made_under)
    with FileLock(str(cache) + ".lock"):
        try:
            record = opened.match_cache_notebook(nbformat.read(path, as_version=4))
        except KeyError:
            return
        opened.remove_cache(record.pk)


def environment(claims_dir: str) -> dict:
    """The environment of a page's kernel: this process's, as the book build sets it."""
    from pavlov.runtime import BOOK

    return {**os.environ, BOOK: "1", "PAVLOV_PROGRESS": "0", "PAVLOV_CLAIMS_DIR": claims_dir}


def execute(path: Path) -> tuple[nbformat.NotebookNode, float, list[float]]:
    """Execute the notebook at ``path`` as the book does; return it with its outputs, the seconds it took, and each
    code cell's seconds. Raises :class:`nbclient.exceptions.CellExecutionError` at the first cell that fails."""
    source = nbformat.read(path, as_version=4)
    executed = nbformat.from_dict(source)
    with tempfile.TemporaryDirectory() as claims:
        saved, kernel_environment = dict(os.environ), environment(claims)   # read before it is cleared
        os.environ.clear()
        os.environ.update(kernel_environment)           # the kernel inherits this process's environment
        try:
            client = NotebookClient(executed, timeout=CELL_TIMEOUT_S, kernel_name="python3", allow_errors=False,
                                    record_timing=True, resources={"metadata": {"path": str(path.parent)}})
            start = time.perf_counter()
            client.execute()
            seconds = time.perf_counter() - start
        finally:
            os.environ.clear()
            os.environ.update(saved)
    cells = [cell_seconds(cell) or 0.0 for cell in executed.cells if cell.cell_type == "code"]
    # the page as the book reads it, with the outputs: jupyter-cache matches pages by their cells' metadata too
    for cell, ran in zip(source.cells, executed.cells):
        if cell.cell_type == "code":
            cell.outputs, cell.execution_count = ran.outputs, ran.execution_count
    return source, seconds, cells


def cell_seconds(cell) -> float | None:
    """How long an executed code cell ran, from the timings nbclient records (None when it did not run)."""
    from datetime import datetime

    timing = cell.metadata.get("execution", {})
    if "iopub.execute_input" not in timing:
        return None
    start, end = (datetime.fromisoformat(timing[k].replace("Z", "+00:00"))
                  for k in ("iopub.execute_input", "shell.execute_reply"))
    return (end - start).total_seconds()


def store(path: Path, executed: nbformat.NotebookNode, seconds: float, made_under: dict,
          cache: Path = CACHE) -> bool:
    """Put an execution of the notebook at ``path``, begun under the stamp ``made_under``, in the book's cache, where
    the next book build takes it; unless the stamp has changed since (the package was edited while it ran). Returns
    whether it was stored."""
    from jupyter_cache.base import CacheBundleIn

    if stamp(book=made_under.get("book")) != made_under:
        return False
    opened = open_cache(cache, made_under)
    with FileLock(str(cache) + ".lock"):
        opened.cache_notebook_bundle(CacheBundleIn(executed, str(path), data={"execution_seconds": seconds}),
                                     check_validity=False, overwrite=True)
    return True


class PageItem(pytest.Item):
    """A book page executed as the book executes it: fails when a cell raises or the page passes its budget."""

    def runtest(self):
        page = str(self.path.relative_to(ROOT))
        made_under = stamp(book=True)                  # the page runs with the book's switch on (environment())
        try:
            executed, seconds, cells = execute(self.path)
        except CellExecutionError as error:
            forget(self.path, made_under)
            raise PageError(str(error)) from None
        store(self.path, executed, seconds, made_under)
        self.user_properties.append(("seconds", round(seconds, 1)))
        slowest = max(range(len(cells)), key=cells.__getitem__, default=0)
        print(f"{page}: {seconds:.1f} s (budget {budget(page)} s); slowest code cell {slowest}: "
              f"{cells[slowest] if cells else 0:.1f} s")
        assert seconds <= budget(page), (
            f"{page} took {seconds:.0f} s at the {os.environ.get('PAVLOV_SCALE') or 'default'} scale, over its "
            f"budget of {budget(page)} s (tools/execute.py); its slowest code cells (index, s): "
            f"{sorted(enumerate(cells), key=lambda c: -c[1])[:3]}")

    def repr_failure(self, excinfo):
        if isinstance(excinfo.value, PageError):
            return str(excinfo.value)
        return super().repr_failure(excinfo)

    def reportinfo(self):
        return self.path, None, f"{self.path.relative_to(ROOT)}: executed as the book executes it"


class PageError(Exception):
    """A cell of a page raised: the message is nbclient's, with the cell and its traceback."""


class PageFile(pytest.File):
    def collect(self):
        item = PageItem.from_parent(self, name="executes")
        if str(self.path.relative_to(ROOT)) in BESIDE_COLAB:
            item.add_marker(pytest.mark.xdist_group("colab"))
        yield item


def collect(file_path: Path, parent):
    """The root conftest's ``pytest_collect_file``: a book page becomes a :class:`PageFile`."""
    if file_path.suffix == ".ipynb" and file_path.is_relative_to(ROOT) and str(file_path.relative_to(ROOT)) in pages():
        return PageFile.from_parent(parent, path=file_path)
    return None


def summary(reports) -> list[str]:
    """One line per page a test run executed: its seconds beside its budget (the root conftest prints them)."""
    lines = []
    for report in reports:
        seconds = dict(report.user_properties).get("seconds")
        nodeid = report.nodeid.split("@")[0]             # xdist's loadgroup adds @<group> to grouped items
        if nodeid.endswith(".ipynb::executes") and seconds is not None:
            page = nodeid.removesuffix("::executes")
            lines.append(f"{page:<40}{seconds:>7.1f} s  (budget {budget(page)} s)")
    return sorted(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("pages", nargs="*", help="pages to execute (default: every page of the book)")
    parser.add_argument("--store", action="store_true", help="store each execution in the book's cache")
    parser.add_argument("--stages", type=Path, help="print the stage times .ci/run wrote here beside their budgets")
    args = parser.parse_args(argv)
    if args.stages:
        print(report_stages(args.stages))
        return 0
    from pavlov.claims import executed_records, requirement

    for page in args.pages or pages():
        path = Path(page).resolve() if args.pages else ROOT / page
        made_under = stamp(book=True)
        executed, seconds, cells = execute(path)
        print(f"{page}: {seconds:.1f} s; code cells (index: s): "
              + ", ".join(f"{i}: {s:.1f}" for i, s in enumerate(cells) if s >= 0.5), flush=True)
        for r in executed_records([executed])[0]:
            print(f"  {r['id']}: {'holds' if r['passed'] else 'FAILS'}: measured {r['measured']:.4g}, required "
                  f"{requirement(r)}; alternative {r['alternative'][1] if r['alternative'] else float('nan'):.4g}")
        if args.store:
            store(path, executed, seconds, made_under)
    return 0


if __name__ == "__main__":
    sys.exit(main())
