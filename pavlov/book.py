"""What the book ships about itself, so that a page opened on its own (as Colab opens it) can show it.

* :func:`scales`: every size a chapter sets with :func:`pavlov.by_scale`, at both scales, read from
  the chapters by ``python -m tools.book_data`` (a test keeps it in step with them);
* :func:`benchmarks`: the records and the machine of the latest ``make bench``.

The data lie in ``pavlov/data/`` and are installed with the package.
"""

from __future__ import annotations

import json
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


def benchmarks() -> tuple[list[dict], dict]:
    """The benchmark records (``make bench``) and the machine they were measured on.

    >>> records, machine = benchmarks()
    >>> "wall_s" in machine and all("name" in r for r in records)
    True
    """
    return _read("benchmarks/results.json"), _read("benchmarks/machine.json")
