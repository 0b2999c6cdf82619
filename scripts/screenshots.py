#!/usr/bin/env python
"""Screenshots of the real app: the bundled SmolLM2, a real index of examples/notes.

Drives ``LocalRagApp`` headless with ``App.run_test()`` on a temporary copy of the notes
(the repository's examples/notes is left untouched), asks a real question with the real
model, and saves SVGs with ``save_screenshot()``: indexing (if caught in progress), main
screen with an answer, citation panel, path tree, cost, status and help. PNGs are
rendered from the SVGs with cairosvg when it is installed (``pip install cairosvg``; it
needs the system cairo library), else with ``rsvg-convert`` (Debian: librsvg2-bin), else
skipped. Usage: ``make screenshots`` or ``.venv/bin/python scripts/screenshots.py``.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
os.environ.setdefault("HF_HUB_OFFLINE", "1")

# the showcase: Rosalind Achterberg -> her bakery's note -> the loaf it links to, where the spice is
DEFAULT_QUESTION = "Which spice goes into the signature loaf of the bakery owned by Rosalind Achterberg?"
DEFAULT_FOLLOWUP = "And what is the spice in that loaf?"  # "that loaf": the note the first answer cited
ABSTAIN_QUESTION = "Who won the 1998 chess olympiad in Elista?"  # nothing in the sample notes says
PNG_FONT = "DejaVu Sans Mono"  # the SVGs name Fira Code (a web font); offline renderers need a local monospace


def parse_args() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", default=str(REPO / "screenshots"), help="output folder (default: screenshots/)")
    p.add_argument("--notes", default=str(REPO / "examples" / "notes"), help="notes folder to copy and index")
    p.add_argument("--question", default=DEFAULT_QUESTION, help="the question to ask")
    p.add_argument("--followup", default=DEFAULT_FOLLOWUP, help="a follow-up to the question (screenshot followup)")
    p.add_argument("--size", default="160x48", help="terminal size COLSxROWS")
    p.add_argument("--extractor", default="rules",
                   help="graph extractor for this run (default rules: what `auto` picks for the bundled SmolLM2, "
                        "whose own triples are too poor to be worth ~10 minutes of extraction; given by name here "
                        "because the model is named explicitly, which `auto` would take for a user's model)")
    p.add_argument("--no-png", action="store_true", help="SVG only")
    p.add_argument("--timeout", type=float, default=900.0, help="seconds to wait for indexing / the answer")
    return p.parse_args()


async def wait_for(pilot, condition, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise SystemExit(f"screenshots: timed out after {timeout:.0f} s waiting for {what}")
        await pilot.pause(0.05)


async def submit(pilot, app, timeout: float, what: str) -> None:
    """Enter, then wait for the question's block and its answer (a short answer can come within one frame,
    so the block count says the question was taken, not the `answering` flag)."""
    # Textual's widgets load with the app, as main() loads it
    from localrag.tui.chat import AnswerBlock

    before = len(app.query(AnswerBlock))
    await pilot.press("enter")
    await wait_for(pilot, lambda: len(app.query(AnswerBlock)) > before, 10, f"{what} to be taken")
    await wait_for(pilot, lambda: not app.chat.answering, timeout, f"the answer to {what}")


async def ask_again(pilot, app, question: str, timeout: float) -> None:
    """Type ``question`` into the box and wait for its answer."""
    box = app.query_one("#question")
    box.focus()
    box.value = question
    await pilot.pause(0.2)
    await submit(pilot, app, timeout, repr(question))
    await pilot.pause(0.5)


async def drive(app, out: Path, question: str, size: tuple[int, int], timeout: float,
                followup: str = "") -> dict[str, float]:
    timings: dict[str, float] = {}
    shots: list[str] = []

    def shot(name: str) -> None:
        app.save_screenshot(filename=f"{name}.svg", path=str(out))
        if name not in shots:
            shots.append(name)
        print(f"  {name}.svg")

    async with app.run_test(size=size) as pilot:
        started = time.monotonic()
        indexing = app.indexing
        await wait_for(pilot, lambda: indexing.feed.snapshot()[0].active or indexing.cycles_done > 0, 120,
                       "indexing to start")
        caught = 0  # 1: a phase is running; 2: part-way, with a rate (retaken when a better frame comes)
        last_phase = "graph" if indexing.indexer.has_graph_phase else "sync"
        while indexing.last_cycle is None or indexing.last_cycle.phase != last_phase or indexing.indexer.busy:
            passages, graph = indexing.feed.snapshot()
            running = [p for p in (passages, graph) if p.active and p.total]
            level = 2 if any(0 < p.done < p.total for p in running) else 1 if running else 0
            if level > caught:
                await pilot.pause(0.3)  # let the rate meter get two samples
                shot("indexing")
                caught = level
            if time.monotonic() - started > timeout:
                raise SystemExit("screenshots: indexing did not finish")
            await pilot.pause(0.05)
        timings["index_s"] = time.monotonic() - started
        await pilot.pause(0.5)

        started = time.monotonic()
        app.query_one("#question").value = question
        await submit(pilot, app, timeout, "the question")
        timings["answer_s"] = time.monotonic() - started
        await pilot.pause(0.5)
        shot("main")
        await pilot.press("f2", "enter")
        await pilot.pause(0.3)
        shot("citation")
        await pilot.press("f3")
        await pilot.pause(0.3)
        shot("path")
        await pilot.press("f4")
        await pilot.pause(0.3)
        shot("cost")
        await pilot.press("f5")
        await pilot.pause(0.3)
        shot("status")
        await pilot.press("f1")
        await pilot.pause(0.5)
        shot("help")
        await pilot.press("escape")
        if followup:  # the same conversation: the follow-up block shows what it searched for
            await ask_again(pilot, app, followup, timeout)
            shot("followup")
        # a question the notes do not answer: "not in your notes", the closest passages, no memory written
        await pilot.press("ctrl+n")  # a new conversation: the question stands alone
        await ask_again(pilot, app, ABSTAIN_QUESTION, timeout)
        shot("abstain")
    timings["shots"] = len(shots)
    return timings


def to_png(svg: Path) -> str:
    """Render one SVG to PNG; returns the renderer used, or '' when none is available."""
    text = re.sub(r"font-family: Fira Code, monospace;", f"font-family: {PNG_FONT}, monospace;", svg.read_text())
    png = svg.with_suffix(".png")
    try:
        import cairosvg
    except ImportError:
        cairosvg = None
    if cairosvg is not None:
        cairosvg.svg2png(bytestring=text.encode("utf-8"), write_to=str(png), output_width=1600)
        return "cairosvg"
    if shutil.which("rsvg-convert"):
        with tempfile.NamedTemporaryFile("w", suffix=".svg", delete=False) as tmp:
            tmp.write(text)
        try:
            subprocess.run(["rsvg-convert", "-w", "1600", "-o", str(png), tmp.name], check=True)
        finally:
            os.unlink(tmp.name)
        return "rsvg-convert"
    return ""


def main() -> int:
    args = parse_args()
    from localrag.config import load_settings
    from localrag.llm.discovery import bundled_model
    from localrag.tui.app import LocalRagApp

    if bundled_model() is None:
        print("screenshots: the bundled SmolLM2 is not installed (run `make install`)", file=sys.stderr)
        return 1
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    for old in [*out.glob("*.svg"), *out.glob("*.png")]:
        old.unlink()  # a screenshot not retaken this run must not linger as "current"
    cols, rows = (int(x) for x in args.size.lower().split("x"))
    work = Path(tempfile.mkdtemp(prefix="localrag-screenshots-"))
    notes = work / "notes"
    shutil.copytree(args.notes, notes, ignore=shutil.ignore_patterns(".localrag"))
    # the bundled model, whatever models/ or the environment say: the screenshots show the out-of-the-box app
    settings = load_settings(notes, {"index.extractor": args.extractor, "llm.model": str(bundled_model())}, env={})
    extractor = settings.index.extractor
    app = LocalRagApp(settings)
    print(f"screenshots of {args.notes} (copied to {notes}), {cols}x{rows}, extractor {extractor}, "
          f"question: {args.question!r}")
    try:
        timings = asyncio.run(drive(app, out, args.question, (cols, rows), args.timeout, args.followup))
    finally:
        app.index.close()
        shutil.rmtree(work, ignore_errors=True)
    renderer = ""
    if not args.no_png:
        for svg in sorted(out.glob("*.svg")):
            renderer = to_png(svg) or renderer
        print(f"PNGs: {'rendered with ' + renderer if renderer else 'skipped (no cairosvg, no rsvg-convert)'}")
    print(f"indexing {timings['index_s']:.1f} s · answer (with model load) {timings['answer_s']:.1f} s · "
          f"{timings['shots']} screenshots in {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
