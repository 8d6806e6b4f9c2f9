"""The only time limits that fail a run: ceilings against a hang or a runaway, each with its reason.

Time is otherwise a measurement. ``make test`` prints each page's time beside its budget (``tools/execute.py``) and
``.ci/run`` each stage's, and ``make budget`` (``tools/budget.py``) keeps the budgets by executing the pages on an
idle machine, as ``make bench`` keeps the package's speed; no test fails because a correct page was slow on a slower
or busier machine. A ceiling lies far above what a correct run takes on CI's two cores, so that only a hang or a
runaway meets it, and low enough that even then ``.ci/run`` stops inside CI's own limit with the failure named.
"""

from __future__ import annotations

CI_LIMIT_S = 90 * 60
"""CI's own limit for the whole of ``.ci/run``; its goal of 20 minutes is a budget (``tools.execute.CI_BUDGET_S``)."""

CELL_S = 600
"""A notebook cell. The slowest cell at the quick scale takes about 40 s on an idle two-core machine (chapter 9's
training); ten minutes is fifteen times that: a cell still running then is hung or looping."""

PAGE_RUNAWAY = 4
"""A page, in multiples of its budget. At four times every budget the tests' stage would take four times its budget
(about 48 minutes) and the whole of ``.ci/run`` about 80, still inside :data:`CI_LIMIT_S`
(``tests/test_budget.py`` keeps it so); a page that slow is running away, not merely on a busy machine."""

SUBPROCESS_S = 600
"""A helper process a test waits for: a ``pip install`` into a fresh environment (about a minute, mostly unpacking
torch) or a benchmark suite at its tiny size (seconds)."""

BROWSER_PAGE_S = 120
"""Headless Chromium rendering one built page to its DOM or a screenshot (about 5 s)."""

BROWSER_SCRIPT_S = 30
"""A script run in a page by the browser tests (MathJax typesetting a chapter: about a second)."""


def nbval_page_s(budget_s: float) -> float:
    """What the Colab emulation's nbval run of a page with budget ``budget_s`` may take in all: the page's
    runaway ceiling and a minute for its install of the package."""
    return PAGE_RUNAWAY * budget_s + 60
