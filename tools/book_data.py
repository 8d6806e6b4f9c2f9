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


def chapters(root: Path = ROOT) -> list[Path]:
    """The chapter notebooks, in the order of ``_toc.yml``."""
    toc = yaml.safe_load((root / "_toc.yml").read_text(encoding="utf-8"))
    return [root / f"{entry['file']}.ipynb" for part in toc["parts"] if part["caption"] == "Chapters"
            for entry in part["chapters"]]


def scales(root: Path = ROOT) -> list[dict]:
    """One row per ``by_scale`` call: the chapter, the variable or argument it sets, both sizes as written."""
    rows = []
    for path in chapters(root):
        source = "\n".join(TransformerManager().transform_cell(c.source)   # %pip lines become plain Python
                           for c in nbformat.read(path, 4).cells if c.cell_type == "code")
        tree = ast.parse(source)
        parents = {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and ast.unparse(node.func).endswith("by_scale"):
                sizes = {kw.arg: ast.unparse(kw.value) for kw in node.keywords}
                rows.append({"chapter": path.stem, "sets": sets(node, parents), "quick": sizes["quick"],
                             "full": sizes["full"]})
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
            if isinstance(target, ast.Tuple) and isinstance(value, ast.Tuple) and len(path) > 1:
                return ast.unparse(target.elts[value.elts.index(path[-2])])    # a, b = size, 5: a
            return ", ".join(map(ast.unparse, owner.targets))
        path.append(owner)
    return ""


def main() -> None:
    SCALES.write_text(json.dumps(scales(), indent=1) + "\n", encoding="utf-8")
    print(f"wrote {SCALES.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
