"""What the book ships about itself, so that a page opened on its own (as Colab opens it) can show it.

* :func:`scales`: every size a chapter sets with :func:`pavlov.by_scale`, at both scales, read from
  the chapters by ``python -m tools.book_data`` (a test keeps it in step with them);
* :func:`benchmarks`: the records and the machine of the latest ``make bench``;
* :func:`full_scale`: what each chapter used when it last ran at the full scale (``python -m tools.full_scale``);
* :func:`work`: what each chapter's full scale asks of torch, op by op, and its roofline time here and on a
  T4 (``python -m tools.full_scale --work``).

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
