"""Write what the package ships about the book: ``pavlov/data/scales.json`` (every ``by_scale(quick=..., full=...)``
call of the chapters) ``pavlov/data/labels.json`` (the number the book gives each labelled result) and ``pavlov/data/book.json`` (the
repository and the chapters' titles, from which the GPU page links each chapter to Colab); and the introduction's
figure, chapter 1's circuit drawn by :func:`pavlov.diagrams.conditioning_circuit` across the column and for a phone
(:data:`INTRO_FIGURES`), which a Markdown page cannot draw itself.

``python -m tools.book_data`` after a chapter changes a size or a numbered result; ``tests/test_notebooks.py``
fails while the shipped tables and the chapters disagree. The performance appendix shows the scales through
:func:`pavlov.book.scales`, and figures, printed output and the claims tables name results through
:func:`pavlov.book.numbered`, so neither needs repository files when a chapter is opened on its own.
"""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path

import nbformat
import yaml
from IPython.core.inputtransformer2 import TransformerManager

ROOT = Path(__file__).resolve().parents[1]
SCALES = ROOT / "pavlov" / "data" / "scales.json"
LABELS = ROOT / "pavlov" / "data" / "labels.json"
BOOK = ROOT / "pavlov" / "data" / "book.json"
INTRO_FIGURES = {False: ROOT / "_static" / "intro_circuit.svg", True: ROOT / "_static" / "intro_circuit_phone.svg"}
"""The introduction's figure, by whether it is the phone version."""
# a sphinx-proof directive with its options: ```{prf:theorem} Title / :label: ch3-mean
PROOF_DIRECTIVE = re.compile(r"^(?:`{3,}|:{3,})\{prf:(\w+)\}[^\n]*\n((?::[\w-]+:[^\n]*\n)*)", re.MULTILINE)


def toc_files(entry) -> list[str]:
    """Every ``file:`` named anywhere in the table of contents (parsed ``_toc.yml``), in order."""
    if isinstance(entry, dict):
        return ([entry["file"]] if "file" in entry else []) + [f for v in entry.values() for f in toc_files(v)]
    if isinstance(entry, list):
        return [f for item in entry for f in toc_files(item)]
    return []


def chapters(root: Path = ROOT) -> list[Path]:
    """The chapter notebooks, in the order of ``_toc.yml``: every page of its numbered parts (the chapters, and the
    part on trained transformers, numbered on from them)."""
    toc = yaml.safe_load((root / "_toc.yml").read_text(encoding="utf-8"))
    return [root / f"{entry['file']}.ipynb" for part in toc["parts"] if part.get("numbered")
            for entry in part["chapters"]]


def scales(root: Path = ROOT) -> list[dict]:
    """One row per ``by_scale`` call: the chapter, the variable or argument it sets, both sizes as written."""
    return [{"chapter": path.stem, **row} for path in chapters(root)
            for row in sizes("\n".join(TransformerManager().transform_cell(c.source)  # %pip lines: plain Python
                                       for c in nbformat.read(path, 4).cells if c.cell_type == "code"))]


def sizes(source: str) -> list[dict]:
    """One row per ``by_scale`` call in Python source: what it sets, both sizes as written."""
    tree = ast.parse(source)
    parents = {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
    rows = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and ast.unparse(node.func).endswith("by_scale"):
            written = {kw.arg: ast.unparse(kw.value) for kw in node.keywords}
            rows.append({"sets": sets(node, parents), "quick": written["quick"], "full": written["full"]})
    return rows


def sets(node: ast.AST, parents: dict) -> str:
    """What a size is for: the nearest argument, dictionary key or variable that it goes into."""
    path = [node]
    while (owner := parents.get(path[-1])) is not None:
        if isinstance(owner, ast.keyword):
            return owner.arg or ""
        if isinstance(owner, ast.Dict) and path[-1] in owner.values:
            key = owner.keys[owner.values.index(path[-1])]
            return str(key.value) if isinstance(key, ast.Constant) else ast.unparse(key)
        if isinstance(owner, ast.Assign):
            target, value = owner.targets[-1], path[-1]
            if isinstance(target, ast.Tuple) and isinstance(value, ast.Tuple):
                return ast.unparse(target.elts[value.elts.index(path[-2])])    # a, b = size, 5: a
            return ", ".join(map(ast.unparse, owner.targets))
        path.append(owner)
    return ""


def labels(root: Path = ROOT) -> dict[str, str]:
    """Each labelled result of the chapters as the book numbers it: ``{"ch3-mean": "Proposition 3.1", ...}``.

    sphinx-proof counts each kind of result (theorem, proposition, ...) on its own, within the chapter, after
    the chapter's number; proofs are not numbered.
    """
    numbered = {}
    for number, path in enumerate(chapters(root), start=1):
        counts: dict[str, int] = {}
        for cell in nbformat.read(path, 4).cells:
            if cell.cell_type != "markdown":
                continue
            for kind, options in PROOF_DIRECTIVE.findall(cell.source):
                if kind == "proof":
                    continue
                counts[kind] = counts.get(kind, 0) + 1
                label = re.search(r"^:label:\s*(\S+)", options, re.MULTILINE)
                if label:
                    numbered[label.group(1)] = f"{kind.capitalize()} {number}.{counts[kind]}"
    return numbered


def book(root: Path = ROOT) -> dict:
    """The book's repository (``_config.yml``'s ``repository.url``) and its chapters: file and title, in order."""
    config = yaml.safe_load((root / "_config.yml").read_text(encoding="utf-8"))
    return {"repository": config["repository"]["url"],
            "chapters": [{"file": path.relative_to(root).with_suffix("").as_posix(),
                          "title": next(line[2:].strip() for c in nbformat.read(path, 4).cells
                                        if c.cell_type == "markdown" for line in c.source.splitlines()
                                        if line.startswith("# "))}
                         for path in chapters(root)]}


def intro_figure(narrow: bool) -> str:
    """The introduction's figure as SVG text (:func:`pavlov.plotting.svg_text`: the same bytes for the same package)."""
    from pavlov import diagrams, plotting

    return plotting.svg_text(diagrams.conditioning_circuit(narrow=narrow))


def main() -> None:
    for narrow, path in INTRO_FIGURES.items():
        path.write_text(intro_figure(narrow), encoding="utf-8")
    SCALES.write_text(json.dumps(scales(), indent=1) + "\n", encoding="utf-8")
    LABELS.write_text(json.dumps(labels(), indent=1) + "\n", encoding="utf-8")
    BOOK.write_text(json.dumps(book(), indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"wrote {SCALES.relative_to(ROOT)}, {LABELS.relative_to(ROOT)}, {BOOK.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
