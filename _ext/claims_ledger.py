"""Sphinx extension: the appendix table of every claim, built from the records of the same build.

The records come from the pages this build shows: each chapter's last output carries them while the book is
built (:func:`pavlov.claims.table`), and myst-nb takes every page's outputs from its cache of executions
(``execute_notebooks: cache``), where the tests stored them or the build itself did (``tools/execute.py``, which
at ``builder-inited`` empties a cache made from another package, environment or scale). The ``claims-ledger``
directive leaves a placeholder that is filled at ``doctree-resolved``, after every page has been read. A
failed or missing record, or a claim that states no alternative it rules out, is a build warning, so ``-W``
fails the build.

The ``source-verdicts`` directive is the closing page's table of the sources' claims: each row (YAML)
gives a claim of a source (MyST inline markup: its mathematics typeset), its verdict, the setting where a verdict
holds only in one, the section that measures it (``where``) and the book's claims that are its evidence; the
evidence renders as the section's name, linked, and its claims linked to their rows of the ledger, which holds
their ids and statistics. A claim the book does not measure is listed too, with the verdict "not measured here"
(something could measure it; the row's ``reason`` says what) or "cannot be tested" (no experiment could decide it),
a ``reason`` and no evidence. An evidence claim that is missing or failed, a verdict not in :data:`VERDICTS`, a
setting missing where the verdict needs one, or a reason missing where it needs one, is a build warning.

The ``chapter-resources`` directive is the performance appendix's table of what each chapter used in this build: its
time, and its peak memory on the host and the GPU, from the records :func:`pavlov.claims.table` writes at
the end of each chapter. A build that wrote none is a build warning.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import yaml
from docutils import nodes
from sphinx.util import logging
from sphinx.util.docutils import SphinxDirective

from pavlov.claims import ClaimTable, anchor, executed_records

logger = logging.getLogger(__name__)


class claims_ledger(nodes.General, nodes.Element):
    """Placeholder replaced by the ledger table once all chapters have executed."""


class ClaimsLedgerDirective(SphinxDirective):
    def run(self):
        return [claims_ledger()]


VERDICTS = ("holds", "holds only in a stated setting", "wrong", "not measured here", "cannot be tested")
UNMEASURED = VERDICTS[3:]                               # rows with a reason, and no evidence or section
SOURCES = {"qiao": "Qiao", "zhong": "Zhong et al."}


class source_verdicts(nodes.General, nodes.Element):
    """Placeholder for the sources' claims, filled (with their evidence) once all chapters have executed."""


class SourceVerdictsDirective(SphinxDirective):
    has_content = True

    def run(self):
        try:
            rows = yaml.safe_load("\n".join(self.content))
        except yaml.YAMLError as error:
            raise self.error(f"source-verdicts: the content is not YAML: {error}") from error
        if not isinstance(rows, list) or not rows:
            raise self.error("source-verdicts: the content must be a YAML list of rows")
        for i, row in enumerate(rows, 1):
            needed = {"claim", "source", "verdict", "reason"} if (row or {}).get("verdict") in UNMEASURED else {
                "claim", "source", "verdict", "evidence", "where"}
            missing = needed - set(row or {})
            if missing:
                raise self.error(f"source-verdicts: row {i} lacks {sorted(missing)}")
            if row["verdict"] not in VERDICTS:
                raise self.error(f"source-verdicts: row {i}: verdict {row['verdict']!r} is not one of {VERDICTS}")
            if row["source"] not in SOURCES:
                raise self.error(f"source-verdicts: row {i}: source {row['source']!r} is not one of {list(SOURCES)}")
            if (row["verdict"] == "holds only in a stated setting") != bool(row.get("setting")):
                raise self.error(f"source-verdicts: row {i}: a setting goes with the verdict 'holds only in a stated "
                                 f"setting', and only with it")
            if (row["verdict"] in UNMEASURED) != bool(row.get("reason")) or (
                    row["verdict"] in UNMEASURED and (row.get("evidence") or row.get("where"))):
                raise self.error(f"source-verdicts: row {i}: a reason, and no evidence, goes with the verdicts "
                                 f"{UNMEASURED}, and only with them")
        node = source_verdicts()
        node["rows"] = rows
        # the claims and settings as MyST inline text (their mathematics typeset), parsed here, where a parser is, as
        # the placeholder's children, two paragraphs a row: the build resolves their references before it is filled
        for row in rows:
            node += [nodes.paragraph("", "", *(self.parse_inline(str(row[key]), lineno=self.lineno)[0]
                                               if row.get(key) else [])) for key in ("claim", "setting", "reason")]
        return [node]


class chapter_resources(nodes.General, nodes.Element):
    """Placeholder for the table of each chapter's time and memory, filled once all chapters have executed."""


class ChapterResourcesDirective(SphinxDirective):
    def run(self):
        return [chapter_resources()]


def _gib(count) -> str:
    return "-" if count is None else f"{count / 2**30:.2f}"


def _resources_table(records: list[dict]) -> nodes.table:
    from tools.execute import chapter_budgets

    budgets = chapter_budgets()
    columns = {"chapter": 8, "scale": 6, "device": 6, "time (s)": 7, "budget at the quick scale (s)": 8,
               "peak host memory (GiB)": 10, "peak GPU memory (GiB)": 10}
    node, body = _table(["chapter-resources"], columns)
    for r in records:
        cells = (r["chapter"], r["scale"], r["device"], f"{r['seconds']:.0f}", str(budgets.get(r["chapter"], "-")),
                 _gib(r["host_bytes"]), _gib(r["device_bytes"]))
        body += _row(*(nodes.paragraph(text=c) for c in cells))
    return node


def _row(*cells) -> nodes.row:
    row = nodes.row()
    for content in cells:
        entry = nodes.entry()
        entry += content if isinstance(content, list) else [content]
        row += entry
    return row


def _table(classes: list[str], columns: dict[str, int]) -> tuple[nodes.table, nodes.tbody]:
    """An empty table with a header row of ``columns`` (title: relative width); returns it and its body."""
    table, group = nodes.table(classes=classes), nodes.tgroup(cols=len(columns))
    head, body = nodes.thead(), nodes.tbody()
    head += _row(*(nodes.paragraph(text=title) for title in columns))
    group += [*(nodes.colspec(colwidth=width) for width in columns.values()), head, body]
    table += group
    return table, body


def _section_title(app, page: str, section: str) -> str:
    """The title of the section with id ``section`` on ``page`` (the page's own title without one)."""
    doctree = app.env.get_doctree(page)
    for node in doctree.findall(nodes.section):
        if not section or section in node["ids"]:
            return node[0].astext()
    logger.warning(f"source-verdicts: {page} has no section #{section}")
    return page


def _verdicts_table(app, docname: str, rows: list[dict], parsed: list[nodes.paragraph], records: dict,
                    location) -> nodes.table:
    table, body = _table(["source-verdicts"], {"verdict": 14, "the source's claim": 52, "where the book measures it": 34})
    ledger = app.builder.get_relative_uri(docname, "appendix/claims")
    for row, claim, setting, reason in zip(rows, parsed[::3], parsed[1::3], parsed[2::3]):
        claim = claim.deepcopy()
        claim += nodes.emphasis(text=f" ({SOURCES[row['source']]})")
        cells = [claim]
        if row.get("setting"):
            setting = setting.deepcopy()
            setting["classes"].append("setting")
            setting.insert(0, nodes.strong(text="Setting: "))
            cells.append(setting)
        if row["verdict"] in UNMEASURED:                      # why the book does not measure it, in place of evidence
            reason = reason.deepcopy()
            reason["classes"].append("reason")
            body += _row(nodes.paragraph(text=row["verdict"], classes=["verdict"]), cells, [reason])
            continue
        page, _, section = row["where"].partition("#")       # a page, and optionally a section's id on it
        chapter = re.match(r"chapters/ch0*(\d+)_", page)
        where = nodes.paragraph(classes=["evidence"])
        where += nodes.reference("", "", nodes.Text(f"chapter {chapter.group(1)}, " if chapter else ""),
                                 nodes.emphasis(text=_section_title(app, page, section)),
                                 refuri=app.builder.get_relative_uri(docname, page) + (f"#{section}" * bool(section)))
        links = []
        for claim_id in row["evidence"]:
            record = records.get(claim_id)
            if record is None:
                logger.warning(f"source-verdicts: no claim {claim_id} was checked by this build", location=location)
                continue
            if not record["passed"]:
                logger.warning(f"source-verdicts: claim {claim_id}, evidence for a verdict, failed", location=location)
            links.append(nodes.reference("", str(len(links) + 1), refuri=f"{ledger}#{anchor(claim_id)}",
                                         reftitle=claim_id))
        if links:
            where += nodes.Text("; its claims in the ledger: ")
            for i, link in enumerate(links):
                where += [nodes.Text(", ")] * bool(i) + [link]
        body += _row(nodes.paragraph(text=row["verdict"], classes=["verdict"]), cells, [where])
    return table


def _current_cache(app) -> None:
    """Empty the book's cache of executed pages if it was made from another package, environment or scale."""
    sys.path.insert(0, str(Path(app.srcdir)))
    from tools.execute import open_cache

    open_cache(Path(app.env.mystnb_config.execution_cache_path))


def _shown(app) -> tuple[list[dict], list[dict], list[str]]:
    if getattr(app, "_pavlov_shown", None) is None:      # read once per build, for every page that shows records
        app._pavlov_shown = _read_shown(app)
    return app._pavlov_shown


def _read_shown(app) -> tuple[list[dict], list[dict], list[str]]:
    """The claim and resource records of the pages this build shows, from their outputs: each page's execution in
    the cache, matched by the page's code as myst-nb matches it (it takes the outputs it shows from there); and the
    pages that end with a claims table whose output carries no records (executed without the book's switch)."""
    import nbformat
    from jupyter_cache import get_cache

    cache, shown, silent = get_cache(app.env.mystnb_config.execution_cache_path), [], []
    for doc in sorted(app.env.found_docs):
        path = Path(app.env.doc2path(doc))
        if path.suffix == ".ipynb":
            try:
                page = cache.merge_match_into_notebook(nbformat.read(path, as_version=4))[1]
            except KeyError:          # not executed, or its execution failed: a warning of its own already
                continue
            shown.append(page)
            if any("claims.table(" in c.source for c in page.cells) and executed_records([page]) == ([], []):
                silent.append(doc)
    return (*executed_records(shown), silent)


def _fill(app, doctree, docname) -> None:
    verdicts, ledgers = list(doctree.findall(source_verdicts)), list(doctree.findall(claims_ledger))
    for node in doctree.findall(chapter_resources):
        used = _shown(app)[1]
        if not used:
            logger.warning("chapter resources: no chapter recorded its time and memory in this build", location=node)
        node.replace_self(_resources_table(used))
    if not verdicts and not ledgers:
        return
    records, _, silent = _shown(app)
    for doc in silent:
        logger.warning(f"claims ledger: {doc} shows a claims table but its execution carries no records "
                       "(it ran without PAVLOV_BOOK)", location=ledgers[0] if ledgers else verdicts[0])
    for node in verdicts:
        node.replace_self(_verdicts_table(app, docname, node["rows"], list(node.children),
                                          {r["id"]: r for r in records}, node))
    for node in ledgers:
        if not records:
            logger.warning("claims ledger: no claim records were written by this build", location=node)
        for r in records:
            if not r["passed"]:
                logger.warning(f"claims ledger: claim {r['id']} failed", location=node)
            if not r.get("alternative"):
                logger.warning(f"claims ledger: claim {r['id']} states no alternative it rules out", location=node)
        table = ClaimTable(records, folded=False)
        summary = nodes.paragraph(text=f"{table.summary}; scale: "
                                       f"{', '.join(sorted({r['scale'] for r in records})) or 'none'}.")
        node.replace_self([summary, nodes.raw("", table._repr_html_(), format="html") if app.builder.format == "html"
                           else _ledger_table(table)])


def _ledger_table(table: ClaimTable) -> nodes.table:
    """The ledger for a builder without HTML (the PDF): a plain table, each claim a target its links reach."""
    widths = {"status": 6, "claim": 10, "statement": 30, "measured": 7, "predicted": 7, "required": 12,
              "rules out": 16, "source": 12}
    # a close claim's value is its prediction, an at_most or at_least claim's its bound (the cell says "bound")
    titles = {"predicted": "predicted or bound"}
    node, body = _table(["claims-table", "longtable"], {titles.get(c, c): widths[c] for c in table.columns})
    for r in table.rows:
        status, claim_id, *rest = table.cells(r)
        first = nodes.paragraph()
        first += [nodes.target("", "", ids=[anchor(claim_id)]), nodes.Text(claim_id)]
        body += _row(nodes.paragraph(text=status), first, *(nodes.paragraph(text=v) for v in rest))
    return node


def setup(app):
    app.add_node(claims_ledger)
    app.add_directive("claims-ledger", ClaimsLedgerDirective)
    app.add_node(source_verdicts)
    app.add_directive("source-verdicts", SourceVerdictsDirective)
    app.add_node(chapter_resources)
    app.add_directive("chapter-resources", ChapterResourcesDirective)
    app.connect("builder-inited", _current_cache, priority=900)   # after myst-nb has set the cache's path
    app.connect("doctree-resolved", _fill)
    return {"version": "0.1", "parallel_read_safe": False, "parallel_write_safe": True}
