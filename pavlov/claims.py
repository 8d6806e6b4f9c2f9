"""The claims ledger: every quantitative statement of the book, checked where it is made.

A claim has an id namespaced by chapter (``ch2.forms_agree``), one sentence, the predicted value
with its source (a theorem, an equation, a paper), the measured value and a tolerance derived from
the statistics (see :func:`tolerance`). :func:`check` compares them; it raises ``AssertionError``
with a readable message when the claim fails, so an executed notebook (and the test that executes it) fails with it.

Every check, passed or failed, is appended as one JSON line to ``<dir>/<chapter>.jsonl``, where
``<dir>`` is ``PAVLOV_CLAIMS_DIR`` or, by default, ``_build/claims/`` at the root of the book
(the nearest directory above the working directory holding ``_toc.yml``). The book's appendix is
generated from these records at build time. Inside the built book each claim's measured value is
also glued (myst-nb) under its id, with ``<id>.predicted`` and ``<id>.tolerance`` beside it, and
``<id>.effect`` when the check measures in standard errors and gives the same comparison in the
measurement's own units, which the prose reports first.
"""

from __future__ import annotations

import html
import json
import math
import os
import re
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from statistics import NormalDist

import numpy as np
import torch

from . import _validate
from .book import numbered
from .runtime import building_book

RELATIONS = {
    "close": "|measured - predicted| <= tolerance",
    "at_most": "measured <= predicted + tolerance",
    "at_least": "measured >= predicted - tolerance",
}
ID_PATTERN = re.compile(r"(ch\d+)\.[a-z0-9_]+(\.[a-z0-9_]+)*")
RECORDS_KEY = "pavlov-records"
"""The key of the output metadata in which a chapter's last output carries its claim records while the book is built
(metadata, not an output type of its own: no renderer meets it)."""

_session: dict[str, Claim] = {}


@dataclass(frozen=True)
class Claim:
    """One checked claim; ``margin`` is the deviation in units of the tolerance (``<= 1`` passes)."""

    id: str
    statement: str
    predicted: float
    measured: float
    tolerance: float
    source: str
    relation: str
    passed: bool
    margin: float
    alternative: tuple[str, float] | None = None   # what the claim rules out, and the value it would give
    alternative_margin: float | None = None         # the alternative's deviation from the prediction, in tolerances
    alternative_distance: float | None = None       # ... and from the measurement (> 1: ruled out)
    effect: float | None = None                     # the comparison in the measurement's own units
    derived_from: tuple[str, ...] = ()              # the claims whose measurement this one restates

    @property
    def chapter(self) -> str:
        return self.id.split(".", 1)[0]


def tolerance(standard_error: float, *, z: float = 5.0) -> float:
    """A tolerance of ``z`` standard errors (``standard_error``: a number or a one-element tensor).

    With ``z = 5`` a correct claim whose estimate is close to normal fails with probability about
    ``6e-7`` per check, so the book's CI does not flake; a deviation of five standard errors is
    still small when the standard error is, which is what each chapter's trial count ensures.
    """
    if isinstance(standard_error, torch.Tensor) and standard_error.numel() == 1:
        standard_error = standard_error.item()
    standard_error = _validate.finite_float("standard_error", standard_error, nonnegative=True)
    return _validate.finite_float("z", z, positive=True) * standard_error


def largest_z(m: int, *, z: float = 5.0, dof: int | None = None) -> float:
    """The tolerance, in standard errors, for the largest of ``m`` deviations each held to ``z`` alone.

    A claim that every one of ``m`` points is within ``z`` standard errors of its prediction fails, for a correct
    theory, ``m`` times as often as a claim about one point. The largest of ``m`` deviations is held instead to
    the ``z_m`` whose two-sided normal tail, times ``m``, is the tail of ``z`` for one point (Bonferroni's bound):
    the claim then fails no more often than a single check, whatever the correlation between the points.

    With ``dof``, each standard error is itself estimated with that many degrees of freedom (a jackknife over
    ``dof + 1`` blocks), so each deviation is Student's t, not normal: ``z_m`` is then t's quantile at the same
    tail, larger because an underestimated error inflates the deviation.

    >>> largest_z(1), round(largest_z(10), 3), round(largest_z(100), 3)
    (5.0, 5.427, 5.824)
    >>> round(largest_z(1, dof=31), 2), round(largest_z(9, dof=31), 2)
    (6.27, 7.05)
    """
    m = _validate.positive_int("m", m)
    z = _validate.finite_float("z", z, positive=True)
    tail = 2 * NormalDist().cdf(-z) / m            # P(|Z| > z) for one point, shared among m
    if dof is None:
        return z if m == 1 else NormalDist().inv_cdf(1 - tail / 2)
    dof = _validate.positive_int("dof", dof)
    low, high = 0.0, 1.0
    while _t_tail(high, dof) > tail:
        low, high = high, 2 * high
    for _ in range(60):                            # bisection: t's tail falls monotonically
        low, high = ((low + high) / 2, high) if _t_tail((low + high) / 2, dof) > tail else (low, (low + high) / 2)
    return high


def _t_tail(t: float, dof: int) -> float:
    """P(|T| > t) for Student's t with ``dof`` degrees of freedom. With t = sqrt(dof) tan(theta) its density is
    proportional to cos(theta)^(dof - 1) on [0, pi/2), a smooth integrand that Gauss-Legendre integrates exactly
    enough: the tail is the share of that integral beyond theta.

    >>> round(_t_tail(2.365, 7), 4)
    0.05
    """
    nodes, weights = np.polynomial.legendre.leggauss(64)

    def area(theta: float) -> float:
        width = math.pi / 2 - theta
        return width / 2 * float(weights @ np.cos(theta + width * (nodes + 1) / 2) ** (dof - 1))

    return area(math.atan(t / math.sqrt(dof))) / area(0.0)


def records_dir() -> Path:
    """Where claim records go: ``PAVLOV_CLAIMS_DIR``, else ``_build/claims`` at the book's root."""
    if os.environ.get("PAVLOV_CLAIMS_DIR"):
        return Path(os.environ["PAVLOV_CLAIMS_DIR"])
    here = Path.cwd().resolve()
    root = next((p for p in (here, *here.parents) if (p / "_toc.yml").is_file()), here)
    return root / "_build" / "claims"


def _as_float(name: str, value) -> float:
    try:
        value = float(value)
    except (TypeError, ValueError):
        raise TypeError(f"{name} must be a real number (or a one-element tensor), got {type(value).__name__}") from None
    if math.isnan(value):
        raise ValueError(f"{name} is NaN")
    return value


def _deviation(relation: str, measured: float, predicted: float) -> float:
    return {"close": abs(measured - predicted), "at_most": measured - predicted,
            "at_least": predicted - measured}[relation]


def _in_tolerances(deviation: float, tol: float) -> float:
    return deviation / tol if tol > 0 else (0.0 if deviation <= 0 else math.inf)


def check(claim_id: str, statement: str, *, measured, predicted, tolerance: float, source: str,
          relation: str = "close", alternative: tuple[str, float] | None = None,
          effect: float | None = None, derived_from: tuple[str, ...] = ()) -> Claim:
    """Check one claim, record it, and raise ``AssertionError`` if it does not hold.

    Args:
        claim_id: ``"ch<N>.<name>"``, lower case.
        statement: the claim in one sentence, as the prose makes it.
        measured: the value the chapter computed.
        predicted: the value the theory or the source predicts.
        tolerance: the allowed deviation, from the statistics (:func:`tolerance`) or from a
            rounding-error analysis for exact identities.
        source: where the prediction comes from (theorem, equation, paper).
        relation: ``"close"``, ``"at_most"`` or ``"at_least"`` (see :data:`RELATIONS`).
        alternative: ``(description, value)``: the hypothesis the claim rules out (the effect removed,
            or a rival law) and the value it predicts. The measurement itself must exclude it: the
            check fails unless the alternative lies more than a tolerance from the measured value, on
            the side the relation forbids (``alternative_distance > 1``), so that the alternative's
            own check, with the same tolerance, would fail on this measurement. A design whose
            alternative lies more than two tolerances from the prediction (``alternative_margin >
            2``) guarantees this for every measurement that passes; one with less can pass while
            sitting within a tolerance of the alternative, and then it fails here.
        effect: for a check made in standard errors, the same comparison in the measurement's own
            units (a largest deviation in memories, a rise in error rate); recorded and glued as
            ``<id>.effect`` so that the prose can give the effect first and its standard errors second.
        derived_from: the ids of earlier claims whose measurement this one restates in other terms (a
            capacity read off an ISR sweep that another claim checks): shown in the ledger as derived,
            and not counted as independent evidence.

    >>> c = check("ch0.example", "Two plus two is four.", measured=4.2, predicted=4, tolerance=0.5,
    ...           source="arithmetic", alternative=("two plus two is five", 5))  # doctest: +ELLIPSIS
    ch0.example holds: measured 4.2, predicted 4 within 0.5 (arithmetic). ... Rules out two plus two is five (5).
    >>> c.alternative_margin, round(c.alternative_distance, 2)
    (2.0, 1.6)
    >>> c = check("ch0.example", "Two plus two is four.", measured=4.4, predicted=4, tolerance=0.5,
    ...           source="arithmetic", alternative=("two plus two is 4.9", 4.9))  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    AssertionError: claim ch0.example does not rule out its alternative, two plus two is 4.9 (4.9): ...
    """
    if not isinstance(claim_id, str) or not ID_PATTERN.fullmatch(claim_id):
        raise ValueError(f"claim_id must look like 'ch2.forms_agree' (chapter, dot, lower-case name), got {claim_id!r}")
    if not isinstance(statement, str) or not statement.strip():
        raise ValueError("statement must be a non-empty sentence")
    if not isinstance(source, str) or not source.strip():
        raise ValueError("source must name where the prediction comes from")
    _validate.option("relation", relation, tuple(RELATIONS))
    measured, predicted = _as_float("measured", measured), _as_float("predicted", predicted)
    tol = _validate.finite_float("tolerance", tolerance, nonnegative=True)
    deviation = _deviation(relation, measured, predicted)
    passed = deviation <= tol
    margin = _in_tolerances(deviation, tol)
    alternative_margin = alternative_distance = None
    if alternative is not None:
        if (not isinstance(alternative, tuple) or len(alternative) != 2 or not isinstance(alternative[0], str)
                or not alternative[0].strip()):
            raise TypeError(f"alternative must be a (description, value) pair, got {alternative!r}")
        alternative = (alternative[0].strip(), _as_float("alternative value", alternative[1]))
        alternative_margin = _in_tolerances(_deviation(relation, alternative[1], predicted), tol)
        alternative_distance = _in_tolerances(_deviation(relation, alternative[1], measured), tol)
    if effect is not None:
        effect = _as_float("effect", effect)
    if isinstance(derived_from, str):
        derived_from = (derived_from,)
    if not isinstance(derived_from, (tuple, list)) or not all(
            isinstance(d, str) and ID_PATTERN.fullmatch(d) and d != claim_id for d in derived_from):
        raise ValueError(f"derived_from must name other claims by id ('ch3.isr_sphere'), got {derived_from!r}")
    claim = Claim(claim_id, statement.strip(), predicted, measured, tol, source.strip(), relation, passed, margin,
                  alternative, alternative_margin, alternative_distance, effect, tuple(derived_from))
    _session[claim_id] = claim
    _record(claim)
    _glue(claim)
    if not passed:
        raise AssertionError(
            f"claim {claim_id} failed: {statement.strip()}\n"
            f"  measured {measured:.6g}, predicted {predicted:.6g} ({source.strip()}), "
            f"required {RELATIONS[relation]} with tolerance {tol:.3g}; deviation {deviation:.3g}")
    if not rules_out(alternative_distance):
        raise AssertionError(
            f"claim {claim_id} does not rule out its alternative, {alternative[0]} ({alternative[1]:.6g}): "
            f"the measurement {measured:.6g} lies within the tolerance {tol:.3g} of it, so the alternative "
            f"passes as well as the prediction {predicted:.6g}")
    if not building_book():     # in the built book the prose shows the numbers; elsewhere the cell does
        print(verdict(claim))
    return claim


def rules_out(alternative_distance: float | None) -> bool:
    """Whether a claim's measurement excludes its alternative: it lies more than one tolerance from it (a claim
    without an alternative excludes none and needs none).

    >>> rules_out(None), rules_out(1.0), rules_out(2.5)
    (True, False, True)
    """
    return alternative_distance is None or alternative_distance > 1


def verdict(claim: Claim) -> str:
    """One line for a reader of the notebook alone: the claim, what it measured against what, and what it rules out.

    >>> print(verdict(Claim("ch0.x", "2 + 2 = 4.", 4.0, 4.2, 0.5, "arithmetic", "close", True, 0.4)))
    ch0.x holds: measured 4.2, predicted 4 within 0.5 (arithmetic). 2 + 2 = 4.
    """
    relation = {"close": "predicted", "at_most": "at most", "at_least": "at least"}[claim.relation]
    line = (f"{claim.id} {'holds' if claim.passed else 'FAILS'}: measured {claim.measured:.4g}, {relation} "
            f"{claim.predicted:.4g} within {claim.tolerance:.3g} ({claim.source}). {claim.statement}")
    if claim.alternative is not None:
        line += f" Rules out {claim.alternative[0]} ({claim.alternative[1]:.4g})."
    return line


def _record_of(claim: Claim) -> dict:
    from . import __version__
    from .runtime import default_device, scale

    return {**asdict(claim), "chapter": claim.chapter, "scale": scale(), "device": str(default_device()),
            "pavlov": __version__, "time": time.strftime("%Y-%m-%dT%H:%M:%S%z")}


def _record(claim: Claim) -> None:
    directory = records_dir()
    directory.mkdir(parents=True, exist_ok=True)
    line = json.dumps(_record_of(claim), allow_nan=True) + "\n"
    with open(directory / f"{claim.chapter}.jsonl", "a", encoding="utf-8") as fh:
        fh.write(line)


def _glue(claim: Claim) -> None:
    try:
        from myst_nb import glue
    except ImportError:   # outside the book build (Colab, plain Python) there is nothing to glue into
        return
    glue(claim.id, claim.measured, display=False)
    glue(f"{claim.id}.predicted", claim.predicted, display=False)
    glue(f"{claim.id}.tolerance", claim.tolerance, display=False)
    if claim.effect is not None:
        glue(f"{claim.id}.effect", claim.effect, display=False)
    if claim.alternative is not None:
        glue(f"{claim.id}.alternative", claim.alternative[1], display=False)


def load_records(directory: str | os.PathLike | None = None) -> list[dict]:
    """All records in ``directory`` (default :func:`records_dir`), the latest per claim id, sorted by id.

    A directory that does not exist holds no records yet: the result is empty.
    """
    if directory is not None and not isinstance(directory, (str, os.PathLike)):
        raise TypeError(f"directory must be a path (str or os.PathLike) or None, got {type(directory).__name__}")
    directory = Path(directory) if directory is not None else records_dir()
    latest: dict[str, dict] = {}
    for path in sorted(directory.glob("*.jsonl")):
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.strip():
                record = json.loads(line)
                latest[record["id"]] = record
    return sorted(latest.values(), key=lambda r: (int(r["chapter"][2:]), r["id"]))


def requirement(record: dict) -> str:
    """What a claim's measurement must satisfy, in words: ``"within ±0.01"`` (of the prediction), ``"≤ 3.2"``, ``"≥ 1"``.

    >>> requirement({"relation": "at_most", "predicted": 3.0, "tolerance": 0.2})
    '≤ 3.2'
    """
    if not isinstance(record, dict) or not {"relation", "predicted", "tolerance"} <= set(record):
        raise ValueError(f"record must be a claim record with relation, predicted and tolerance, got {record!r}")
    _validate.option("relation", record["relation"], tuple(RELATIONS))
    predicted = _validate.finite_float("predicted", record["predicted"])
    tolerance = _validate.finite_float("tolerance", record["tolerance"], nonnegative=True)
    return {"close": f"within ±{tolerance:.2g}", "at_most": f"≤ {predicted + tolerance:.3g}",
            "at_least": f"≥ {predicted - tolerance:.3g}"}[record["relation"]]


def anchor(claim_id: str) -> str:
    """The HTML id of a claim's row in a claims table (the closing page links to the appendix's rows).

    >>> anchor("ch5.million_below_one")
    'claim-ch5-million_below_one'
    """
    if not isinstance(claim_id, str) or not ID_PATTERN.fullmatch(claim_id):
        raise ValueError(f"claim_id must look like 'ch2.forms_agree' (chapter, dot, lower-case name), got {claim_id!r}")
    return "claim-" + claim_id.replace(".", "-")


KEY = ("How to read the table: a claim holds when its measured value meets what is required, a prediction within a "
       "tolerance or a bound. Tolerances come from the statistics, usually five standard errors over independent "
       "trials (some claims add the standard errors to the measured value instead and hold it to the bound itself), "
       "or from a bound on rounding for an identity. Open a claim for its prediction or bound, the alternative it "
       "rules out (how far that alternative lies from the measurement, in tolerances) and its source.")
"""The key printed under every claims table: what its columns and its tolerances mean."""


class ClaimTable:
    """A table of claims that renders as HTML in notebooks and as text elsewhere.

    In a notebook it is folded: a dropdown whose title counts the claims that hold, over a table with
    each claim's status first and its statement, which opens on the rest (:attr:`shown`). ``ClaimTable(rows, folded=False)`` is the bare table (the appendix's ledger).
    """

    columns = ("status", "claim", "statement", "measured", "predicted", "required", "rules out", "source")

    def __init__(self, rows: list[dict], *, folded: bool = True, records: dict | None = None):
        self.rows, self.folded, self.records = rows, folded, records

    def _repr_mimebundle_(self, include=None, exclude=None) -> tuple[dict, dict]:
        """No output types of its own (the HTML and text come from the methods below); while the book is built, the
        chapter's records in the output's metadata (:data:`RECORDS_KEY`), so that the ledger reads them from the
        execution the page shows (:func:`executed_records`)."""
        # as JSON text: a record's distances may be infinite, which a JSON value cannot hold
        return {}, ({RECORDS_KEY: json.dumps(self.records, allow_nan=True)} if self.records else {})

    def cells(self, r: dict) -> tuple[str, ...]:
        """The row of record ``r``, one string per column of :attr:`columns`."""
        required = requirement(r)
        status = "✓ holds" if r["passed"] else "✗ fails"
        alternative = r.get("alternative")
        distance = r.get("alternative_distance")
        how_far = (f"{distance:.3g} tolerances from this measurement" if distance is not None and math.isfinite(distance)
                   else "beyond any tolerance of this measurement")
        rules_out = f"{alternative[0]}: it would give {alternative[1]:.3g}, {how_far}" if alternative else ""
        if r.get("derived_from"):
            status += " (derived from " + ", ".join(r["derived_from"]) + ")"
        predicted = f"{r['predicted']:.4g}" if r["relation"] == "close" else f"bound {r['predicted']:.4g}"
        return (status, r["id"], r["statement"], f"{r['measured']:.4g}", predicted, required, rules_out,
                numbered(r["source"]))

    def _shown_cells(self, r: dict) -> tuple[str, ...]:
        """The HTML row: status, the statement (opening on the other columns), measured, required; escaped."""
        cell = dict(zip(self.columns, (html.escape(v) for v in self.cells(r))))
        # a close claim's value is a prediction; an at_most or at_least claim's is a bound, and is labelled so
        label = {"predicted": {"close": "predicted", "at_most": "bound (at most)",
                               "at_least": "bound (at least)"}[r["relation"]]}
        cell["predicted"] = cell["predicted"].removeprefix("bound ")
        more = "".join(f"<dt>{label.get(c, c)}</dt><dd>{cell[c]}</dd>" for c in ("claim", "predicted", "rules out",
                                                                                  "source") if cell[c])
        claim = (f'<details class="claim-more"><summary>{cell["statement"]}</summary>'
                 f'<dl class="claim-more">{more}</dl></details>')
        return cell["status"], claim, cell["measured"], cell["required"]

    @property
    def summary(self) -> str:
        """``"9 of 9 claims hold"``, with how many restate another's measurement: the folded table's title."""
        derived = sum(bool(r.get("derived_from")) for r in self.rows)
        return (f"{sum(r['passed'] for r in self.rows)} of {len(self.rows)} claims hold"
                + (f" ({derived} derived from others)" if derived else ""))

    shown = ("status", "claim", "measured", "required")
    """The columns the HTML table shows; a claim's statement opens on its id, predicted value (labelled a bound for
    an ``at_most`` or ``at_least`` claim), the alternative it rules out and its source (:meth:`_repr_html_`)."""

    def _repr_html_(self) -> str:
        head = "".join(f"<th>{c}</th>" for c in self.shown)
        body = "".join(f'<tr id="{anchor(r["id"])}">' + "".join(f'<td data-label="{c}">{v}</td>'
                                        for c, v in zip(self.shown, self._shown_cells(r))) + "</tr>"
                       for r in self.rows)
        table = (f'<table class="claims-table"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>'
                 f'<p class="claims-key">{html.escape(KEY)}</p>')
        if not self.folded:
            return table
        return f'<details class="claims-dropdown"><summary>Claims checked: {self.summary}</summary>{table}</details>'

    def _repr_markdown_(self) -> str:
        """The table where there is no HTML (the PDF): status, claim, statement, measured, required."""
        shown = ("status", "claim", "statement", "measured", "required")
        rows = [dict(zip(self.columns, self.cells(r))) for r in self.rows]
        # a backslash before every character Markdown would read as markup
        lines = [shown, ["---"] * len(shown),
                 *([re.sub(r"([\\`*_\[\]{}<>|$#~])", r"\\\1", row[c]) for c in shown] for row in rows)]
        return "\n".join("| " + " | ".join(line) + " |" for line in lines) + "\n\n" + KEY

    def __repr__(self) -> str:
        return "\n".join(" | ".join(self.cells(r)) for r in self.rows) or "(no claims)"

    def __len__(self) -> int:
        return len(self.rows)


def table(chapter: str) -> ClaimTable:
    """The claims of ``chapter`` (``"ch2"``) checked in this session, in the order they were made.

    Every chapter ends with it, so it also prints what the chapter used (:func:`pavlov.runtime.resources`): its
    time and peak memory. While the book is built the table's output also carries the chapter's claim records
    and what it used (:data:`RECORDS_KEY`), from which the book's ledger and the performance appendix's table of every
    chapter's time and memory are made (:func:`executed_records`).
    """
    if not isinstance(chapter, str) or not re.fullmatch(r"ch\d+", chapter):
        raise ValueError(f"chapter must look like 'ch2', got {chapter!r}")
    used = _report_resources(chapter)
    chosen = [c for c in _session.values() if c.chapter == chapter]
    rows = [{**asdict(c), "chapter": c.chapter} for c in chosen]
    records = {"claims": [_record_of(c) for c in chosen], "resources": used} if building_book() else None
    return ClaimTable(rows, records=records)


def _gigabytes(count: int | None) -> str:
    return "not reported" if count is None else f"{count / 2**30:.2f} GiB"


def _report_resources(chapter: str) -> dict:
    """Print what the chapter used, and return it as a record: chapter, scale, device, seconds and peak memory."""
    from .runtime import default_device, resources, scale

    used = resources()
    device = (f", {_gigabytes(used['device_bytes'])} on the GPU" if used["device_bytes"] is not None else "")
    print(f"{chapter} ran in {used['seconds']:.0f} s at the {scale()} scale; peak memory "
          f"{_gigabytes(used['host_bytes'])} on the host{device}")
    return {"chapter": chapter, "scale": scale(), "device": str(default_device()), **used}


def executed_records(notebooks) -> tuple[list[dict], list[dict]]:
    """The claim records and the resource records carried by executed notebooks (paths or ``nbformat`` nodes) in
    their :data:`RECORDS_KEY` output metadata: the claims sorted as :func:`load_records` sorts them, the resources by chapter.

    A notebook executed while the book was built carries its chapter's records in the output of
    :func:`table`; a notebook without one contributes nothing.
    """
    import nbformat

    if isinstance(notebooks, (str, os.PathLike)) or not hasattr(notebooks, "__iter__"):
        raise TypeError(f"notebooks must be a sequence of paths or notebooks, got {type(notebooks).__name__}")
    claims, resources = {}, []
    for nb in notebooks:
        if isinstance(nb, (str, os.PathLike)):
            nb = nbformat.read(nb, as_version=4)
        for cell in nb.cells:
            for output in cell.get("outputs", []):
                carried = output.get("metadata", {}).get(RECORDS_KEY)
                if carried:
                    carried = json.loads(carried)
                    claims.update({r["id"]: r for r in carried["claims"]})
                    resources.append(carried["resources"])
    return (sorted(claims.values(), key=lambda r: (int(r["chapter"][2:]), r["id"])),
            sorted(resources, key=lambda r: int(r["chapter"][2:])))
