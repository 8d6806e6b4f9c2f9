"""pavlov.runtime: device choice, the quick/full scale switch, seeded generators, setup()."""

from __future__ import annotations

import platform

import pytest
import torch
from conftest import cases

import pavlov as pv
from pavlov import runtime


@pytest.fixture
def no_accelerator(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setattr(torch.backends.mps, "is_available", lambda: False)


def test_default_device_on_this_machine():
    # The book's own machines and CI have no accelerator: there the answer must be the CPU.
    expected = ("cuda" if torch.cuda.is_available() else
                "mps" if torch.backends.mps.is_available() else "cpu")
    assert pv.default_device() == torch.device(expected)


@pytest.mark.parametrize("cuda, mps, expected", [
    (True, True, "cuda"),     # CUDA first
    (True, False, "cuda"),
    (False, True, "mps"),     # then Apple MPS
    (False, False, "cpu"),    # then the CPU
])
def test_default_device_preference(monkeypatch, cuda, mps, expected):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: cuda)
    monkeypatch.setattr(torch.backends.mps, "is_available", lambda: mps)
    assert pv.default_device() == torch.device(expected)


@pytest.mark.parametrize("value, expected", [
    ("quick", "quick"), ("full", "full"), ("  Full\n", "full"), ("QUICK", "quick"),
])
def test_scale_reads_environment(monkeypatch, value, expected):
    monkeypatch.setenv("PAVLOV_SCALE", value)
    assert pv.scale() == expected


@pytest.mark.parametrize("value", [None, "", "   "])
def test_scale_default_is_quick_on_cpu(monkeypatch, no_accelerator, value):
    if value is None:
        monkeypatch.delenv("PAVLOV_SCALE", raising=False)
    else:
        monkeypatch.setenv("PAVLOV_SCALE", value)
    assert pv.scale() == "quick"


def test_scale_default_is_full_on_gpu(monkeypatch):
    monkeypatch.delenv("PAVLOV_SCALE", raising=False)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    assert pv.scale() == "full"


@pytest.mark.parametrize("value", ["medium", "fast", "quick,full", "0"])
def test_scale_unknown_value_warns_and_falls_back(monkeypatch, no_accelerator, value):
    # a reader's typo must not stop the chapter: a warning names the variable and the value, the default is used
    monkeypatch.setenv("PAVLOV_SCALE", value)
    with pytest.warns(UserWarning, match="PAVLOV_SCALE") as info:
        assert pv.scale() == "quick"
    assert repr(value) in str(info[0].message)


@pytest.mark.parametrize("value, expected", [("quick", 3), ("full", 3000)])
def test_by_scale_picks_by_scale(monkeypatch, value, expected):
    monkeypatch.setenv("PAVLOV_SCALE", value)
    assert pv.by_scale(quick=3, full=3000) == expected


def test_by_scale_default_on_cpu_is_quick(monkeypatch, no_accelerator):
    monkeypatch.delenv("PAVLOV_SCALE", raising=False)
    assert pv.by_scale(quick="small", full="large") == "small"


def test_by_scale_falls_back_on_unknown_scale(monkeypatch, no_accelerator):
    monkeypatch.setenv("PAVLOV_SCALE", "huge")
    with pytest.warns(UserWarning, match="PAVLOV_SCALE"):
        assert pv.by_scale(quick=1, full=2) == 1


def test_by_scale_requires_both_sizes_by_keyword():
    with pytest.raises(TypeError):
        pv.by_scale(1, 2)
    with pytest.raises(TypeError):
        pv.by_scale(quick=1)


def test_generator_same_seed_same_draws():
    a = torch.randn(1000, generator=pv.generator(7, "cpu"), dtype=torch.float64, device="cpu")
    b = torch.randn(1000, generator=pv.generator(7, "cpu"), dtype=torch.float64, device="cpu")
    assert torch.equal(a, b)


def test_generator_different_seeds_differ():
    a = torch.randn(1000, generator=pv.generator(7, "cpu"), dtype=torch.float64, device="cpu")
    b = torch.randn(1000, generator=pv.generator(8, "cpu"), dtype=torch.float64, device="cpu")
    # Independent continuous draws coincide with probability zero.
    assert not torch.isin(a, b).any()


def test_generator_does_not_touch_global_state():
    before = torch.get_rng_state()
    torch.randn(10, generator=pv.generator(3, "cpu"), device="cpu")
    assert torch.equal(before, torch.get_rng_state())


def test_generator_device():
    assert pv.generator(0, "cpu").device == torch.device("cpu")
    assert pv.generator(0, torch.device("cpu")).device == torch.device("cpu")
    assert pv.generator(0).device.type == pv.default_device().type


@pytest.mark.parametrize("seed", [0, 1, 2**32, 2**63, 2**64 - 1])
def test_generator_accepts_seeds(seed):
    assert pv.generator(seed, "cpu").initial_seed() == seed


@pytest.mark.parametrize("seed, error", cases(
    ("negative", -1, ValueError),
    ("bool", True, TypeError),
    ("float", 1.0, TypeError),
    ("str", "0", TypeError),
    ("None", None, TypeError),
    ("2**64", 2**64, ValueError),    # beyond the 64-bit seed range of a torch.Generator
))
def test_generator_bad_seed_names_seed(seed, error):
    with pytest.raises(error, match="seed"):
        pv.generator(seed, "cpu")


def test_resolve_defaults_and_checks_dtype():
    assert runtime.resolve() == (pv.default_device(), torch.float32)
    assert runtime.resolve("cpu", torch.float64) == (torch.device("cpu"), torch.float64)
    with pytest.raises(TypeError, match="dtype"):
        runtime.resolve("cpu", torch.int64)


def test_setup_prints_the_run_record(monkeypatch, capsys):
    monkeypatch.setenv("PAVLOV_SCALE", "quick")
    assert pv.setup() is None   # nothing for a notebook to echo after the printed line
    info = runtime.run_info()
    assert info == {"pavlov": pv.__version__, "device": str(pv.default_device()), "scale": "quick",
                    "torch": torch.__version__, "python": platform.python_version()}
    out = capsys.readouterr().out
    for key, value in info.items():
        assert f"{key}: {value}" in out


def test_seed_or_fresh():
    assert runtime.seed_or_fresh(7) == 7
    fresh = {runtime.seed_or_fresh(None) for _ in range(8)}
    assert all(isinstance(s, int) and 0 <= s < 2**32 for s in fresh) and len(fresh) > 1


def test_pavlov_seed_moves_every_seed_and_reproduces(monkeypatch):
    draw = lambda seed: torch.randn(8, generator=pv.generator(seed, "cpu"), device="cpu")
    monkeypatch.delenv("PAVLOV_SEED", raising=False)
    plain = draw(3)
    monkeypatch.setenv("PAVLOV_SEED", "0")
    assert torch.equal(draw(3), plain)                     # offset 0 is the book as written
    monkeypatch.setenv("PAVLOV_SEED", "5")
    moved = draw(3)
    assert not torch.equal(moved, plain) and torch.equal(draw(3), moved)
    assert not torch.equal(draw(4), moved)                 # seeds stay distinct under one offset
    monkeypatch.setenv("PAVLOV_SEED", "6")
    assert not torch.equal(draw(3), moved)


@pytest.mark.parametrize("value", ["-1", "two", "1.5"])
def test_pavlov_seed_must_be_a_non_negative_integer(monkeypatch, value):
    monkeypatch.setenv("PAVLOV_SEED", value)
    with pytest.raises(ValueError, match="PAVLOV_SEED"):
        pv.generator(0, "cpu")


def test_progress_without_tqdm_warns_and_runs(monkeypatch):
    import sys

    monkeypatch.delenv("PAVLOV_PROGRESS", raising=False)
    monkeypatch.delenv("CI", raising=False)
    monkeypatch.setitem(sys.modules, "tqdm.auto", None)      # importing it now fails, as when it is not installed
    with pytest.warns(UserWarning, match="tqdm"):
        assert list(pv.progress(range(3))) == [0, 1, 2]


@pytest.mark.parametrize("scale", ["quick", "full"])
def test_progress_shows_a_bar_at_either_scale(monkeypatch, scale):
    from tqdm.auto import tqdm

    monkeypatch.setenv("PAVLOV_SCALE", scale)
    monkeypatch.delenv("PAVLOV_PROGRESS", raising=False)
    monkeypatch.delenv("CI", raising=False)
    bar = pv.progress(range(3), desc="trials")
    assert isinstance(bar, tqdm) and list(bar) == [0, 1, 2]


@pytest.mark.parametrize("setting", [("PAVLOV_PROGRESS", "0"), ("PAVLOV_PROGRESS", "off"), ("CI", "true")])
def test_progress_is_silent_in_builds_and_tests(monkeypatch, setting):
    monkeypatch.delenv("CI", raising=False)
    monkeypatch.setenv(*setting)
    items = range(3)
    assert pv.progress(items) is items


def test_a_process_reports_its_own_peak_memory_not_that_of_the_process_that_started_it():
    # a page's kernel is started by a test process of a few GiB: its table of memory must show the kernel's own
    import subprocess
    import sys

    ballast = bytearray(2**30)                       # the starting process holds 1 GiB more than a kernel needs
    ballast[:: 4096] = b"x" * len(ballast[:: 4096])
    out = subprocess.run([sys.executable, "-c", "import pavlov.runtime as r; print(r.resources()['host_bytes'])"],
                         capture_output=True, text=True, check=True).stdout
    del ballast
    assert int(out) < 2**30


def test_keeping_freed_memory_changes_no_result():
    # the allocator's settings move where tensors live, never what is computed; in a process of its own, since they
    # last until it ends
    import subprocess
    import sys

    code = ("import sys, torch; from pavlov import runtime; torch.manual_seed(0); x = torch.randn(3000, 3000); "
            "before = (x @ x).sum().item(); kept = runtime.keep_freed_memory(); after = (x @ x).sum().item(); "
            "print(kept, before == after)")
    kept, same = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                                check=True).stdout.split()
    assert same == "True"
    assert kept == str(sys.platform.startswith("linux") and platform.libc_ver()[0] == "glibc")
