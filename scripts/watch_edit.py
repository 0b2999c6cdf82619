"""How soon the folder watcher makes a change searchable on an index that exists already: notes
edited, one added and one deleted while ``AutoIndexer`` (the TUI's and `localrag watch`'s indexer)
watches the folder. Each figure runs from the file write until a lexical search finds (or, for the
deleted note, no longer finds) the word written; the watcher's debounce (``index.watch_debounce_ms``)
is inside it.

The folder is changed: run it on a copy.

    .venv/bin/python scripts/watch_edit.py COPY_OF_FOLDER --db INDEX.db [--edits 5] [--out FILE.json]
"""

from __future__ import annotations

import argparse
import json
import os
import threading
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from localrag.api import Assistant, Index
from localrag.config import load_settings
from localrag.ingest.watcher import AutoIndexer, IndexCycle

TIMEOUT_S = 120.0


@dataclass
class WatchFigures:
    folder_notes: int
    startup_sync_s: float  # the unchanged folder's sync when the watcher starts
    edited_s: list[float]  # write -> searchable, one per edited note
    added_s: float
    deleted_s: float
    native_watch: bool
    load: list[float]


def _marker(i: int) -> str:
    return f"watchmarker{i}q{os.getpid()}"


def _found(assistant: Assistant, word: str, rel: str) -> bool:
    hits = assistant.retrieve(word, strategy="lexical", k=5).passages
    return any(hit.passage.path == rel for hit in hits)


def _until(condition, timeout: float = TIMEOUT_S) -> float:
    started = time.perf_counter()
    while not condition():
        if time.perf_counter() - started > timeout:
            raise SystemExit(f"not seen within {timeout:.0f} s")
        time.sleep(0.02)
    return round(time.perf_counter() - started, 2)


def _notes(folder: Path, n: int) -> list[Path]:
    found = sorted(p for p in (folder / "pages" / "common").glob("*.md"))[:n] if (folder / "pages" / "common").is_dir() else []
    return found or sorted(folder.rglob("*.md"))[:n]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("folder", type=Path)
    ap.add_argument("--db", type=Path, required=True)
    ap.add_argument("--edits", type=int, default=5)
    ap.add_argument("--out", type=Path)
    args = ap.parse_args()
    folder = args.folder.resolve()
    index = Index(load_settings(folder, {"db": str(args.db), "index.extractor": "rules"}, env={}))
    assistant = Assistant(index, llm=object())
    cycles: list[IndexCycle] = []
    fallbacks: list[object] = []
    indexer = AutoIndexer(index, on_result=cycles.append, on_watch_fallback=fallbacks.append)
    stop = threading.Event()
    worker = threading.Thread(target=indexer.run, args=(stop,), daemon=True)
    started = time.perf_counter()
    worker.start()
    try:
        _until(lambda: any(c.phase == "sync" for c in cycles) and not indexer.busy, 600)
        startup = round(time.perf_counter() - started, 2)
        edited = []
        for i, note in enumerate(_notes(folder, args.edits)):
            rel = note.relative_to(folder).as_posix()
            word = _marker(i)
            with note.open("a", encoding="utf-8") as f:
                f.write(f"\n- A line with {word}:\n\n`true`\n")
            edited.append(_until(lambda: _found(assistant, word, rel)))
        added = folder / "watch-added-note.md"
        added_word = _marker(1000)
        added.write_text(f"# Added\n\nA new note about {added_word}.\n", encoding="utf-8")
        added_s = _until(lambda: _found(assistant, added_word, added.name))
        added.unlink()
        deleted_s = _until(lambda: not _found(assistant, added_word, added.name))
        native = indexer.watching and not fallbacks
    finally:
        stop.set()
        indexer.stop()
        worker.join(30)
        index.close()
    figures = WatchFigures(sum(1 for _ in folder.rglob("*.md")), startup, edited, added_s, deleted_s, native,
                           [round(x, 2) for x in os.getloadavg()])
    text = json.dumps(asdict(figures), indent=2)
    print(text)
    if args.out:
        args.out.write_text(text + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
