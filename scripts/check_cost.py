"""What the damage check costs: ``Store.quick_check`` (and ``integrity_check`` for comparison) on an index.

    .venv/bin/python scripts/check_cost.py ~/.cache/localrag/bench/scale-100000-seed7/index.db [--repeat 3]

Works on a consistent copy (SQLite's backup API, so an index that is being written can be measured);
times each check warm (the file in the page cache: the usual case right after the notes were
indexed) and, when the page cache can be dropped (root), cold too. Prints one JSON object.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from localrag.store import Store, connect  # noqa: E402


def _cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def _drop_page_cache() -> bool:
    try:
        os.sync()
        Path("/proc/sys/vm/drop_caches").write_text("3\n")
        return True
    except OSError:
        return False


def _time(db: Path, check: str) -> dict:
    store = Store.open_for_reading(db)
    try:
        wall, cpu = time.perf_counter(), _cpu()
        result = getattr(store, check)()
        return {"wall_s": round(time.perf_counter() - wall, 3), "cpu_s": round(_cpu() - cpu, 3), "result": result[:200]}
    finally:
        store.close()


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("db", type=Path)
    p.add_argument("--repeat", type=int, default=3)
    args = p.parse_args()
    work = Path(tempfile.mkdtemp(prefix="check-cost-"))
    try:
        copy = work / "index.db"
        src = connect(args.db, readonly=True)
        dst = connect(copy)
        src.backup(dst)
        dst.close()  # the last connection to close folds the WAL into the file
        src.close()
        store = Store.open_for_reading(copy)
        passages = store.docs.passage_count()
        store.close()
        out: dict = {"db": str(args.db), "passages": passages, "bytes": copy.stat().st_size,
                     "load_average": os.getloadavg()[0]}
        for name in ("quick_check", "integrity_check"):
            warm = [_time(copy, name) for _ in range(args.repeat)]
            out[name] = {"warm": sorted(warm, key=lambda r: r["wall_s"])[len(warm) // 2]}
            if _drop_page_cache():
                out[name]["cold"] = _time(copy, name)
        print(json.dumps(out, indent=2))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
