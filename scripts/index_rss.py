"""A first index's memory and progress over time: runs ``localrag index FOLDER --db DB --no-graph``
in a new process and reads its resident memory (``/proc/PID/status`` VmRSS), CPU time and the
passages written so far every few seconds (Linux).

    .venv/bin/python scripts/index_rss.py FOLDER --db NEW.db [--every 15] [--out FILE.json]

The database is made anew (an existing one is an error): the figures are of a first index.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from localrag.store import Store

CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


@dataclass
class Sample:
    seconds: float
    passages: int
    rss_mb: float
    cpu_s: float


def _rss_mb(pid: int) -> float | None:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        return None
    return None


def _cpu_s(pid: int) -> float | None:
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS  # utime + stime


def _passages(db: Path) -> int:
    try:
        store = Store.open_for_reading(db)
    except Exception:  # not made yet, or its schema not written yet
        return 0
    try:
        return store.docs.passage_count()
    except Exception:  # busy for a moment
        return 0
    finally:
        store.close()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("folder", type=Path)
    ap.add_argument("--db", type=Path, required=True)
    ap.add_argument("--every", type=float, default=15.0, help="seconds between samples")
    ap.add_argument("--out", type=Path)
    args = ap.parse_args()
    if args.db.exists():
        print(f"error: {args.db} exists: this measures a first index", file=sys.stderr)
        return 2
    localrag = Path(sys.executable).with_name("localrag")
    start = time.perf_counter()
    child = subprocess.Popen([str(localrag), "index", str(args.folder), "--db", str(args.db), "--no-graph", "--quiet"])
    samples: list[Sample] = []
    while child.poll() is None:
        time.sleep(args.every)
        rss, cpu = _rss_mb(child.pid), _cpu_s(child.pid)
        if rss is None or cpu is None:
            break
        samples.append(Sample(round(time.perf_counter() - start, 1), _passages(args.db), round(rss, 1), round(cpu, 1)))
        s = samples[-1]
        print(f"{s.seconds:7.1f} s  {s.passages:7,} passages  RSS {s.rss_mb:7,.0f} MB  CPU {s.cpu_s:7.1f} s", flush=True)
    code = child.wait()
    wall = time.perf_counter() - start
    passages = _passages(args.db)
    peak = max((s.rss_mb for s in samples), default=0.0)
    print(f"{passages:,} passages in {wall:.1f} s ({passages / wall:.1f}/s), sampled peak RSS {peak:,.0f} MB")
    if args.out:
        args.out.write_text(json.dumps({"folder": str(args.folder), "exit": code, "wall_s": round(wall, 1),
                                        "passages": passages, "peak_rss_mb": peak,
                                        "samples": [asdict(s) for s in samples]}, indent=1))
    return code


if __name__ == "__main__":
    raise SystemExit(main())
