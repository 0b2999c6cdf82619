"""scripts/ holds the measurements behind docs/benchmarks.md and the red-team run: each one says how
it is run, is named where its figures are, and uses only the public names of the packages (all
of its SQL goes through localrag/store/: tests/test_sql_in_store.py), so a refactor of the
packages that breaks a script fails here rather than the day someone runs it."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCRIPTS = sorted((ROOT / "scripts").glob("*.py"))
OWN_PACKAGES = ("localrag", "localrag_bench")
WHERE_NAMED = [ROOT / "README.md", ROOT / "Makefile", *sorted((ROOT / "docs").glob("*.md"))]


def project_imports(source: str) -> list[tuple[str, str]]:
    """(module, name) of every ``from localrag... import name`` (or localrag_bench) in ``source``."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] in OWN_PACKAGES:
            found += [(node.module, alias.name) for alias in node.names]
    return found


def test_the_scan_finds_a_private_import():
    source = "from localrag.store.health import _state_path, state_path\nimport os\nfrom os import _exit\n"
    assert project_imports(source) == [("localrag.store.health", "_state_path"), ("localrag.store.health", "state_path")]


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: p.name)
def test_a_script_imports_only_public_names_that_exist(script: Path):
    for module, name in project_imports(script.read_text(encoding="utf-8")):
        assert not name.startswith("_"), f"{script.name} imports the private {module}.{name}"
        imported = importlib.import_module(module)
        assert hasattr(imported, name) or importlib.util.find_spec(f"{module}.{name}") is not None, \
            f"{script.name}: {module} has no {name}"


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: p.name)
def test_a_script_says_how_it_is_run_and_is_named_where_its_figures_are(script: Path):
    doc = ast.get_docstring(ast.parse(script.read_text(encoding="utf-8"))) or ""
    assert doc.strip(), f"{script.name} has no docstring"
    named = [p.name for p in WHERE_NAMED if f"scripts/{script.name}" in p.read_text(encoding="utf-8")]
    assert named, f"scripts/{script.name} is named in none of README.md, Makefile, docs/*.md"
