"""The package's layout: closed forms by idea, below the code that measures; lint that runs."""

from __future__ import annotations

import ast
import importlib
import pkgutil
import subprocess
import sys
from pathlib import Path

import pytest

import pavlov
from pavlov import theory

THEORY = Path(theory.__file__).parent
MODULES = [m.name for m in pkgutil.iter_modules([str(THEORY)])]
MAX_LINES = 400


@pytest.mark.parametrize("name", MODULES)
def test_theory_modules_are_one_idea_each(name):
    path = THEORY / f"{name}.py"
    lines = path.read_text(encoding="utf-8").count("\n")
    assert lines <= MAX_LINES, f"pavlov/theory/{name}.py has {lines} lines: split it by idea (at most {MAX_LINES})"
    doc = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8")))
    assert doc and "chapter" in doc.lower(), f"pavlov/theory/{name}.py's docstring names its chapters"


@pytest.mark.parametrize("name", MODULES)
def test_theory_never_imports_the_code_that_measures(name):
    tree = ast.parse((THEORY / f"{name}.py").read_text(encoding="utf-8"))
    allowed = {"_validate", "stats"}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level == 2:      # from .. import x, from ..x import y
            imported = {node.module} if node.module else {a.name for a in node.names}
            assert imported <= allowed, f"pavlov/theory/{name}.py imports {imported - allowed} from the package above it"
        if isinstance(node, ast.Import) or isinstance(node, ast.ImportFrom) and not node.level:
            top = {a.name.split(".")[0] for a in node.names} if isinstance(node, ast.Import) else {node.module.split(".")[0]}
            assert "pavlov" not in top, f"pavlov/theory/{name}.py imports pavlov by its absolute name"


def test_every_public_name_is_pavlov_theory_dot_name():
    for name in MODULES:
        module = importlib.import_module(f"pavlov.theory.{name}")
        public = [n for n, v in vars(module).items() if not n.startswith("_") and getattr(v, "__module__", module.__name__)
                  == module.__name__ and (callable(v) or n.isupper())]
        for n in public:
            assert getattr(theory, n) is getattr(module, n), f"pavlov.theory.{n} is not pavlov.theory.{name}.{n}"
            assert n in theory.__all__


def test_the_registry_holds_every_store_once_the_package_is_imported():
    # a fresh process that imports one submodule only: the package's __init__ fills the registry first
    code = "from pavlov.theory.interference import ISR_FORMULAS; print(sorted(ISR_FORMULAS))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                          cwd=Path(pavlov.__file__).parents[1])
    assert done.stdout.split() == ["['hebbian',", "'least_squares',", "'polynomial',", "'relu',", "'relu2',", "'softmax']"]


def test_ruff_check_is_clean():
    """`ruff check` with pyproject.toml's [tool.ruff.lint]: the package, the tests, the tools and the notebooks."""
    ruff = Path(sys.executable).with_name("ruff")
    root = Path(pavlov.__file__).parents[1]
    done = subprocess.run([str(ruff), "check", "--no-fix", "--output-format", "concise"], cwd=root, capture_output=True,
                          text=True)
    assert done.returncode == 0, f"run `{ruff} check` and fix what it finds:\n{done.stdout[-3000:]}{done.stderr[-1000:]}"


def test_every_subpackage_is_installed():
    # setuptools installs the packages pyproject.toml lists, no others: a subpackage left out is missing from pip's copy
    import tomllib

    root = Path(pavlov.__file__).parents[1]
    listed = set(tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"]["packages"])
    found = {".".join(p.parent.relative_to(root).parts) for p in (root / "pavlov").rglob("__init__.py")}
    assert found == listed, f"pyproject.toml's [tool.setuptools] packages: {sorted(listed)}; the package has {sorted(found)}"
