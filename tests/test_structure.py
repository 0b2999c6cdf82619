"""The package structure holds: no import cycles between packages or modules, and every import
inside a function says why it is there (a heavy library or the pipeline loaded on use, a check
that must survive a failed import), so a function-local import never silently dodges a cycle. Figures by scripts/code_metrics.py."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _metrics_module():
    spec = importlib.util.spec_from_file_location("code_metrics", ROOT / "scripts" / "code_metrics.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules["code_metrics"] = module  # dataclasses look their module up
    assert spec.loader is not None
    spec.loader.exec_module(module)
    return module


def _measure():
    metrics = _metrics_module()
    return metrics.measure([ROOT / "localrag", ROOT / "bench" / "localrag_bench"])


def test_no_import_cycles_between_packages_or_modules():
    found = _measure()
    assert found.package_cycles == [] and found.module_cycles == []


def test_every_function_local_import_says_why():
    found = _measure()
    silent = [f"{i.module}:{i.line} imports {i.target}" for i in found.local_imports if not i.comment]
    assert silent == []


def test_the_metrics_see_a_cycle_and_a_silent_local_import(tmp_path: Path):
    pkg = tmp_path / "demo"
    (pkg / "a").mkdir(parents=True)
    (pkg / "b").mkdir()
    for folder in (pkg, pkg / "a", pkg / "b"):
        (folder / "__init__.py").write_text("")
    (pkg / "a" / "one.py").write_text("from demo.b import two\n")
    (pkg / "b" / "two.py").write_text("from demo.a import one\n\ndef f():\n    from demo.a import one\n")
    found = _metrics_module().measure([pkg])
    assert found.package_cycles == [["demo.a", "demo.b"]]
    assert [(i.module, i.comment) for i in found.local_imports] == [("demo.b.two", "")]
