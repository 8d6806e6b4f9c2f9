"""Root pytest configuration: docstring examples write their claim records to a temporary folder."""

import pytest


@pytest.fixture(autouse=True)
def _doctest_claims_elsewhere(request, tmp_path, monkeypatch):
    if isinstance(request.node, pytest.DoctestItem):
        monkeypatch.setenv("PAVLOV_CLAIMS_DIR", str(tmp_path / "claims"))
