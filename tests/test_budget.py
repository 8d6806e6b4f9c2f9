"""The build keeps its time: every page has a budget, and the budgets fit `.ci/run` inside its limit.

Each page's test fails when its execution passes its budget (tools/execute.py); these tests keep the budgets
themselves honest, so that a new chapter must fit the time that is left rather than grow the build.
"""

from __future__ import annotations

from tools import execute


def test_every_page_has_a_budget_and_every_budget_a_page():
    assert sorted(execute.BUDGETS) == sorted(execute.pages())


def test_no_page_may_take_more_than_the_most_a_chapter_is_allowed_unless_it_says_why():
    over = {page: seconds for page, seconds in execute.BUDGETS.items()
            if not 0 < seconds <= execute.MAX_BUDGET_S and page not in execute.OVER_MAX}
    assert not over, f"budgets outside (0, {execute.MAX_BUDGET_S}] s, with no reason in OVER_MAX: {over}"
    needless = [page for page in execute.OVER_MAX if execute.BUDGETS.get(page, 0) <= execute.MAX_BUDGET_S]
    assert not needless, f"OVER_MAX names pages within {execute.MAX_BUDGET_S} s: {needless}"


def test_the_budgets_fit_ci_inside_its_limit():
    total = execute.tests_budget() + sum(execute.STAGE_BUDGETS_S.values())
    assert total <= execute.CI_LIMIT_S, (
        f".ci/run's stages may take {total} s in all, over its limit of {execute.CI_LIMIT_S} s: "
        f"tests {execute.tests_budget()} s (unit tests {execute.UNIT_TESTS_S} s and the pages' budgets), "
        f"the rest {execute.STAGE_BUDGETS_S}")


def test_the_stage_report_marks_what_passed_its_budget(tmp_path):
    times = tmp_path / "times.tsv"
    times.write_text("HTML\t10\nPDF\t9999\n", encoding="utf-8")
    report = execute.report_stages(times).splitlines()
    assert "over its budget" not in report[1] and report[2].endswith("over its budget")
    assert report[-1].split()[:2] == ["all", "10009"] and report[-1].endswith("over the limit")
