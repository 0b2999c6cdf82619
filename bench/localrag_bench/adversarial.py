"""The graph phase on adversarial notes: one note of N ``[[Note i]]`` links on one line, and one
note that is a giant list of N near-identical names.

    localrag bench adversarial --links 5000,20000,100000 --names 10000 --out FILE

Each case is a fresh folder holding that one note: the fast phase (chunk, embed), then the rules
graph phase, timed in wall and CPU seconds with its steps (``embed`` = the entity names, on a
worker thread beside the rest; ``embed_wait`` = how long the main thread waited for it), the rows
it wrote, and the link facts against the links written (the chunker must cut no link in two).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable

from localrag.embed import default_embedder
from localrag.kg.vault import LINK_RELATION
from localrag_bench.results import MachineInfo, machine_info
from localrag_bench.scale_graph import rules_index
from localrag_bench.workdir import rss_mb


@dataclass(frozen=True)
class Case:
    name: str  # links-N or names-N
    note: str  # the note's file name
    text: str
    links: int  # [[...]] links written


@dataclass
class CaseResult:
    name: str
    links: int
    passages: int
    fast_seconds: float
    graph_seconds: float
    graph_cpu_seconds: float
    steps: dict[str, float]
    counts: dict[str, int]
    link_facts: int
    load: list[float]
    rss_mb: float


@dataclass
class AdversarialResult:
    cases: list[CaseResult]
    machine: MachineInfo
    created: str = field(default_factory=lambda: time.strftime("%Y-%m-%dT%H:%M:%S"))


def links_case(n: int) -> Case:
    """One line of ``n`` wikilinks, each to its own (missing) note: every name is alike."""
    return Case(f"links-{n}", "links.md", "# Links\n\n" + " ".join(f"[[Note {i}]]" for i in range(n)) + "\n", n)


def names_case(n: int) -> Case:
    """A list of ``n`` names that differ in one number, each a link (a list of one giant block)."""
    items = "\n".join(f"- [[Lanternfish harbour gate {i:05d}]]" for i in range(n))
    return Case(f"names-{n}", "names.md", f"# Harbour gates\n\n{items}\n", n)


def run_case(case: Case, work: Path, embedder: Any, log: Callable[[str], None]) -> CaseResult:
    folder = work / case.name
    shutil.rmtree(folder, ignore_errors=True)
    (folder / "notes").mkdir(parents=True)
    (folder / "notes" / case.note).write_text(case.text, encoding="utf-8")
    index = rules_index(folder, folder / "index.db", embedder)
    try:
        started = time.perf_counter()
        sync = index.sync()
        fast = time.perf_counter() - started
        log(f"{case.name}: {sync.passages_added:,} passages in {fast:.1f} s; graph phase")
        started, cpu = time.perf_counter(), time.process_time()
        report = index.extract_graph()
        wall, cpu_s = time.perf_counter() - started, time.process_time() - cpu
        links = sum(1 for f in index.store.graph.facts.all() if f.relation == LINK_RELATION)
        steps = {k: round(v, 2) for k, v in sorted(report.steps.seconds.items())}
        result = CaseResult(case.name, case.links, sync.passages_added, round(fast, 2), round(wall, 2), round(cpu_s, 2),
                            steps, index.graph_figures(), links, [round(x, 2) for x in os.getloadavg()], rss_mb())
    finally:
        index.close()
    log(f"{case.name}: graph phase {result.graph_seconds:.1f} s wall, {result.graph_cpu_seconds:.1f} s CPU, "
        f"{result.link_facts:,} link facts of {case.links:,} links, steps {result.steps}")
    return result


def _sizes(text: str) -> list[int]:
    return [int(x) for x in text.split(",") if x.strip()]


def table(result: AdversarialResult) -> str:
    head = ("| case | passages | graph phase wall s | CPU s | entity names embedded (worker) s | main thread waited s "
            "| coref s | writes s | rules s | link facts / links | coref pairs |")
    rows = [head, "|" + "---|" * 11]
    for c in result.cases:
        s = c.steps
        rows.append(f"| {c.name} | {c.passages:,} | {c.graph_seconds:.1f} | {c.graph_cpu_seconds:.1f} | "
                    f"{s.get('embed', 0):.1f} | {s.get('embed_wait', 0):.1f} | {s.get('coref', 0):.1f} | "
                    f"{s.get('write', 0):.1f} | {s.get('extract', 0):.1f} | {c.link_facts:,} / {c.links:,} | "
                    f"{c.counts.get('coref_pairs', 0):,} |")
    return "\n".join(rows)


def run(args: argparse.Namespace) -> int:
    """`localrag bench adversarial` (options in bench/localrag_bench/cli_tools.py)."""
    cases = [links_case(n) for n in _sizes(args.links)] + [names_case(n) for n in _sizes(args.names)]
    work = args.work or Path(tempfile.mkdtemp(prefix="localrag-adversarial-"))
    log = (lambda s: None) if args.quiet else (lambda s: print(s, flush=True))
    embedder = default_embedder()
    results = AdversarialResult([run_case(c, work, embedder, log) for c in cases], machine_info())
    print(table(results))
    if args.out:
        Path(args.out).write_text(json.dumps(asdict(results), indent=2) + "\n", encoding="utf-8")
    if args.work is None:
        shutil.rmtree(work, ignore_errors=True)
    return 0
