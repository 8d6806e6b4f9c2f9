"""The built book as a reader's browser shows it: headless Chromium loads every page of ``_build/html``.

Each page is rendered by Debian's Chromium (``--dump-dom`` after its scripts ran, console messages on
stderr), offline: nothing may come from the network. Checked on every page: no JavaScript error or
failed resource, math typeset by MathJax (no raw TeX left in the text), theorem and proof boxes
rendered, internal links resolving; on every chapter: its figures, every glued number, its exercises
with hidden solutions, and a Colab button that opens that chapter's notebook in the configured
repository. ``make test`` runs these when a built book is present; ``.ci/run`` runs them after
``make book`` with ``PAVLOV_BROWSER_TEST=1``, which turns a missing book or browser into a failure.
"""

from __future__ import annotations

import base64
import functools
import os
import re
import shutil
import subprocess
import tempfile
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit

import nbformat
import pytest
import yaml
from conftest import toc_files

from tools.ceilings import BROWSER_PAGE_S

ROOT = Path(__file__).resolve().parents[1]
HTML = ROOT / "_build" / "html"
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
REQUIRED = os.environ.get("PAVLOV_BROWSER_TEST") == "1"
pytestmark = pytest.mark.skipif(not REQUIRED and not (HTML / "index.html").exists(),
                                reason="no built book: run `make book` first")
FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--enable-logging=stderr", "--v=0", "--virtual-time-budget=20000")


TOC = yaml.safe_load((ROOT / "_toc.yml").read_text(encoding="utf-8"))
PAGES = [TOC["root"], *toc_files(TOC["parts"])]
CHAPTERS = [p for p in PAGES if p.startswith("chapters/")]
REPOSITORY = yaml.safe_load((ROOT / "_config.yml").read_text(encoding="utf-8"))["repository"]["url"]
REPOSITORY_PATH = urlsplit(REPOSITORY).path.strip("/")


class Page(HTMLParser):
    """What a check needs from a page: visible text, element classes and ids, images and links."""

    HIDDEN = {"script", "style", "pre", "code", "mjx-container", "textarea", "noscript", "svg"}
    VOID = {"img", "br", "hr", "meta", "link", "input", "source", "area", "base", "col", "embed", "wbr"}

    def __init__(self, text: str):
        super().__init__()
        self.stack: list[str] = []
        self.text: list[str] = []
        self.classes: list[list[str]] = []
        self.ids: set[str] = set()
        self.images: list[str] = []
        self.links: list[str] = []
        self.tags: set[str] = set()
        self.feed(text)

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        self.tags.add(tag)
        self.classes.append((attrs.get("class") or "").split())
        if attrs.get("id"):
            self.ids.add(attrs["id"])
        if tag == "img" and attrs.get("src"):
            self.images.append(attrs["src"])
        if tag == "a" and attrs.get("href"):
            self.links.append(attrs["href"])
        if tag not in self.VOID:
            self.stack.append(tag)

    def handle_endtag(self, tag):
        if tag in self.stack:
            while self.stack.pop() != tag:
                pass

    def handle_data(self, data):
        if not self.HIDDEN.intersection(self.stack):
            self.text.append(data)

    def count(self, *names: str) -> int:
        """Elements carrying all the classes ``names``."""
        return sum(set(names) <= set(c) for c in self.classes)


@functools.cache
def render(page: str) -> tuple[Page, str]:
    """The page's DOM after its scripts ran, and what Chromium's console printed."""
    if CHROMIUM is None:
        pytest.fail("Chromium is not installed (Debian: apt-get install chromium)")
    path = HTML / f"{page}.html"
    assert path.exists(), f"{path} was not built"
    with tempfile.TemporaryDirectory() as profile:
        run = subprocess.run([CHROMIUM, *FLAGS, f"--user-data-dir={profile}", "--dump-dom", path.as_uri()],
                             capture_output=True, text=True, timeout=BROWSER_PAGE_S)
    assert run.returncode == 0, run.stderr[-2000:]
    return Page(run.stdout), run.stderr


def notebook(page: str):
    return nbformat.read(ROOT / f"{page}.ipynb", as_version=4)


def markdown(page: str) -> str:
    path = ROOT / f"{page}.md"
    if path.exists():
        return path.read_text(encoding="utf-8")
    # the markdown cells, and the figure captions held in the figure cells' metadata
    cells = notebook(page).cells
    return "\n".join([c.source for c in cells if c.cell_type == "markdown"]
                     + [c.metadata.get("mystnb", {}).get("figure", {}).get("caption", "") for c in cells])


@pytest.mark.parametrize("page", PAGES)
def test_no_javascript_error_or_failed_resource(page):
    _, console = render(page)
    errors = [line for line in console.splitlines()
              if "CONSOLE" in line and ("Uncaught" in line or "Error" in line or "Failed to load" in line)
              or "net::ERR_" in line]
    assert not errors, "\n".join(errors)


@pytest.mark.parametrize("page", PAGES)
def test_math_is_typeset(page):
    dom, _ = render(page)
    text = "".join(dom.text)
    raw = [m.group(0) for m in re.finditer(r".{0,30}(\\\(|\\\[|\\begin|\$).{0,30}", text)]
    assert not raw, f"raw TeX left in the text of {page}: {raw[:5]}"
    if re.search(r"\$|\{math\}|\\begin", markdown(page)):
        assert "mjx-container" in dom.tags, f"{page} has math but MathJax typeset none of it"


@pytest.mark.parametrize("page", PAGES)
def test_no_markdown_left_unrendered(page):
    dom, _ = render(page)
    # a table's rule line shown as text (typography may have turned its "---" into dashes)
    raw = re.findall(r".{0,40}\|\s*(?:-{3,}|[\u2013\u2014]+)\s*\|.{0,40}", "".join(dom.text))
    assert not raw, f"{page}: markdown shown as text: {raw[:3]}"


@pytest.mark.parametrize("page", PAGES)
def test_theorem_and_proof_boxes_render(page):
    dom, _ = render(page)
    directives = re.findall(r"```\{prf:(\w+)\}", markdown(page))
    for kind in set(directives):
        assert dom.count(kind) >= directives.count(kind), f"{page}: {kind} boxes missing"


@pytest.mark.parametrize("page", PAGES)
def test_internal_links_resolve(page):
    dom, _ = render(page)
    base = (HTML / f"{page}.html").parent
    broken = []
    for href in dom.links:
        parts = urlsplit(href)
        if parts.scheme or href.startswith(("mailto:", "javascript:")):
            continue
        target = (base / unquote(parts.path)).resolve() if parts.path else HTML / f"{page}.html"
        if not target.exists():
            broken.append(href)
        elif parts.fragment and target.suffix == ".html":
            ids = render(str(target.relative_to(HTML).with_suffix("")))[0].ids if target != HTML / f"{page}.html" \
                else dom.ids
            if unquote(parts.fragment) not in ids:
                broken.append(href)
    assert not broken, f"{page}: broken links {broken[:10]}"


def figure_cells(page: str) -> int:
    return sum(c.cell_type == "code" and ("plt.show()" in c.source or "plotting.explorer(" in c.source)
               for c in notebook(page).cells)


@pytest.mark.parametrize("page", CHAPTERS)
def test_every_figure_is_shown(page):
    # figures are vector graphics (pavlov.plotting shows them as SVG): files, or an explorer's frames in the page
    dom, _ = render(page)
    figures = [src for src in dom.images if src.endswith(".svg") and "_images/" in src]
    for src in figures:
        path = (HTML / f"{page}.html").parent / unquote(src)
        assert path.exists() and b"<svg" in path.read_bytes()[:4096], f"{page}: bad image {src}"
    frames = [src for src in dom.images if src.startswith("data:image/svg+xml;base64,")]
    assert all(b"<svg" in base64.b64decode(src.split(",", 1)[1])[:4096] for src in frames), f"{page}: bad frame"
    shown = len(figures) + len(frames)
    assert shown >= figure_cells(page) > 0, f"{page}: {shown} figures for {figure_cells(page)} figure cells"


@pytest.mark.parametrize("page", CHAPTERS)
def test_every_glued_number_is_rendered(page):
    dom, _ = render(page)
    roles = len(re.findall(r"\{glue:text\}`", markdown(page)))
    assert dom.count("pasted-text") == roles, f"{page}: {dom.count('pasted-text')} glued values for {roles} roles"


@pytest.mark.parametrize("page", CHAPTERS)
def test_exercises_with_hidden_solutions(page):
    dom, _ = render(page)
    exercises = len(re.findall(r"```\{exercise\}", markdown(page)))
    assert exercises >= 3, f"{page}: {exercises} exercises"
    assert dom.count("solution", "dropdown") == len(re.findall(r"```\{solution\}", markdown(page))) == exercises


@pytest.mark.parametrize("page", CHAPTERS)
def test_colab_button_opens_this_chapter(page):
    dom, _ = render(page)
    expected = f"https://colab.research.google.com/github/{REPOSITORY_PATH}/blob/main/{page}.ipynb"
    assert expected in dom.links, f"{page}: no Colab link to {expected}"


def test_screenshots_of_a_few_pages():
    """Renders a few pages to PNG under ``_build/screenshots`` for a person to look at."""
    out = ROOT / "_build" / "screenshots"
    out.mkdir(parents=True, exist_ok=True)
    for page in (TOC["root"], CHAPTERS[1], CHAPTERS[-1]):
        shot = out / f"{page.replace('/', '_')}.png"
        with tempfile.TemporaryDirectory() as profile:
            subprocess.run([CHROMIUM, *FLAGS, f"--user-data-dir={profile}", "--window-size=1280,2400",
                            f"--screenshot={shot}", (HTML / f"{page}.html").as_uri()],
                           capture_output=True, timeout=BROWSER_PAGE_S, check=True)
        assert shot.stat().st_size > 10_000


def test_the_closing_page_gives_every_source_claim_a_verdict_and_its_evidence():
    text = (ROOT / "conclusion.md").read_text(encoding="utf-8")
    rows = yaml.safe_load(re.search(r"```\{source-verdicts\}\n(.*?)```", text, flags=re.S).group(1))
    dom, _ = render("conclusion")
    assert dom.count("verdict") == len(rows) >= 15, f"{dom.count('verdict')} verdicts shown for {len(rows)} claims"
    # each measured row's evidence: the section that measures it, linked, and each of its claims linked to the
    # ledger's row; a row the book does not measure says why instead
    unmeasured = [row for row in rows if row["verdict"] in ("not measured here", "cannot be tested")]
    assert dom.count("evidence") == len(rows) - len(unmeasured), "a measured row without the section that measures it"
    assert dom.count("reason") == len(unmeasured), "a row the book does not measure without its reason"
    ledger = [href for href in dom.links if "appendix/claims.html#claim-" in href]
    evidence = [claim for row in rows for claim in row.get("evidence", ())]
    assert len(ledger) == len(evidence), "every piece of evidence links to the ledger"
    assert {href.rsplit("#", 1)[1] for href in ledger} == {"claim-" + claim.replace(".", "-") for claim in evidence}
    assert dom.count("setting") == sum(row["verdict"] == "holds only in a stated setting" for row in rows)
    assert {row["source"] for row in rows} == {"qiao", "zhong"}


def test_the_introduction_links_the_pdf_of_the_book():
    dom, _ = render("intro")
    assert "pavlov.pdf" in dom.links
    pdf = (HTML / "pavlov.pdf").read_bytes()
    assert pdf.startswith(b"%PDF-") and len(pdf) > 1_000_000, "make book writes the PDF beside the pages"
