"""Incremental sync: unchanged, edit, delete, move, with exact row effects (real store + embedder)."""

from __future__ import annotations

import os
import shutil

import pytest

from localrag.api import Index


class CountingEmbedder:
    """The real MiniLM, counting how many texts it embeds."""

    def __init__(self, inner):
        self.inner, self.id, self.dim, self.texts = inner, inner.id, inner.dim, 0

    def encode(self, texts, batch_size=32):
        self.texts += len(texts)
        return self.inner.encode(texts, batch_size)

    def encode_one(self, text):
        return self.inner.encode_one(text)


@pytest.fixture
def index(notes_dir, settings_for, embedder):
    idx = Index(settings_for(notes_dir), CountingEmbedder(embedder))
    idx.sync()
    yield idx
    idx.close()


def rows(idx):
    s = idx.store
    return {
        "documents": s.docs.count(),
        "passages": s.docs.passage_count(),
        "vec": s.vectors.count(),
        "fts": s.one("SELECT COUNT(*) FROM passages_fts")[0],
        "bits": s.one("SELECT COUNT(*) FROM passage_bits")[0],
    }


def test_first_sync_indexes_every_note(index, notes_dir):
    n_files = len(list(notes_dir.rglob("*.md")))
    r = rows(index)
    assert r["documents"] == n_files
    assert r["passages"] == r["vec"] == r["fts"] == r["bits"] > n_files


def test_unchanged_costs_nothing(index):
    before = rows(index)
    index.embedder.texts = 0
    report = index.sync()
    assert report.unchanged == before["documents"] and not report.changed
    assert index.embedder.texts == 0
    assert rows(index) == before


def test_touch_without_change_updates_stat_only(index, notes_dir):
    path = notes_dir / "orlinsford.md"
    ids = index.store.docs.all_passage_ids()
    os.utime(path, ns=(path.stat().st_atime_ns, path.stat().st_mtime_ns + 10**9))
    index.embedder.texts = 0
    report = index.sync()
    assert report.touched == 1 and report.updated == 0
    assert index.embedder.texts == 0
    assert index.store.docs.all_passage_ids() == ids


def test_edit_keeps_unchanged_passages(index, notes_dir):
    path = notes_dir / "orlinsford.md"
    before = {p.sha256: p.id for p in index.store.docs.passages_of("orlinsford.md")}
    assert len(before) >= 2
    total = rows(index)
    text = path.read_text()
    path.write_text(text + "\n\n## Ferry\n\nA small ferry crosses the river every hour from the old quay, even in winter.\n")
    index.embedder.texts = 0
    report = index.sync()
    after = {p.sha256: p.id for p in index.store.docs.passages_of("orlinsford.md")}
    kept = set(before) & set(after)
    assert kept, "unchanged passages must survive an edit"
    assert all(before[s] == after[s] for s in kept), "and keep their ids"
    new = set(after) - set(before)
    assert report.passages_added == len(new) and report.passages_removed == len(set(before) - set(after))
    assert index.embedder.texts == len(new)
    r = rows(index)
    assert r["passages"] == total["passages"] + len(new) - len(set(before) - set(after))
    assert r["passages"] == r["vec"] == r["fts"] == r["bits"]
    hits = index.store.lexical.search("ferry quay", 3)
    assert hits and hits[0][0] in after.values()


def test_delete_removes_passages_and_derived_rows(index, notes_dir):
    gone = index.store.docs.passages_of("saltreach.md")
    total = rows(index)
    (notes_dir / "saltreach.md").unlink()
    report = index.sync()
    assert report.removed == 1 and report.passages_removed == len(gone)
    r = rows(index)
    assert r == {k: v - (1 if k == "documents" else len(gone)) for k, v in total.items()}
    assert index.store.docs.passages([p.id for p in gone]) == []


def test_move_keeps_ids_and_embeds_nothing(index, notes_dir):
    before = [(p.id, p.sha256) for p in index.store.docs.passages_of("quillhaven.md")]
    (notes_dir / "archive").mkdir()
    shutil.move(notes_dir / "quillhaven.md", notes_dir / "archive" / "quillhaven.md")
    index.embedder.texts = 0
    total = rows(index)
    report = index.sync()
    assert report.moved == 1 and report.removed == 0 and report.added == 0
    assert index.embedder.texts == 0
    assert [(p.id, p.sha256) for p in index.store.docs.passages_of("archive/quillhaven.md")] == before
    assert index.store.docs.passages_of("quillhaven.md") == []
    assert rows(index) == total


def test_copied_text_reuses_vectors(index, notes_dir):
    shutil.copy(notes_dir / "tolvenmark.md", notes_dir / "tolvenmark-copy.md")
    index.embedder.texts = 0
    report = index.sync()
    # same content, new path, original still there: a new document whose vectors come from the hash cache
    assert report.added == 1 and index.embedder.texts == 0 and report.vectors_reused > 0


def test_each_file_is_one_transaction(index, notes_dir, monkeypatch):
    """A failure while writing one file leaves that file fully old and the others done."""
    from localrag.store.documents import Documents

    (notes_dir / "orlinsford.md").write_text("# Orlinsford\n\nCompletely rewritten. " + "word " * 80)
    (notes_dir / "new-note.md").write_text("# New\n\nA brand new note about kites and wind. " + "kite " * 50)
    before = [(p.id, p.sha256) for p in index.store.docs.passages_of("orlinsford.md")]
    real = Documents.insert_passage
    calls = {"n": 0}

    def flaky(self, doc_id, title, p):
        if "Completely rewritten" in p.text:
            raise OSError("disk full (simulated)")
        return real(self, doc_id, title, p)

    monkeypatch.setattr(Documents, "insert_passage", flaky)
    with pytest.raises(OSError):
        index.sync()
    assert [(p.id, p.sha256) for p in index.store.docs.passages_of("orlinsford.md")] == before
    monkeypatch.setattr(Documents, "insert_passage", real)
    report = index.sync()
    assert report.updated + report.added >= 1
    assert index.store.integrity_check() == "ok"


def test_a_sync_of_named_paths_touches_only_those(index, notes_dir):
    """What a watcher's batch names: an edit, a move (both names), a deleted folder; a change it does
    not name waits for the next full sync."""
    saltreach = notes_dir / "saltreach.md"
    saltreach.write_text(saltreach.read_text() + "\nThe ferry to Saltreach leaves at dawn.\n")
    (notes_dir / "archive").mkdir()
    shutil.move(notes_dir / "quillhaven.md", notes_dir / "archive" / "quillhaven.md")
    unnamed = notes_dir / "orlinsford.md"
    unnamed.write_text(unnamed.read_text() + "\nNot named in the batch.\n")
    folder = next(p for p in notes_dir.iterdir() if p.is_dir() and p.name != "archive" and any(p.rglob("*.md")))
    in_folder = sorted(p.relative_to(notes_dir).as_posix() for p in folder.rglob("*.md"))
    shutil.rmtree(folder)

    report = index.sync(only={"saltreach.md", "quillhaven.md", "archive/quillhaven.md", folder.name})
    assert report.paths_only and report.files_seen == 2
    assert (report.updated, report.moved, report.removed, report.added) == (1, 1, len(in_folder), 0)
    assert all(index.store.docs.get(rel) is None for rel in in_folder)
    assert index.store.docs.get("orlinsford.md").size != unnamed.stat().st_size  # not named: not read

    full = index.sync()
    assert not full.paths_only and full.updated == 1 and full.removed == 0


def test_a_sync_of_named_paths_skips_what_a_full_walk_skips(index, notes_dir):
    (notes_dir / ".hidden").mkdir()
    (notes_dir / ".hidden" / "secret.md").write_text("# Secret\n\nNever indexed.\n")
    (notes_dir / "linked").symlink_to(notes_dir / "archive-target", target_is_directory=True)
    (notes_dir / "archive-target").mkdir()
    (notes_dir / "archive-target" / "moor.md").write_text("# Moor\n\nThe moor road.\n")
    report = index.sync(only={".hidden/secret.md", "linked/moor.md"})
    assert report.files_seen == 0 and not report.changed
    assert index.store.docs.get(".hidden/secret.md") is None and index.store.docs.get("linked/moor.md") is None


def _passage_ids(idx) -> dict[str, list[int]]:
    return {path: [p.id for p in idx.store.docs.passages_of(path)] for path in idx.store.docs.all()}


def test_new_passage_rules_cut_every_file_again_once(index, monkeypatch):
    """An index cut by other rules (an older chunker, other chunk settings) is cut again by the next
    full sync: nothing re-embedded where the passages are the same, their ids kept; then unchanged."""
    import localrag.ingest.sync as sync_mod

    ids = _passage_ids(index)
    assert not index.status().recut_due
    monkeypatch.setattr(sync_mod, "PASSAGE_RULES_VERSION", sync_mod.PASSAGE_RULES_VERSION + 1)
    assert index.status().recut_due  # what `localrag status` says before the next index
    touched = index.folder / next(iter(ids))
    os.utime(touched, ns=(touched.stat().st_atime_ns, touched.stat().st_mtime_ns + 10**9))  # same bytes, new time
    index.embedder.texts = 0
    report = index.sync()
    assert report.rechunked == len(ids) and report.unchanged == 0 and report.accounted == report.files_seen
    assert index.embedder.texts == 0 and report.passages_added == 0 and _passage_ids(index) == ids
    again = index.sync()
    assert again.unchanged == len(ids) and again.rechunked == 0 and not index.status().recut_due


def test_other_chunk_settings_cut_the_notes_by_them(index):
    before = rows(index)
    index.settings.index.chunk_max_tokens = 40
    index.settings.index.chunk_min_tokens = 10
    report = index.sync()
    assert report.rechunked == before["documents"] and report.passages_added > 0 and index.embedder.texts > 0
    after = rows(index)
    assert after["documents"] == before["documents"] and after["passages"] > before["passages"]
    assert after["passages"] == after["vec"] == after["fts"]
