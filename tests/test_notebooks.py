"""The chapter notebooks follow the book's conventions: committed without outputs, Colab-ready, and each
ends with the table of the claims it checked.

The chapters come from ``_toc.yml``; the repository URL from ``_config.yml`` (``repository.url``), the
one place it is configured. Executing the notebooks is tools/execute.py's job (the pages' own tests), not this module's.
"""

from __future__ import annotations

import ast
import re
import tomllib
from pathlib import Path

import nbformat
import pytest
import yaml
from conftest import toc_files
from IPython.core.inputtransformer2 import TransformerManager

ROOT = Path(__file__).resolve().parents[1]
CHAPTERS = ROOT / "chapters"


TOC = yaml.safe_load((ROOT / "_toc.yml").read_text(encoding="utf-8"))
TOC_CHAPTERS = [f for f in toc_files(TOC) if f.startswith("chapters/")]
REPOSITORY_URL = yaml.safe_load((ROOT / "_config.yml").read_text(encoding="utf-8"))["repository"]["url"]
NOTEBOOKS = sorted({ROOT / f"{f}.ipynb" for f in TOC_CHAPTERS} | set(CHAPTERS.glob("*.ipynb")))
# every page the book builds from a notebook has a Colab button, so each must run there on its own
PAGES = sorted({ROOT / f"{f}.ipynb" for f in toc_files(TOC) if (ROOT / f"{f}.ipynb").is_file()} | set(NOTEBOOKS))

CHECK = ("pv.claims.check", "claims.check", "pavlov.claims.check")
TABLE = ("pv.claims.table", "claims.table", "pavlov.claims.table")
SETUP_CELL = f'''# Setup: in Colab, install pavlov from the book's repository; elsewhere, use it as is.
import sys

if "google.colab" in sys.modules:
    %pip install --quiet "pavlov @ git+{REPOSITORY_URL}"
    import importlib.util

    importlib.invalidate_caches()
    if importlib.util.find_spec("pavlov") is None:
        raise SystemExit(
            "pavlov could not be installed from {REPOSITORY_URL} "
            "(pip says why above). Check the connection, or upload a copy of the "
            "repository and run %pip install ./pavlov, then run this cell again."
        )

import torch
import pavlov as pv
from pavlov import plotting

pv.setup()'''


def chapter_id(path: Path) -> str:
    """``chapters/ch01_conditioning.ipynb`` -> ``"ch1"``, the prefix of the chapter's claim ids."""
    match = re.match(r"ch(\d+)_", path.name)
    assert match, f"{path.name}: a chapter file is named ch<NN>_<topic>.ipynb"
    return f"ch{int(match.group(1))}"


def read(path: Path):
    assert path.is_file(), f"{path.relative_to(ROOT)} does not exist"
    return nbformat.read(path, as_version=nbformat.NO_CONVERT)


def code_cells(nb):
    return [c for c in nb.cells if c.cell_type == "code"]


def python_of(cell) -> ast.Module:
    """The cell as Python, with IPython magics (``%pip``) turned into ``get_ipython()`` calls."""
    return ast.parse(TransformerManager().transform_cell(cell.source))


def calls(tree: ast.AST, *dotted: str) -> list[ast.Call]:
    """Calls anywhere in ``tree`` of a function written as one of ``dotted`` (e.g. ``pv.claims.table``)."""
    return [node for node in ast.walk(tree) if isinstance(node, ast.Call) and ast.unparse(node.func) in dotted]


def pip_magics(tree: ast.AST) -> list[str]:
    """The argument strings of every ``%pip`` line magic in ``tree``."""
    return [node.args[1].value for node in calls(tree, "get_ipython().run_line_magic")
            if isinstance(node.args[0], ast.Constant) and node.args[0].value == "pip"]


def level_one_headings(markdown: str) -> list[str]:
    """Lines of ``markdown`` that are level-1 headings, outside fenced code and directive blocks (nested too)."""
    headings, fences = [], []          # the open fences, innermost last
    for line in markdown.splitlines():
        marker = re.match(r"\s*(`{3,}|~{3,}|:{3,})(.*)$", line)
        if marker:
            ticks, info = marker.groups()
            if fences and ticks[0] == fences[-1][0] and len(ticks) >= len(fences[-1]) and not info.strip():
                fences.pop()           # closes the innermost block
            elif not fences or fences[-1][0] != "`" or ticks[0] != "`" or len(ticks) < len(fences[-1]):
                fences.append(ticks)   # opens a block (code inside code is text, unless it is a shorter fence)
        elif not fences and line.startswith("# "):
            headings.append(line)
    return headings


# --- the table of contents --------------------------------------------------------------------

def test_toc_lists_chapters_and_each_exists():
    assert TOC_CHAPTERS, "_toc.yml lists no chapter under chapters/"
    missing = [f"{f}.ipynb" for f in TOC_CHAPTERS if not (ROOT / f"{f}.ipynb").is_file()]
    assert not missing, f"chapters in _toc.yml without a notebook: {missing}"


def test_every_chapter_notebook_is_in_the_toc():
    # only_build_toc_files: a notebook missing from the toc would silently be left out of the book
    listed = {ROOT / f"{f}.ipynb" for f in TOC_CHAPTERS}
    orphans = [p.name for p in CHAPTERS.glob("*.ipynb") if p not in listed]
    assert not orphans, f"notebooks under chapters/ missing from _toc.yml: {orphans}"


def test_repository_url_is_configured():
    assert re.fullmatch(r"https://github\.com/[\w.-]+/[\w.-]+", REPOSITORY_URL), REPOSITORY_URL


# --- each chapter -----------------------------------------------------------------------------

by_notebook = pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
by_page = pytest.mark.parametrize("path", PAGES, ids=[p.stem for p in PAGES])


@by_page
def test_is_a_valid_nbformat_4_notebook(path):
    nb = read(path)
    assert nb.nbformat == 4
    nbformat.validate(nb)


@by_page
def test_committed_without_outputs(path):
    for i, cell in enumerate(read(path).cells):
        if cell.cell_type == "code":
            assert cell.outputs == [], f"cell {i} has outputs"
            assert cell.execution_count is None, f"cell {i} has an execution count"


@by_page
def test_metadata_runs_on_colab_with_a_gpu(path):
    meta = read(path).metadata
    assert meta.get("accelerator") == "GPU"
    assert meta.get("kernelspec", {}).get("name") == "python3"
    assert meta.get("kernelspec", {}).get("language") == "python"
    assert meta.get("language_info", {}).get("name") == "python"
    assert "colab" in meta


@by_notebook
def test_opens_with_its_title(path):
    nb = read(path)
    assert nb.cells[0].cell_type == "markdown", "the first cell is the title, in markdown"
    assert nb.cells[0].source.startswith("# "), "the first cell starts with a level-1 heading '# Title'"
    headings = [h for c in nb.cells if c.cell_type == "markdown" for h in level_one_headings(c.source)]
    assert len(headings) == 1, f"one level-1 heading per chapter, found {headings}"


@by_page
def test_setup_cell_installs_from_the_repository_only_on_colab(path):
    tree = python_of(code_cells(read(path))[0])
    colab_ifs = [node for node in tree.body if isinstance(node, ast.If)
                 and ast.unparse(node.test) == "'google.colab' in sys.modules"]
    assert len(colab_ifs) == 1, 'the setup cell has one top-level `if "google.colab" in sys.modules:`'
    inside = pip_magics(colab_ifs[0])
    assert inside == [f'install --quiet "pavlov @ git+{REPOSITORY_URL}"'], inside
    assert len(pip_magics(tree)) == 1, "nothing is installed outside Colab"
    top_level = [ast.unparse(node) for node in tree.body]
    assert "import sys" in top_level and "import pavlov as pv" in top_level
    assert top_level.index("import sys") < top_level.index(ast.unparse(colab_ifs[0]))


@by_page
def test_setup_cell_calls_setup(path):
    tree = python_of(code_cells(read(path))[0])
    top_level = [ast.unparse(node) for node in tree.body]
    assert "pv.setup()" in top_level
    assert top_level.index("import pavlov as pv") < top_level.index("pv.setup()")


@by_page
def test_setup_cell_is_the_books_setup_cell(path):
    assert code_cells(read(path))[0].source.strip() == SETUP_CELL


@by_page
def test_setup_is_folded_behind_one_note(path):
    # a reader meets the chapter's science first: the Colab install (and a chapter's imports) fold away, behind a
    # short note on how to run the page; tagged hide-input, they still run everywhere
    cells = read(path).cells
    setup = cells.index(code_cells(read(path))[0])
    assert cells[setup - 1].cell_type == "markdown" and cells[setup - 1].source.startswith("**Run this "), \
        f"{path.name}: the setup cell is not preceded by its note (**Run this chapter** ...)"
    folded = code_cells(read(path))[:2 if path.parent.name == "chapters" else 1]
    assert all("hide-input" in c.metadata.get("tags", []) for c in folded), f"{path.name}: setup not folded"


@by_notebook
def test_ends_with_its_claims_table(path):
    nb = read(path)
    last = code_cells(nb)[-1]
    tables = calls(python_of(last), *TABLE)
    assert [ast.literal_eval(c.args[0]) for c in tables] == [chapter_id(path)], last.source
    before = nb.cells[nb.cells.index(last) - 1]
    assert before.cell_type == "markdown" and "## Claims checked in this chapter" in before.source.splitlines()


@by_notebook
def test_checks_claims_of_its_own_chapter(path):
    checks = [c for cell in code_cells(read(path)) for c in calls(python_of(cell), *CHECK)]
    assert checks, "a chapter checks at least one claim"
    prefixes = {ast.literal_eval(c.args[0]).split(".")[0] for c in checks if isinstance(c.args[0], ast.Constant)}
    assert prefixes <= {chapter_id(path)}, prefixes


@by_notebook
def test_every_claim_states_the_alternative_it_rules_out(path):
    # claims.check then fails when the tolerance would admit the alternative too
    checks = [c for cell in code_cells(read(path)) for c in calls(python_of(cell), *CHECK)]
    missing = [ast.unparse(c.args[0]) for c in checks if "alternative" not in {k.arg for k in c.keywords}]
    assert not missing, f"claims without alternative=(description, value): {missing}"


@by_notebook
def test_explorer_controls_survive_without_ipywidgets(path):
    # controls come from plotting.widgets(), which stands in for ipywidgets when it is not installed
    trees = [python_of(cell) for cell in code_cells(read(path))]
    imports = [ast.unparse(node) for tree in trees for node in ast.walk(tree)
               if isinstance(node, (ast.Import, ast.ImportFrom)) and "ipywidgets" in ast.unparse(node)]
    assert not imports, f"import ipywidgets directly: {imports}; use widgets = plotting.widgets()"


def test_pages_with_a_colab_button_include_every_notebook_page():
    assert {p.relative_to(ROOT).as_posix() for p in PAGES} >= {"gpu.ipynb", "appendix/benchmarks.ipynb"}


def test_the_shipped_table_of_scales_is_the_chapters_own():
    # the GPU page shows pv.book.scales(), which a page opened alone in Colab can read
    import json

    from tools import book_data
    shipped = json.loads(book_data.SCALES.read_text(encoding="utf-8"))
    assert shipped == book_data.scales(), "the chapters' sizes changed: run `python -m tools.book_data`"


def test_the_shipped_numbers_of_results_are_the_chapters_own():
    # figures, printed output and claims tables name results through pv.book.numbered, from this table
    import json

    from tools import book_data
    shipped = json.loads(book_data.LABELS.read_text(encoding="utf-8"))
    assert shipped == book_data.labels(), "the chapters' numbered results changed: run `python -m tools.book_data`"


@by_notebook
def test_what_a_reader_sees_names_results_by_number(path):
    # a label (ch3-mean) in a code cell's strings reaches a legend, printed output or a claims table: each must go
    # through pv.book.numbered (the claims table does it for a claim's `source=`), never reach the page as it is
    from pavlov.book import labels

    known, raw = labels(), []
    for i, cell in enumerate(code_cells(read(path))):
        tree = python_of(cell)
        spared = {id(node) for call in ast.walk(tree) if isinstance(call, ast.Call)
                  for value in ([kw.value for kw in call.keywords if kw.arg == "source"]
                                + (call.args if ast.unparse(call.func).endswith("numbered") else []))
                  for node in ast.walk(value)}
        raw += [(i, label) for node in ast.walk(tree) if isinstance(node, ast.Constant) and isinstance(node.value, str)
                and id(node) not in spared for label in re.findall(r"\bch\d+-[a-z0-9-]+", node.value) if label in known]
    assert not raw, f"labels shown as such (code cell, label); wrap the text in pv.book.numbered: {raw}"


def test_each_size_in_the_table_of_scales_is_named_by_what_it_sets():
    from tools import book_data
    source = """
a, b = 16, pv.by_scale(quick=1, full=2)
f(x, steps=pv.by_scale(quick=2, full=2))
grid = np.arange(0.1, pv.by_scale(quick=3, full=2))
sizes = {"crowded": pv.by_scale(quick=4, full=2)}
print(pv.by_scale(quick=5, full=2))
"""
    named = {row["quick"]: row["sets"] for row in book_data.sizes(source)}
    assert named == {"1": "b", "2": "steps", "3": "grid", "4": "crowded", "5": ""}
    assert all(row["sets"] for row in book_data.scales()), "a chapter's size sets nothing the table can name"



def test_every_chapter_has_a_full_scale_record():
    # the GPU page lists pv.book.full_scale(): each chapter's latest full-scale run (python -m tools.full_scale)
    from pavlov import book
    from tools import book_data, full_scale

    records = {r["chapter"]: r for r in book.full_scale()}
    assert set(records) == {full_scale.chapter_id(p) for p in book_data.chapters()}
    for chapter, r in records.items():
        assert r["seconds"] > 0 and r["machine"] and r["cpus"] >= 1, chapter
        if r["completed"]:                         # the probe ran: the run's own measurements, at the full scale
            assert r["scale"] == "full" and r["host_bytes"] > 0 and not r["errors"] and not r["note"], chapter
        else:
            assert r["note"] or r["errors"], f"{chapter}: a run that did not complete says why"


def test_every_chapter_has_a_tallied_full_scale_run():
    # the GPU page estimates each chapter's time on a T4 from pv.book.work() (python -m tools.full_scale --work)
    from pavlov import book
    from tools import book_data, full_scale

    records = {r["chapter"]: r for r in book.work()}
    assert set(records) == {full_scale.chapter_id(p) for p in book_data.chapters()}
    for chapter, r in records.items():
        assert r["ops"] > 0 and r["wall"] > 0 and r["measured"] > 0 and len(r["machines"]) == 2, chapter
        assert all(r[m["name"]] > 0 for m in r["machines"]), chapter
        assert r[f'{r["machines"][1]["name"]}, estimated'] > 0, f"{chapter}: tallied before each op was estimated"
        assert r["completed"] or r["note"], f"{chapter}: a run that did not complete says why"


def test_the_full_scale_tool_records_a_run_and_a_stopped_run(tmp_path):
    from tools import full_scale

    path = tmp_path / "ch99_probe.ipynb"
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("import pavlov as pv\npv.setup()")])
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(nb, path)
    done = full_scale.run(path, timeout=120)
    assert done["chapter"] == "ch99" and done["completed"] and done["scale"] == "full"
    assert done["host_bytes"] > 0 and done["seconds"] > 0 and done["device"]
    # --work: the same run with its ops tallied (tools/work.py), and the time they take on each machine
    # (a chapter that sets torch's threads has this CPU measured again, at its threads)
    nb.cells.append(nbformat.v4.new_code_cell(
        "import torch\ntorch.set_num_threads(1)\nx = torch.ones(64, 64)\ny = (x @ x).sum()"))
    nbformat.write(nb, path)
    tallied = full_scale.run(path, timeout=120, work=True)
    assert tallied["completed"] and tallied["flops"] >= 2 * 64**3 and tallied["ops"] >= 2
    assert tallied["threads"] == 1
    here, gpu = (m["name"] for m in tallied["machines"])
    assert tallied[here] > 0 and tallied[gpu] > 0 and 0 < tallied["measured"] < tallied["wall"]
    assert tallied[f"{gpu}, estimated"] > 0
    assert tallied["seconds"] == tallied["wall"]  # timed without the tally's own cost
    nb.cells.append(nbformat.v4.new_code_cell("import time\ntime.sleep(60)"))
    nbformat.write(nb, path)
    stopped = full_scale.run(path, timeout=5)
    assert not stopped["completed"] and stopped["note"] == "ran past the 5 s limit"
    assert stopped["host_bytes"] is None and 4 <= stopped["seconds"] < 60


def test_the_full_scale_tool_counts_a_sampled_function_as_run_in_full(tmp_path, monkeypatch):
    # chapter 9's trainings run SAMPLE and 2 SAMPLE steps under the tally and count the rest: the ops
    # counted are those of the whole run, set-up once
    from tools import full_scale

    (tmp_path / "repeater.py").write_text(
        "import torch\n\n\ndef run(*, steps):\n    torch.ones(8).neg()\n"
        "    for _ in range(steps):\n        torch.ones(8).sum()\n    return steps\n")
    path = tmp_path / "ch99_sampled.ipynb"
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("import repeater\nrepeater.run(steps=100)")])
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(nb, path)
    whole = full_scale.run(path, timeout=120, work=True)
    monkeypatch.setitem(full_scale.SAMPLED, "ch99", [("repeater", "run", "steps")])
    monkeypatch.setattr(full_scale, "SAMPLE", 5)
    sampled = full_scale.run(path, timeout=120, work=True)
    assert sampled["completed"] is False and "ran 5 and 10 steps" in sampled["note"]
    for key in ("ops", "bytes"):
        assert sampled[key] == whole[key], key


# ruff's line length (pyproject.toml): what fits the book's column at 1280 px (tests/test_layout.py measures it)
CODE_COLUMNS = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["ruff"]["line-length"]


def code_lines(cell) -> list[str]:
    """The lines of code a cell shows: a code cell's source, or a markdown cell's ```python blocks."""
    if cell.cell_type == "code":
        return cell.source.splitlines()
    lines, fence = [], None
    for line in cell.source.splitlines():
        opening = re.match(r"\s*(`{3,})\s*(python|py|ipython3?)\s*$", line)
        if fence is None and opening:
            fence = opening.group(1)
        elif fence is not None and line.strip() == fence:
            fence = None
        elif fence is not None:
            lines.append(line.strip("\n"))
    return lines


@by_page
def test_code_lines_fit_the_column(path):
    long = [(i, line) for i, cell in enumerate(read(path).cells) for line in code_lines(cell)
            if len(line) > CODE_COLUMNS]
    assert not long, f"lines over {CODE_COLUMNS} columns (cell, line): {long[:5]}"


def test_notebooks_are_formatted_by_ruff():
    import subprocess
    import sys

    ruff = Path(sys.executable).with_name("ruff")
    done = subprocess.run([str(ruff), "format", "--check", "--diff"], cwd=ROOT, capture_output=True, text=True)
    assert done.returncode == 0, f"run `{ruff} format` (pyproject.toml's [tool.ruff]):\n{done.stdout[-3000:]}"


MACHINERY = ("plotting.subplots(", "plt.show(", "plotting.explorer(", "claims.check(", "claims.table(")


@by_notebook
def test_a_cell_ending_in_a_claim_check_prints_no_repr(path):
    # the check prints its verdict; a Claim left as the cell's value would show its repr below it
    shown = [i for i, cell in enumerate(code_cells(read(path)))
             if (body := python_of(cell).body) and isinstance(body[-1], ast.Expr)
             and ast.unparse(body[-1]).startswith(CHECK) and not cell.source.rstrip().endswith(";")]
    assert not shown, f"code cells ending in a claim check without ';' (index among code cells): {shown}"


@by_notebook
def test_figures_and_claim_checks_are_folded(path):
    # their code is machinery: folded behind a toggle (hide-input), their output shown
    open_cells = [i for i, cell in enumerate(read(path).cells) if cell.cell_type == "code"
                  and any(mark in cell.source for mark in MACHINERY)
                  and "hide-input" not in cell.metadata.get("tags", [])]
    assert not open_cells, f"cells that draw a figure or check a claim without the hide-input tag: {open_cells}"


MAX_VISIBLE_CODE_LINES = 15
FOLDED = {"hide-input", "remove-input", "remove-cell"}


@by_page
def test_visible_code_cells_are_short(path):
    # the code a reader sees is an experiment's science, about 5-15 lines (what is written, read and measured);
    # its helpers fold into a hide-input cell above it, its bookkeeping and printing into one below
    long = [(i, len(cell.source.splitlines())) for i, cell in enumerate(read(path).cells)
            if cell.cell_type == "code" and not FOLDED & set(cell.metadata.get("tags", []))
            and len(cell.source.splitlines()) > MAX_VISIBLE_CODE_LINES]
    assert not long, (f"{path.name}: visible code cells over {MAX_VISIBLE_CODE_LINES} lines (cell, lines): {long}; "
                      "fold the helpers into a hide-input cell above, the bookkeeping into one below")


@by_notebook
def test_no_figure_text_below_the_style(path):
    # the style's sizes are at least plotting.SMALLEST_TEXT_PT; a chapter may not set smaller ones
    from pavlov import plotting

    sizes = [float(size) for cell in code_cells(read(path))
             for size in re.findall(r"fontsize\s*=\s*([0-9.]+)", cell.source)]
    assert all(size >= plotting.SMALLEST_TEXT_PT for size in sizes), sizes
    assert min(v for k, v in plotting.STYLE.items() if k.endswith("size")
               and isinstance(v, (int, float))) >= plotting.SMALLEST_TEXT_PT


MAX_NUMBERS_PER_PARAGRAPH = 3
VERIFICATION = re.compile(r"^(`{3,}|:{3,})\{dropdown\} Verification.*?^\1[ \t]*$", re.MULTILINE | re.DOTALL)


@by_notebook
def test_prose_gives_one_number_per_point(path):
    # the text gives each result once, in its own units; the statistics (standard errors, tolerances, z-scores) are
    # in the claims table and the Verification dropdowns, where a paragraph may carry them
    crowded, pointers = [], []
    for i, cell in enumerate(read(path).cells):
        if cell.cell_type != "markdown":
            continue
        text = VERIFICATION.sub("", cell.source)
        crowded += [(i, n) for paragraph in re.split(r"\n[ \t]*\n", text)
                    if (n := len(re.findall(r"\{glue(?::text)?\}", paragraph))) > MAX_NUMBERS_PER_PARAGRAPH]
        pointers += [i for _ in re.finditer(r"printed (above|below)", cell.source)]
    assert not crowded, f"{path.name}: paragraphs with more than {MAX_NUMBERS_PER_PARAGRAPH} computed numbers (cell, count): {crowded}"
    assert not pointers, f"{path.name}: the prose points into raw output ('printed above') in cells {pointers}"


@by_notebook
def test_ends_its_text_with_key_takeaways(path):
    # the last section of the chapter's text, just before its exercises, is its key takeaways
    headings = [c.source.splitlines()[0] for c in read(path).cells
                if c.cell_type == "markdown" and c.source.startswith("## ")]
    assert "## Key takeaways" in headings, f"{path.name}: no '## Key takeaways' section"
    assert headings[headings.index("## Key takeaways") + 1] == "## Exercises", \
        f"{path.name}: the key takeaways are not the last section before the exercises"
    takeaways = next(c.source for c in read(path).cells if c.source.startswith("## Key takeaways"))
    assert takeaways.count("\n* ") >= 3, f"{path.name}: fewer than three key takeaways"


WORDS_PER_MINUTE = 150
MAX_READING_MINUTES = 45      # a chapter read in one sitting


def reading_minutes(path: Path) -> int:
    """The prose, the figure captions and the code shown (not the folded cells, nor the folded Verification
    dropdowns) at :data:`WORDS_PER_MINUTE`, to the nearest 5 minutes."""
    if path.suffix == ".md":
        words = len(path.read_text(encoding="utf-8").split())
    else:
        cells = read(path).cells
        words = sum(len((VERIFICATION.sub("", c.source) if c.cell_type == "markdown" else c.source).split())
                    for c in cells if c.cell_type == "markdown" or "hide-input" not in c.metadata.get("tags", []))
        words += sum(len(c.metadata.get("mystnb", {}).get("figure", {}).get("caption", "").split()) for c in cells)
    return 5 * max(1, round(words / WORDS_PER_MINUTE / 5))


def test_the_roadmap_lists_every_chapter_with_its_reading_time():
    intro = (ROOT / f"{TOC['root']}.md").read_text(encoding="utf-8")
    rows = dict(re.findall(r"^\|[^|]*\{doc\}`([^`]+)`[^|]*\|[^|]*\|\s*(\d+) min\s*\|$", intro, flags=re.M))
    expected = [*TOC_CHAPTERS, "conclusion"]
    assert list(rows) == expected, f"the roadmap lists {list(rows)}, the book has {expected}"
    for page, minutes in rows.items():
        path = next(p for p in (ROOT / f"{page}.ipynb", ROOT / f"{page}.md") if p.is_file())
        assert int(minutes) == reading_minutes(path), f"{page}: the roadmap says {minutes} min, it reads in {reading_minutes(path)}"
        assert int(minutes) <= MAX_READING_MINUTES, f"{page} reads in {minutes} min: split it"


def test_every_mention_of_a_chapter_by_number_is_a_link():
    # "chapter 4" in the text is always {doc}`chapter 4 <...ch04_...>`, pointing at that chapter
    pages = [ROOT / f"{f}.md" for f in toc_files(TOC) if (ROOT / f"{f}.md").is_file()]
    texts = {p.name: p.read_text(encoding="utf-8") for p in pages}
    texts |= {p.name: "\n".join([c.source for c in read(p).cells if c.cell_type == "markdown"]
                                 + [c.metadata.get("mystnb", {}).get("figure", {}).get("caption", "")
                                    for c in read(p).cells]) for p in PAGES}
    for name, text in texts.items():
        linked = re.sub(r"\{doc\}`[^`]*`", "", text)
        bare = re.findall(r".{0,30}\b[Cc]hapters? \d.{0,20}", linked)
        assert not bare, f"{name}: chapters named without a link: {bare}"
        for number, target in re.findall(r"\{doc\}`[Cc]hapters? (\d) <([^>]+)>`", text):
            assert Path(target).name.startswith(f"ch{int(number):02d}_"), f"{name}: chapter {number} links to {target}"


@by_notebook
def test_every_figure_is_numbered_with_a_caption(path):
    # a figure cell carries its caption in its metadata, so the book numbers it (Figure 3.2) and links to it
    figures = [c for c in code_cells(read(path)) if "plt.show()" in c.source]
    names = [c.metadata.get("mystnb", {}).get("figure", {}).get("name") for c in figures]
    number = chapter_id(path)[2:]
    assert names == [f"fig-ch{number}-{k}" for k in range(1, len(figures) + 1)], f"{path.name}: figure names {names}"
    for cell in figures:
        caption = cell.metadata["mystnb"]["figure"].get("caption", "")
        assert len(caption.split()) >= 8, f"{path.name}: {cell.metadata['mystnb']['figure']['name']} has no caption"


@by_notebook
def test_opens_with_a_headline_and_at_most_three_points_then_its_figure(path):
    # the first screen: one sentence in bold that states the chapter's answer, at most three points, the hero figure
    first = read(path).cells[0].source
    opening = first[first.index("\n") : first.index("```{glue:figure}")].strip()
    headline, _, rest = opening.partition("\n\n")
    points = re.findall(r"^\* \*\*", rest, re.M)
    assert headline.startswith("**") and headline.endswith("**"), f"{path.name}: no headline in bold opens it"
    assert 1 <= len(points) <= 3 and len(rest.split("\n* ")) == len(points), f"{path.name}: {len(points)} points"


@by_notebook
def test_names_its_sources(path):
    # Qiao and Zhong et al. by name, never "the first source" or "the second source"
    text = " ".join(c.source for c in read(path).cells if c.cell_type == "markdown")
    assert not re.search(r"\b(first|second) source\b", text), f"{path.name} calls a source by its order"


PANEL_PLACES = re.compile(r"\b(left|right|top|bottom|upper|lower)\s*(:|panel|row|column)|\((left|right|top|bottom)\)"
                          r"|\b(on|at) the (left|right)\b", re.I)


@by_notebook
def test_captions_name_panels_by_what_they_show_not_where_they_sit(path):
    # on a phone a figure's panels stack one under another (plotting.narrow_html), so "left" and "right" would be
    # wrong there: a caption names a panel by what it shows or by its title
    nb = read(path)
    text = "\n".join(c.source for c in nb.cells if c.cell_type == "markdown")
    captions = [c.metadata.get("mystnb", {}).get("figure", {}).get("caption", "") for c in code_cells(nb)]
    captions += re.findall(r"```\{glue:figure\} \S+\n(?::[^\n]*\n)*\n?(.*?)```", text, re.S)
    placed = [m.group(0) for caption in captions for m in PANEL_PLACES.finditer(caption)]
    assert not placed, f"{path.name}: captions that place panels: {placed}"


@by_notebook
def test_every_exercise_is_labelled_with_its_difficulty(path):
    markdown = "\n".join(c.source for c in read(path).cells if c.cell_type == "markdown")
    titles = re.findall(r"```\{exercise\}([^\n]*)", markdown)
    unlabelled = [t for t in titles if not re.search(r"\((easy|medium|hard)\)$", t.strip())]
    assert titles and not unlabelled, f"{path.name}: exercises without (easy), (medium) or (hard): {unlabelled}"


def test_the_introductions_figure_is_the_diagram_the_package_draws():
    from tools import book_data
    for narrow, path in book_data.INTRO_FIGURES.items():
        assert path.read_text(encoding="utf-8") == book_data.intro_figure(narrow), \
            f"{path.name} is not what pavlov.diagrams draws: run `python -m tools.book_data`"


def test_the_introductions_worked_example_prints_what_it_shows():
    import doctest
    blocks = re.findall(r"```pycon\n(.*?)```", (ROOT / "intro.md").read_text(encoding="utf-8"), re.S)
    runner = doctest.DocTestRunner()
    for block in blocks:   # one namespace per block, as a reader's one cell
        runner.run(doctest.DocTestParser().get_doctest(block, {}, "intro.md", "intro.md", 0))
    result = runner.summarize(verbose=False)
    assert blocks and result.attempted >= 5 and not result.failed, result
