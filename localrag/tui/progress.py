"""The two indexing progress rows: passages embedded (fast phase) and graph extraction (slow phase).

The indexing thread writes the latest figures into a ``ProgressFeed`` (no message per
event); the widget samples it four times a second, which coalesces bursts of events.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, replace
from typing import Any

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.widgets import Label, ProgressBar

from localrag.api import IndexStatus
from localrag.ingest.sync import Progress
from localrag.tui.presentation import Presentation
from localrag.tui.rates import RateMeter

SAMPLE_S = 0.25


@dataclass(frozen=True)
class PhaseFigures:
    done: int = 0
    total: int = 0
    active: bool = False
    note: str = ""  # e.g. "files 12/25", "2 failed · 1 by rules"


class ProgressFeed:
    """Latest progress of both phases, written by the indexing thread, read by the UI."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.passages = PhaseFigures()
        self.graph = PhaseFigures()

    def on_sync(self, p: Progress) -> None:
        with self._lock:
            cur = self.passages
            if p.phase == "scan":
                self.passages = replace(cur, active=True, note=f"files {p.done}/{p.total}" if p.total else "")
            elif p.phase == "ocr":
                self.passages = replace(cur, active=True, note=f"OCR {p.path} p. {p.done}/{p.total}")
            elif p.phase == "embed":
                self.passages = replace(cur, done=p.done, total=max(p.total, p.done), active=True)
            elif p.phase == "remove":
                self.passages = replace(cur, active=True, note=f"removing {p.done + 1}/{p.total}")
            elif p.phase == "done":
                self.passages = replace(cur, active=False, note="")

    def on_graph(self, g: Any) -> None:
        failed, fallback = getattr(g, "failed", 0), getattr(g, "fallback", 0)
        notes = [f"{failed} failed" if failed else "", f"{fallback} by rules" if fallback else ""]
        with self._lock:
            self.graph = PhaseFigures(int(getattr(g, "done", 0)), int(getattr(g, "total", 0)), True,
                                      " · ".join(n for n in notes if n))

    def graph_finished(self) -> None:
        with self._lock:
            self.graph = replace(self.graph, active=False)

    def snapshot(self) -> tuple[PhaseFigures, PhaseFigures]:
        with self._lock:
            return self.passages, self.graph


class PhaseRow(Horizontal):
    DEFAULT_CSS = """
    PhaseRow { height: 1; }
    PhaseRow > .phase-name { width: 10; text-style: bold; }
    PhaseRow > ProgressBar { width: 36; }
    PhaseRow > .phase-detail { width: 1fr; color: $text-muted; margin-left: 2; }
    """

    def __init__(self, name: str, unit: str, presentation: Presentation, **kw: Any) -> None:
        super().__init__(**kw)
        self.phase_name, self.unit = name, unit
        self.presentation = presentation
        self.meter = RateMeter()

    def compose(self) -> ComposeResult:
        yield Label(self.phase_name, classes="phase-name")
        yield ProgressBar(total=1, show_eta=False, show_percentage=True)
        yield Label("", classes="phase-detail")

    def show(self, done: int, total: int, text: str, *, active: bool) -> None:
        bar = self.query_one(ProgressBar)
        bar.update(total=max(total, 1), progress=min(done, max(total, 1)) if total else 0)
        if active:
            self.meter.add(done)
            rate = self.presentation.rate(self.meter.rate(), self.meter.eta_s(total), self.unit)
            if rate is not None:
                text += f"  {rate}"
        else:
            self.meter.reset()
        self.query_one(".phase-detail", Label).update(Text(text))


class IndexProgress(Vertical):
    """Both phases, plus the watcher state (indexing / watching / paused)."""

    DEFAULT_CSS = """
    IndexProgress { height: auto; padding: 0 1; border-bottom: solid $primary-background; }
    IndexProgress > #index-state { height: 1; color: $accent; }
    """

    def __init__(self, feed: ProgressFeed, *, graph_available: bool, presentation: Presentation, **kw: Any) -> None:
        super().__init__(**kw)
        self.feed = feed
        self.graph_available = graph_available
        self.presentation = presentation
        self.status: IndexStatus | None = None
        self.graph_running = False  # the graph phase has started (its first progress may take a model call)

    def compose(self) -> ComposeResult:
        yield Label("starting…", id="index-state")
        yield PhaseRow("Passages", "passages", self.presentation, id="row-passages")
        yield PhaseRow("Graph", "passages", self.presentation, id="row-graph")

    def on_mount(self) -> None:
        self.sample()
        self.set_interval(SAMPLE_S, self.sample)

    def set_state(self, text: str) -> None:
        for label in self.query("#index-state").results(Label):
            label.update(Text(text))

    def set_status(self, status: IndexStatus | None) -> None:
        self.status = status
        self.sample()

    def sample(self) -> None:
        if len(self.query(PhaseRow)) < 2:
            return  # not mounted yet, or being removed
        passages, graph = self.feed.snapshot()
        st = self.status
        row = self.query_one("#row-passages", PhaseRow)
        if passages.active:
            text = f"{passages.done}/{passages.total} embedded" + (f" · {passages.note}" if passages.note else "")
            row.show(passages.done, passages.total, text, active=True)
        elif st is not None:
            text = f"{st.embedded}/{st.passages} passages embedded · {st.documents} files"
            row.show(st.embedded, st.passages, text, active=False)
        else:
            row.show(0, 0, "waiting for the first scan", active=False)
        self._sample_graph(graph, st)

    def _sample_graph(self, graph: PhaseFigures, st: IndexStatus | None) -> None:
        row = self.query_one("#row-graph", PhaseRow)
        if not self.graph_available:
            row.show(0, 0, "graph extraction off (dense + lexical search only)", active=False)
            return
        if graph.active:
            text = f"{graph.done}/{graph.total} passages extracted" + (f" · {graph.note}" if graph.note else "")
            row.show(graph.done, graph.total, text, active=True)
            return
        extra = st.extra if st is not None else {}
        queue = int(extra.get("graph_queue", 0) or 0)
        total = st.passages if st is not None else 0
        text = f"{extra.get('facts', 0)} facts · {extra.get('entities', 0)} entities · {queue} passages queued"
        if self.graph_running and queue:
            text += " · extracting the first of them…"
        row.show(max(total - queue, 0), total, text, active=False)
