"""A chapter survives a reader's environment: no GPU, a mistyped PAVLOV_SCALE, no ipywidgets.

The first chapter (the quickest, with an explorer) runs in a Jupyter kernel as a reader would run it,
with ``ipywidgets`` made unimportable and ``PAVLOV_SCALE`` set to a value the book does not know. Every
cell must run: the scale falls back to the default with a warning, and the explorer shows its first
figure with a message instead of its controls. (This machine, like CI, has no GPU.) That every chapter
takes its controls from ``plotting.widgets()`` is checked in ``test_notebooks``.
"""

from __future__ import annotations

import os
from pathlib import Path

import nbformat
from nbclient import NotebookClient

from tools.ceilings import CELL_S

ROOT = Path(__file__).resolve().parents[1]
CHAPTER = ROOT / "chapters" / "ch01_conditioning.ipynb"


def outputs_text(nb) -> str:
    return "\n".join(o.get("text", "") for cell in nb.cells if cell.cell_type == "code" for o in cell.outputs)


def test_chapter_runs_without_ipywidgets_and_with_an_unknown_scale(monkeypatch, tmp_path):
    monkeypatch.setenv("PAVLOV_SCALE", "fastest")
    monkeypatch.setenv("PAVLOV_CLAIMS_DIR", str(tmp_path / "claims"))
    monkeypatch.delenv("PAVLOV_SEED", raising=False)
    nb = nbformat.read(CHAPTER, as_version=4)
    # as if ipywidgets were not installed: importing it raises ImportError in the reader's kernel
    nb.cells.insert(0, nbformat.v4.new_code_cell('import sys\nsys.modules["ipywidgets"] = None'))
    NotebookClient(nb, timeout=CELL_S, kernel_name="python3",
                   resources={"metadata": {"path": str(CHAPTER.parent)}}).execute()   # raises if any cell fails
    text = outputs_text(nb)
    assert "PAVLOV_SCALE must be one of quick, full; got 'fastest'" in text        # the warning, on stderr
    assert "scale: quick" in text                                                   # and the default was used
    assert "ipywidgets is not installed" in text                                    # the explorer's message
    assert any("image/svg+xml" in o.get("data", {}) for cell in nb.cells if cell.cell_type == "code"
               for o in cell.outputs if "plotting.explorer(" in cell.source)       # and its first figure
    assert os.listdir(tmp_path / "claims")                                          # the claims were checked
