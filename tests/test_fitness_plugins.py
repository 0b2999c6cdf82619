"""House rule: the readers of a trace (the answer, the API, the TUI) import no strategy's code, so a
plugin strategy's steps are shown exactly as the built-ins' are: each step renders itself
through ``TraceEvent`` (localrag/trace.py), and the readers call that. The bench's runner and
reports read a trace the same way (a result record's tracking and memory figures), so they score a
plugin strategy as they score a built-in.

Parsed, not imported: the TUI's Textual stays unloaded.
"""

from __future__ import annotations

import ast
from pathlib import Path

from localrag.retrieve.base import STRATEGIES

ROOT = Path(__file__).resolve().parents[1]
READERS = [ROOT / "localrag" / "answer", ROOT / "localrag" / "api.py", ROOT / "localrag" / "tui"]
BENCH = ROOT / "bench" / "localrag_bench"
# bench modules that measure one strategy's own parts, so they import them: NeuroPath's completion
# replayed, the `graph` fusion's constants swept from its lists, the entity graph's load timed (ppr's step)
ONE_STRATEGY_BENCHES = {"neuropath_replay.py", "graph_sweep.py", "scale_graph.py"}


def strategy_modules() -> set[str]:
    """The module of each built-in strategy, or its package when it has one of its own (neuropath/, remind/)."""
    out = set()
    for ref in STRATEGIES._refs.values():
        module = ref.partition(":")[0]
        parent, _, leaf = module.rpartition(".")
        out.add(parent if parent != "localrag.retrieve" and leaf == "strategy" else module)
    return out


def imported(source: str) -> list[tuple[int, str]]:
    """(line, dotted name) of each module an import statement of ``source`` names, ``from x import y`` as x.y too."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module:
            found.append((node.lineno, node.module))
            found += [(node.lineno, f"{node.module}.{alias.name}") for alias in node.names]
    return found


def strategy_imports(source: str, where: str, forbidden: set[str]) -> list[str]:
    return [f"{where}:{line} imports {name}" for line, name in imported(source)
            if any(name == m or name.startswith(m + ".") for m in forbidden)]


def _files() -> list[Path]:
    return sorted(p for r in READERS for p in ([r] if r.is_file() else r.rglob("*.py")))


def test_the_readers_of_a_trace_import_no_strategy():
    forbidden = strategy_modules()
    assert {"localrag.retrieve.neuropath", "localrag.retrieve.remind", "localrag.retrieve.graph"} <= forbidden
    files = _files()
    assert len(files) > 10, "the walk found the readers"
    found = [hit for path in files
             for hit in strategy_imports(path.read_text(encoding="utf-8"), str(path.relative_to(ROOT)), forbidden)]
    assert found == []


def test_the_bench_reads_a_trace_as_the_readers_do():
    forbidden = strategy_modules()
    assert all((BENCH / name).is_file() for name in ONE_STRATEGY_BENCHES), "an exemption names a module that is gone"
    files = sorted(p for p in BENCH.rglob("*.py") if p.name not in ONE_STRATEGY_BENCHES)
    assert BENCH / "runner.py" in files and len(files) > 20, "the walk found the bench"
    found = [hit for path in files
             for hit in strategy_imports(path.read_text(encoding="utf-8"), str(path.relative_to(ROOT)), forbidden)]
    assert found == []


def test_the_check_sees_each_form_of_import():
    forbidden = {"localrag.retrieve.neuropath", "localrag.retrieve.ppr"}
    source = ("from localrag.retrieve.neuropath.events import RoundStep\n"
              "import localrag.retrieve.ppr\n"
              "from localrag.retrieve import neuropath\n"
              "from localrag.retrieve import Context\n"
              "def f():\n    from localrag.retrieve.remind.events import PathsStep\n")
    assert strategy_imports(source, "x.py", forbidden) == [
        "x.py:1 imports localrag.retrieve.neuropath.events", "x.py:1 imports localrag.retrieve.neuropath.events.RoundStep",
        "x.py:2 imports localrag.retrieve.ppr", "x.py:3 imports localrag.retrieve.neuropath"]
    assert strategy_imports(source, "x.py", {"localrag.retrieve.remind"})[0].startswith("x.py:6 imports")
