"""pavlov.claims: checking, recording, loading and tabulating claims.

Every test sends records to a temporary directory (the ``claims_dir`` fixture), so none reaches
``_build/``. Chapters ch90 and above are used so that no test's claim can be confused with a book's.
"""

from __future__ import annotations

import json
import math

import nbformat
import pytest
import torch
from conftest import cases

from pavlov import claims
from pavlov.claims import KEY, Claim, ClaimTable, check, load_records, records_dir, table, tolerance

pytestmark = pytest.mark.usefixtures("claims_dir")
CPU64 = {"dtype": torch.float64, "device": "cpu"}


def ok(claim_id="ch90.example", **overrides):
    """Check a claim with sensible defaults (passing unless overridden)."""
    kwargs = {"measured": 1.02, "predicted": 1.0, "tolerance": 0.05, "source": "Theorem 1"} | overrides
    return check(claim_id, "The example holds.", **kwargs)


def lines(path):
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


# --- check ------------------------------------------------------------------------------------

def test_passing_claim_returns_claim_with_margin():
    c = ok(measured=1.02, predicted=1.0, tolerance=0.05)
    assert isinstance(c, Claim) and c.passed
    assert (c.id, c.chapter, c.statement, c.source, c.relation) == (
        "ch90.example", "ch90", "The example holds.", "Theorem 1", "close")
    assert (c.measured, c.predicted, c.tolerance) == (1.02, 1.0, 0.05)
    assert c.margin == pytest.approx(0.02 / 0.05, rel=1e-12)


def test_failing_claim_raises_with_id_measured_and_predicted():
    with pytest.raises(AssertionError) as info:
        check("ch90.fails", "Two is three.", measured=2.0, predicted=3.0, tolerance=0.5, source="wishful thinking")
    message = str(info.value)
    for part in ("ch90.fails", "Two is three.", "measured 2", "predicted 3", "wishful thinking", "tolerance 0.5"):
        assert part in message


def test_exact_claim_with_zero_tolerance():
    assert ok(measured=4.0, predicted=4, tolerance=0).margin == 0.0
    with pytest.raises(AssertionError):
        ok(measured=4.0 + 1e-12, predicted=4, tolerance=0)


def test_tolerance_boundary_is_inclusive():
    assert ok(measured=1.5, predicted=1.0, tolerance=0.5).margin == 1.0


@pytest.mark.parametrize("relation, measured, passes", [
    ("at_most", 0.5, True),      # far below the bound
    ("at_most", 1.05, True),     # above, within the tolerance
    ("at_most", 1.2, False),
    ("at_least", 2.0, True),     # far above the bound
    ("at_least", 0.95, True),    # below, within the tolerance
    ("at_least", 0.8, False),
    ("close", 0.8, False),
    ("close", 1.2, False),
])
def test_relations(relation, measured, passes):
    if passes:
        c = ok(measured=measured, predicted=1.0, tolerance=0.1, relation=relation)
        assert c.passed and c.relation == relation
    else:
        with pytest.raises(AssertionError, match="ch90.example") as info:
            ok(measured=measured, predicted=1.0, tolerance=0.1, relation=relation)
        assert claims.RELATIONS[relation] in str(info.value)


def test_one_sided_margin_is_signed():
    # far on the safe side the margin is negative: the deviation is measured towards the bound
    assert ok(measured=0.0, predicted=1.0, tolerance=0.5, relation="at_most").margin == pytest.approx(-2.0)
    assert ok(measured=2.0, predicted=1.0, tolerance=0.5, relation="at_least").margin == pytest.approx(-2.0)


def test_measured_may_be_a_one_element_tensor():
    c = ok(measured=torch.tensor(1.01, **CPU64))
    assert c.measured == 1.01 and isinstance(c.measured, float)


def test_statement_and_source_are_stripped():
    c = check("ch90.strip", "  Padded.  ", measured=1, predicted=1, tolerance=0, source="  Eq. 3 ")
    assert (c.statement, c.source) == ("Padded.", "Eq. 3")


# --- records ----------------------------------------------------------------------------------

def test_record_is_one_json_line_per_check(claims_dir):
    ok("ch90.a", measured=1.01)
    with pytest.raises(AssertionError):
        ok("ch90.b", measured=3.0)
    records = lines(claims_dir / "ch90.jsonl")
    assert [(r["id"], r["passed"]) for r in records] == [("ch90.a", True), ("ch90.b", False)]
    first = records[0]
    assert first["chapter"] == "ch90" and first["measured"] == 1.01 and first["predicted"] == 1.0
    assert {"statement", "tolerance", "source", "relation", "margin", "scale", "device", "pavlov", "time"} <= set(first)


def test_one_file_per_chapter(claims_dir):
    ok("ch90.a")
    ok("ch91.a")
    ok("ch91.b")
    assert sorted(p.name for p in claims_dir.iterdir()) == ["ch90.jsonl", "ch91.jsonl"]
    assert [r["id"] for r in lines(claims_dir / "ch91.jsonl")] == ["ch91.a", "ch91.b"]


def test_records_dir_from_environment(claims_dir):
    assert records_dir() == claims_dir


def test_records_dir_default_is_build_claims_at_the_book_root(tmp_path, monkeypatch):
    monkeypatch.delenv("PAVLOV_CLAIMS_DIR")
    (tmp_path / "_toc.yml").write_text("format: jb-book\n", encoding="utf-8")
    nested = tmp_path / "chapters" / "deeper"
    nested.mkdir(parents=True)
    monkeypatch.chdir(nested)
    assert records_dir() == tmp_path.resolve() / "_build" / "claims"


def test_records_dir_default_without_a_book(tmp_path, monkeypatch):
    monkeypatch.delenv("PAVLOV_CLAIMS_DIR")
    monkeypatch.chdir(tmp_path)
    assert records_dir() == tmp_path.resolve() / "_build" / "claims"


def test_load_records_keeps_the_latest_per_id(claims_dir):
    ok("ch90.a", measured=1.01)
    ok("ch90.a", measured=1.03)
    ok("ch90.b")
    records = load_records()
    assert [r["id"] for r in records] == ["ch90.a", "ch90.b"]
    assert records[0]["measured"] == 1.03
    assert load_records(claims_dir) == records


def test_load_records_sorts_by_chapter_number_then_id(claims_dir):
    for claim_id in ("ch100.b", "ch100.a", "ch92.z", "ch91.y"):
        ok(claim_id)
    assert [r["id"] for r in load_records()] == ["ch91.y", "ch92.z", "ch100.a", "ch100.b"]


def test_load_records_of_an_empty_or_missing_directory(tmp_path):
    assert load_records(tmp_path) == []
    assert load_records(tmp_path / "missing") == []


def test_failed_claims_are_recorded_too(claims_dir):
    with pytest.raises(AssertionError):
        ok("ch90.fails", measured=10.0)
    (record,) = load_records()
    assert record["id"] == "ch90.fails" and record["passed"] is False and record["margin"] == pytest.approx(9 / 0.05)


# --- table ------------------------------------------------------------------------------------

def test_table_lists_the_chapters_claims_in_order():
    ok("ch93.second_made_first")
    ok("ch94.other_chapter")
    ok("ch93.first_made_second")
    t = table("ch93")
    assert isinstance(t, ClaimTable) and len(t) == 2
    assert [row["id"] for row in t.rows] == ["ch93.second_made_first", "ch93.first_made_second"]
    assert len(table("ch95")) == 0


def test_table_renders_html_and_text():
    ok("ch96.render", measured=1.02)
    with pytest.raises(AssertionError):
        check("ch96.broken", "A <b>bold</b> claim & more.", measured=5, predicted=1, tolerance=1,
              source="Eq. <1>", relation="at_most")
    t = table("ch96")
    html_text = t._repr_html_()
    # folded: a dropdown that says how many hold, over the table with the status first
    assert html_text.startswith('<details class="claims-dropdown"><summary>Claims checked: 1 of 2 claims hold')
    # a header row, then one row per claim, each with its anchor (the closing page links to it)
    assert html_text.count("<tr>") == 1 and html_text.endswith(f'</table><p class="claims-key">{KEY}</p></details>')
    # under the table, once, what its columns and tolerances mean (in the PDF's table too)
    assert "tolerance" in KEY and "standard errors" in KEY and t._repr_markdown_().endswith(KEY)
    assert '<tr id="claim-ch96-render">' in html_text and '<tr id="claim-ch96-broken">' in html_text
    assert ClaimTable.columns[0] == ClaimTable.shown[0] == "status"
    for column in ClaimTable.shown:
        assert f"<th>{column}</th>" in html_text and f'data-label="{column}"' in html_text
    # the statement opens on the other columns: the id, the predicted value, the alternative, the source
    assert html_text.count('<details class="claim-more">') == 2
    assert "<dt>claim</dt><dd>ch96.broken</dd>" in html_text and "<dt>source</dt><dd>Eq. &lt;1&gt;</dd>" in html_text
    # a close claim's value is labelled its prediction, a bound's a bound (never a prediction)
    assert "<dt>predicted</dt><dd>1</dd>" in html_text and "<dt>bound (at most)</dt><dd>1</dd>" in html_text
    assert html_text.count("<dt>predicted</dt>") == 1 and "bound 1" in repr(t)
    assert ClaimTable(t.rows, folded=False)._repr_html_().startswith('<table class="claims-table">')
    assert "&lt;b&gt;bold&lt;/b&gt; claim &amp; more." in html_text and "<b>" not in html_text
    assert "✓ holds" in html_text and "✗ fails" in html_text
    text = repr(t)
    assert "ch96.render" in text and "1.02" in text and "within ±0.05" in text and "≤ 2" in text
    assert repr(ClaimTable([])) == "(no claims)"
    # the PDF's table (Markdown): one row per claim, and nothing in a statement is read as markup
    lines = t._repr_markdown_().splitlines()
    assert lines[0] == "| status | claim | statement | measured | required |" and len(lines) == 6 and lines[4:] == ["", KEY]
    assert lines[3] == "| ✗ fails | ch96.broken | A \\<b\\>bold\\</b\\> claim & more. | 5 | ≤ 2 |"


@pytest.mark.parametrize("chapter", ["2", "ch", "chapter2", "ch2.x", "CH2", "", None, 2])
def test_table_bad_chapter(chapter):
    with pytest.raises(ValueError, match="chapter"):
        table(chapter)


# --- tolerance --------------------------------------------------------------------------------

def test_tolerance_is_z_standard_errors():
    assert tolerance(0.02) == pytest.approx(0.1)
    assert tolerance(0.02, z=3) == pytest.approx(0.06)
    assert tolerance(0) == 0.0
    assert tolerance(torch.tensor(0.02, **CPU64)) == pytest.approx(0.1)   # a one-element tensor is a number


@pytest.mark.parametrize("args, kwargs, error, param", cases(
    ("se<0", (-0.1,), {}, ValueError, "standard_error"),
    ("se NaN", (math.nan,), {}, ValueError, "standard_error"),
    ("se inf", (math.inf,), {}, ValueError, "standard_error"),
    ("se str", ("0.1",), {}, TypeError, "standard_error"),
    ("se 2-element tensor", (torch.tensor([0.1, 0.2], **CPU64),), {}, TypeError, "standard_error"),
    ("se NaN tensor", (torch.tensor(math.nan, **CPU64),), {}, ValueError, "standard_error"),
    ("z=0", (0.1,), {"z": 0}, ValueError, "z"),
    ("z<0", (0.1,), {"z": -5}, ValueError, "z"),
    ("z NaN", (0.1,), {"z": math.nan}, ValueError, "z"),
))
def test_tolerance_bad_input(args, kwargs, error, param):
    with pytest.raises(error, match=rf"^{param}\b"):
        tolerance(*args, **kwargs)


# --- bad input to check -----------------------------------------------------------------------

@pytest.mark.parametrize("claim_id", [
    "ch2", "ch2.", ".x", "2.x", "chapter2.x", "ch.x", "CH2.x", "ch2.Forms", "ch2.forms-agree", "ch2.forms agree",
    "ch2..x", "ch2.x.", "ch2.x\n", " ch2.x", "", None, 2,
])
def test_bad_claim_ids_are_rejected(claim_id, claims_dir):
    with pytest.raises(ValueError, match="claim_id"):
        ok(claim_id)
    assert not claims_dir.exists()   # nothing was recorded


@pytest.mark.parametrize("claim_id", ["ch1.a", "ch12.forms_agree", "ch3.isr.d64", "ch2.x_1.y_2"])
def test_good_claim_ids_are_accepted(claim_id):
    assert ok(claim_id).id == claim_id


@pytest.mark.parametrize("overrides, error, param", cases(
    ("empty statement", {"statement": "  "}, ValueError, "statement"),
    ("statement not str", {"statement": 3}, ValueError, "statement"),
    ("empty source", {"source": ""}, ValueError, "source"),
    ("source not str", {"source": None}, ValueError, "source"),
    ("unknown relation", {"relation": "equal"}, ValueError, "relation"),
    ("relation is case-sensitive", {"relation": "AT_MOST"}, ValueError, "relation"),
    ("measured NaN", {"measured": math.nan}, ValueError, "measured"),
    ("predicted NaN", {"predicted": torch.tensor(math.nan, **CPU64)}, ValueError, "predicted"),
    ("measured not a number", {"measured": None}, TypeError, "measured"),
    ("predicted not a number", {"predicted": [1.0]}, TypeError, "predicted"),
    ("measured two elements", {"measured": torch.ones(2, **CPU64)}, TypeError, "measured"),
    ("tolerance<0", {"tolerance": -0.1}, ValueError, "tolerance"),
    ("tolerance NaN", {"tolerance": math.nan}, ValueError, "tolerance"),
    ("tolerance inf", {"tolerance": math.inf}, ValueError, "tolerance"),
    ("tolerance str", {"tolerance": "0.1"}, TypeError, "tolerance"),
    ("effect NaN", {"effect": math.nan}, ValueError, "effect"),
    ("effect not a number", {"effect": "3%"}, TypeError, "effect"),
))
def test_check_bad_input(overrides, error, param, claims_dir):
    kwargs = {"statement": "The example holds.", "measured": 1.0, "predicted": 1.0, "tolerance": 0.1,
              "source": "Theorem 1"} | overrides
    with pytest.raises(error, match=rf"^{param}\b"):
        check("ch90.bad_input", **kwargs)
    assert not claims_dir.exists()   # nothing was recorded


def test_relations_listed():
    assert set(claims.RELATIONS) == {"close", "at_most", "at_least"}


@pytest.mark.parametrize("relation, measured, alternative, distance", [
    ("close", 1.4, 2.0, 1.2), ("close", 1.4, 1.8, 0.8), ("close", 1.4, 0.0, 2.8), ("close", 1.0, 1.5, 1.0),
    ("at_most", 1.4, 2.0, 1.2), ("at_most", 1.4, 1.8, 0.8), ("at_most", 1.0, 0.0, -2.0),
    ("at_least", 0.6, 0.0, 1.2), ("at_least", 0.6, 0.2, 0.8), ("at_least", 1.0, 2.0, -2.0)])
def test_the_measurement_must_exclude_the_alternative(relation, measured, alternative, distance):
    # predicted 1.0, tolerance 0.5. The alternative is ruled out only when the measurement lies more
    # than a tolerance from it on the side the relation forbids: the alternative's own check would fail.
    # At measured 1.4 an alternative at 2.0 is 1.2 tolerances off and ruled out; one at 1.8 is admitted.
    kwargs = dict(measured=measured, predicted=1.0, tolerance=0.5, relation=relation)
    if distance > 1:
        claim = ok(**kwargs, alternative=("a rival law", alternative))
        assert claim.alternative == ("a rival law", alternative)
        assert claim.alternative_distance == pytest.approx(distance)
        assert claim.alternative_margin == pytest.approx(claims._deviation(relation, alternative, 1.0) / 0.5)
    else:
        with pytest.raises(AssertionError, match="does not rule out its alternative, a rival law"):
            ok(**kwargs, alternative=("a rival law", alternative))


def test_derived_claims_are_marked_and_counted_apart(claims_dir):
    ok("ch97.sweep", measured=1.0, predicted=1.0, tolerance=0.1)
    claim = ok("ch97.slope", measured=1.0, predicted=1.0, tolerance=0.1, derived_from="ch97.sweep")
    assert claim.derived_from == ("ch97.sweep",)
    shown = table("ch97")
    assert shown.summary == "2 of 2 claims hold (1 derived from others)"
    assert "✓ holds (derived from ch97.sweep)" in repr(shown)


@pytest.mark.parametrize("derived_from", [3, ("ch90.derived",), ("not an id",), (None,)])
def test_derived_from_must_name_other_claims(derived_from):
    with pytest.raises(ValueError, match="^derived_from"):
        ok("ch90.derived", measured=1.0, predicted=1.0, tolerance=0.1, derived_from=derived_from)


def test_alternative_is_recorded_and_shown(claims_dir):
    ok("ch90.alt", measured=1.0, predicted=1.0, tolerance=0.1, alternative=("no effect", 0.0))
    record = load_records(claims_dir)[0]
    assert record["alternative"] == ["no effect", 0.0] and record["alternative_margin"] == pytest.approx(10.0)
    assert "no effect: it would give 0, 10 tolerances from this measurement" in repr(table("ch90"))


def test_effect_is_recorded_beside_the_standard_errors(claims_dir):
    # a check made in standard errors carries the same comparison in its own units for the prose
    claim = ok("ch90.effect", measured=1.5, predicted=0.0, tolerance=5.0, relation="at_most",
               effect=torch.tensor(0.03, **CPU64))
    assert claim.effect == pytest.approx(0.03) and isinstance(claim.effect, float)
    assert load_records(claims_dir)[0]["effect"] == pytest.approx(0.03)
    assert ok("ch90.no_effect", measured=1.0, predicted=1.0, tolerance=0.1).effect is None


@pytest.mark.parametrize("alternative", [0.0, ("no effect",), ("", 1.0), (1.0, "no effect"), ("no effect", "x")])
def test_alternative_must_be_a_description_and_a_value(alternative):
    with pytest.raises((TypeError, ValueError), match="alternative"):
        ok(measured=1.0, predicted=1.0, tolerance=0.1, alternative=alternative)


def test_table_prints_what_the_chapter_used_and_carries_its_records_in_the_book(claims_dir, monkeypatch, capsys):
    monkeypatch.delenv("PAVLOV_BOOK", raising=False)
    ok("ch7.carried", measured=1.0, predicted=1.0, tolerance=0.1)
    shown = claims.table("ch7")
    assert "ch7 ran in" in capsys.readouterr().out
    assert shown._repr_mimebundle_() == ({}, {})                            # carried only while the book is built
    monkeypatch.setenv("PAVLOV_BOOK", "1")
    outputs = [nbformat.v4.new_output("execute_result", data={"text/plain": ""}, metadata=metadata)
               for _, metadata in (claims.table(chapter)._repr_mimebundle_() for chapter in ("ch7", "ch12"))]
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(outputs=outputs)])
    records, used = claims.executed_records([nb])
    assert "ch7.carried" in [r["id"] for r in records] and {r["chapter"] for r in records} <= {"ch7", "ch12"}
    assert all(r["scale"] in ("quick", "full") for r in records)
    assert [u["chapter"] for u in used] == ["ch7", "ch12"]
    assert used[0]["seconds"] >= 0 and used[0]["host_bytes"] > 0
    assert used[0]["device_bytes"] is None or used[0]["device_bytes"] >= 0
    assert claims.executed_records([nbformat.v4.new_notebook()]) == ([], [])

def test_a_table_names_sources_by_the_numbers_the_book_gives_them():
    ok("ch97.numbered", measured=1.0)
    check("ch97.labelled", "A claim.", measured=1.0, predicted=1.0, tolerance=0.1, source="Proposition ch3-mean")
    t = table("ch97")
    assert "Proposition 3.1" in t._repr_html_() and "ch3-mean" not in t._repr_html_()
    assert "Proposition 3.1" in repr(t)


def test_the_ledger_for_the_pdf_labels_a_bound_as_a_bound():
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "_ext"))
    ledger = pytest.importorskip("claims_ledger")
    ok("ch94.close", measured=1.0, predicted=1.0, tolerance=0.1)
    ok("ch94.bound", measured=0.5, predicted=1.0, tolerance=0.1, relation="at_most")
    text = ledger._ledger_table(table("ch94")).astext()
    assert "predicted or bound" in text and "bound 1" in text
