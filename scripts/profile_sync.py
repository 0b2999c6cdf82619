"""Where a first index's time goes besides the embedder: ``sync_folder`` under cProfile with
random unit vectors in place of MiniLM's (its tokenizer still fits passages to the window).

    .venv/bin/python scripts/profile_sync.py FOLDER --db NEW.db [--top 30]

Prints wall and CPU seconds, the passages written, and the functions by cumulative time.
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import sys
import time
from pathlib import Path
from typing import Sequence

import numpy as np

from localrag.api import Index
from localrag.config import load_settings
from localrag.embed import MiniLMEmbedder


class RandomVectors(MiniLMEmbedder):
    """MiniLM's id, size and tokenizer; vectors drawn at random (milliseconds, no torch)."""

    def encode(self, texts: Sequence[str], batch_size: int = 32, *, threads: int = 0) -> np.ndarray:
        vectors = np.random.default_rng(len(texts)).standard_normal((len(texts), self.dim)).astype(np.float32)
        return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("folder", type=Path)
    ap.add_argument("--db", type=Path, required=True)
    ap.add_argument("--top", type=int, default=30, help="functions listed")
    args = ap.parse_args()
    if args.db.exists():
        print(f"error: {args.db} exists: this profiles a first index", file=sys.stderr)
        return 2
    index = Index(load_settings(args.folder, {"db": str(args.db)}), RandomVectors())
    wall, cpu = time.perf_counter(), time.process_time()
    profile = cProfile.Profile()
    report = profile.runcall(index.sync)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    print(f"{report.passages_added:,} passages: {wall:.1f} s wall, {cpu:.1f} CPU s (profiled)")
    pstats.Stats(profile).sort_stats("cumulative").print_stats(args.top)
    return 0


if __name__ == "__main__":
    sys.exit(main())
