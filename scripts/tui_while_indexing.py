"""The terminal UI while it indexes a folder from scratch: keystroke latency and a question answered
from what is indexed so far, driven through Textual's Pilot on the real app (real embedder, real
index, the configured model).

For ``--seconds`` after the first index starts, one character is typed every ``--every`` seconds
into the question line; a keystroke's latency is the wall time from the key event being posted
(as the terminal driver posts it) until the line holds the character. Then ``--question`` is asked (Enter) while the index is still running: the time until its
answer block appears and until the answer is complete, and how many notes were indexed then.

    .venv/bin/python scripts/tui_while_indexing.py FOLDER --db NEW.db [--seconds 60] [--out FILE.json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from textual import events

from localrag.config import load_settings
from localrag.store import Store
from localrag.tui.app import LocalRagApp
from localrag.tui.chat import ChatLog

SIZE = (120, 40)
TYPED = "how do i extract a tar archive "


@dataclass
class TuiFigures:
    keystrokes: int
    keystroke_ms_p50: float
    keystroke_ms_p95: float
    keystroke_ms_max: float
    notes_indexed_when_asked: int
    answer_block_s: float  # Enter -> the answer block is on screen
    answer_done_s: float  # Enter -> the answer is complete
    still_indexing_when_answered: bool
    answer_excerpt: str
    load: list[float]
    cpu_seconds: float


def _percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return round(ordered[min(len(ordered) - 1, int(len(ordered) * share))], 1)


def _notes_indexed(db: Path) -> int:
    if not db.is_file():
        return 0
    store = Store.open_for_reading(db)
    try:
        return store.docs.count()
    finally:
        store.close()


async def _wait(pilot, condition, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            return False
        await pilot.pause(0.05)
    return True


async def _drive(app: LocalRagApp, db: Path, seconds: float, every: float, question: str) -> TuiFigures:
    async with app.run_test(size=SIZE) as pilot:
        if not await _wait(pilot, lambda: app.indexing.indexer.busy, 60):
            raise SystemExit("the first index did not start within 60 s")
        field = app.query_one("#question")
        latencies: list[float] = []
        end = time.monotonic() + seconds
        while time.monotonic() < end and app.indexing.indexer.busy:
            char = TYPED[len(latencies) % len(TYPED)]
            expected = field.value + char
            started = time.perf_counter()
            # posted as the terminal driver posts a key; Pilot.press would also wait for the whole
            # process to be idle, which it never is while indexing
            app.post_message(events.Key("space" if char == " " else char, char))
            while field.value != expected and time.perf_counter() - started < 10:
                await asyncio.sleep(0.002)
            latencies.append((time.perf_counter() - started) * 1000)
            await asyncio.sleep(every)
        field.value = question
        indexed = _notes_indexed(db)
        log = app.query(ChatLog).first()
        before = len(log.children)
        asked = time.perf_counter()
        await pilot.press("enter")
        await _wait(pilot, lambda: len(log.children) > before, 600)
        block_s = time.perf_counter() - asked
        await _wait(pilot, lambda: not app.chat.answering, 600)
        done_s = time.perf_counter() - asked
        busy = app.indexing.indexer.busy
        block = log.latest()
        answer = getattr(block, "answer", None)
        excerpt = " ".join((answer.text if answer is not None else "").split())[:200]
        app.indexing.stop()
    return TuiFigures(len(latencies), _percentile(latencies, 0.5), _percentile(latencies, 0.95),
                      round(max(latencies), 1), indexed, round(block_s, 2), round(done_s, 2), busy, excerpt,
                      [round(x, 2) for x in os.getloadavg()], round(time.process_time(), 1))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("folder", type=Path)
    ap.add_argument("--db", type=Path, required=True, help="a new index file (removed first)")
    ap.add_argument("--seconds", type=float, default=60.0, help="how long to type while indexing")
    ap.add_argument("--every", type=float, default=0.25, help="seconds between keystrokes")
    ap.add_argument("--question", default="How do I extract a gzipped tar archive?")
    ap.add_argument("--out", type=Path)
    args = ap.parse_args()
    for suffix in ("", "-wal", "-shm"):
        Path(f"{args.db}{suffix}").unlink(missing_ok=True)
    settings = load_settings(args.folder, {"db": str(args.db), "index.extractor": "rules"}, env={})
    figures = asyncio.run(_drive(LocalRagApp(settings), args.db, args.seconds, args.every, args.question))
    text = json.dumps(asdict(figures), indent=2)
    print(text)
    if args.out:
        args.out.write_text(text + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
