"""How many passages of a folder exceed the embedder's window, before and after ingest/window.py.

    localrag bench window-share ../shared/data/dendron-vault/notes

"Before" is the chunker alone (its regex cap); "after" adds the window step, as sync does.
Wordpieces are MiniLM's, of the embedded text (heading path + passage).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from localrag.config import load_settings
from localrag.embed import MiniLMEmbedder
from localrag.ingest.chunker import chunk_text
from localrag.ingest.loaders import load_data
from localrag.ingest.walker import walk
from localrag.ingest.window import fit_chunk


def _describe(counts: list[int], window: int) -> dict[str, float]:
    xs = sorted(counts)
    at = lambda q: xs[min(len(xs) - 1, int(q * len(xs)))]  # noqa: E731
    over = sum(x > window for x in xs)
    return {"passages": len(xs), "median": at(0.5), "p90": at(0.9), "max": xs[-1], "over_window": over,
            "share_over": round(over / len(xs), 4)}


def measure(root: Path) -> dict:
    settings = load_settings(root, {}, env={}).index
    count, window = MiniLMEmbedder().window_counter()
    found, _ = walk(root, settings.extensions, settings.ignore)
    before: list[int] = []
    after: list[int] = []
    for f in found:
        loaded = load_data(f.path, f.path.read_bytes())
        chunks = chunk_text(loaded.text, loaded.kind, loaded.title, settings.chunk_min_tokens, settings.chunk_max_tokens)
        if not chunks:
            continue
        lines = loaded.text.split("\n")
        before += count([c.embed_text for c in chunks])
        after += count([p.embed_text for c in chunks for p in fit_chunk(c, lines, count, window)])
    return {"folder": str(root), "files": len(found), "window": window, "before": _describe(before, window),
            "after": _describe(after, window), "wordpieces_past_window_before": sum(max(0, n - window) for n in before)}


def run(args: argparse.Namespace) -> int:
    """`localrag bench window-share` (options in bench/localrag_bench/cli_tools.py)."""
    print(json.dumps(measure(args.folder), indent=1))
    return 0
