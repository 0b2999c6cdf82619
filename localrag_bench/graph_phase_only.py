"""The rules graph phase alone on a copy of a fast-phase index (no sync): wall, CPU, steps, rows.

    python -m localrag_bench.graph_phase_only WORK_DIR FAST.db

Used for the before/after comparison in docs/benchmarks.md (issue 16): run it with the old
and the new code on copies of the same index.
"""

from __future__ import annotations

import json
import os
import resource
import shutil
import sys
import time
from pathlib import Path


def main() -> None:
    from localrag.api import Index
    from localrag.config import load_settings

    work, base = Path(sys.argv[1]), Path(sys.argv[2])
    db = work / "graph-only.db"
    for suffix in ("", "-wal", "-shm", ".lock"):
        Path(str(db) + suffix).unlink(missing_ok=True)
    shutil.copyfile(base, db)
    (work / "notes").mkdir(parents=True, exist_ok=True)
    index = Index(load_settings(work / "notes", {"db": str(db), "index.extractor": "rules"}, env={}))
    try:
        started, cpu = time.perf_counter(), time.process_time()
        report = index.extract_graph()
        wall, cpu_s = time.perf_counter() - started, time.process_time() - cpu
        steps = getattr(getattr(report, "steps", None), "seconds", {})
        print(json.dumps({"passages": report.passages, "wall_s": round(wall, 2), "cpu_s": round(cpu_s, 2),
                          "load": os.getloadavg(), "counts": index.graph_figures(),
                          "steps": {k: round(v, 2) for k, v in steps.items()},
                          "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
    finally:
        index.close()


if __name__ == "__main__":
    main()
