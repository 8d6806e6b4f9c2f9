"""Colab as a reader meets it: every page with a Colab button runs alone on Colab's own package versions.

The environment (``make colab-env``, ``.venv-colab``) is built from Colab's published ``pip freeze``
(``colab/constraints.txt``; what it preinstalls: ``colab/runtime.txt``): ipywidgets 7, IPython 7,
Colab's numpy, matplotlib and tqdm. Each page is copied into an empty folder (Colab opens a notebook
with nothing beside it) and executed by nbval (``pytest --nbval-lax``, each cell a test, in a process of
its own) top to bottom, at the quick scale, in a kernel of that environment that has a stand-in
``google.colab`` module, so the setup cell takes its Colab branch and installs pavlov with ``%pip`` exactly as
written. The repository it installs from is mapped by git's ``url.<base>.insteadOf`` to a snapshot of this
working tree, so the cell runs unchanged and offline. This is the book's nbval run: the pinned environment's
execution of each page (``tools/execute.py``) is the one the book shows, stored for it; this one is Colab's.

Checked: installing pavlov would change no preinstalled package (pip's own dry-run report) and, after
every page, none was changed; every cell runs (a claim that fails fails its cell); every explorer control,
set to each end of its range and to a value between, redraws its figure; and when pavlov cannot be installed
the setup cell stops with one message saying what to do. Each cell's CPU time is reported, with the cells a
reader would wait a minute for marked; time fails nothing but the ceilings of ``tools/ceilings.py``.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest
import yaml
from conftest import toc_files
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError

from tools.ceilings import CELL_S, SUBPROCESS_S, nbval_page_s
from tools.execute import budget

# under `make test`'s two workers, every page here runs on one of them, beside the pinned environment's run on the other
pytestmark = pytest.mark.xdist_group("colab")

ROOT = Path(__file__).resolve().parents[1]
PYTHON = ROOT / ".venv-colab" / "bin" / "python"
REPOSITORY_URL = yaml.safe_load((ROOT / "_config.yml").read_text(encoding="utf-8"))["repository"]["url"]
PAGES = [f"{f}.ipynb" for f in toc_files(yaml.safe_load((ROOT / "_toc.yml").read_text(encoding="utf-8")))
         if (ROOT / f"{f}.ipynb").is_file()]
INSTALL = f"pavlov @ git+{REPOSITORY_URL}"       # what every setup cell installs in Colab
READER_MINUTE_S = 60.0                           # a cell a reader waits a minute for, on two cores: reported

# Run when the kernel starts. Colab's kernel has google.colab, and this stand-in is all the setup cell
# looks for. The hooks time every cell in CPU seconds of the kernel process: on an idle machine a cell
# takes at most that long (more threads only shorten it), and for single-threaded work it does not grow
# when the machine is shared with other jobs, as the wall clock does. (Threads that wait for a
# descheduled peer spin and burn CPU time too: the chapters run their small products on one thread.)
STARTUP = """
import sys, time, types

sys.modules["google.colab"] = types.ModuleType("google.colab")
_cpu_seconds = []


def _cell_started(*_):
    global _cpu_started
    _cpu_started = time.process_time()


def _cell_ended(*_):
    _cpu_seconds.append(time.process_time() - _cpu_started)


get_ipython().events.register("pre_run_cell", _cell_started)
get_ipython().events.register("post_run_cell", _cell_ended)
"""

# Run after a page, in its kernel: set each explorer control, from the explorer's first setting, to each end
# of its range and to one value between, and check that every setting redraws the figure without an error.
MOVE_CONTROLS = '''
import io
import json

import ipywidgets
from pavlov import plotting


def _png(figure):
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png")
    return buffer.getvalue()


def _settings(control):
    """(attribute, value) pairs: a menu's first, middle and last option; a slider's ends and midpoint."""
    if hasattr(control, "index"):
        last = len(control.options) - 1
        return [("index", i) for i in sorted({0, last // 2, last})]
    low, high = control.min, control.max
    if hasattr(control, "base"):                       # a log slider's ends are exponents
        low, high, middle = control.base**low, control.base**high, control.base ** ((low + high) / 2)
    else:
        middle = (low + high) // 2 if isinstance(control.value, int) else (low + high) / 2
    return [("value", v) for v in (low, middle, high)]


moved = []
for explorer in plotting.EXPLORERS:
    for name, control in explorer.controls.items():      # each from the explorer's first setting
        first = _png(explorer.figure)
        for attribute, value in _settings(control):
            start = getattr(control, attribute)
            if value == start:
                continue
            setattr(control, attribute, value)       # redraws, or raises what the figure raised
            assert _png(explorer.figure) != first, f"setting {name} to {value!r} left the figure as it was"
            setattr(control, attribute, start)
            moved.append(f"{name}={getattr(control, 'label', None) or value!r}")
import pavlov

assert pavlov.scale() == "quick", f"the page ran at the {pavlov.scale()} scale, not the quick one"
assert ipywidgets.__version__.startswith("7."), f"not Colab's kernel: ipywidgets {ipywidgets.__version__}"
with open("colab-report.json", "w") as report:
    json.dump({"ipywidgets": ipywidgets.__version__, "moved": moved, "cpu_seconds": _cpu_seconds}, report)
'''


def pip(*args: str, env: dict) -> str:
    done = subprocess.run([str(PYTHON), "-m", "pip", *args], env=env, capture_output=True, text=True,
                          timeout=SUBPROCESS_S)
    assert done.returncode == 0, f"pip {' '.join(args)} failed:\n{done.stderr[-3000:]}"
    return done.stdout


def preinstalled(env: dict) -> list[str]:
    """The environment's packages and versions, pavlov left out."""
    return [line for line in pip("freeze", "--all", env=env).splitlines() if not line.lower().startswith("pavlov")]


@pytest.fixture(scope="module")
def colab(tmp_path_factory):
    """The environment variables of a Colab-like session, with pavlov not yet installed."""
    if not PYTHON.is_file():
        pytest.fail("no Colab-emulation environment: run `make colab-env` (or `make test`, which builds it)")
    base = tmp_path_factory.mktemp("colab")
    # the repository as Colab would clone it: this working tree's files, committed
    snapshot = base / "repository"
    listed = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard", "-z"], cwd=ROOT,
                            check=True, capture_output=True, text=True).stdout.split("\0")
    for name in filter(None, listed):
        if (ROOT / name).is_file():
            (snapshot / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, snapshot / name)
    git = ["git", "-c", "user.name=pavlov", "-c", "user.email=pavlov@localhost", "-C", str(snapshot)]
    for command in (["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-q", "-m", "snapshot"]):
        subprocess.run(git + command, check=True, capture_output=True)
    gitconfig = base / "gitconfig"
    gitconfig.write_text(f'[url "file://{snapshot}"]\n\tinsteadOf = {REPOSITORY_URL}\n', encoding="utf-8")
    kernels = base / "jupyter" / "kernels" / "colab"
    kernels.mkdir(parents=True)
    (base / "startup.py").write_text(STARTUP, encoding="utf-8")
    (kernels / "kernel.json").write_text(json.dumps({
        "argv": [str(PYTHON), "-m", "ipykernel_launcher", "-f", "{connection_file}",
                 f"--IPKernelApp.exec_files={base / 'startup.py'}"],
        "display_name": "Colab (emulated)", "language": "python"}), encoding="utf-8")
    env = {k: v for k, v in os.environ.items()
           if k not in ("PAVLOV_PROGRESS", "PAVLOV_CLAIMS_DIR", "PAVLOV_SEED", "VIRTUAL_ENV", "PYTHONPATH")}
    env.update(GIT_CONFIG_GLOBAL=str(gitconfig), JUPYTER_PATH=str(base / "jupyter"), PAVLOV_SCALE="quick",
               PYDEVD_DISABLE_FILE_VALIDATION="1")   # Colab's debugger otherwise warns at every kernel start
    subprocess.run([str(PYTHON), "-m", "pip", "uninstall", "--yes", "--quiet", "pavlov"], env=env, capture_output=True)
    return {"env": env, "base": base, "preinstalled": preinstalled(env)}


def test_a_failed_install_stops_the_setup_cell_with_one_message(colab, tmp_path, monkeypatch):
    # the repository out of reach: git maps its URL to a folder that does not exist
    gitconfig = tmp_path / "gitconfig"
    gitconfig.write_text(f'[url "file://{tmp_path / "missing"}"]\n\tinsteadOf = {REPOSITORY_URL}\n',
                         encoding="utf-8")
    env = {**colab["env"], "GIT_CONFIG_GLOBAL": str(gitconfig)}
    subprocess.run([str(PYTHON), "-m", "pip", "uninstall", "--yes", "--quiet", "pavlov"], env=env, capture_output=True)
    nb = nbformat.read(ROOT / PAGES[0], as_version=4)
    nb.cells = [c for c in nb.cells if c.cell_type == "code"][:2]       # the setup cell and the next
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    for key in set(os.environ) - set(env):
        monkeypatch.delenv(key)
    with pytest.raises(CellExecutionError) as stopped:
        NotebookClient(nb, kernel_name="colab", timeout=CELL_S,
                       resources={"metadata": {"path": str(tmp_path)}}).execute()
    assert stopped.value.ename == "SystemExit" and "could not be installed from" in stopped.value.evalue
    assert REPOSITORY_URL in stopped.value.evalue and "%pip install ./pavlov" in stopped.value.evalue
    assert nb.cells[1].get("execution_count") is None, "the chapter ran on past the failed install"


def test_installing_pavlov_changes_no_preinstalled_package(colab):
    report = json.loads(pip("install", "--dry-run", "--quiet", "--report", "-", INSTALL, env=colab["env"]))
    would_install = sorted(item["metadata"]["name"] for item in report["install"])
    assert would_install == ["pavlov"], f"installing pavlov would also install or replace {would_install}"


def nbval(notebook: Path, env: dict, ceiling_s: float) -> tuple[int, str]:
    """Execute ``notebook`` with nbval in Colab's kernel, in a pytest process of its own started in the notebook's
    folder (no configuration of the book's applies there); its exit status and output. Past ``ceiling_s`` the process
    and its kernel are killed and the test fails, saying so."""
    command = [sys.executable, "-m", "pytest", "--nbval-lax", "--nbval-kernel-name=colab",
               f"--nbval-cell-timeout={CELL_S}", "-p", "no:cacheprovider", "-q", notebook.name]
    process = subprocess.Popen(command, cwd=notebook.parent, env=env, stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, text=True, start_new_session=True)
    try:
        output, _ = process.communicate(timeout=ceiling_s)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        output, _ = process.communicate()
        pytest.fail(f"{notebook.name}: stopped at its ceiling of {ceiling_s:.0f} s against a hang or a runaway "
                    f"(tools/ceilings.py)\n{output[-4000:]}")
    return process.returncode, output


@pytest.mark.parametrize("page", PAGES)
def test_page_runs_alone_on_colabs_versions(colab, page):
    folder = colab["base"] / "pages" / Path(page).stem
    folder.mkdir(parents=True)
    nb = nbformat.read(ROOT / page, as_version=4)
    nb.cells.append(nbformat.v4.new_code_cell(MOVE_CONTROLS))
    nbformat.write(nb, folder / Path(page).name)
    status, output = nbval(folder / Path(page).name, colab["env"], nbval_page_s(budget(page)))
    assert status == 0, f"{page} failed under nbval in Colab's environment:\n{output[-6000:]}"
    report = json.loads((folder / "colab-report.json").read_text(encoding="utf-8"))
    cells = [i for i, cell in enumerate(nb.cells[:-1]) if cell.cell_type == "code"]
    cpu = dict(zip(cells, report["cpu_seconds"]))
    slowest = max(cpu, key=cpu.get)
    waits = [(i, round(s, 1)) for i, s in cpu.items() if s > READER_MINUTE_S]
    print(f"{page}: {output.strip().splitlines()[-1]}; {sum(cpu.values()):.0f} CPU s in all; slowest cell "
          f"{slowest}: {cpu[slowest]:.1f} CPU s" + (f"; cells (index, CPU s) over a minute: {waits}" if waits else "")
          + f"; ipywidgets {report['ipywidgets']}; settings drawn: {report['moved']}")
    assert preinstalled(colab["env"]) == colab["preinstalled"], "running the page changed a preinstalled package"
