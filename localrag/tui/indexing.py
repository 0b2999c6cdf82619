"""The indexing rows as a component: it runs the AutoIndexer and shows each cycle and watcher event.

The indexer thread posts ``IndexCycleDone`` to this widget, which keeps the figures (cycles,
last cycle, last status, last change), notifies errors and newly skipped files, updates its
rows and state line, then posts ``IndexingChanged`` for the app to refresh the other panels.
"""

from __future__ import annotations

import threading
from functools import partial
from typing import Any, Callable

from textual.css.query import NoMatches
from textual.message import Message

from localrag.api import Index, IndexStatus
from localrag.ingest.watcher import AutoIndexer, IndexCycle
from localrag.ingest.observers import WatchFallback
from localrag.tui.messages import IndexCycleDone, WatchFellBack
from localrag.tui.presentation import Presentation
from localrag.tui.progress import IndexProgress, ProgressFeed

STATE_REFRESH_S = 0.5
GraphModel = Callable[[Callable[[], bool]], Any]  # ModelControl.graph_model: (interrupting) -> model or None


class IndexingChanged(Message):
    """The indexing state or the index's status changed: ``status`` is the new status, if one was read."""

    def __init__(self, status: IndexStatus | None) -> None:
        super().__init__()
        self.status = status


class IndexingRows(IndexProgress):
    """IndexProgress's rows, fed by the AutoIndexer this widget owns and runs in a thread worker."""

    def __init__(self, index: Index, *, graph: bool, watch: bool, graph_model: GraphModel | None,
                 stopping: threading.Event, presentation: Presentation, **kw: Any) -> None:
        feed = ProgressFeed()
        indexer = AutoIndexer(index, on_result=self._cycle_finished, on_sync_progress=feed.on_sync,
                              on_graph_progress=feed.on_graph, watch=watch, graph=graph,
                              graph_llm=None if graph_model is None else lambda: graph_model(indexer.interrupting),
                              on_watch_fallback=self._watch_fell_back)
        super().__init__(feed, graph_available=indexer.has_graph_phase, presentation=presentation, **kw)
        self.index = index
        self.indexer = indexer
        self.stopping = stopping
        self.cycles_done = 0
        self.last_cycle: IndexCycle | None = None
        self.last_status: IndexStatus | None = None
        self.last_change = ""
        self._known_skipped: set[str] | None = None

    def on_mount(self) -> None:
        self.run_worker(partial(self.indexer.run, self.stopping), thread=True, group="index", name="indexer")
        self.set_interval(STATE_REFRESH_S, self.refresh_state)
        self.refresh_state()

    def stop(self) -> None:
        self.stopping.set()
        self.indexer.stop()

    def state_text(self) -> str:
        if self.indexer.paused:
            return "paused (F7 resumes)"
        if self.indexer.busy or self.cycles_done == 0:
            if self.indexer.phase == "load":
                return "indexing: loading the embedding model"
            return "indexing: building the graph" if self.indexer.phase == "graph" else "indexing: reading and embedding files"
        if not self.indexer.watching:
            return "idle (not watching)"
        fallback = self.indexer.watch_fallback
        if fallback is None:
            return "watching for changes"
        why = f"inotify {fallback.cause}" if fallback.sysctl else "no native watch"
        return f"watching for changes by polling every {fallback.poll_interval_s:g} s ({why})"

    def refresh_state(self) -> None:
        state = self.state_text()
        icon = "⏸" if self.indexer.paused else ("↻" if state.startswith("indexing") else "●")
        line = f"{icon} {state}"
        if self.last_change:
            line += f" · last change: {self.last_change}"
        self.graph_running = self.indexer.phase == "graph"
        self.set_state(line)

    def toggle(self) -> None:
        if self.indexer.paused:
            self.indexer.resume()
            self.notify("indexing resumed: catching up with the folder", title="indexing")
        else:
            self.indexer.pause()
            self.notify("indexing stopped: answers use the index as it is (F7 resumes)", title="indexing")
        self.refresh_state()
        self.post_message(IndexingChanged(None))

    # -- messages from the indexer thread ------------------------------------------------
    def _cycle_finished(self, cycle: IndexCycle) -> None:
        try:
            status = self.index.status()
        except Exception:
            status = None
        self.post_message(IndexCycleDone(cycle, status))

    def _watch_fell_back(self, fallback: WatchFallback) -> None:
        self.post_message(WatchFellBack(fallback))

    def on_watch_fell_back(self, msg: WatchFellBack) -> None:
        # long-lived: the user has to act on it (raise the limit) for native watching to come back
        self.notify(msg.fallback.message, title="watching by polling", severity="warning", timeout=30)
        self.refresh_state()

    def on_index_cycle_done(self, msg: IndexCycleDone) -> None:
        try:
            self._show_cycle(msg)
        except NoMatches:
            return  # the app is closing: its widgets are gone
        self.post_message(IndexingChanged(msg.status))

    def _show_cycle(self, msg: IndexCycleDone) -> None:
        self.cycles_done += 1
        self.last_cycle = msg.cycle
        if msg.cycle.phase == "graph":
            self.feed.graph_finished()
        if msg.cycle.error:
            self.notify(msg.cycle.error, title="indexing", severity="error", timeout=10)
        if msg.cycle.trigger is not None:
            self.last_change = f"{self.presentation.time_of_day()}{msg.cycle.trigger.describe(limit=2)}"
        if msg.status is not None:
            self.last_status = msg.status
            self.set_status(msg.status)
            self._notify_skipped(msg.status)
        self.refresh_state()

    def _notify_skipped(self, status: IndexStatus) -> None:
        paths = {s.path for s in status.skipped}
        if self._known_skipped is None:
            if status.skipped:
                self.notify(f"{len(status.skipped)} file(s) could not be indexed: F6 shows which and why",
                            title="skipped files", severity="warning")
        else:
            for s in status.skipped:
                if s.path not in self._known_skipped:
                    self.notify(f"{s.path}: {s.reason} — {s.detail}", title="skipped", severity="warning")
        self._known_skipped = paths
