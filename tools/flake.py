"""Flake check: rerun every claim of every chapter at the quick scale over many seeds.

Each run executes one chapter's code cells in a fresh Python process with ``PAVLOV_SEED`` set, so
every random draw of the chapter changes (:func:`pavlov.runtime.generator` mixes the offset into
every seed). Figures are drawn on matplotlib's Agg backend and never rendered, explorers are skipped,
and a failing claim is recorded instead of stopping the chapter. The report gives, per claim, the
number of seeds on which it failed and its margin at the worst seed: measured deviation over
tolerance (a claim holds while the margin is at most 1), and, at the seed where it is least, the
distance from the measurement to the alternative it rules out, in tolerances (which must stay above 1).
A check fails when either does not.

    python -m tools.flake --seeds 30 --workers 2            # all chapters; writes _build/flake/
    python -m tools.flake --seeds 3 --chapters ch01 ch03    # a few
    python -m tools.flake --first 19 --seeds 12 --chapters ch01   # more seeds into the same records
    python -m tools.flake --report                          # one report of every run recorded in _build/flake/
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from pavlov.claims import rules_out

ROOT = Path(__file__).resolve().parents[1]

RUNNER = r"""
import json, sys
import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt
plt.show = lambda *a, **k: None
from IPython.core.inputtransformer2 import TransformerManager
import pavlov.claims as claims

_check = claims.check
def check(*args, **kwargs):      # record a failing claim and go on: the report counts it
    try:
        return _check(*args, **kwargs)
    except AssertionError:
        return claims._session[args[0]]
claims.check = check

cells = json.load(open(sys.argv[1]))
namespace = {"__name__": "__main__"}
transform = TransformerManager().transform_cell
for source in cells:
    exec(compile(transform(source), "<cell>", "exec"), namespace)
    plt.close("all")
print("CLAIMS " + json.dumps([vars(c) for c in claims._session.values()]))
"""


def code_cells(notebook: Path) -> list[str]:
    """The chapter's code cells, less its explorers (interactive only) and the final claims table."""
    cells = json.loads(notebook.read_text(encoding="utf-8"))["cells"]
    sources = ["".join(c["source"]) for c in cells if c["cell_type"] == "code"]
    return [s for s in sources if "plotting.explorer(" not in s and "claims.table(" not in s]


def run_one(chapter: Path, cells_file: Path, seed: int, out: Path) -> list[dict]:
    """Run one chapter with ``PAVLOV_SEED=seed``; return its claims (an error becomes a record too)."""
    env = {**os.environ, "PAVLOV_SCALE": "quick", "PAVLOV_SEED": str(seed), "CI": "1", "MPLBACKEND": "Agg",
           "PAVLOV_CLAIMS_DIR": str(out / "records" / f"seed{seed}"), "OMP_NUM_THREADS": "1"}
    done = subprocess.run([sys.executable, "-c", RUNNER, str(cells_file)], cwd=chapter.parent, env=env,
                          capture_output=True, text=True)
    lines = [line for line in done.stdout.splitlines() if line.startswith("CLAIMS ")]
    claims = json.loads(lines[-1][7:]) if lines else []
    if done.returncode != 0:
        error = {"id": f"{chapter.stem}.(error)", "passed": False, "margin": float("inf"),
                 "error": done.stderr.strip().splitlines()[-1] if done.stderr.strip() else "no output"}
        claims.append(error)
        (out / "records" / f"seed{seed}").mkdir(parents=True, exist_ok=True)
        with open(out / "records" / f"seed{seed}" / f"{chapter.stem}.error.jsonl", "a") as f:
            f.write(json.dumps(error) + "\n")
    return [{**c, "seed": seed} for c in claims]


def recorded(out: Path) -> list[dict]:
    """Every check recorded under ``out/records/seed<N>/``, the last of each claim's records for each seed: the
    report of runs made at different times (on the same code) into one folder."""
    results = []
    for folder in sorted(out.glob("records/seed*"), key=lambda f: int(f.name[4:])):
        last = {}
        for file in sorted(folder.glob("*.jsonl")):
            for line in file.read_text(encoding="utf-8").splitlines():
                claim = json.loads(line)
                last[claim["id"]] = {**claim, "seed": int(folder.name[4:])}
        results += last.values()
    return results


def failed(claim: dict) -> bool:
    """A check fails when its measurement misses its prediction or when it cannot tell it from its alternative."""
    return not claim["passed"] or not rules_out(claim.get("alternative_distance"))


def report(results: list[dict], seeds: list[int]) -> str:
    by_id: dict[str, list[dict]] = {}
    for r in results:
        by_id.setdefault(r["id"], []).append(r)
    lines = [f"Flake check: {len(seeds)} seeds ({seeds[0]}..{seeds[-1]}), quick scale", "",
             "| claim | seeds | failures | worst margin (deviation / tolerance) | at seed | alternative ruled out | "
             "its distance from the measurement, least (tolerances) |", "|---|---|---|---|---|---|---|"]
    for claim_id, runs in by_id.items():
        worst = max(runs, key=lambda r: r.get("margin", float("inf")))
        failures = sum(failed(r) for r in runs)
        alternatives = [r for r in runs if r.get("alternative")]
        alt = (alternatives[0]["alternative"][0] if alternatives else "(none stated)")
        alt_margin = (f"{min(r['alternative_distance'] for r in alternatives):.3g}" if alternatives else "")
        lines.append(f"| {claim_id} | {len(runs)} | {failures} | {worst.get('margin', float('inf')):.3g} | {worst['seed']} "
                     f"| {alt} | {alt_margin} |")
    total = sum(failed(r) for r in results)
    lines += ["", f"{len(by_id)} claims, {len(results)} checks, {total} failures."]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=30, help="number of seeds (PAVLOV_SEED = 1 .. seeds)")
    parser.add_argument("--first", type=int, default=1, help="the first seed")
    parser.add_argument("--workers", type=int, default=2, help="chapters run at once")
    parser.add_argument("--chapters", nargs="*", help="chapter file stems (default: every chapter)")
    parser.add_argument("--out", type=Path, default=ROOT / "_build" / "flake")
    parser.add_argument("--report", action="store_true",
                        help="run nothing: report every record under --out/records, from any number of runs")
    args = parser.parse_args(argv)
    if args.report:
        results = recorded(args.out)
        text = report(results, sorted({r["seed"] for r in results}))
        (args.out / "REPORT.md").write_text(text)
        print(text)
        return 1 if any(failed(r) for r in results) else 0
    chapters = sorted((ROOT / "chapters").glob("ch*.ipynb"))
    if args.chapters:
        chapters = [c for c in chapters if any(c.stem.startswith(s) for s in args.chapters)]
    seeds = list(range(args.first, args.first + args.seeds))
    args.out.mkdir(parents=True, exist_ok=True)
    cells = {}
    for chapter in chapters:      # read once: the runs use the chapters as they were when the check began
        cells[chapter] = args.out / f"{chapter.stem}.cells.json"
        cells[chapter].write_text(json.dumps(code_cells(chapter)))
    jobs = [(chapter, seed) for seed in seeds for chapter in chapters]
    start, results = time.perf_counter(), []
    with ThreadPoolExecutor(max_workers=args.workers) as pool:
        for (chapter, seed), claims in zip(jobs, pool.map(lambda job: run_one(job[0], cells[job[0]], job[1], args.out), jobs)):
            results += claims
            failing = [c["id"] for c in claims if failed(c)]
            print(f"[{time.perf_counter() - start:5.0f} s] {chapter.stem} seed {seed}: {len(claims)} claims"
                  + (f", FAILED {failing}" if failing else ""), flush=True)
    (args.out / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in results))
    text = report(results, seeds)
    (args.out / "REPORT.md").write_text(text)
    print(text)
    return 1 if any(failed(r) for r in results) else 0


if __name__ == "__main__":
    sys.exit(main())
