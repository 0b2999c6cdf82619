"""Keep an index in step with its folder while the user works.

``FolderWatcher`` turns watchdog's event stream into debounced *change batches*: events
are coalesced until the folder has been quiet for ``index.watch_debounce_ms`` (or
``watch_max_wait_ms`` has passed since the first event, so a folder that never settles is
still synced). ``AutoIndexer`` owns the only writer thread: it syncs once at start, then
after every batch, and runs the slow graph phase whenever nothing newer is waiting.
Both the TUI (in a Textual thread worker) and ``localrag watch`` use it. Where the kernel's
inotify limits stop the native observer from watching every folder, the watcher polls instead
and says so once (``ingest/observers.py``).

A batch of a few files is first synced by its paths alone (milliseconds, where a full sync
of a 38k-note folder stats every file for over a second), then the whole folder is synced
(stat-diffed) as well: a batch can miss events (editors that save via rename, folders moved
in whole), and the full sync is correct whatever the events said.
"""

from __future__ import annotations

import logging
import os
import queue
import threading
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Callable

from localrag.config import IndexSettings
from localrag.embed import preload
from localrag.ingest.ignore import IGNORE_FILE, folder_patterns
from localrag.ingest.observers import (POLL_INTERVAL_S, WatchFallback, fallback_for_error, fallback_for_unwatched,
                                       folders_under, start_native, start_polling, stop_observer, unwatched)
from localrag.ingest.sync import Progress, SyncReport
from localrag.ingest.walker import STATE_DIR, display_name, fs_name, is_candidate, is_ignored
from localrag.store.lock import LockBusy

logger = logging.getLogger(__name__)

# another process (a CLI `localrag index`) may hold the writer lock: wait a little, then retry later
LOCK_WAIT_S = 2.0
LOCK_RETRY_S = 5.0
# a batch naming more files than this (a folder copied in, a checkout) is synced as a whole folder
TARGETED_MAX_PATHS = 64
# the full sync after a batch of files waits this long for the next change: a user saving note after
# note does not wait for a walk of the whole folder (over a second at 38k notes) between saves
FULL_SYNC_QUIET_S = 1.0
# events that never change a file's content
_IGNORED_EVENTS = {"opened", "closed_no_write"}


@dataclass
class ChangeBatch:
    """Coalesced file-system events: which paths changed, and how."""

    paths: set[str] = field(default_factory=set)  # POSIX paths relative to the folder
    created: int = 0
    modified: int = 0
    deleted: int = 0
    moved: int = 0
    first_at: float = 0.0  # monotonic time of the first event
    last_at: float = 0.0

    @property
    def events(self) -> int:
        return self.created + self.modified + self.deleted + self.moved

    def merge(self, other: "ChangeBatch") -> None:
        self.paths |= other.paths
        self.created += other.created
        self.modified += other.modified
        self.deleted += other.deleted
        self.moved += other.moved
        self.first_at = min(self.first_at or other.first_at, other.first_at or self.first_at)
        self.last_at = max(self.last_at, other.last_at)

    def describe(self, limit: int = 3) -> str:
        kinds = [f"{n} {name}" for n, name in ((self.created, "created"), (self.modified, "modified"),
                                               (self.deleted, "deleted"), (self.moved, "moved")) if n]
        names = sorted(self.paths)
        shown = ", ".join(names[:limit]) + (f" (+{len(names) - limit} more)" if len(names) > limit else "")
        return f"{', '.join(kinds) or 'no events'}: {shown}" if names else ", ".join(kinds) or "no events"


def relevant_path(root: Path, path: str, settings: IndexSettings, is_directory: bool) -> str | None:
    """The relative path if an event on ``path`` can change the index, else None."""
    try:
        rel = display_name(Path(os.path.abspath(path)).relative_to(root).as_posix())
    except ValueError:
        return None
    if rel in ("", "."):
        return None
    if rel == IGNORE_FILE:  # new ignore rules: the next sync drops what they exclude, adds what they free
        return rel
    parts = rel.split("/")
    if parts[0] == STATE_DIR or any(p.startswith(".") for p in parts):
        return None
    patterns = folder_patterns(root, settings.ignore)  # the folder's .localragignore as it is now
    if is_directory:
        return None if is_ignored(rel, patterns) or is_ignored(rel + "/", patterns) else rel
    return rel if is_candidate(rel, settings.extensions, patterns) else None


class FolderWatcher:
    """A watchdog observer whose events arrive as debounced ``ChangeBatch`` callbacks."""

    def __init__(self, folder: Path, settings: IndexSettings, on_batch: Callable[[ChangeBatch], None],
                 *, debounce_s: float | None = None, max_wait_s: float | None = None,
                 on_fallback: Callable[[WatchFallback], None] | None = None, poll_interval_s: float = POLL_INTERVAL_S):
        self.root = Path(folder).resolve()
        self.settings = settings
        self.on_batch = on_batch
        self.debounce_s = settings.watch_debounce_ms / 1000 if debounce_s is None else debounce_s
        self.max_wait_s = settings.watch_max_wait_ms / 1000 if max_wait_s is None else max_wait_s
        self._pending: ChangeBatch | None = None
        self._cond = threading.Condition()
        self._stopped = False
        self.on_fallback = on_fallback
        self.poll_interval_s = poll_interval_s
        self.fallback: WatchFallback | None = None  # set once the folder is polled instead of watched natively
        # found on watchdog's thread (with the folders it skipped); the debounce thread switches
        self._fallback_due: tuple[WatchFallback, list[str]] | None = None
        self._falling_back = False  # once: events still arrive from the native observer while it stops
        self._observer: Any = None
        self._thread: threading.Thread | None = None

    # -- lifecycle -----------------------------------------------------------------
    def start(self) -> None:
        folders = folders_under(self.root, self._can_hold_notes)  # listed first: a folder made later is an event
        try:
            self._observer = start_native(self.root, self.handle)
        except OSError as exc:  # the limit (ENOSPC, EMFILE) or an unreadable folder
            self._fall_back(fallback_for_error(exc))
        else:
            missing = unwatched(self._observer, folders)
            if missing:
                self._fall_back(fallback_for_unwatched(f"{len(missing):,} of {len(folders):,} folders"))
        self._thread = threading.Thread(target=self._debounce_loop, name="localrag-watch-debounce", daemon=True)
        self._thread.start()

    @property
    def mode(self) -> str:
        """"native" (inotify and the like), "polling" (after a fallback), or "" before start."""
        return "" if self._observer is None else ("polling" if self.fallback is not None else "native")

    def stop(self) -> None:
        with self._cond:
            self._stopped = True
            self._cond.notify_all()
        if self._thread is not None:  # first: it may be switching observers
            self._thread.join(timeout=5)
        if self._observer is not None:
            stop_observer(self._observer)

    def __enter__(self) -> "FolderWatcher":
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- events --------------------------------------------------------------------
    def handle(self, kind: str, src: str, dest: str = "", is_directory: bool = False) -> None:
        """Record one event (public so tests and other sources can feed it)."""
        if kind in _IGNORED_EVENTS or (is_directory and kind in ("modified", "closed")):
            return  # a folder's mtime changes with every file in it: the file events say more
        rels = [r for r in (relevant_path(self.root, p, self.settings, is_directory) for p in (src, dest) if p) if r]
        if not rels:
            return
        self._record(rels, kind)
        if is_directory and kind in ("created", "moved"):
            self._check_new_folder(dest or src)

    def _record(self, rels: list[str], kind: str) -> None:
        now = time.monotonic()
        with self._cond:
            batch = self._pending
            if batch is None:
                batch = self._pending = ChangeBatch(first_at=now)
            batch.paths.update(rels)
            batch.last_at = now
            if kind == "created":
                batch.created += 1
            elif kind == "deleted":
                batch.deleted += 1
            elif kind == "moved":
                batch.moved += 1
            else:  # modified, closed (after a write)
                batch.modified += 1
            self._cond.notify_all()

    def _can_hold_notes(self, folder: str) -> bool:
        return relevant_path(self.root, folder, self.settings, True) is not None

    def _check_new_folder(self, folder: str) -> None:
        """A folder that appeared while watching natively: past the limit watchdog skips it silently."""
        if self._falling_back or self.mode != "native":
            return
        missing = unwatched(self._observer, folders_under(Path(folder), self._can_hold_notes))
        if missing:
            rels = [r for r in (relevant_path(self.root, f, self.settings, True) for f in missing) if r]
            with self._cond:
                if not self._falling_back:
                    self._falling_back = True
                    self._fallback_due = fallback_for_unwatched(f"{len(missing):,} new folder(s)"), rels
                self._cond.notify_all()

    def _fall_back(self, fallback: WatchFallback) -> None:
        """Poll the folder instead of watching it natively, and say so once."""
        self._falling_back = True
        logger.warning("%s", fallback.message)
        if self._observer is not None:
            stop_observer(self._observer)
        self._observer = start_polling(self.root, self.handle, self.poll_interval_s)
        self.fallback = replace(fallback, poll_interval_s=self.poll_interval_s)
        if self.on_fallback is not None:
            self.on_fallback(self.fallback)

    def _next_due(self) -> tuple[ChangeBatch | None, tuple[WatchFallback, list[str]] | None]:
        """Wait for a batch that is due or an observer switch; (None, None) once stopped."""
        with self._cond:
            while not self._stopped:
                if self._fallback_due is not None:
                    switch, self._fallback_due = self._fallback_due, None
                    return None, switch
                batch = self._pending
                if batch is None:
                    self._cond.wait()
                    continue
                now = time.monotonic()
                due = min(batch.last_at + self.debounce_s, batch.first_at + self.max_wait_s)
                if now >= due:
                    self._pending = None
                    return batch, None
                self._cond.wait(timeout=due - now)
        return None, None

    def _debounce_loop(self) -> None:
        while True:
            batch, switch = self._next_due()
            if switch is not None:
                fallback, skipped = switch
                self._fall_back(fallback)
                # a change made before polling began is in no snapshot: one more sync, after the switch, sees it
                self._record(skipped, "created")
                continue
            if batch is None:
                return
            try:
                self.on_batch(batch)
            except Exception:  # a failing consumer must not kill the watcher
                logger.warning("the consumer of a batch of %d changes raised", len(batch.paths), exc_info=True)


class Interrupted(BaseException):
    """Raised from inside a phase (e.g. a model's token callback) to abandon it at once: shutdown, or
    the user waiting for an answer. A BaseException, so no ``except Exception`` on the way counts it as
    a failure of the passage; the interrupted passage is simply done again later."""


@dataclass
class IndexCycle:
    """One step of AutoIndexer work: a sync, or the graph phase that follows it."""

    trigger: ChangeBatch | None  # the change batch that caused it; None: start-up, resume or re-scan
    phase: str = "sync"  # "sync" | "graph"
    sync: SyncReport | None = None
    graph: Any = None  # kg.run.GraphReport
    error: str = ""
    stopped: bool = False  # interrupted (pause, shutdown, a newer change); a later cycle continues


SyncProgressFn = Callable[[Progress], None]
GraphProgressFn = Callable[[Any], None]


class AutoIndexer:
    """Index once, then keep the index in step with the folder until stopped.

    Runs in the caller's thread (``run``); every index write happens there, so there is one
    writer. Each cycle is a sync (reported at once: search sees the change) and then, when
    the index has one, the graph phase (reported when it ends). ``pause`` interrupts either
    at the next file/passage; ``resume`` runs a full sync, which catches up with whatever
    changed meanwhile. ``hold`` keeps the graph phase off the model while the user waits for
    an answer; ``release`` lets it continue.
    """

    def __init__(self, index: Any, *, on_result: Callable[[IndexCycle], None] | None = None,
                 on_sync_progress: SyncProgressFn | None = None, on_graph_progress: GraphProgressFn | None = None,
                 graph: bool = True, watch: bool = True, debounce_s: float | None = None,
                 graph_llm: Callable[[], Any | None] | None = None,
                 on_watch_fallback: Callable[[WatchFallback], None] | None = None):
        self.index = index
        self.on_result = on_result or (lambda cycle: None)
        self.on_sync_progress = on_sync_progress
        self.on_graph_progress = on_graph_progress
        self.graph = graph
        self.watch = watch
        self.debounce_s = debounce_s
        self.graph_llm = graph_llm  # gives the model for extraction (e.g. shared with answering); None: the index's own
        self._queue: queue.Queue[ChangeBatch | None] = queue.Queue()
        self._paused = threading.Event()
        self._held = threading.Event()
        self._stop = threading.Event()
        self.busy = False  # a sync or graph phase is running
        self.phase = ""  # "sync" | "graph" | "load" (the embedder's model, once) | "" (idle)
        self.watching = False
        self.on_watch_fallback = on_watch_fallback  # told once if the folder is polled instead of watched natively
        self.watch_fallback: WatchFallback | None = None
        self.running = False  # run() has started and not yet returned
        self.finished = threading.Event()  # run() has returned: the index may be closed

    @property
    def paused(self) -> bool:
        return self._paused.is_set()

    @property
    def has_graph_phase(self) -> bool:
        return self.graph and hasattr(self.index, "extract_graph")

    def pause(self) -> None:
        self._paused.set()

    def resume(self) -> None:
        if self._paused.is_set():
            self._paused.clear()
            self._queue.put(None)

    def hold(self) -> None:
        self._held.set()

    def interrupting(self) -> bool:
        """True when a running phase should give up now (stop, pause, or hold): for token callbacks."""
        return self._stop.is_set() or self._paused.is_set() or self._held.is_set()

    def release(self) -> None:
        if self._held.is_set():
            self._held.clear()
            self._queue.put(None)  # a cheap sync, then the graph phase continues

    def request_sync(self) -> None:
        self._queue.put(None)

    def submit(self, batch: ChangeBatch) -> None:
        """A batch of changes to sync (what the folder watcher reports; public for other event sources)."""
        self._queue.put(batch)

    def stop(self) -> None:
        self._stop.set()
        self._queue.put(None)

    def run(self, stop: threading.Event | None = None) -> None:
        """Blocking loop: start-up sync, then one cycle per change batch, until ``stop``."""
        outer = stop or threading.Event()
        stopping = lambda: outer.is_set() or self._stop.is_set()  # noqa: E731
        self.finished.clear()
        self.running = True
        watcher = None
        if self.watch:
            watcher = FolderWatcher(self.index.folder, self.index.settings.index, self.submit,
                                    debounce_s=self.debounce_s, on_fallback=self._watch_fell_back)
            watcher.start()
            self.watching = True
        try:
            self._queue.put(None)
            preloaded = False
            while not stopping():
                try:
                    item = self._queue.get(timeout=0.2)
                except queue.Empty:
                    continue
                trigger = self._drain(item)
                if self.paused or stopping():
                    continue  # resume() queues a full sync
                self._cycle(trigger, stopping)
                if not preloaded and self.watch:
                    preloaded = True
                    self._preload()
        finally:
            self.watching = False
            if watcher is not None:
                watcher.stop()
            self.running = False
            self.finished.set()

    # -- internals -------------------------------------------------------------------
    def _preload(self) -> None:
        """The embedder's model loaded after the start-up sync rather than during the first edit's
        sync, which would wait seconds for it."""
        self.busy, self.phase = True, "load"
        try:
            preload(self.index.embedder)
        except Exception as exc:  # the sync that needs the model reports it
            logger.info("the embedding model was not preloaded: %s", exc)
        finally:
            self.busy, self.phase = False, ""

    def _watch_fell_back(self, fallback: WatchFallback) -> None:
        self.watch_fallback = fallback
        if self.on_watch_fallback is not None:
            self.on_watch_fallback(fallback)

    def _drain(self, first: ChangeBatch | None) -> ChangeBatch | None:
        """Everything queued now, merged: one sync covers it all (None: no file events, e.g. start-up)."""
        merged = first
        while True:
            try:
                item = self._queue.get_nowait()
            except queue.Empty:
                return merged
            if item is not None:
                if merged is None:
                    merged = item
                else:
                    merged.merge(item)

    def _cycle(self, trigger: ChangeBatch | None, stopping: Callable[[], bool]) -> None:
        interrupted = lambda: stopping() or self.paused  # noqa: E731
        paths = self._batch_files(trigger)
        if paths:
            first = self._guarded(IndexCycle(trigger, "sync"), lambda c: self._sync(c, interrupted, only=paths))
            self.on_result(first)
            self._save_matrix(first)
            if first.error or first.stopped or not self._quiet_for(FULL_SYNC_QUIET_S, interrupted):
                return  # a newer change goes first: its cycle ends with the full sync
            # then the whole folder, for what the events missed
            newer = lambda: interrupted() or not self._queue.empty()  # noqa: E731
            sync = self._guarded(IndexCycle(trigger, "sync"), lambda c: self._sync(c, newer))
            if sync.error or (sync.sync is not None and sync.sync.changed):
                self.on_result(sync)
        else:
            sync = self._guarded(IndexCycle(trigger, "sync"), lambda c: self._sync(c, interrupted))
            self.on_result(sync)
        if sync.error or sync.stopped or not self.has_graph_phase or self._held.is_set():
            self._save_matrix(sync)
            return
        # a newer change pre-empts the slow phase: it continues after that change's sync
        graph_stop = lambda: interrupted() or self._held.is_set() or not self._queue.empty()  # noqa: E731
        graph = self._guarded(IndexCycle(trigger, "graph"), lambda c: self._extract(c, graph_stop))
        self.on_result(graph)

    def _quiet_for(self, seconds: float, interrupted: Callable[[], bool]) -> bool:
        """Whether no newer change arrives (and nothing interrupts) for ``seconds``."""
        until = time.monotonic() + seconds
        while time.monotonic() < until:
            if not self._queue.empty() or interrupted():
                return False
            time.sleep(0.05)
        return self._queue.empty() and not interrupted()

    def _batch_files(self, trigger: ChangeBatch | None) -> frozenset[str]:
        """The files a batch names, when a sync of just those is enough to make it searchable: not
        for the start-up sync, a new ignore file, a folder created or moved in, or a big batch."""
        if trigger is None or not trigger.paths or len(trigger.paths) > TARGETED_MAX_PATHS or IGNORE_FILE in trigger.paths:
            return frozenset()
        root = Path(self.index.folder)
        if any((root / fs_name(rel)).is_dir() for rel in trigger.paths):
            return frozenset()
        return frozenset(trigger.paths)

    def _save_matrix(self, sync: IndexCycle) -> None:
        """No graph phase this cycle (it saves the walk matrix itself): keep the saved matrix
        current after a sync that removed or changed passages, so a new process loads it as is."""
        save = getattr(self.index, "save_entity_graph", None)
        if save is None or sync.error or sync.sync is None or not sync.sync.changed:
            return
        try:
            save()
        except Exception:  # a busy or read-only index: readers update from the marks instead
            logger.info("the entity graph was not saved after the sync", exc_info=True)

    def _guarded(self, cycle: IndexCycle, work: Callable[[IndexCycle], None]) -> IndexCycle:
        self.busy, self.phase = True, cycle.phase
        try:
            work(cycle)
        except Interrupted:
            cycle.stopped = True
        except LockBusy as exc:
            cycle.error = f"{exc}; retrying in {LOCK_RETRY_S:.0f} s"
            retry = threading.Timer(LOCK_RETRY_S, self._queue.put, (None,))
            retry.daemon = True
            retry.start()
        except Exception as exc:  # bad input never crashes the watcher: report it
            cycle.error = f"{type(exc).__name__}: {exc}"
        finally:
            self.busy, self.phase = False, ""
        return cycle

    def _sync(self, cycle: IndexCycle, interrupted: Callable[[], bool], only: frozenset[str] | None = None) -> None:
        cycle.sync = self.index.sync(self.on_sync_progress, interrupted, wait_s=LOCK_WAIT_S, only=only)
        cycle.stopped = interrupted()

    def _extract(self, cycle: IndexCycle, graph_stop: Callable[[], bool]) -> None:
        progress = self.on_graph_progress or (lambda p: None)
        llm = self.graph_llm() if self.graph_llm is not None else None
        if llm is not None:
            cycle.graph = self.index.extract_graph(progress, graph_stop, llm=llm)
        else:
            cycle.graph = self.index.extract_graph(progress, graph_stop)
        cycle.stopped = graph_stop()
