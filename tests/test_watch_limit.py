"""The watcher at the kernel's inotify limits: one clear message, then polling, and no edit missed.

The real limit is set in a child user namespace (``unshare -U -r``: its
``/proc/sys/user/max_inotify_watches`` binds only the processes inside it, the machine's own limit
is never touched); where that is not allowed the real-limit tests skip, and the others force the
condition the way watchdog reports it (``OSError(ENOSPC)`` from the native observer).
"""

from __future__ import annotations

import asyncio
import errno
import json
import os
import queue
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from conftest_tui import wait_until
from conftest_tui import indexed_notes, prebuilt_notes  # noqa: F401  (fixtures: a warm index of examples/notes)
from localrag.api import Assistant, Index
from localrag.config import IndexSettings, load_settings
from localrag.ingest.observers import WATCHES_SYSCTL, WatchFallback, fallback_for_error
from localrag.ingest.watcher import AutoIndexer, ChangeBatch, FolderWatcher, IndexCycle
from localrag.tui.indexing import IndexingRows
from localrag.tui.presentation import Presentation

REPO = Path(__file__).resolve().parents[1]
LIMIT = 12  # inotify watches allowed inside the namespace: the folder and a few subfolders
SUBFOLDERS = 30
POLL_S = 0.5


def _namespace_allowed() -> bool:
    if shutil.which("unshare") is None or not Path("/proc/sys/user/max_inotify_watches").exists():
        return False
    r = subprocess.run(["unshare", "-U", "-r", "sh", "-c", "echo 5 > /proc/sys/user/max_inotify_watches"],
                       capture_output=True, timeout=30)
    return r.returncode == 0


needs_namespace = pytest.mark.skipif(not _namespace_allowed(),
                                     reason="no user namespace here to lower the inotify watch limit in")


def _limited(argv: list[str], limit: int = LIMIT) -> list[str]:
    """``argv`` run with at most ``limit`` inotify watches (in a user namespace of its own)."""
    script = f'echo {limit} > /proc/sys/user/max_inotify_watches && exec "$@"'
    return ["unshare", "-U", "-r", "sh", "-c", script, "limited", *argv]


def _folder_of_subfolders(root: Path, count: int = SUBFOLDERS) -> Path:
    for i in range(count):
        (root / f"shelf-{i}").mkdir(parents=True)
        (root / f"shelf-{i}" / "crate.md").write_text(f"# Crate {i}\n\nShelf {i} holds crate number {i}.\n")
    return root


def _last_walked(root: Path) -> Path:
    """The subfolder watchdog reaches last (it walks like os.walk): past a low limit it has no watch."""
    walked: list[Path] = []
    for top, dirs, _ in os.walk(root):
        dirs[:] = [d for d in dirs if not d.startswith(".")]
        walked += [Path(top) / d for d in dirs]
    return walked[-1]


def _env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith("LOCALRAG_")}


# -- the message ------------------------------------------------------------------------------------

def test_each_limit_names_its_sysctl_and_the_command_that_raises_it() -> None:
    watches = fallback_for_error(OSError(errno.ENOSPC, "inotify watch limit reached"))
    assert watches.sysctl == WATCHES_SYSCTL and "inotify watch limit reached (fs.inotify.max_user_watches = " in watches.message
    assert "sudo sysctl fs.inotify.max_user_watches=524288" in watches.message
    assert "polling the folder every 2 s instead" in watches.message
    instances = fallback_for_error(OSError(errno.EMFILE, "inotify instance limit reached"))
    assert "inotify instance limit reached (fs.inotify.max_user_instances = " in instances.message
    assert "sudo sysctl fs.inotify.max_user_instances=1024" in instances.message
    other = fallback_for_error(PermissionError(errno.EACCES, "Permission denied"))
    assert other.message.startswith("the folder cannot be watched natively: Permission denied; polling")
    assert "sysctl" not in other.message
    assert all("\n" not in f.message for f in (watches, instances, other))


# -- the real limit ---------------------------------------------------------------------------------

CHILD = """
import json, queue, sys, time
from pathlib import Path
from localrag.config import IndexSettings
from localrag.ingest.watcher import FolderWatcher

root, late = Path(sys.argv[1]), int(sys.argv[2])
batches, fallbacks = queue.Queue(), []
watcher = FolderWatcher(root, IndexSettings(), batches.put, debounce_s=0.2, on_fallback=fallbacks.append,
                        poll_interval_s=float(sys.argv[3]))
watcher.start()
report = {"mode_at_start": watcher.mode}
if late:  # folders made while watching, past the limit
    for i in range(late):
        (root / f"late-{i}").mkdir()
        (root / f"late-{i}" / "crate.md").write_text(f"# Late crate {i}\\n")
    batches.get(timeout=20)
    time.sleep(1.0)
    while not batches.empty():
        batches.get()
print(json.dumps(report), flush=True)  # the parent edits a note now
sys.stdin.readline()
edited = time.monotonic()
batch = batches.get(timeout=20)
report.update(mode=watcher.mode, paths=sorted(batch.paths), seconds=time.monotonic() - edited,
              messages=[f.message for f in fallbacks])
watcher.stop()
print(json.dumps(report), flush=True)
"""


def _run_child(root: Path, edit: Path, late: int = 0) -> dict:
    child = subprocess.Popen(_limited([sys.executable, "-c", CHILD, str(root), str(late), str(POLL_S)]),
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             cwd=REPO, env=_env())
    try:
        started = json.loads(child.stdout.readline() or "{}")
        edit.write_text(edit.read_text() + "A pelican sits on this crate.\n")
        child.stdin.write("edited\n")
        child.stdin.flush()
        out, err = child.communicate(timeout=60)
    finally:
        child.kill()
    assert child.returncode == 0, err
    return {"started": started, **json.loads(out.strip().splitlines()[-1])}


@needs_namespace
def test_past_the_real_watch_limit_the_folder_is_polled_and_an_edit_in_an_unwatched_folder_arrives(tmp_path: Path) -> None:
    root = _folder_of_subfolders(tmp_path / "notes")
    unwatched_note = _last_walked(root) / "crate.md"
    report = _run_child(root, unwatched_note)
    assert report["started"]["mode_at_start"] == "polling" and report["mode"] == "polling"
    assert report["paths"] == [unwatched_note.relative_to(root).as_posix()]
    assert report["seconds"] < POLL_S + 0.2 + 2.0  # one poll, the debounce, a loaded machine
    [message] = report["messages"]
    assert f"got no inotify watch" in message and f"of {SUBFOLDERS + 1} folders" in message
    assert "sudo sysctl fs.inotify.max_user_watches=524288" in message


@needs_namespace
def test_folders_made_past_the_real_limit_while_watching_switch_the_watcher_to_polling(tmp_path: Path) -> None:
    root = _folder_of_subfolders(tmp_path / "notes", count=3)  # under the limit: watched natively at first
    report = _run_child(root, root / "late-29" / "crate.md", late=30)
    assert report["started"]["mode_at_start"] == "native" and report["mode"] == "polling"
    assert report["paths"] == ["late-29/crate.md"]
    [message] = report["messages"]
    assert "new folder(s) got no inotify watch" in message and "fs.inotify.max_user_watches" in message


def _sigint_as_python_sets_it() -> None:
    """In the child before exec: SIGINT back to its default. A suite started in the background of a
    non-interactive shell (``nohup … &``) inherits SIGINT ignored, Python then leaves it ignored,
    and the SIGINT below would never stop the command."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


@needs_namespace
def test_localrag_watch_past_the_real_limit_warns_on_stderr_and_indexes_an_edit(tmp_path: Path, settings_for,
                                                                               embedder) -> None:
    root = _folder_of_subfolders(tmp_path / "notes")
    index = Index(settings_for(root), embedder)
    index.sync()  # warm: the command's start-up sync reads nothing
    index.close()
    unwatched_note = _last_walked(root) / "crate.md"
    cmd = _limited([str(REPO / ".venv" / "bin" / "localrag"), "watch", str(root), "--no-graph"])
    watch = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=REPO,
                             env={**_env(), "PYTHONFAULTHANDLER": "1"}, preexec_fn=_sigint_as_python_sets_it)
    lines: queue.Queue[str] = queue.Queue()
    threading.Thread(target=lambda: [lines.put(line) for line in watch.stdout], daemon=True).start()
    try:
        deadline = time.monotonic() + 120
        while "start-up sync" not in lines.get(timeout=max(deadline - time.monotonic(), 0.1)):
            pass
        unwatched_note.write_text(unwatched_note.read_text() + "A pelican named Ferdinand sits on it.\n")
        edited = time.monotonic()
        while "crate.md ->" not in (line := lines.get(timeout=60)):
            pass
        seen_s = time.monotonic() - edited
    finally:
        watch.send_signal(signal.SIGINT)
        try:
            _, err = watch.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            watch.send_signal(signal.SIGABRT)  # faulthandler prints every thread's stack: where it hangs
            _, err = watch.communicate(timeout=30)
            pytest.fail(f"localrag watch still running 30 s after SIGINT; its threads:\n{err[-6000:]}")
        finally:
            watch.kill()
    assert f"{unwatched_note.relative_to(root).as_posix()} -> +0 ~1" in line
    assert seen_s < 30  # the poll (2 s), the debounce and embedding one passage in a fresh process
    warnings = [w for w in err.splitlines() if w.startswith("warning:")]
    assert len(warnings) == 1 and "inotify watch limit reached" in warnings[0]
    assert "sudo sysctl fs.inotify.max_user_watches=524288" in warnings[0]


# -- the limit forced (watchdog's own error) --------------------------------------------------------

@pytest.fixture
def watch_limit_reached(monkeypatch: pytest.MonkeyPatch) -> None:
    """The native observer fails as it does when the user's watches are used up."""
    from watchdog.observers.inotify import InotifyObserver

    def limit_reached(*args: object, **kwargs: object) -> None:
        raise OSError(errno.ENOSPC, "inotify watch limit reached")

    monkeypatch.setattr(InotifyObserver, "schedule", limit_reached)


def test_the_watcher_polls_when_the_native_observer_cannot_start(tmp_path: Path, watch_limit_reached) -> None:
    (tmp_path / "a.md").write_text("# A\n")
    batches: queue.Queue[ChangeBatch] = queue.Queue()
    fallbacks: list[WatchFallback] = []
    with FolderWatcher(tmp_path, IndexSettings(), batches.put, debounce_s=0.2, on_fallback=fallbacks.append,
                       poll_interval_s=POLL_S) as watcher:
        assert watcher.mode == "polling"
        (tmp_path / "a.md").write_text("# A\n\nedited\n")
        (tmp_path / ".hidden").mkdir()
        (tmp_path / ".hidden" / "b.md").write_text("never indexed\n")
        assert batches.get(timeout=10).paths == {"a.md"}
    [fallback] = fallbacks
    assert fallback.detail == "the notes folder itself got no inotify watch" and fallback.poll_interval_s == POLL_S


def test_autoindexer_past_the_limit_still_indexes_an_edit(indexed_notes: Path, settings_for, embedder,
                                                          watch_limit_reached) -> None:
    index = Index(settings_for(indexed_notes), embedder)
    cycles: queue.Queue[IndexCycle] = queue.Queue()
    told: list[WatchFallback] = []
    indexer = AutoIndexer(index, on_result=cycles.put, graph=False, debounce_s=0.2, on_watch_fallback=told.append)
    stop = threading.Event()
    runner = threading.Thread(target=indexer.run, args=(stop,))
    runner.start()
    try:
        assert cycles.get(timeout=120).trigger is None
        assert indexer.watching and indexer.watch_fallback is not None and told == [indexer.watch_fallback]
        note = indexed_notes / "people" / "wenna-strake.md"
        note.write_text(note.read_text() + "\nWenna keeps a pet heron called Bartholomew Quillfeather.\n")
        edited = time.monotonic()
        cycle = cycles.get(timeout=30)
        assert cycle.trigger is not None and "people/wenna-strake.md" in cycle.trigger.paths
        assert cycle.sync.updated == 1 and time.monotonic() - edited < 15
        found = Assistant(index).retrieve("pet heron Bartholomew Quillfeather", "hybrid", 5)
        assert found.passages[0].passage.path == "people/wenna-strake.md"
    finally:
        stop.set()
        runner.join(timeout=20)
        index.close()
    assert not runner.is_alive()


def test_the_tui_warns_once_and_says_it_polls(indexed_notes: Path, embedder, watch_limit_reached) -> None:
    from textual.app import App, ComposeResult

    index = Index(load_settings(indexed_notes, {}, env={}), embedder)
    rows = IndexingRows(index, graph=False, watch=True, graph_model=None, stopping=threading.Event(),
                        presentation=Presentation(clock=lambda: 0.0))

    class Host(App[None]):
        def compose(self) -> ComposeResult:
            yield rows

    host = Host()

    async def scenario() -> None:
        async with host.run_test(size=(140, 40)) as pilot:
            await wait_until(pilot, lambda: rows.cycles_done >= 1 and not rows.indexer.busy, 120, "the start-up sync")
            await wait_until(pilot, lambda: any("inotify watch limit" in n.message for n in host._notifications),
                             10, "the warning")
            await pilot.pause()
            state = str(rows.query_one("#index-state").content)
            assert "watching for changes by polling every 2 s (inotify watch limit)" in state
            warnings = [n for n in host._notifications if "inotify" in n.message]
            assert len(warnings) == 1 and warnings[0].severity == "warning"
            assert "sudo sysctl fs.inotify.max_user_watches=524288" in warnings[0].message
            note = indexed_notes / "orlinsford.md"
            note.write_text(note.read_text() + "\nA ferry called the Grey Lantern docks here.\n")
            await wait_until(pilot, lambda: rows.last_cycle is not None and rows.last_cycle.trigger is not None
                             and "orlinsford.md" in rows.last_cycle.trigger.paths, 30, "the polled edit")
        rows.stop()

    try:
        asyncio.run(scenario())
    finally:
        index.close()
