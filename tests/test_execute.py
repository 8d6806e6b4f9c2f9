"""One execution per environment (tools/execute.py): a page is executed as the book executes it, stored where the
book build finds it, and never reused once anything else it depends on has changed."""

from __future__ import annotations

import json
import subprocess
import sys
import time

import nbformat
import pytest
from nbclient.exceptions import CellExecutionError

from tools import execute


def notebook(tmp_path, *sources: str):
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell("# A page"),
                                         *(nbformat.v4.new_code_cell(s) for s in sources)])
    nb.cells[1].metadata["tags"] = ["hide-input"]                  # the book's pages carry cell metadata
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    path = tmp_path / "page.ipynb"
    nbformat.write(nb, path)
    return path


def test_a_page_runs_as_the_book_runs_it(tmp_path):
    path = notebook(tmp_path, "import os, pavlov\nprint(os.environ.get('PAVLOV_BOOK'), pavlov.runtime.building_book())",
                    "import pathlib\npathlib.Path.cwd().name")
    executed, seconds, cells = execute.execute(path)
    first, second = (c for c in executed.cells if c.cell_type == "code")
    assert first.outputs[0]["text"] == "1 True\n"                    # the book's switch is on
    assert second.outputs[0]["data"]["text/plain"] == repr(tmp_path.name)   # in the page's own folder
    assert seconds > 0 and len(cells) == 2
    assert "execution" not in first.metadata                          # the page's own metadata, for the cache


def test_a_cell_that_raises_stops_the_page(tmp_path):
    path = notebook(tmp_path, "raise ValueError('a claim failed')", "print('never')")
    with pytest.raises(CellExecutionError, match="a claim failed"):
        execute.execute(path)


FIGURE = """from pavlov import plotting
import matplotlib.pyplot as plt
fig, ax = plotting.subplots()
ax.plot([0, 1], [0, 1], "k--", label="theory")
ax.plot([0, 1], [0.1, 0.9], "s", label="measured")
ax.legend()
plt.show()"""


@pytest.mark.parametrize("caption, fault", [
    ("The measurement (squares) follows the theory (dashed black).", None),
    ("The theory is the solid black line.", "solid black"),
    ("Measured values are drawn as triangles.", "triangles"),
])
def test_a_caption_that_names_a_style_its_figure_does_not_draw_fails_the_page(tmp_path, caption, fault):
    path = notebook(tmp_path, "from pavlov import plotting", FIGURE)  # as a chapter's setup cell does
    nb = nbformat.read(path, as_version=4)
    nb.cells[2].metadata["mystnb"] = {"figure": {"caption": caption, "name": "fig-test"}}
    nbformat.write(nb, path)
    if fault is None:
        execute.execute(path)
    else:
        with pytest.raises(execute.PageError, match=f"fig-test: the caption names '{fault}'"):
            execute.execute(path)


def test_a_stored_execution_is_what_the_book_build_finds(tmp_path):
    path = notebook(tmp_path, "print(6 * 7)")
    executed, seconds, _ = execute.execute(path)
    made_under = execute.stamp(book=True)
    assert execute.store(path, executed, seconds, made_under, cache=tmp_path / "cache")
    # myst-nb's lookup: the page as read from disk, matched by its code cells and their metadata
    cache = execute.open_cache(tmp_path / "cache", made_under)
    _, merged = cache.merge_match_into_notebook(nbformat.read(path, as_version=4))
    assert merged.cells[1].outputs[0]["text"] == "42\n"


def test_a_cache_made_under_another_stamp_is_emptied(tmp_path, monkeypatch):
    path = notebook(tmp_path, "print(1)")
    executed, seconds, _ = execute.execute(path)
    execute.store(path, executed, seconds, execute.stamp(), cache=tmp_path / "cache")
    same = execute.open_cache(tmp_path / "cache")
    assert same.match_cache_notebook(nbformat.read(path, as_version=4)) is not None
    monkeypatch.setattr(execute, "stamp", lambda: {**json.loads((tmp_path / "cache" / execute.STAMP).read_text()),
                                                   "files": "another package"})
    emptied = execute.open_cache(tmp_path / "cache")
    with pytest.raises(KeyError):
        emptied.match_cache_notebook(nbformat.read(path, as_version=4))


@pytest.mark.parametrize("setting", ["PAVLOV_SCALE", "PAVLOV_SEED"])
def test_the_stamp_moves_with_the_scale_and_the_seed(setting, monkeypatch):
    monkeypatch.delenv(setting, raising=False)
    before = execute.stamp()
    monkeypatch.setenv(setting, "full" if setting == "PAVLOV_SCALE" else "3")
    assert execute.stamp() != before


def test_the_stamp_moves_with_the_package(tmp_path, monkeypatch):
    (tmp_path / "pavlov").mkdir()
    (tmp_path / "pavlov" / "a.py").write_text("x = 1\n")
    monkeypatch.setattr(execute, "ROOT", tmp_path)
    before = execute.stamp()
    (tmp_path / "pavlov" / "a.py").write_text("x = 2\n")
    assert execute.stamp()["files"] != before["files"]


def test_a_failed_run_removes_the_passing_one_and_an_execution_begun_under_another_stamp_is_not_kept(tmp_path):
    path, cache, made_under = notebook(tmp_path, "print(1)"), tmp_path / "cache", execute.stamp()
    executed, seconds, _ = execute.execute(path)
    assert execute.store(path, executed, seconds, made_under, cache=cache)
    execute.forget(path, made_under, cache)           # what a failing run of the same page does
    with pytest.raises(KeyError):
        execute.open_cache(cache, made_under).match_cache_notebook(nbformat.read(path, as_version=4))
    edited = {**made_under, "files": "the package before an edit"}
    assert not execute.store(path, executed, seconds, edited, cache=cache)
    with pytest.raises(KeyError):
        execute.open_cache(cache, made_under).match_cache_notebook(nbformat.read(path, as_version=4))


def test_the_stamp_moves_with_the_book_switch(monkeypatch):
    monkeypatch.setenv("PAVLOV_BOOK", "1")
    book = execute.stamp()
    monkeypatch.delenv("PAVLOV_BOOK")
    assert execute.stamp() != book


def test_a_page_past_its_ceiling_is_stopped_at_the_cell_that_was_running(tmp_path):
    path = notebook(tmp_path, "print(1)", "import time\ntime.sleep(60)", "print('never')")
    with pytest.raises(execute.PageError, match=r"page.ipynb stopped at code cell 1: it ran past a ceiling"):
        execute.execute(path, ceiling_s=3)


def test_a_kernel_that_dies_fails_the_page_naming_the_cell(tmp_path):
    path = notebook(tmp_path, "print(1)", "import os\nos._exit(1)")
    with pytest.raises(execute.PageError, match=r"stopped at code cell 1: the kernel died"):
        execute.execute(path)


def test_time_is_reported_not_tested():
    assert execute.over(10.0, 20) == ""
    assert execute.over(23.0, 20) == "  over its budget by 3 s (15%)"
    assert execute.slowest([0.5, 3.0, 1.25]) == "cell 1: 3.0 s, cell 2: 1.2 s, cell 0: 0.5 s"
    assert execute.left(0.0, None) == execute.CELL_S                      # no page ceiling: a cell's
    assert execute.left(time.perf_counter(), 1e6) == execute.CELL_S         # a cell's, when the page leaves more
    assert execute.left(time.perf_counter(), 5.0) == 5                      # else what the page leaves
    assert execute.left(-1e9, 5.0) == 1                                     # spent: at least a second


def test_nbval_executes_a_page_when_asked_for(tmp_path):
    # `pytest --nbval-lax <page>`: nbval's items, one a cell, and not the page's own executing test
    done = subprocess.run([sys.executable, "-m", "pytest", "--nbval-lax", "--collect-only", "-q", "-p", "no:xdist",
                           "gpu.ipynb"], cwd=execute.ROOT, capture_output=True, text=True, check=True)
    assert "gpu.ipynb::Cell 0" in done.stdout and "::executes" not in done.stdout
    plain = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:xdist", "gpu.ipynb"],
                           cwd=execute.ROOT, capture_output=True, text=True, check=True)
    assert "gpu.ipynb::executes" in plain.stdout and "Cell 0" not in plain.stdout
