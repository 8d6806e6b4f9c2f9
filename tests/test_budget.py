"""The build keeps its time: every page has a budget, and the budgets fit `.ci/run` inside its limit.

Each page's test fails when its execution passes its budget (tools/execute.py); these tests keep the budgets
themselves honest, so that a new chapter must fit the time that is left rather than grow the build.
"""

from __future__ import annotations

from tools import execute


def test_every_page_has_a_budget_and_every_budget_a_page():
    assert sorted(execute.BUDGETS) == sorted(execute.pages())


def test_no_page_may_take_more_than_the_most_a_chapter_is_allowed():
    over = {page: seconds for page, seconds in execute.BUDGETS.items() if not 0 < seconds <= execute.MAX_BUDGET_S}
    assert not over, f"budgets outside (0, {execute.MAX_BUDGET_S}] s: {over}"


def test_the_budgets_fit_ci_inside_its_limit():
    budgets = execute.stage_budgets()
    assert sum(budgets.values()) <= execute.CI_LIMIT_S, (
        f".ci/run's stages may take {sum(budgets.values())} s in all, over its limit of {execute.CI_LIMIT_S} s: "
        f"{budgets} (the tests' from the pages' budgets, the browser tests' from the number of pages)")


def test_the_tests_stage_is_the_longer_of_the_colab_workers_share_and_half_the_work(monkeypatch):
    monkeypatch.setattr(execute, "pages", lambda: ["a", "b"])
    monkeypatch.setattr(execute, "BUDGETS", {"a": 10, "b": 100})
    monkeypatch.setattr(execute, "UNIT_TESTS_S", 400)
    monkeypatch.setattr(execute, "COLAB_INSTALL_S", 5)
    monkeypatch.setattr(execute, "BESIDE_COLAB", ("b",))
    # all the work: unit tests 400, pinned 110, Colab 120, on two workers: 315; the Colab worker's share: 120 + 100
    assert execute.tests_budget() == 315
    monkeypatch.setattr(execute, "UNIT_TESTS_S", 100)
    assert execute.tests_budget() == 220


def test_the_stage_report_marks_what_passed_its_budget(tmp_path):
    times = tmp_path / "times.tsv"
    times.write_text("HTML\t10\nPDF\t9999\n", encoding="utf-8")
    report = execute.report_stages(times).splitlines()
    assert "over its budget" not in report[1] and report[2].endswith("over its budget")
    assert report[-1].split()[:2] == ["all", "10009"] and report[-1].endswith("over the limit")
