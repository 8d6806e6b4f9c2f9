"""Sphinx extension: the appendix table of every claim, built from the records of the same build.

At ``builder-inited`` it points ``PAVLOV_CLAIMS_DIR`` at ``_build/claims`` (unless set) and empties
it, so the notebooks executed by this build are the only source of records. The ``claims-ledger``
directive leaves a placeholder that is filled at ``doctree-resolved``, after every chapter has
run. A failed or missing record, or a claim that states no alternative it rules out, is a build
warning, so ``-W`` fails the build.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from docutils import nodes
from sphinx.util import logging
from sphinx.util.docutils import SphinxDirective

from pavlov.claims import ClaimTable, load_records

logger = logging.getLogger(__name__)


class claims_ledger(nodes.General, nodes.Element):
    """Placeholder replaced by the ledger table once all chapters have executed."""


class ClaimsLedgerDirective(SphinxDirective):
    def run(self):
        return [claims_ledger()]


def _claims_dir(app) -> Path:
    return Path(os.environ["PAVLOV_CLAIMS_DIR"])


def _reset(app) -> None:
    os.environ.setdefault("PAVLOV_CLAIMS_DIR", str(Path(app.srcdir) / "_build" / "claims"))
    shutil.rmtree(_claims_dir(app), ignore_errors=True)


def _fill(app, doctree, docname) -> None:
    for node in doctree.findall(claims_ledger):
        records = load_records(_claims_dir(app))
        if not records:
            logger.warning("claims ledger: no claim records were written by this build", location=node)
        for r in records:
            if not r["passed"]:
                logger.warning(f"claims ledger: claim {r['id']} failed", location=node)
            if not r.get("alternative"):
                logger.warning(f"claims ledger: claim {r['id']} states no alternative it rules out", location=node)
        table = ClaimTable(records, folded=False)
        summary = nodes.paragraph(text=f"{sum(r['passed'] for r in records)} of {len(records)} claims hold "
                                       f"(scale: {', '.join(sorted({r['scale'] for r in records})) or 'none'}).")
        node.replace_self([summary, nodes.raw("", table._repr_html_(), format="html")])


def setup(app):
    app.add_node(claims_ledger)
    app.add_directive("claims-ledger", ClaimsLedgerDirective)
    app.connect("builder-inited", _reset)
    app.connect("doctree-resolved", _fill)
    return {"version": "0.1", "parallel_read_safe": False, "parallel_write_safe": True}
