"""The folder watcher: debounced batches from real inotify events, and AutoIndexer on a real index."""

from __future__ import annotations

import queue
import threading
import time
from pathlib import Path

import pytest

from conftest_tui import indexed_notes, prebuilt_notes  # noqa: F401  (fixtures: a warm index of examples/notes)
from localrag.api import Assistant, Index
from localrag.commands.watch import cycle_line
from localrag.config import IndexSettings
from localrag.ingest.watcher import AutoIndexer, ChangeBatch, FolderWatcher, IndexCycle, Interrupted, relevant_path


def collect(folder: Path, debounce_s: float = 0.3, max_wait_s: float = 5.0):
    batches: queue.Queue[ChangeBatch] = queue.Queue()
    watcher = FolderWatcher(folder, IndexSettings(), batches.put, debounce_s=debounce_s, max_wait_s=max_wait_s)
    return watcher, batches


def next_batch(batches: queue.Queue, timeout: float = 5.0) -> ChangeBatch:
    return batches.get(timeout=timeout)


def assert_quiet(batches: queue.Queue, seconds: float = 1.0) -> None:
    with pytest.raises(queue.Empty):
        batches.get(timeout=seconds)


def test_relevant_path_filters_hidden_state_and_foreign_files(tmp_path: Path) -> None:
    s = IndexSettings()
    root = tmp_path.resolve()
    assert relevant_path(root, str(root / "a.md"), s, False) == "a.md"
    assert relevant_path(root, str(root / "sub" / "b.txt"), s, False) == "sub/b.txt"
    assert relevant_path(root, str(root / ".localrag" / "index.db"), s, False) is None
    assert relevant_path(root, str(root / ".hidden" / "c.md"), s, False) is None
    assert relevant_path(root, str(root / ".c.md.swp"), s, False) is None
    assert relevant_path(root, str(root / "photo.jpg"), s, False) is None
    assert relevant_path(root, str(root / "draft.md~"), s, False) is None
    assert relevant_path(root, str(root / "newdir"), s, True) == "newdir"
    assert relevant_path(root, str(tmp_path.parent / "x.md"), s, False) is None


def test_the_folders_localragignore_rules_filter_events_and_a_change_to_them_is_one(tmp_path: Path) -> None:
    s = IndexSettings()
    root = tmp_path.resolve()
    (root / "drafts").mkdir()
    assert relevant_path(root, str(root / "drafts" / "x.md"), s, False) == "drafts/x.md"
    (root / ".localragignore").write_text("# not notes\ndrafts/\n*.tmp.md\n")
    assert relevant_path(root, str(root / "drafts" / "x.md"), s, False) is None
    assert relevant_path(root, str(root / "drafts"), s, True) is None
    assert relevant_path(root, str(root / "a.tmp.md"), s, False) is None
    assert relevant_path(root, str(root / "a.md"), s, False) == "a.md"
    assert relevant_path(root, str(root / ".localragignore"), s, False) == ".localragignore"


def test_a_watched_folder_follows_its_localragignore(tmp_path: Path) -> None:
    (tmp_path / "drafts").mkdir()
    (tmp_path / ".localragignore").write_text("drafts/\n")
    watcher, batches = collect(tmp_path)
    with watcher:
        (tmp_path / "drafts" / "x.md").write_text("# ignored\n")
        assert_quiet(batches, 1.0)
        (tmp_path / ".localragignore").write_text("")
        batch = next_batch(batches, timeout=10)
    assert ".localragignore" in batch.paths


def test_burst_of_writes_is_one_batch(tmp_path: Path) -> None:
    watcher, batches = collect(tmp_path)
    with watcher:
        for i in range(5):
            (tmp_path / f"n{i}.md").write_text(f"# Note {i}\n\nbody\n")
            time.sleep(0.02)
        batch = next_batch(batches)
        assert batch.paths == {f"n{i}.md" for i in range(5)}
        assert batch.created == 5
        assert_quiet(batches, 0.8)


def test_hidden_and_state_dir_changes_are_ignored(tmp_path: Path) -> None:
    (tmp_path / ".localrag").mkdir()
    watcher, batches = collect(tmp_path)
    with watcher:
        (tmp_path / ".localrag" / "index.db").write_bytes(b"x" * 100)
        (tmp_path / ".secret.md").write_text("hidden")
        (tmp_path / "image.png").write_bytes(b"\x89PNG")
        assert_quiet(batches, 1.0)


def test_subfolder_move_modify_delete(tmp_path: Path) -> None:
    note = tmp_path / "a.md"
    note.write_text("# A\n\none\n")
    watcher, batches = collect(tmp_path)
    with watcher:
        sub = tmp_path / "projects"
        sub.mkdir()
        (sub / "p.md").write_text("# P\n\nnew project\n")
        batch = next_batch(batches)
        assert {"projects", "projects/p.md"} <= batch.paths

        note.write_text("# A\n\ntwo\n")
        batch = next_batch(batches)
        assert batch.paths == {"a.md"} and batch.modified >= 1

        note.rename(tmp_path / "b.md")
        batch = next_batch(batches)
        assert batch.paths == {"a.md", "b.md"} and batch.moved == 1

        (tmp_path / "b.md").unlink()
        batch = next_batch(batches)
        assert batch.paths == {"b.md"} and batch.deleted == 1


def test_max_wait_flushes_a_folder_that_never_settles(tmp_path: Path) -> None:
    watcher, batches = collect(tmp_path, debounce_s=0.5, max_wait_s=0.8)
    stop = threading.Event()

    def keep_writing() -> None:
        i = 0
        while not stop.is_set():
            (tmp_path / "busy.md").write_text(f"# Busy\n\n{i}\n")
            i += 1
            time.sleep(0.1)

    with watcher:
        writer = threading.Thread(target=keep_writing)
        writer.start()
        try:
            started = time.monotonic()
            batch = next_batch(batches, timeout=3.0)
            assert time.monotonic() - started < 2.5  # the quiet period alone would never end
            assert batch.paths == {"busy.md"}
        finally:
            stop.set()
            writer.join()


def test_batch_merge_and_describe() -> None:
    a = ChangeBatch({"x.md"}, created=1, first_at=2.0, last_at=2.5)
    b = ChangeBatch({"y.md", "x.md"}, deleted=1, first_at=1.0, last_at=3.0)
    a.merge(b)
    assert a.paths == {"x.md", "y.md"} and a.events == 2
    assert (a.first_at, a.last_at) == (1.0, 3.0)
    assert a.describe() == "1 created, 1 deleted: x.md, y.md"


class _Runner:
    """AutoIndexer in a background thread; cycles arrive on a queue."""

    def __init__(self, index: Index, **kw):
        self.cycles: queue.Queue[IndexCycle] = queue.Queue()
        self.indexer = AutoIndexer(index, on_result=self.cycles.put, graph=False, debounce_s=0.2, **kw)
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self.indexer.run, args=(self.stop,))

    def __enter__(self) -> "_Runner":
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.thread.join(timeout=10)
        assert not self.thread.is_alive()

    def next(self, timeout: float = 120.0) -> IndexCycle:
        return self.cycles.get(timeout=timeout)


def hybrid_paths(index: Index, question: str) -> list[str]:
    retrieval = Assistant(index).retrieve(question, "hybrid", 10)
    return [sp.passage.path for sp in retrieval.passages]


def test_autoindexer_follows_edits_deletes_and_new_folders(indexed_notes: Path, settings_for, embedder) -> None:
    notes_dir = indexed_notes
    index = Index(settings_for(notes_dir), embedder)
    try:
        with _Runner(index) as run:
            first = run.next()
            assert first.trigger is None and not first.error
            # a warm index: the start-up sync reads nothing and embeds nothing
            assert first.sync.unchanged == len(list(notes_dir.rglob("*.md"))) and first.sync.embedded == 0
            assert "start-up sync -> +0 ~0 >0 -0 files" in cycle_line(first)

            note = notes_dir / "people" / "wenna-strake.md"
            note.write_text(note.read_text() + "\nWenna keeps a pet heron called Bartholomew Quillfeather.\n")
            cycle = run.next()
            assert "people/wenna-strake.md" in cycle.trigger.paths
            assert cycle.sync.updated == 1 and cycle.sync.passages_added >= 1
            assert cycle.sync.paths_only and cycle.sync.files_seen == 1  # the batch's file, not the folder
            assert hybrid_paths(index, "pet heron Bartholomew Quillfeather")[0] == "people/wenna-strake.md"

            (notes_dir / "orlinsford.md").unlink()
            cycle = run.next()
            assert cycle.sync.removed == 1 and cycle.sync.paths_only
            assert "orlinsford.md" not in hybrid_paths(index, "Orlinsford town river Velkra")

            (notes_dir / "archive" / "old").mkdir(parents=True)
            (notes_dir / "archive" / "old" / "zeppelin.md").write_text("# Zeppelin\n\nThe zeppelin Hollowmere docks at Saltreach.\n")
            cycle = run.next()
            assert cycle.sync.added == 1 and not cycle.sync.paths_only  # a new folder: the whole folder is synced
            assert index.store.docs.get("archive/old/zeppelin.md") is not None
            # the full sync after each batch of files found nothing the events missed: no cycle of its own
            with pytest.raises(queue.Empty):
                run.next(timeout=1.0)
    finally:
        index.close()


def test_a_change_the_events_missed_is_caught_by_the_full_sync_after_the_batch(indexed_notes: Path, settings_for,
                                                                               embedder) -> None:
    notes_dir = indexed_notes
    index = Index(settings_for(notes_dir), embedder)
    try:
        with _Runner(index, watch=False) as run:
            run.next()
            for name in ("saltreach.md", "quillhaven.md"):
                note = notes_dir / name
                note.write_text(note.read_text() + f"\nA line added to {name}.\n")
            run.indexer.submit(ChangeBatch(paths={"saltreach.md"}, modified=1))  # no event for quillhaven.md
            named = run.next()
            assert named.sync.paths_only and named.sync.updated == 1
            missed = run.next()
            assert not missed.sync.paths_only and missed.sync.updated == 1 and missed.trigger is named.trigger
            assert any("A line added to quillhaven.md" in p.text for p in index.store.docs.passages_of("quillhaven.md"))
    finally:
        index.close()


def test_pause_holds_changes_and_resume_catches_up(indexed_notes: Path, settings_for, embedder) -> None:
    notes_dir = indexed_notes
    index = Index(settings_for(notes_dir), embedder)
    try:
        with _Runner(index) as run:
            run.next()
            run.indexer.pause()
            (notes_dir / "saltreach.md").write_text("# Saltreach\n\nRewritten while paused.\n")
            with pytest.raises(queue.Empty):
                run.next(timeout=1.5)
            assert run.indexer.paused
            run.indexer.resume()
            cycle = run.next()
            assert cycle.trigger is None and cycle.sync.updated == 1
    finally:
        index.close()


def test_graph_phase_runs_after_sync_when_the_index_has_one(notes_dir: Path, settings_for, embedder) -> None:
    calls: list[str] = []

    class WithGraph(Index):
        def extract_graph(self, progress, should_stop):
            calls.append("graph")
            return "graph-report"

    index = WithGraph(settings_for(notes_dir), embedder)
    try:
        cycles: list[IndexCycle] = []

        def on_result(cycle: IndexCycle) -> None:
            cycles.append(cycle)
            if cycle.phase == "graph":
                indexer.stop()

        indexer = AutoIndexer(index, on_result=on_result, watch=False)
        indexer.run()
        # the sync is reported before the (slow) graph phase starts: search sees new notes at once
        assert [c.phase for c in cycles] == ["sync", "graph"] and calls == ["graph"]
        assert cycles[0].sync.added > 0 and cycles[0].graph is None
        assert cycles[1].graph == "graph-report" and cycles[1].sync is None
    finally:
        index.close()


def test_hold_interrupts_the_graph_phase_and_release_restarts_it(indexed_notes: Path, settings_for, embedder) -> None:
    """A model call checks ``interrupting()`` between tokens; hold makes it give up, release runs it again."""
    runs: list[str] = []

    class SlowGraph(Index):
        def extract_graph(self, progress, should_stop):
            runs.append("start")
            while True:  # like a long generation, polling its token callback
                if indexer.interrupting():
                    runs.append("interrupted")
                    raise Interrupted()
                if should_stop():
                    return "stopped"
                time.sleep(0.02)

    index = SlowGraph(settings_for(indexed_notes), embedder)
    cycles: queue.Queue[IndexCycle] = queue.Queue()
    indexer = AutoIndexer(index, on_result=cycles.put, watch=False)
    thread = threading.Thread(target=indexer.run)
    thread.start()
    try:
        assert cycles.get(timeout=120).phase == "sync"
        while runs != ["start"]:
            time.sleep(0.02)
        indexer.hold()
        graph = cycles.get(timeout=10)
        assert graph.phase == "graph" and graph.stopped and not graph.error and runs == ["start", "interrupted"]
        indexer.release()
        assert cycles.get(timeout=30).phase == "sync"
        while runs[-1] != "start":
            time.sleep(0.02)
    finally:
        indexer.stop()
        thread.join(timeout=10)
        index.close()


def test_a_failing_sync_is_reported_not_raised(tmp_path: Path, settings_for, embedder) -> None:
    folder = tmp_path / "gone"
    folder.mkdir()
    index = Index(settings_for(folder, db=str(tmp_path / "index.db")), embedder)
    folder.rmdir()
    try:
        cycles: list[IndexCycle] = []
        indexer = AutoIndexer(index, on_result=lambda c: (cycles.append(c), indexer.stop()), watch=False)
        indexer.run()
        assert "FileNotFoundError" in cycles[0].error and "notes folder not found" in cycles[0].error
        assert "error:" in cycle_line(cycles[0])
    finally:
        index.close()
