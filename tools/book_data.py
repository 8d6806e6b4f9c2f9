"""Write ``pavlov/data/scales.json``: every ``by_scale(quick=..., full=...)`` call of the chapters.

``python -m tools.book_data`` after a chapter changes a size; ``tests/test_notebooks.py`` fails while
the shipped table and the chapters disagree. The GPU page shows the table through
:func:`pavlov.book.scales`, so it needs no repository files when opened on its own.
"""

from __future__ import annotations

import ast
import json
from pathlib import Path

import nbformat
import yaml
from IPython.core.inputtransformer2 import TransformerManager

ROOT = Path(__file__).resolve().parents[1]
SCALES = ROOT / "pavlov" / "data" / "scales.json"


def toc_files(entry) -> list[str]:
    """Every ``file:`` named anywhere in the table of contents (parsed ``_toc.yml``), in order."""
    if isinstance(entry, dict):
        return ([entry["file"]] if "file" in entry else []) + [f for v in entry.values() for f in toc_files(v)]
    if isinstance(entry, list):
        return [f for item in entry for f in toc_files(item)]
    return []


def chapters(root: Path = ROOT) -> list[Path]:
    """The chapter notebooks, in the order of ``_toc.yml``."""
    toc = yaml.safe_load((root / "_toc.yml").read_text(encoding="utf-8"))
    return [root / f"{entry['file']}.ipynb" for part in toc["parts"] if part["caption"] == "Chapters"
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


def main() -> None:
    SCALES.write_text(json.dumps(scales(), indent=1) + "\n", encoding="utf-8")
    print(f"wrote {SCALES.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
