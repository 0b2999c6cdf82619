"""Warm retrieval latency on an existing index: the first 40 questions of a notes-suite set asked
in one process (one asked before timing), p50 / p95 wall and CPU p50 per strategy.

    .venv/bin/python scripts/warm_retrieval.py FOLDER --db INDEX.db [--questions bench_data/tldr-pages/questions.jsonl]
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from localrag.api import Assistant, Index
from localrag.config import load_settings

ROOT = Path(__file__).resolve().parents[1]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("folder", type=Path)
    ap.add_argument("--db", type=Path, required=True)
    ap.add_argument("--questions", type=Path, default=ROOT / "bench_data" / "tldr-pages" / "questions.jsonl")
    ap.add_argument("--strategy", default="graph,hybrid")
    args = ap.parse_args()
    index = Index(load_settings(args.folder, {"db": str(args.db)}, env={}), readonly=True)
    assistant = Assistant(index, llm=object())
    questions = [json.loads(line)["question"] for line in args.questions.read_text().splitlines()][:40]
    try:
        assistant.retrieve(questions[0], strategy="graph", k=10)  # the walk matrix and the embedder loaded
        for strategy in args.strategy.split(","):
            wall, cpu = [], []
            for q in questions:
                started, cpu_started = time.perf_counter(), time.process_time()
                assistant.retrieve(q, strategy=strategy, k=10)
                wall.append((time.perf_counter() - started) * 1000)
                cpu.append((time.process_time() - cpu_started) * 1000)
            wall.sort()
            cpu.sort()
            print(f"{strategy}: p50 {wall[len(wall) // 2]:.0f} ms, p95 {wall[int(len(wall) * 0.95) - 1]:.0f} ms wall; "
                  f"CPU p50 {cpu[len(cpu) // 2]:.0f} ms ({len(questions)} questions)")
    finally:
        index.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
