"""The PDF's pages: the HTML book's chapter numbers, and the folded code left out.

On the LaTeX builder's assembled document (every page in one tree), two changes:

* LaTeX numbers every chapter of the document: the introduction's sections and the GPU page would
  take the numbers 1 to 5 and the first chapter would be 6. So ``\\frontmatter`` goes at the start
  (unnumbered), ``\\mainmatter`` before the first page under ``chapters/`` (numbered 1, 2, ...) and
  ``\\backmatter`` after the last (the conclusion and the appendix: unnumbered, their figures and
  tables numbered A.1, A.2, ...). ``latex_docclass`` must be ``book``, which has those commands.
* A printed page cannot unfold: the source of a cell folded in the HTML (``hide-input``,
  ``hide-cell``) is left out and its output kept; the introduction says where the code is.
"""

from __future__ import annotations

from docutils import nodes
from sphinx import addnodes

CHAPTERS = "chapters/"
FRONT = r"\frontmatter\edef\pavlovsecnumdepth{\arabic{secnumdepth}}\setcounter{secnumdepth}{-1}"
MAIN = r"\mainmatter\setcounter{secnumdepth}{\pavlovsecnumdepth}"
BACK = (r"\backmatter\setcounter{secnumdepth}{-1}\setcounter{figure}{0}\setcounter{table}{0}"
        r"\renewcommand{\thefigure}{A.\arabic{figure}}\renewcommand{\thetable}{A.\arabic{table}}")


def _before(node, command: str) -> None:
    """Put the LaTeX ``command`` just before ``node``."""
    node.parent.insert(node.parent.index(node), nodes.raw("", command + "\n", format="latex"))


def _matter(doctree) -> None:
    pages = list(doctree.findall(addnodes.start_of_file))
    chapters = [i for i, page in enumerate(pages) if page["docname"].startswith(CHAPTERS)]
    if not chapters:
        return
    doctree.insert(0, nodes.raw("", FRONT + "\n", format="latex"))
    _before(pages[chapters[0]], MAIN)
    if chapters[-1] + 1 < len(pages):
        _before(pages[chapters[-1] + 1], BACK)


def _unfold(doctree) -> None:
    for cell in list(doctree.findall(nodes.container)):
        if cell.get("hide_mode") in ("input", "input+output", "all"):
            for part in [c for c in cell.children if c.get("nb_element") == "cell_code_source"]:
                cell.remove(part)


def _pdf(app, doctree, docname) -> None:
    if app.builder.format == "latex":
        _matter(doctree)
        _unfold(doctree)


def setup(app):
    app.connect("doctree-resolved", _pdf)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
