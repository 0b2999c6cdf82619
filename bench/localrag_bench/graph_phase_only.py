"""The rules graph phase alone on a copy of a fast-phase index (no sync): wall, CPU, steps, rows.

    localrag bench graph-phase WORK_DIR FAST.db

Run it with two versions of the code on copies of the same index to compare them
(docs/benchmarks.md "What we tried", Scale).
"""

from __future__ import annotations

import argparse
import json
import os
import time

from localrag_bench.scale_graph import rules_index
from localrag_bench.workdir import copy_index, rss_mb


def run(args: argparse.Namespace) -> int:
    """`localrag bench graph-phase` (options in bench/localrag_bench/cli_tools.py)."""
    db = copy_index(args.base, args.work / "graph-only.db")
    (args.work / "notes").mkdir(parents=True, exist_ok=True)
    index = rules_index(args.work, db)
    try:
        started, cpu = time.perf_counter(), time.process_time()
        report = index.extract_graph()
        wall, cpu_s = time.perf_counter() - started, time.process_time() - cpu
        steps = getattr(getattr(report, "steps", None), "seconds", {})
        print(json.dumps({"passages": report.passages, "wall_s": round(wall, 2), "cpu_s": round(cpu_s, 2),
                          "load": os.getloadavg(), "counts": index.graph_figures(),
                          "steps": {k: round(v, 2) for k, v in steps.items()}, "rss_mb": rss_mb()}))
    finally:
        index.close()
    return 0
