"""Core never imports Textual: only localrag.tui does (docs/design.md "Principles": thin front ends)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

PROBE = r"""
import importlib, json, pkgutil, sys
import localrag
names, failed = [], {}
for info in pkgutil.walk_packages(localrag.__path__, "localrag."):
    if info.name == "localrag.tui" or info.name.startswith("localrag.tui.") or info.name == "localrag.__main__":
        continue  # __main__ runs the CLI
    try:
        importlib.import_module(info.name)
        names.append(info.name)
    except Exception as exc:
        failed[info.name] = f"{type(exc).__name__}: {exc}"
from localrag.cli import build_parser
build_parser()  # every command registers itself (commands.tui imports localrag.tui lazily)
print(json.dumps({"imported": names, "failed": failed,
                  "textual": sorted(m for m in sys.modules if m == "textual" or m.startswith("textual."))}))
"""


def test_no_core_module_imports_textual() -> None:
    out = subprocess.run([sys.executable, "-c", PROBE], cwd=REPO, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert not result["failed"], result["failed"]
    for must in ("localrag.api", "localrag.ingest.watcher", "localrag.commands.tui", "localrag.commands.watch",
                 "localrag.retrieve.base", "localrag.store.db"):
        assert must in result["imported"]
    assert result["textual"] == [], f"core modules pulled in Textual: {result['textual'][:5]}"


def test_the_probe_would_notice_textual() -> None:
    """The same probe, with the TUI imported, does see Textual: the check above can fail."""
    probe = PROBE.replace('print(json.dumps(', 'import localrag.tui.app\nprint(json.dumps(')
    out = subprocess.run([sys.executable, "-c", probe], cwd=REPO, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    assert "textual" in json.loads(out.stdout.strip().splitlines()[-1])["textual"]
