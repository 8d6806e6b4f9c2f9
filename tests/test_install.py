"""A fresh virtual environment installs pavlov with ``pip install <repository>`` and keeps its torch.

This is what a reader does outside the book (and what Colab does with the repository URL): install
torch first, then pavlov, whose loose ``torch>=...`` requirement must leave that torch in place. It
takes about a minute, mostly pip unpacking torch and resolving pavlov's dependencies.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
import tomllib
from pathlib import Path

import pytest

from tools.ceilings import SUBPROCESS_S

ROOT = Path(__file__).resolve().parents[1]
TORCH = "2.13.0"        # the pinned torch of requirements.txt, a CPU build available locally
TIMEOUT = SUBPROCESS_S  # seconds per step: a ceiling against a hang (tools/ceilings.py)


def run(*command, cwd: Path, env: dict) -> str:
    started = time.perf_counter()
    result = subprocess.run([str(c) for c in command], cwd=cwd, env=env, capture_output=True, text=True,
                            timeout=TIMEOUT)
    elapsed = time.perf_counter() - started
    assert result.returncode == 0, f"{' '.join(map(str, command))} failed:\n{result.stdout}\n{result.stderr}"
    print(f"{elapsed:6.1f} s  {' '.join(map(str, command))[:100]}")
    return result.stdout


@pytest.fixture
def scratch(tmp_path):
    """A scratch directory, in memory where the system offers one.

    The virtual environment holds about a gigabyte in some 20,000 files: on a disk mounted with
    ``discard`` deleting them takes over a minute, on ``/dev/shm`` (tmpfs) an instant.
    """
    shm = Path("/dev/shm")
    if not (shm.is_dir() and os.access(shm, os.W_OK) and shutil.disk_usage(shm).free > 4 * 2**30):
        yield tmp_path
        return
    directory = Path(tempfile.mkdtemp(prefix="pavlov-install-", dir=shm))
    try:
        yield directory
    finally:
        shutil.rmtree(directory, ignore_errors=True)


def test_pip_install_into_a_fresh_venv(scratch):
    # A copy of the working tree, as pip sees a clone: building in place would leave build/ in the repository.
    source = scratch / "source"
    shutil.copytree(ROOT, source, ignore=shutil.ignore_patterns(
        ".git", ".venv", ".venv-colab", "_build", "build", "*.egg-info", "__pycache__", ".pytest_cache", ".hypothesis",
        ".ipynb_checkpoints"))
    venv = scratch / "venv"
    outside = scratch / "elsewhere"   # not the repository, so `import pavlov` cannot find the source tree
    outside.mkdir()
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV")}
    python = venv / "bin" / "python"
    base = getattr(sys, "_base_executable", None) or shutil.which("python3.11") or sys.executable

    run(base, "-m", "venv", venv, cwd=outside, env=env)
    run(python, "-m", "pip", "install", "--quiet", f"torch=={TORCH}", cwd=outside, env=env)
    run(python, "-m", "pip", "install", "--quiet", source, cwd=outside, env=env)
    report = run(python, "-c", "import pavlov, sysconfig, torch; print(pavlov.__version__); print(pavlov.__file__); "
                 "print(sysconfig.get_paths()['purelib']); print(torch.__version__); "
                 "print(len(pavlov.book.scales()), len(pavlov.book.benchmarks()[0]))", cwd=outside, env=env)

    version, module_file, site_packages, torch_version, scales, benchmarks = report.split()
    assert int(scales) > 0 and int(benchmarks) > 0, "the data the book ships (pavlov.book) were not installed"
    expected = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["version"]
    assert version == expected
    assert Path(module_file).resolve().is_relative_to(Path(site_packages).resolve()), module_file
    assert Path(site_packages).resolve().is_relative_to(venv.resolve()), site_packages
    assert torch_version.split("+")[0] == TORCH, f"installing pavlov replaced torch {TORCH} by {torch_version}"
