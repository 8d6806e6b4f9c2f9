"""_ext/glued_numbers.py: a number pasted from a page's execution in Python's scientific notation is written as a reader
writes it, and nothing else pasted is touched."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from docutils import nodes

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "_ext"))
glued = pytest.importorskip("glued_numbers")


@pytest.mark.parametrize("text, written", [
    ("3.7e-16", "3.7 × 10⁻¹⁶"), ("1.2e+06", "1.2 × 10⁶"), ("-4.1e-05", "-4.1 × 10⁻⁵"), ("2e-10", "2 × 10⁻¹⁰"),
    ("0.25", "0.25"), ("1,272,137", "1,272,137"), ("3.7e-16 s", "3.7e-16 s"),
])
def test_scientific_notation_is_written_as_a_reader_writes_it(text, written):
    assert glued.scientific(text) == written


def test_only_pasted_numbers_are_rewritten():
    paragraph = nodes.paragraph()
    pasted = nodes.inline("3.7e-16", "3.7e-16", classes=["pasted-text"])
    literal = nodes.literal("3.7e-16", "3.7e-16")
    paragraph += [pasted, nodes.Text(" and "), literal]
    document = nodes.document(None, None)
    document += paragraph
    glued._rewrite(None, document, "page")
    assert pasted.astext() == "3.7 × 10⁻¹⁶" and literal.astext() == "3.7e-16"
