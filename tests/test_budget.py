"""The build's time is budgeted and measured, never a test: every page has a budget, the budgets fit `.ci/run`'s goal of
20 minutes, and the ceilings against a hang or a runaway keep even a runaway inside CI's own limit.

No test here or elsewhere fails because a page took longer than its budget (tools/execute.py reports it); `make
budget` (tools/budget.py) keeps the budgets by measuring, and these tests keep the budgets themselves honest, so that
a new chapter must fit the time that is left rather than grow the build.
"""

from __future__ import annotations

import json

from tools import budget, ceilings, execute


def test_every_page_has_a_budget_and_every_budget_a_page():
    assert sorted(execute.BUDGETS) == sorted(execute.pages())


def test_no_page_may_take_more_than_the_most_a_chapter_is_allowed():
    over = {page: seconds for page, seconds in execute.BUDGETS.items() if not 0 < seconds <= execute.MAX_BUDGET_S}
    assert not over, f"budgets outside (0, {execute.MAX_BUDGET_S}] s: {over}"


def test_the_budgets_fit_cis_goal():
    budgets = execute.stage_budgets()
    assert sum(budgets.values()) <= execute.CI_BUDGET_S, (
        f".ci/run's stages may take {sum(budgets.values())} s in all, over its goal of {execute.CI_BUDGET_S} s: "
        f"{budgets} (the tests' from the pages' budgets, the browser tests' from the number of pages)")


def test_a_run_at_the_runaway_ceiling_still_ends_inside_cis_limit():
    # every stage at PAGE_RUNAWAY times its budget: a failure named, not CI's 90 minutes spent
    assert ceilings.PAGE_RUNAWAY * sum(execute.stage_budgets().values()) <= ceilings.CI_LIMIT_S
    assert max(execute.BUDGETS.values()) * ceilings.PAGE_RUNAWAY < ceilings.CI_LIMIT_S / 10


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
    # measured times in place of the budgets: pinned 40, Colab 50, half the work 95; the Colab worker's 50 + 30
    assert execute.tests_budget({"a": 10, "b": 30}) == 95


def test_the_stage_report_marks_what_passed_its_budget(tmp_path):
    times = tmp_path / "times.tsv"
    times.write_text("HTML\t10\nPDF\t9999\n", encoding="utf-8")
    report = execute.report_stages(times).splitlines()
    assert "over its budget" not in report[1] and report[2].endswith("over its budget by 9964 s (28469%)")
    assert report[-1].split()[:2] == ["all", "10009"] and "over its budget by 8809 s" in report[-1]


def test_the_benchmark_models_the_stages_from_the_pages_it_measured():
    measured = {page: execute.budget(page) / 2 for page in execute.pages()}
    stages = {s["stage"]: s for s in budget.stages(measured)}
    assert stages[execute.TESTS_STAGE]["seconds"] == execute.tests_budget(measured) < execute.tests_budget()
    assert all(s["seconds"] == s["budget"] and not s["measured"] for name, s in stages.items()
               if name != execute.TESTS_STAGE)
    text = budget.report({"stages": list(stages.values()), "goal_s": execute.CI_BUDGET_S})
    total = sum(s["seconds"] for s in stages.values())
    assert text.splitlines()[-1].endswith(f"margin {execute.CI_BUDGET_S - total} s")


def test_the_committed_budget_run_covers_every_page():
    result = json.loads(budget.OUT.read_text(encoding="utf-8"))
    assert [p["page"] for p in result["pages"]] == execute.pages()
    assert {s["stage"] for s in result["stages"]} == set(execute.stage_budgets())
