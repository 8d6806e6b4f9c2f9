"""Numbers pasted from a page's execution (``{glue:text}`` with a format such as ``:.1e``) written as a reader writes
them: ``3.7e-16`` becomes ``3.7 × 10⁻¹⁶``. Python's format specifications have no such form, so the pasted text is
rewritten once the page is resolved; the value and its digits are the execution's."""

from __future__ import annotations

import re

from docutils import nodes

_E_NOTATION = re.compile(r"^(-?\d+(?:\.\d+)?)e([+-])(\d+)$")
_SUPERSCRIPT = str.maketrans("0123456789-", "⁰¹²³⁴⁵⁶⁷⁸⁹⁻")


def scientific(text: str) -> str:
    """``text`` in the form a reader writes a number in scientific notation, if it is one in Python's; else as it is.

    >>> scientific("3.7e-16"), scientific("1.2e+06"), scientific("0.25"), scientific("a1e5")
    ('3.7 × 10⁻¹⁶', '1.2 × 10⁶', '0.25', 'a1e5')
    """
    found = _E_NOTATION.match(text.strip())
    if not found:
        return text
    mantissa, sign, power = found.groups()
    exponent = ("-" if sign == "-" else "") + str(int(power))
    return f"{mantissa} × 10{exponent.translate(_SUPERSCRIPT)}"


def _rewrite(app, doctree, docname) -> None:
    for node in doctree.findall(nodes.inline):
        if "pasted-text" in node.get("classes", []) and len(node.children) == 1:
            text = node.astext()
            written = scientific(text)
            if written != text:
                node.replace(node.children[0], nodes.Text(written))


def setup(app):
    app.connect("doctree-resolved", _rewrite)
    return {"version": "0.1", "parallel_read_safe": True, "parallel_write_safe": True}
