"""``make budget``: the time budgets, kept by measuring them, as ``make bench`` keeps the package's speed.

Every page of the book is executed one at a time, in a fresh kernel of the pinned environment, as the tests execute
it (:func:`tools.execute.execute`), on a machine that should be otherwise idle. The report gives each page's time
beside its budget (:data:`tools.execute.BUDGETS`), and the stages of ``.ci/run`` as the budgets model them
(:func:`tools.execute.stage_budgets`) with the tests' stage recomputed from the measured times: their sum against
``.ci/run``'s goal of 20 minutes, with the margin. The other stages (setting up the environments, the HTML, the PDF,
the browser tests) are not executed here and count at their budgets; ``.ci/run`` prints what they took.

The result goes to ``pavlov/data/budget.json``, which the performance appendix reads (:func:`pavlov.book.budget`),
after every page; a run of some pages replaces their rows and keeps the others.
Nothing fails here on time: a page over its budget is marked, and the budget is kept by making the page faster or,
with a reason, by giving it more of the 20 minutes. A page that raises stops the run, as in the tests.

    python -m tools.budget                  # every page; writes pavlov/data/budget.json
    python -m tools.budget --out /tmp/b.json chapters/ch01_conditioning.ipynb
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import subprocess
import sys
from pathlib import Path

from . import execute

OUT = execute.ROOT / "pavlov" / "data" / "budget.json"


def machine() -> dict:
    """The processor, its cores, the interpreter and the commit measured (``dirty`` when the tree has changes)."""
    cpu = platform.processor() or platform.machine()
    cpuinfo = Path("/proc/cpuinfo")
    if cpuinfo.is_file():
        cpu = next((line.split(":", 1)[1].strip() for line in cpuinfo.read_text().splitlines()
                    if line.startswith("model name")), cpu)
    git = ["git", "-C", str(execute.ROOT)]
    commit = subprocess.run([*git, "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
    dirty = subprocess.run([*git, "status", "--porcelain", "--", "chapters", "pavlov", "tools", "appendix", "gpu.ipynb",
                            f":!{OUT.relative_to(execute.ROOT)}"], capture_output=True, text=True).stdout.strip()
    return {"cpu": cpu, "cores": os.cpu_count(), "python": platform.python_version(),
            "commit": commit + (" (with changes)" if dirty else ""),
            "date": datetime.date.today().isoformat()}


def measure(pages: list[str], out: Path) -> dict:
    """Execute ``pages`` one at a time; each one's seconds, budget and slowest cells, and the stages modelled; with
    the machine's load average over the minute before and after (about 0 on an idle machine, 1 per busy core).

    The result is written to ``out`` after every page, in place of the rows of the pages measured, so that a page that
    shows it (the performance appendix) reads the latest and a run of some pages updates theirs."""
    earlier = json.loads(out.read_text(encoding="utf-8"))["pages"] if out.is_file() else []
    rows = {r["page"]: r for r in earlier if r["page"] in execute.pages()}
    load_before = os.getloadavg()[0]
    for page in pages:
        _, seconds, cells = execute.execute(execute.ROOT / page)
        rows[page] = {"page": page, "seconds": round(seconds, 1), "budget": execute.budget(page),
                      "slowest": execute.slowest(cells)}
        print(f"{page:<40}{seconds:>7.1f} s  (budget {execute.budget(page)} s)"
              f"{execute.over(seconds, execute.budget(page))}", flush=True)
        ordered = [rows[p] for p in execute.pages() if p in rows]
        result = {**machine(), "load": [round(load_before, 2), round(os.getloadavg()[0], 2)], "pages": ordered,
                  "stages": stages({r["page"]: r["seconds"] for r in ordered}), "goal_s": execute.CI_BUDGET_S}
        out.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    return result


def stages(seconds: dict[str, float]) -> list[dict]:
    """``.ci/run``'s stages: the tests' from the measured pages (a page not measured at its budget), the rest at
    their budgets."""
    took = {page: seconds.get(page, execute.budget(page)) for page in execute.pages()}
    budgets = execute.stage_budgets()
    return [{"stage": name, "budget": budget_s, "measured": name == execute.TESTS_STAGE,
             "seconds": round(execute.tests_budget(took)) if name == execute.TESTS_STAGE else budget_s}
            for name, budget_s in budgets.items()]


def report(result: dict) -> str:
    """The stages against the goal of 20 minutes, with the margin."""
    lines = [f"{'stage':<58}{'seconds':>8}{'budget':>8}"]
    for s in result["stages"]:
        lines.append(f"{s['stage']:<58}{s['seconds']:>8}{s['budget']:>8}"
                     + ("  (from the pages measured)" if s["measured"] else "  (at its budget)"))
    total = sum(s["seconds"] for s in result["stages"])
    lines.append(f"{'all':<58}{total:>8}{result['goal_s']:>8}  margin {result['goal_s'] - total} s")
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("pages", nargs="*", help="pages to execute (default: every page of the book)")
    parser.add_argument("--out", type=Path, default=OUT, help="where the result goes (default: %(default)s)")
    args = parser.parse_args(argv)
    print(report(measure(args.pages or execute.pages(), args.out)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
