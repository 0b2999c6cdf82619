"""The file-system observer behind the folder watcher: native (inotify) when the kernel allows it,
polling when it does not.

On Linux every watched folder costs one inotify watch, and a user has
``fs.inotify.max_user_watches`` of them (and ``fs.inotify.max_user_instances`` inotify
instances) across all programs. Past the limit watchdog raises for the folder itself (ENOSPC,
EMFILE), but a subfolder it cannot watch is skipped without a word: its notes would never be
seen to change. So after starting the native observer ``start_native`` checks that every
folder that can hold notes got a watch; where one did not, the watcher says so once
(``WatchFallback.message``, with the sysctl that raises the limit) and polls the whole folder
with watchdog's ``PollingObserverVFS`` instead, so no edit is missed.
"""

from __future__ import annotations

import errno
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterator

POLL_INTERVAL_S = 2.0
WATCHES_SYSCTL = "fs.inotify.max_user_watches"
INSTANCES_SYSCTL = "fs.inotify.max_user_instances"
RAISED_VALUE = {WATCHES_SYSCTL: 524288, INSTANCES_SYSCTL: 1024}

# the observer thread delivers each event to this callback: (kind, src, dest, is_directory)
EventSink = Callable[[str, str, str, bool], None]


@dataclass(frozen=True)
class WatchFallback:
    """Why the native observer cannot watch the whole folder; the watcher polls it instead."""

    cause: str  # "watch limit" | "instance limit" | "error"
    detail: str  # what could not be watched, e.g. "312 of 5,120 folders have no inotify watch"
    sysctl: str = ""  # the kernel setting to raise ("" when the cause is not a limit)
    poll_interval_s: float = POLL_INTERVAL_S

    @property
    def message(self) -> str:
        """One line for the user: what happened, what localrag does now, how to get native watching back."""
        what = f"inotify {self.cause} reached ({self.sysctl} = {read_sysctl(self.sysctl)})" if self.sysctl \
            else "the folder cannot be watched natively"
        line = (f"{what}: {self.detail}; polling the folder every {self.poll_interval_s:g} s instead, "
                "so changes are still picked up (a little later, with more disk reads)")
        if self.sysctl:
            line += (f"; to watch natively, raise the limit: sudo sysctl {self.sysctl}={RAISED_VALUE[self.sysctl]}"
                     f" (and put {self.sysctl}={RAISED_VALUE[self.sysctl]} in /etc/sysctl.d/ to keep it)")
        return line


def read_sysctl(name: str) -> str:
    """The kernel setting's value as /proc/sys shows it, or "?" where it cannot be read."""
    try:
        return Path("/proc/sys", *name.split(".")).read_text().strip()
    except OSError:
        return "?"


def fallback_for_error(exc: OSError) -> WatchFallback:
    """The fallback for an error raised while the native observer started (or scheduled) the folder."""
    if exc.errno == errno.ENOSPC:
        return WatchFallback("watch limit", "the notes folder itself got no inotify watch", WATCHES_SYSCTL)
    if exc.errno == errno.EMFILE:
        return WatchFallback("instance limit", "no inotify instance could be created for the notes folder",
                             INSTANCES_SYSCTL)
    return WatchFallback("error", f"{exc.strerror or exc}")


def fallback_for_unwatched(which: str) -> WatchFallback:
    """The fallback when the observer started but skipped folders (``which``: "312 of 5,120 folders")."""
    return WatchFallback("watch limit", f"{which} got no inotify watch", WATCHES_SYSCTL)


def _handler_class(sink: EventSink) -> Any:
    # watchdog starts its native observer on import: loaded only when watching
    from watchdog.events import FileSystemEventHandler

    class _Handler(FileSystemEventHandler):
        def on_any_event(self, event: Any) -> None:  # watchdog's thread
            sink(event.event_type, os.fsdecode(event.src_path), os.fsdecode(getattr(event, "dest_path", "") or ""),
                 event.is_directory)

    return _Handler


def start_native(root: Path, sink: EventSink) -> Any:
    """watchdog's native observer on ``root`` (recursive), started; OSError when it cannot start."""
    # watchdog starts its native observer on import: loaded only when watching
    from watchdog.observers import Observer

    observer = Observer()
    try:
        observer.schedule(_handler_class(sink)(), str(root), recursive=True)
        observer.daemon = True
        observer.start()
    except OSError:
        stop_observer(observer)
        raise
    return observer


def start_polling(root: Path, sink: EventSink, interval_s: float = POLL_INTERVAL_S) -> Any:
    """watchdog's polling observer on ``root``, skipping hidden entries (never indexed), started."""
    # watchdog loaded only when watching (see start_native)
    from watchdog.observers.polling import PollingObserverVFS

    observer = PollingObserverVFS(os.stat, _visible_entries, polling_interval=interval_s)
    observer.schedule(_handler_class(sink)(), str(root), recursive=True)
    observer.daemon = True
    observer.start()  # takes the first snapshot: a change after this returns is an event
    return observer


def stop_observer(observer: Any) -> None:
    try:
        observer.stop()
        if observer.is_alive():
            observer.join(timeout=5)
    except RuntimeError:  # never started
        pass


def _visible_entries(path: str | None) -> Iterator[os.DirEntry[str]]:
    with os.scandir(path) as entries:
        return iter([e for e in entries if not e.name.startswith(".")])


def folders_under(root: Path, matters: Callable[[str], bool]) -> list[str]:
    """Every folder below ``root`` (and root) that can hold notes, as watchdog names them: the
    folders the native observer must have a watch on. Symlinked folders are not followed."""
    found = [str(root)]
    for top, dirnames, _ in os.walk(str(root)):
        dirnames[:] = [d for d in dirnames if matters(os.path.join(top, d))]
        found += [os.path.join(top, d) for d in dirnames if not os.path.islink(os.path.join(top, d))]
    return found


def watched_folders(observer: Any) -> set[str] | None:
    """The folders the inotify observer holds a watch on; None when it is not an inotify observer
    (macOS, Windows: no per-folder limit to check) or watchdog keeps them elsewhere."""
    watched: set[str] = set()
    for emitter in list(getattr(observer, "emitters", ())):
        # watchdog's inotify emitter keeps its watch group private; the only record of a folder it skipped
        paths = getattr(getattr(emitter, "_inotify", None), "_active_callbacks_by_path", None)
        if not isinstance(paths, dict):
            return None
        watched |= {os.fsdecode(p) for p in paths.copy()}  # copied at once: its thread may add one
    return watched


def unwatched(observer: Any, folders: list[str]) -> list[str]:
    """Those of ``folders`` that still exist and have no native watch ([] when that cannot be told)."""
    watched = watched_folders(observer)
    if watched is None:
        return []
    return [f for f in folders if f not in watched and os.path.isdir(f)]
