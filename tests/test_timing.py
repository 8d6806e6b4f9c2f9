"""pavlov.timing: what is timed, in which order, how often, with which synchronisation, and input checks."""

from __future__ import annotations

import statistics
import time

import pytest
import torch

from pavlov import timing
from pavlov.timing import Timing, time_call, time_calls


def recorder(log: list, name: str, seconds: float = 0.0):
    """A callable that appends ``name`` to ``log`` (and sleeps ``seconds``) each time it is called."""
    def fn():
        log.append(name)
        if seconds:
            time.sleep(seconds)
    return fn


def test_time_call_returns_median_and_every_time():
    t = time_call(lambda: None, repeats=5, device="cpu")
    assert isinstance(t, Timing) and len(t.times) == 5 and t.number == 1
    assert t.median == statistics.median(t.times)
    assert all(s >= 0 for s in t.times)


def test_time_call_measures_seconds():
    t = time_call(lambda: time.sleep(0.01), repeats=3, warmup=0, device="cpu")
    assert min(t.times) >= 0.01                  # sleep waits at least that long
    assert t.median < 1.0                        # and the unit is seconds, not milliseconds


def test_warmup_calls_are_not_timed():
    log = []
    t = time_call(recorder(log, "f"), repeats=4, warmup=3, device="cpu")
    assert len(log) == 7 and len(t.times) == 4


def test_time_calls_is_round_robin():
    log = []
    result = time_calls({"a": recorder(log, "a"), "b": recorder(log, "b")}, repeats=2, warmup=1, device="cpu")
    assert log == ["a", "b"] * 3                 # one call of each per round, warm-up round included
    assert list(result) == ["a", "b"] and all(len(t.times) == 2 for t in result.values())


def test_min_time_repeats_short_calls_and_reports_time_per_call():
    log = []
    result = time_calls({"short": recorder(log, "short", 0.001), "long": recorder(log, "long", 0.06)},
                        repeats=2, warmup=1, min_time=0.05, device="cpu")
    short, long = result["short"], result["long"]
    # a call of at least 1 ms needs at most 50 per 50 ms sample; one slower than 25 ms would need one
    assert long.number == 1 and 2 <= short.number <= 50
    assert log.count("short") == 1 + 2 * short.number and log.count("long") == 1 + 2
    assert all(t >= 0.001 for t in short.times) and short.median < 0.05   # seconds per call, not per sample
    assert long.median >= 0.06


@pytest.mark.parametrize("kind", ["cuda", "mps"])
def test_gpu_is_synchronised_around_every_sample(monkeypatch, kind):
    events = []
    module = torch.cuda if kind == "cuda" else torch.mps
    monkeypatch.setattr(module, "synchronize", lambda *args: events.append("sync"))
    time_calls({"f": recorder(events, "call")}, repeats=2, warmup=1, device=kind)
    assert events == ["sync", "call", "sync"] * 3


def test_cpu_is_not_synchronised(monkeypatch):
    def fail(*args):
        raise AssertionError("a CPU timing must not synchronise an accelerator")
    monkeypatch.setattr(torch.cuda, "synchronize", fail)
    monkeypatch.setattr(torch.mps, "synchronize", fail)
    time_call(lambda: None, repeats=2, device="cpu")


def test_default_device_is_the_package_device(monkeypatch):
    seen = []
    monkeypatch.setattr(timing, "default_device", lambda: seen.append(True) or torch.device("cpu"))
    time_call(lambda: None, repeats=1)
    assert seen == [True]


@pytest.mark.parametrize("kwargs, error, name", [
    ({"repeats": 0}, ValueError, "repeats"),
    ({"repeats": True}, TypeError, "repeats"),
    ({"repeats": 2.0}, TypeError, "repeats"),
    ({"warmup": -1}, ValueError, "warmup"),
    ({"warmup": 1.5}, TypeError, "warmup"),
    ({"warmup": False}, TypeError, "warmup"),
    ({"min_time": -0.1}, ValueError, "min_time"),
    ({"min_time": float("nan")}, ValueError, "min_time"),
    ({"min_time": 0.01, "warmup": 0}, ValueError, "min_time"),
    ({"device": 3.5}, TypeError, "device"),
    ({"device": "toaster"}, ValueError, "device"),
])
def test_validates_arguments(kwargs, error, name):
    with pytest.raises(error, match=name):
        time_call(lambda: None, **kwargs)
    with pytest.raises(error, match=name):
        time_calls({"f": lambda: None}, **kwargs)


def test_validates_callables():
    with pytest.raises(TypeError, match="fn"):
        time_call(42)
    with pytest.raises(TypeError, match="calls"):
        time_calls([lambda: None])
    with pytest.raises(TypeError, match="calls"):
        time_calls({})
    with pytest.raises(TypeError, match=r"calls\['b'\]"):
        time_calls({"a": lambda: None, "b": "not callable"})


def test_multiply_adds_ignores_elementwise_work_and_computes_nothing():
    assert timing.multiply_adds(lambda a, b: (a * b).exp(), ((1000, 1000), (1000, 1000))) == 0
    assert timing.multiply_adds(torch.bmm, ((5, 2, 3), (5, 3, 4))) == 5 * 2 * 3 * 4
