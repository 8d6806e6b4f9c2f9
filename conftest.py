"""Root pytest configuration: the book's pages are tests (executed as the book executes them), and docstring
examples write their claim records to a temporary folder."""

import pytest

from tools import execute


def pytest_collect_file(file_path, parent):
    return execute.collect(file_path, parent)


def pytest_terminal_summary(terminalreporter):
    """Each page's execution time beside its budget, at the end of every test log."""
    lines = execute.summary(terminalreporter.stats.get("passed", []) + terminalreporter.stats.get("failed", []))
    if lines:
        terminalreporter.section("pages executed as the book executes them")
        for line in lines:
            terminalreporter.write_line(line)


@pytest.fixture(autouse=True)
def _doctest_claims_elsewhere(request, tmp_path, monkeypatch):
    if isinstance(request.node, pytest.DoctestItem):
        monkeypatch.setenv("PAVLOV_CLAIMS_DIR", str(tmp_path / "claims"))
