"""One execution of each page per environment: the test executes it, the HTML and the PDF show that execution.

Every notebook page of the book (``_toc.yml``) is executed by ``pytest`` (this module's :class:`PageItem`,
collected by the root ``conftest.py``) exactly as the book executes it: in a fresh kernel of this
environment, in the page's folder, with :data:`pavlov.runtime.BOOK` set. A cell that raises (a claim that
fails) fails the test, naming the page, the cell and the claim. Time is reported, not tested: the test prints the
page's time beside its budget (:data:`BUDGETS`) and, for a page over it, by how much and its slowest cells; only the
ceilings of ``tools/ceilings.py`` against a hang or a runaway fail it. The executed page is then stored in the book's jupyter-cache (``_build/.jupyter_cache``), from which ``make html`` and
``make pdf`` take it (``execute_notebooks: cache``) instead of executing it again. A page missing from the
cache is executed by the book build itself, as before.

The cache is only as good as what it was made from. Jupyter-cache matches a page by its code cells; everything
else an execution depends on (the package, the pinned environment, the scale, the seed, the device) is folded
into one :func:`stamp`, and a cache made under another stamp is emptied before it is used, by the tests and by
the book build alike (:func:`open_cache`). The claims ledger and the performance appendix's table of times are read from
the outputs of the executions the pages show (:func:`pavlov.claims.table` writes them into the chapter's last
output while the book is built), so they cannot come from another run.

``python -m tools.execute chapters/ch09_mqar.ipynb ...`` executes pages and prints each cell's time.

When pytest runs with ``--nbval`` or ``--nbval-lax``, nbval executes the notebooks instead (:func:`collect` leaves
them to it): ``pytest --nbval-lax chapters/ch01_conditioning.ipynb`` runs a chapter cell by cell, as nbval runs any
notebook. The book's tests use nbval for the Colab emulation of every page (``tests/test_colab.py``).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import platform
import re
import shutil
import sys
import tempfile
import time
from pathlib import Path

import nbformat
import pytest
from filelock import FileLock
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError, CellTimeoutError, DeadKernelError

from .book_data import chapters, toc_files
from .ceilings import CELL_S, PAGE_RUNAWAY

ROOT = Path(__file__).resolve().parents[1]
CACHE = ROOT / "_build" / ".jupyter_cache"
STAMP = "pavlov-stamp.json"

# --- the time budget -------------------------------------------------------------------------------------------
# `.ci/run` on a fresh clone should end within CI_BUDGET_S on an idle machine like CI's (2 cores): a budget kept by
# measuring (`make budget`, tools/budget.py), not a test, since a correct book must pass on a slower or busier
# machine. Each page's budget is what it may take to execute at the quick scale there, in `make test`'s pinned
# environment, while the Colab emulation runs beside it on the other core: at most MAX_BUDGET_S, and what it took in
# a fresh clone's `make test` on such a machine (runs of `.ci/run` differed by up to 15%) with 30% more for room,
# rounded up to 5 s (at least 10 s). The tests print each page's time beside it; tools/ceilings.py holds the only
# limits that fail a run.
CI_BUDGET_S = 20 * 60
MAX_BUDGET_S = 90
BUDGETS = {
    "gpu.ipynb": 10, "chapters/ch01_conditioning.ipynb": 13, "chapters/ch02_linear_attention.ipynb": 22,
    "chapters/ch03_capacity.ipynb": 35, "chapters/ch04_mlp_stores.ipynb": 20,
    "chapters/ch05_softmax_store.ipynb": 32, "chapters/ch06_stacking.ipynb": 39,
    "chapters/ch07_learning_rules.ipynb": 19, "chapters/ch08_conditioning.ipynb": 22,
    "chapters/ch09_mqar.ipynb": 80, "chapters/ch10_noisy_cues.ipynb": 51, "chapters/ch11_hopfield.ipynb": 30,
    "chapters/ch12_channel.ipynb": 31, "chapters/ch13_induction.ipynb": 85, "chapters/ch14_facts.ipynb": 70,
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


def tests_budget(seconds: dict[str, float] | None = None) -> int:
    """What the tests' stage of ``.ci/run`` may take on two workers: the longer of the Colab worker's share (every
    page in Colab's environment, and :data:`BESIDE_COLAB` in the pinned one) and half of all the work (the unit tests
    and every page in both environments). With ``seconds`` (by page), the pages take those times instead of their
    budgets: the stage as ``make budget`` models it from its measurements."""
    took = {page: budget(page) if seconds is None else seconds[page] for page in pages()}
    pinned = sum(took.values())
    colab = pinned + COLAB_INSTALL_S * len(took)
    return max(colab + sum(took[page] for page in BESIDE_COLAB),
               math.ceil((UNIT_TESTS_S + pinned + colab) / 2))


def stage_budgets() -> dict[str, int]:
    """What each stage of ``.ci/run`` may take, by the name it prints: the tests' from the pages' budgets, the browser
    tests' from the number of pages, the rest fixed (:data:`STAGE_BUDGETS_S`). Their sum must fit :data:`CI_BUDGET_S`."""
    return {TESTS_STAGE: tests_budget(), **STAGE_BUDGETS_S, "browser tests": BROWSER_PAGE_S * len(pages())}


def over(seconds: float, budget_s: float) -> str:
    """``"  over its budget by 12 s (15%)"`` when ``seconds`` passes ``budget_s``, else nothing: a report, never a
    failure."""
    excess = seconds - budget_s
    return f"  over its budget by {excess:.0f} s ({excess / budget_s:.0%})" if excess > 0 else ""


def report_stages(times: Path) -> str:
    """The stages ``.ci/run`` timed (a file of ``name<TAB>seconds`` lines) beside their budgets, and the total beside
    :data:`CI_BUDGET_S`, marking what is over (a report: the run has already passed or failed on its tests)."""
    budgets = stage_budgets()
    rows = [line.split("\t") for line in times.read_text(encoding="utf-8").splitlines() if line.strip()]
    lines = [f"{'stage':<58}{'seconds':>8}{'budget':>8}"]
    for name, seconds in rows:
        mark = over(int(seconds), budgets[name]) if name in budgets else ""
        lines.append(f"{name:<58}{seconds:>8}{budgets.get(name, '-'):>8}" + mark)
    total = sum(int(seconds) for _, seconds in rows)
    lines.append(f"{'all':<58}{total:>8}{CI_BUDGET_S:>8}" + over(total, CI_BUDGET_S))
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

    from pavlov.plotting import FIGURE_STYLES

    return {**os.environ, BOOK: "1", "PAVLOV_PROGRESS": "0", "PAVLOV_CLAIMS_DIR": claims_dir,
            FIGURE_STYLES: str(Path(claims_dir) / "figure-styles.jsonl")}


def captions(notebook: nbformat.NotebookNode) -> dict[int, tuple[str, str]]:
    """Each code cell's figure caption, by the cell's index among the code cells: ``(name, caption)`` from the cell's
    ``mystnb`` metadata, or, for the cell that shows the chapter's opening figure (``plotting.hero(fig, "name")``),
    from the ``{glue:figure} name`` block of the page's text."""
    text = "\n".join(cell.source for cell in notebook.cells if cell.cell_type == "markdown")
    glued = {m.group(1): m.group(2) for m in
             re.finditer(r"```\{glue:figure\} (\S+)\n(?::[^\n]*\n)*\n?(.*?)```", text, re.S)}
    found = {}
    for i, cell in enumerate(c for c in notebook.cells if c.cell_type == "code"):
        figure = cell.metadata.get("mystnb", {}).get("figure", {})
        hero = re.search(r"plotting\.hero\(\s*\w+,\s*\"([^\"]+)\"", cell.source)
        if figure.get("caption"):
            found[i] = (figure.get("name", ""), figure["caption"])
        elif hero and hero.group(1) in glued:
            found[i] = (hero.group(1), glued[hero.group(1)])
    return found


def caption_faults(executed: nbformat.NotebookNode, records: list[dict]) -> list[str]:
    """Each caption phrase naming a line style, a marker or a colour that no artist of its figure draws
    (:func:`pavlov.plotting.caption_mismatches`), from the styles each figure shown recorded (``records``: the
    fingerprint of the cell that showed it and its artists' words)."""
    from pavlov.plotting import caption_mismatches, cell_key

    code = [cell for cell in executed.cells if cell.cell_type == "code"]
    by_id = {cell_key(cell.source): i for i, cell in enumerate(code)}
    drawn: dict[int, list] = {}
    for record in records:
        if record["cell"] in by_id:
            drawn.setdefault(by_id[record["cell"]], []).extend(set(words) for words in record["styles"])
    return [f"{name}: the caption names '{phrase}', which its figure does not draw"
            for i, (name, caption) in captions(executed).items() if i in drawn
            for phrase in caption_mismatches(caption, drawn[i])]


def execute(path: Path, ceiling_s: float | None = None) -> tuple[nbformat.NotebookNode, float, list[float]]:
    """Execute the notebook at ``path`` as the book does; return it with its outputs, the seconds it took, and each
    code cell's seconds. Raises :class:`nbclient.exceptions.CellExecutionError` at the first cell that fails, and
    :class:`PageError`, naming the cell, when the kernel dies or a cell runs past a ceiling: past
    :data:`tools.ceilings.CELL_S`, or past what is left of ``ceiling_s`` seconds for the page in all."""
    from pavlov.plotting import FIGURE_STYLES

    source = nbformat.read(path, as_version=4)
    executed = nbformat.from_dict(source)
    with tempfile.TemporaryDirectory() as claims:
        saved, kernel_environment = dict(os.environ), environment(claims)   # read before it is cleared
        os.environ.clear()
        os.environ.update(kernel_environment)           # the kernel inherits this process's environment
        try:
            start = time.perf_counter()
            client = NotebookClient(executed, timeout_func=lambda cell: left(start, ceiling_s), kernel_name="python3",
                                    allow_errors=False, record_timing=True,
                                    resources={"metadata": {"path": str(path.parent)}})
            try:
                client.execute()
            except (CellTimeoutError, DeadKernelError) as error:
                cell = running(executed)
                stopped = ("the kernel died" if isinstance(error, DeadKernelError) else
                           f"it ran past a ceiling against a hang or a runaway (tools/ceilings.py: {CELL_S} s a cell"
                           + (f", {ceiling_s:.0f} s the page" if ceiling_s else "") + ")")
                raise PageError(f"{path.name} stopped at code cell {cell}: {stopped}\n{error}") from None
            seconds = time.perf_counter() - start
            styles = Path(kernel_environment[FIGURE_STYLES])
            records = [json.loads(line) for line in styles.read_text().splitlines()] if styles.exists() else []
        finally:
            os.environ.clear()
            os.environ.update(saved)
    faults = caption_faults(executed, records)
    if faults:
        raise PageError(f"{path.name}: a caption describes what its figure does not draw:\n" + "\n".join(faults))
    cells = [cell_seconds(cell) or 0.0 for cell in executed.cells if cell.cell_type == "code"]
    # the page as the book reads it, with the outputs: jupyter-cache matches pages by their cells' metadata too
    for cell, ran in zip(source.cells, executed.cells):
        if cell.cell_type == "code":
            cell.outputs, cell.execution_count = ran.outputs, ran.execution_count
    return source, seconds, cells


def running(notebook: nbformat.NotebookNode) -> int:
    """The code cell (counted from 0) that was running when an execution of ``notebook`` stopped: the first that
    began and never replied, else the first that never began."""
    code = [cell for cell in notebook.cells if cell.cell_type == "code"]
    timings = [cell.metadata.get("execution", {}) for cell in code]
    began = [i for i, t in enumerate(timings) if "iopub.execute_input" in t and "shell.execute_reply" not in t]
    return began[0] if began else next((i for i, t in enumerate(timings) if "iopub.execute_input" not in t), 0)


def left(start: float, ceiling_s: float | None) -> int:
    """The seconds the next cell may run: :data:`tools.ceilings.CELL_S`, or what is left of the page's ceiling
    ``ceiling_s`` since ``start`` (a ``time.perf_counter()``) when that is less; at least one."""
    if ceiling_s is None:
        return CELL_S
    return max(1, min(CELL_S, math.ceil(start + ceiling_s - time.perf_counter())))


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


def slowest(cells: list[float], count: int = 3) -> str:
    """The ``count`` slowest code cells, ``"cell 7: 12.3 s, cell 2: 4.0 s"`` (code cells counted from 0)."""
    return ", ".join(f"cell {i}: {s:.1f} s" for i, s in sorted(enumerate(cells), key=lambda c: -c[1])[:count])


class PageItem(pytest.Item):
    """A book page executed as the book executes it: fails when a cell raises (a claim fails), when the kernel dies,
    or at a ceiling against a hang or a runaway (``tools/ceilings.py``); its time beside its budget is reported."""

    def runtest(self):
        page = str(self.path.relative_to(ROOT))
        made_under = stamp(book=True)                  # the page runs with the book's switch on (environment())
        try:
            executed, seconds, cells = execute(self.path, ceiling_s=PAGE_RUNAWAY * budget(page))
        except PageError:
            forget(self.path, made_under)
            raise
        except CellExecutionError as error:
            forget(self.path, made_under)
            raise PageError(str(error)) from None
        store(self.path, executed, seconds, made_under)
        self.user_properties += [("seconds", round(seconds, 1)), ("slowest", slowest(cells))]
        print(f"{page}: {seconds:.1f} s (budget {budget(page)} s){over(seconds, budget(page))}; slowest code cells: "
              f"{slowest(cells)}")

    def repr_failure(self, excinfo):
        if isinstance(excinfo.value, PageError):
            return str(excinfo.value)
        return super().repr_failure(excinfo)

    def reportinfo(self):
        return self.path, None, f"{self.path.relative_to(ROOT)}: executed as the book executes it"


class PageError(Exception):
    """A page stopped: a cell raised (the message is nbclient's, with the cell and its traceback), the kernel died,
    or a cell ran past a ceiling (the message names the cell)."""


class PageFile(pytest.File):
    def collect(self):
        item = PageItem.from_parent(self, name="executes")
        if str(self.path.relative_to(ROOT)) in BESIDE_COLAB:
            item.add_marker(pytest.mark.xdist_group("colab"))
        yield item


def collect(file_path: Path, parent):
    """The root conftest's ``pytest_collect_file``: a book page becomes a :class:`PageFile`, unless nbval is asked
    for (``--nbval``, ``--nbval-lax``), which then collects every notebook itself."""
    option = parent.config.option
    if getattr(option, "nbval", False) or getattr(option, "nbval_lax", False):
        return None
    if file_path.suffix == ".ipynb" and file_path.is_relative_to(ROOT) and str(file_path.relative_to(ROOT)) in pages():
        return PageFile.from_parent(parent, path=file_path)
    return None


def summary(reports) -> list[str]:
    """One line per page a test run executed: its seconds beside its budget, and for a page over it by how much and
    its slowest cells (the root conftest prints them)."""
    lines = []
    for report in reports:
        properties = dict(report.user_properties)
        nodeid = report.nodeid.split("@")[0]             # xdist's loadgroup adds @<group> to grouped items
        if nodeid.endswith(".ipynb::executes") and properties.get("seconds") is not None:
            page, seconds = nodeid.removesuffix("::executes"), properties["seconds"]
            mark = over(seconds, budget(page))
            lines.append(f"{page:<40}{seconds:>7.1f} s  (budget {budget(page)} s){mark}"
                         + (f"; slowest: {properties.get('slowest')}" if mark else ""))
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
