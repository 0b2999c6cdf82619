"""Does the graph grow where the user asks? FIFO vs asked-first extraction order, with a model.

On a copy of an indexed folder with every passage queued for a model extractor, ask a
handful of questions (``hybrid``, which needs no graph), then let the graph phase
extract N passages, and count how many of the questions' retrieved passages now have
model facts. Run twice: with ``index.queue_asked_first`` off (the file order) and on.

    localrag bench queue-order WORK_DIR_OF_A_BENCH_RUN MODEL.gguf --questions Q.jsonl \
        --ask 4 --k 3 --extract 12
"""

from __future__ import annotations

import argparse
import json
import os
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from localrag.api import Assistant, Index
from localrag.config import load_settings
from localrag_bench.workdir import copy_index


@dataclass
class OrderFigures:
    order: str
    questions: int
    retrieved: int  # distinct passages the questions retrieved
    extracted: int  # passages the graph phase wrote in this run
    with_model_facts: int  # of the retrieved passages, those with facts the model produced
    seconds: float
    cpu_seconds: float

    @property
    def share(self) -> float:
        return self.with_model_facts / self.retrieved if self.retrieved else 0.0


def run_order(work: Path, model: Path, questions: list[str], k: int, extract: int, asked_first: bool) -> OrderFigures:
    label = "asked-first" if asked_first else "fifo"
    db = copy_index(work / "index.db", work / f"queue-{label}.db")
    settings = load_settings(work / "notes", {
        "db": str(db), "index.extractor": "llm", "index.queue_asked_first": asked_first,
        "llm.index_model": str(model), "llm.model": str(model), "llm.n_threads": 1, "memory.enabled": False,
    }, env={})
    index = Index(settings)
    try:
        total = index.store.graph.queue.enqueue_all()
        assistant = Assistant(index)
        asked: list[int] = []
        for q in questions:
            asked += [sp.passage.id for sp in assistant.retrieve(q, "hybrid", k).passages]
        asked = list(dict.fromkeys(asked))
        started, cpu = time.perf_counter(), time.process_time()
        report = index.extract_graph(progress=lambda p: None, should_stop=lambda: index.store.graph.queue.length() <= total - extract)
        seconds, cpu_s = time.perf_counter() - started, time.process_time() - cpu
        written = report.passages
        by_model = {p for _, p, o in index.store.graph.facts.all_sources() if o == "llm"}
        with_facts = sum(pid in by_model for pid in asked)
    finally:
        index.close()
    return OrderFigures(label, len(questions), len(asked), written, with_facts, round(seconds, 1), round(cpu_s, 1))


def run(args: argparse.Namespace) -> int:
    """`localrag bench queue-order` (options in bench/localrag_bench/cli_tools.py)."""
    lines = [json.loads(x) for x in args.questions.read_text().splitlines() if x.strip()]
    questions = [x.get("question") or x.get("text") for x in lines][: args.ask]
    results = [run_order(args.work, args.model, questions, args.k, args.extract, on) for on in (False, True)]
    for r in results:
        print(f"{r.order}: {r.with_model_facts}/{r.retrieved} retrieved passages with model facts "
              f"({r.share:.0%}) after {r.extracted} extractions; {r.seconds:.0f} s wall, {r.cpu_seconds:.0f} s CPU, "
              f"load {os.getloadavg()[0]:.1f}")
    if args.out:
        args.out.write_text(json.dumps([asdict(r) | {"share": r.share} for r in results], indent=1) + "\n")
    return 0
