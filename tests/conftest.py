"""Shared helpers for the unit tests: the error ratio, seeded tensors and the property-test settings.

Tensors are always made with an explicit device, dtype and seeded generator, as in the package.
"""

from __future__ import annotations

import pytest
import torch
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

import pavlov as pv
from tools.book_data import toc_files  # noqa: F401  (the tests' one way to read the table of contents)

DEVICE = pv.default_device()
FLOAT_DTYPES = (torch.float32, torch.float64)

# Property tests are derandomized (the same examples on every run, so CI is deterministic), keep no
# example database in the tree, and are sized to run in about a second each.
PROPERTY = settings(max_examples=30, deadline=None, derandomize=True, database=None,
                    suppress_health_check=[HealthCheck.too_slow])

# Exact identities in float64. Each output is a sum of at most T * d_k <= 40 * 8 products, so by the
# standard bound gamma_n = n u / (1 - n u) its rounding error is below about 320 u = 3.6e-14 of the
# sum of the terms' magnitudes (u = 2**-53). Random inputs cancel that sum by a factor of order
# sqrt(n) ~ 20 at most on average, and the output norms are well conditioned, so 1e-12 leaves a
# margin of about 1.5 orders of magnitude, while any real error (a missing or misplaced term) is of
# order 1.
EXACT = 1e-12

batch_shapes = st.lists(st.integers(1, 3), min_size=0, max_size=2).map(tuple)
seeds = st.integers(0, 2**31 - 1)


def rel_err(ref: torch.Tensor, x: torch.Tensor) -> float:
    """``rms(ref - x) / rms(ref)``: the package's :func:`pavlov.stats.relative_error`."""
    return pv.stats.relative_error(ref, x)


def randn(seed: int, *shape: int, dtype=torch.float64, device=DEVICE) -> torch.Tensor:
    """Standard normal entries from a generator seeded with ``seed``."""
    return torch.randn(shape, generator=pv.generator(seed, device), dtype=dtype, device=device)


def meta(*shape: int, dtype=torch.float64) -> torch.Tensor:
    """A tensor on the ``meta`` device: shapes and dtypes, no data."""
    return torch.empty(shape, dtype=dtype, device="meta")


def cpu(*shape: int, dtype=torch.float64) -> torch.Tensor:
    """A seeded tensor on the CPU, for tables of bad input (whose other tensors may be on ``meta``)."""
    return randn(0, *shape, dtype=dtype, device="cpu")


def tensors(device, dtype):
    """A maker ``(seed, *shape) -> tensor`` on ``device`` in ``dtype``; on ``meta`` the seed goes unused."""
    if torch.device(device).type == "meta":
        return lambda seed, *shape: meta(*shape, dtype=dtype)
    return lambda seed, *shape: randn(seed, *shape, dtype=dtype, device=device)


def with_value(x: torch.Tensor, value: float) -> torch.Tensor:
    """A copy of ``x`` whose first entry is ``value`` (NaN or infinity, to test validation)."""
    x = x.clone()
    x.view(-1)[0] = value
    return x


@pytest.fixture
def claims_dir(tmp_path, monkeypatch):
    """Send claim records to a temporary directory, so no test writes into ``_build/``."""
    directory = tmp_path / "claims"
    monkeypatch.setenv("PAVLOV_CLAIMS_DIR", str(directory))
    return directory


@pytest.fixture(scope="module")
def one_thread():
    """Run a module's many tiny tensor operations on one thread: thread start-up would dominate them."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def cases(*rows):
    """Rows of a parameter table whose first entry is the case's name, as ``pytest.param``s with that id."""
    return [pytest.param(*row[1:], id=row[0]) for row in rows]


def pytest_terminal_summary(terminalreporter):
    """Say in every test log how many bad-input cases ran (tests/test_bad_input.py)."""
    ran = terminalreporter.stats.get("passed", []) + terminalreporter.stats.get("failed", [])
    cases = [r for r in ran if "test_bad_input.py::test_bad_input_names_the_parameter" in r.nodeid]
    if cases:
        failed = sum(r.failed for r in cases)
        terminalreporter.write_line(f"bad-input cases tried: {len(cases)} ({failed} failed)")
