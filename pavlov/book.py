"""What the book ships about itself, so that a page opened on its own (as Colab opens it) can show it.

* :func:`labels` and :func:`numbered`: the number the book gives each labelled result (Proposition 3.1 for
  ``ch3-mean``), so that figures, printed output and tables show what the prose shows;
* :func:`repository` and :func:`chapters`: where the book lives and its chapters, for links to Colab;
* :func:`scales`: every size a chapter sets with :func:`pavlov.by_scale`, at both scales, read from
  the chapters by ``python -m tools.book_data`` (a test keeps it in step with them);
* :func:`benchmarks`: the records and the machine of the latest ``make bench``;
* :func:`budget`: each page's time at the quick scale against its budget, from the latest ``make budget``;
* :func:`full_scale`: what each chapter used when it last ran at the full scale (``python -m tools.full_scale``);
* :func:`work`: what each chapter's full scale asks of torch, op by op, and its roofline time here and on a
  T4 (``python -m tools.full_scale --work``).

The data lie in ``pavlov/data/`` and are installed with the package.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

DATA = Path(__file__).resolve().parent / "data"


def _read(name: str):
    return json.loads((DATA / name).read_text(encoding="utf-8"))


def scales() -> list[dict]:
    """One row per :func:`~pavlov.by_scale` call of the chapters: ``chapter``, what it ``sets``, ``quick``, ``full``.

    >>> {"chapter", "sets", "quick", "full"} <= set(scales()[0])
    True
    """
    return _read("scales.json")


def repository() -> str:
    """The book's repository on GitHub (``_config.yml``'s ``repository.url``).

    >>> repository().startswith("https://github.com/")
    True
    """
    return _read("book.json")["repository"]


def chapters() -> list[dict]:
    """The chapters in order: ``file`` (``chapters/ch01_conditioning``), ``title`` and ``colab``, the link that opens
    the chapter in Colab.

    >>> chapters()[0]["colab"].startswith("https://colab.research.google.com/github/")
    True
    """
    owner_name = repository().removeprefix("https://github.com/")
    return [{**c, "colab": f"https://colab.research.google.com/github/{owner_name}/blob/main/{c['file']}.ipynb"}
            for c in _read("book.json")["chapters"]]


def t4_seconds(run: dict) -> float:
    """A chapter's full-scale time on a T4, estimated from its op tally (a :func:`work` record with ``ops``): the
    time its run spent outside torch's ops, plus each op's time on the machine that ran it scaled by that op's
    ratio of T4 roofline to that machine's (the performance appendix derives it).

    >>> all(t4_seconds(r) > 0 for r in work() if "ops" in r)
    True
    """
    if not isinstance(run, dict) or "ops" not in run:
        raise ValueError("run must be a record of pv.book.work() with an op tally ('ops')")
    gpu = run["machines"][1]["name"]
    return max(0.0, run["wall"] - run["measured"]) + run[f"{gpu}, estimated"]


def benchmarks() -> tuple[list[dict], dict]:
    """The benchmark records (``make bench``) and the machine they were measured on.

    >>> records, machine = benchmarks()
    >>> "wall_s" in machine and all("name" in r for r in records)
    True
    """
    return _read("benchmarks/results.json"), _read("benchmarks/machine.json")


def budget() -> dict:
    """The latest ``make budget`` (``python -m tools.budget``): each page executed alone at the quick scale on an idle
    machine, ``pages`` (``page``, ``seconds``, ``budget``, ``slowest``), and ``.ci/run``'s ``stages`` (``stage``,
    ``seconds``, ``budget``, ``measured``: the tests' stage from the pages measured, the rest at their budgets) against
    ``goal_s``; the machine (``cpu``, ``cores``) and its ``load`` average before and after, the ``commit`` and the
    ``date``.

    >>> result = budget()
    >>> all({"page", "seconds", "budget"} <= set(p) for p in result["pages"]) and result["goal_s"] == 1200
    True
    """
    return _read("budget.json")


def full_scale() -> list[dict]:
    """Each chapter's latest run at the full scale, by chapter: ``chapter``, ``seconds``, ``host_bytes`` and
    ``device_bytes`` (peak memory; None where not measured), ``machine``, ``cpus``, ``date``, ``completed``
    (every cell ran, so every claim held) and a ``note`` where it was stopped.

    >>> all({"chapter", "seconds", "host_bytes", "device_bytes", "machine"} <= set(r) for r in full_scale())
    True
    """
    return _read("full_scale.json")


def work() -> list[dict]:
    """Each chapter's full-scale run with every op tallied (``python -m tools.full_scale --work``): the
    :func:`full_scale` fields and ``ops``, ``flops``, ``bytes``; ``measured``, the seconds its ops took on
    the machine that ran it, ``wall``, the seconds of the whole run; ``machines``, that machine's measured
    rates and a T4's datasheet ones (``name``, ``flops`` by dtype, ``bandwidth``, ``overhead`` per op), and
    under each machine's name the ops' roofline seconds on it.

    >>> all({"chapter", "ops", "measured", "wall", "machines"} <= set(r) for r in work() if "ops" in r)
    True
    """
    return _read("work.json")


KINDS = ("Theorem", "Proposition", "Corollary", "Lemma", "Remark", "Definition")
_LABEL = re.compile(rf"(?:\b(?P<kind>{'|'.join(KINDS)})(?P<plural>s)? )?(?P<label>\bch\d+-[a-z0-9-]+)")


def labels() -> dict[str, str]:
    """The number the book gives each labelled result: ``{"ch3-mean": "Proposition 3.1", ...}`` (``python -m tools.book_data``).

    >>> labels()["ch3-mean"]
    'Proposition 3.1'
    """
    return _read("labels.json")


def numbered(text: str) -> str:
    """``text`` with each result's label (``ch3-mean``, after its kind or not) as the book numbers it (Proposition 3.1).

    What a reader meets in a legend, printed output or a claims table is the number the prose shows,
    never the label the source uses. After a plural kind ("Theorems ch4-a and ch4-b") the labels that
    follow in the same list keep only their numbers.

    >>> numbered("Proposition ch3-mean; Theorems ch4-thm-kernel and ch4-thm-softmax")
    'Proposition 3.1; Theorems 4.1 and 4.2'
    """
    if not isinstance(text, str):
        raise TypeError(f"text must be a str, got {type(text).__name__}")
    known = labels()
    out, end, listing = [], 0, False
    for match in _LABEL.finditer(text):
        label = match["label"]
        if label not in known:
            continue
        kind, number = known[label].split(" ")
        between = text[end:match.start()]
        if match["kind"]:
            listing = bool(match["plural"])
            shown = f"{match['kind']}{match['plural'] or ''} {number}"
        elif listing and re.fullmatch(r",? (?:and |or )?|, ", between):
            shown = number
        else:
            listing, shown = False, f"{kind} {number}"
        out += [between, shown]
        end = match.end()
    return "".join(out) + text[end:]
