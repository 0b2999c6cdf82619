"""Keep the index in step with a folder, incrementally.

- size + mtime unchanged: nothing is read;
- content hash unchanged (touched file): only the stat is updated;
- a new path whose hash equals a vanished document's: a move, passages keep their ids;
- a changed file: passages diffed by hash; unchanged ones keep ids and everything derived;
- a vanished file: its passages and all derived rows go;
- when the rules that cut a file into passages changed (``passage_rules``: this code's version and the
  chunk settings) since the last full sync, every file is read and cut again once, its unchanged
  passages keeping their ids and vectors.
Each file's change is one transaction, so a killed process leaves every file either
fully old or fully new, and the next run continues from there.
"""

from __future__ import annotations

import hashlib
import time
from collections import defaultdict
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Callable, Collection, Sequence

import numpy as np

from localrag.config import IndexSettings
from localrag.embed import Embedder
from localrag.ingest.chunker import Chunk, chunk_text
from localrag.ingest.documents.layout import NO_TEXT_LAYER
from localrag.ingest.documents.ocr import PageOcr, page_ocr
from localrag.records import NoteMeta
from localrag.ingest.ignore import folder_patterns
from localrag.ingest.loaders import FAILED, UNREADABLE, LoadedText, SkipFile, load_data, read_bytes
from localrag.ingest.markdown import inline_tags, link_hrefs
from localrag.ingest.places import chunk_document, locator
from localrag.ingest.window import fit_window
from localrag.ingest.walker import FoundFile, examine_paths, walk
from localrag.native_memory import release_freed_memory
from localrag.records import SkippedFile
from localrag.store import Store
from localrag.store.connection import is_database_failure
from localrag.store.documents import NewPassage


@dataclass
class Progress:
    phase: str  # "scan" | "ocr" (a scanned page of ``path``: done = its number, total = the pages) | "embed" | "remove" | "done"
    done: int
    total: int
    path: str = ""


@dataclass
class SyncReport:
    files_seen: int = 0
    unchanged: int = 0
    added: int = 0
    updated: int = 0
    touched: int = 0
    moved: int = 0
    removed: int = 0
    skipped: list[SkippedFile] = field(default_factory=list)
    passages_added: int = 0
    passages_kept: int = 0
    passages_removed: int = 0
    embedded: int = 0
    vectors_reused: int = 0
    seconds: float = 0.0
    rechunked: int = 0  # unchanged files cut again: the passage rules changed (``passage_rules``)
    still_skipped: int = 0  # skipped before and unchanged since: not retried (reasons in `localrag status`)
    deferred: int = 0  # left for the next run: the sync was asked to stop
    ocr_pages: int = 0  # pages of scanned PDFs read by OCR in this sync
    paths_only: bool = False  # a sync of the paths a change batch named, not of the whole folder

    @property
    def accounted(self) -> int:
        """Files seen, counted by outcome; equals ``files_seen`` (``removed`` counts documents, not files seen)."""
        return (self.added + self.updated + self.rechunked + self.touched + self.moved + self.unchanged + len(self.skipped)
                + self.still_skipped + self.deferred)

    @property
    def changed(self) -> bool:
        return bool(self.added or self.updated or self.moved or self.removed or self.passages_added or self.passages_removed)


@dataclass
class _Plan:
    found: FoundFile
    sha: str
    kind: str
    title: str
    chunks: list[tuple[Chunk, int, int, str]]  # chunk, source start line, source end line, locator (documents)
    doc_id: int | None
    meta: NoteMeta | None = None  # front matter (Markdown)
    tags: tuple[str, ...] = ()  # inline #tags of the whole note
    rechunk: bool = False  # an unchanged file cut again under new passage rules


ProgressFn = Callable[[Progress], None]

# passages a group: the embedder orders a group's texts by wordpieces before it batches them, so a
# larger group pads less (the tldr folder: 1.099 x the real wordpieces at 256, 1.026 at 1,024, 1.013 at
# 2,048), while a group is also what a killed sync loses and what the writes overlap with
# (docs/benchmarks.md "Scale: the whole tldr-pages folder")
EMBED_BATCH_PASSAGES = 1024
RETRIED_REASONS = frozenset({UNREADABLE})
# raised whenever the chunker, the window fit or a loader cuts the same file into other passages
PASSAGE_RULES_VERSION = 2
PASSAGE_RULES_KEY = "passage_rules"


def passage_rules(settings: IndexSettings) -> str:
    """What decides a file's passages besides its bytes: an index cut by other rules is cut again."""
    return f"{PASSAGE_RULES_VERSION}:{settings.chunk_min_tokens}:{settings.chunk_max_tokens}"


def recut_due(store: Store, settings: IndexSettings) -> bool:
    """Whether the index holds notes cut by other passage rules than ``settings`` give (a new index
    takes these rules at its first sync)."""
    return store.docs.count() > 0 and store.get_meta(PASSAGE_RULES_KEY) != passage_rules(settings)


def sync_folder(
    store: Store,
    root: Path,
    settings: IndexSettings,
    embedder: Embedder,
    progress: ProgressFn | None = None,
    should_stop: Callable[[], bool] | None = None,
    only: Collection[str] | None = None,
) -> SyncReport:
    """``only``: these file paths (relative, POSIX) and documents under them taken as folders, not the
    whole folder: what a watcher's change batch names, synced in milliseconds rather than seconds
    on a big folder (a full sync after it catches whatever the events missed)."""
    started = time.perf_counter()
    report = SyncReport(paths_only=only is not None)
    emit = progress or (lambda p: None)
    patterns = folder_patterns(root, settings.ignore)
    if only is None:
        found, rejected = walk(root, settings.extensions, patterns)
        docs = store.docs.all()
    else:
        found, rejected = examine_paths(root, only, settings.extensions, patterns)
        docs = store.docs.at_or_under(only)
    in_scope = _scope(only)
    report.files_seen = len(found) + len(rejected)
    skip_state = {path: state for path, state in store.docs.skip_state().items() if in_scope(path)}
    ocr = page_ocr(settings.ocr, settings.ocr_max_pages)
    # a permission fix changes no mtime: files skipped as unreadable are tried again on every sync;
    # so are scanned PDFs skipped for want of OCR, once an engine is there to read them
    retried = RETRIED_REASONS | ({NO_TEXT_LAYER} if ocr is not None else set())
    retry = {s.path for s in store.docs.skipped() if s.reason in retried and in_scope(s.path)}
    seen = {f.rel for f in found} | {r.rel for r in rejected}

    for r in rejected:
        if skip_state.get(r.rel) != (r.size, r.mtime_ns):
            with store.transaction():
                if r.rel in docs:
                    store.docs.delete(docs[r.rel].id)
                store.docs.record_skip(r.rel, r.size, r.mtime_ns, r.reason, r.detail)
        report.skipped.append(SkippedFile(r.rel, r.reason, r.detail))

    rules = passage_rules(settings)
    recut = only is None and recut_due(store, settings)
    if not recut and store.get_meta(PASSAGE_RULES_KEY) != rules and store.docs.count() == 0:
        store.set_meta(PASSAGE_RULES_KEY, rules)  # a new index: whatever it takes in is cut by these rules
    todo: list[FoundFile] = []
    for f in found:
        doc = docs.get(f.rel)
        if doc is not None and recut:
            todo.append(f)  # touched or not, the same bytes are cut again
        elif doc is not None and doc.size == f.size and doc.mtime_ns == f.mtime_ns:
            report.unchanged += 1
        elif doc is None and skip_state.get(f.rel) == (f.size, f.mtime_ns) and f.rel not in retry:
            report.still_skipped += 1  # still the same unreadable file: don't retry
        else:
            todo.append(f)
    # a folder that could not be listed hides its files for now: they are not taken for deleted
    unlisted = tuple(r.rel + "/" for r in rejected if r.unlisted_dir)
    vanished = {path: doc for path, doc in docs.items() if path not in seen and not path.startswith(unlisted)}
    vanished_by_sha: dict[str, list[str]] = defaultdict(list)
    for path, doc in vanished.items():
        vanished_by_sha[doc.sha256].append(path)

    # newest first: the notes a user just wrote are searchable first
    todo.sort(key=lambda f: -f.mtime_ns)
    plans: list[_Plan] = []
    pending = 0
    with _EmbedPipeline(store, embedder, settings, report, emit) as pipeline:
        for i, f in enumerate(todo):
            if should_stop and should_stop():
                report.deferred = len(todo) - i
                break
            emit(Progress("scan", i, len(todo), f.rel))
            try:
                plan = _plan_file(store, f, docs.get(f.rel), settings, vanished, vanished_by_sha, report, embedder,
                                  _ocr_progress(ocr, emit, f.rel), recut)
            except Exception as exc:  # one bad file never stops the folder
                if _stops_sync(exc):
                    raise
                _record_failure(store, f, exc, report)
                continue
            if plan is None:
                continue
            plans.append(plan)
            pending += len(plan.chunks)
            if pending >= EMBED_BATCH_PASSAGES:
                pipeline.submit(plans)
                plans, pending = [], 0
        if plans:
            pipeline.submit(plans)
    emit(Progress("scan", len(todo), len(todo)))

    stopped = bool(should_stop and should_stop())
    if not stopped:
        gone = list(vanished.items())
        for i, (path, doc) in enumerate(gone):
            emit(Progress("remove", i, len(gone), path))
            n = len(store.docs.passage_hashes(doc.id))
            with store.transaction():
                store.docs.delete(doc.id)
            report.removed += 1
            report.passages_removed += n
        for path in set(skip_state) - seen:
            if path.startswith(unlisted):
                continue
            with store.transaction():
                store.docs.clear_skip(path)
        if recut and not report.deferred:
            store.set_meta(PASSAGE_RULES_KEY, rules)  # every file is cut by these rules now
    report.seconds = time.perf_counter() - started
    emit(Progress("done", 1, 1))
    return report


def _scope(only: Collection[str] | None) -> Callable[[str], bool]:
    """Whether a recorded path is one a sync over ``only`` answers for (None: the whole folder)."""
    if only is None:
        return lambda path: True
    exact = frozenset(only)
    folders = tuple(p.rstrip("/") + "/" for p in exact)
    return lambda path: path in exact or path.startswith(folders)


def _ocr_progress(ocr: PageOcr | None, emit: ProgressFn, rel: str) -> PageOcr | None:
    if ocr is None:
        return None
    return replace(ocr, on_page=lambda page, pages: emit(Progress("ocr", page, pages, rel)))


# A file modified this close to the moment it was read may change again within one timestamp
# tick (coarse kernel clocks: milliseconds; FAT: 2 s) keeping its size, and the new content
# would look unchanged forever. Such a file's size is recorded as -1, so the next sync reads
# it again and compares hashes ("racily clean", as git calls it); an older file is trusted.
RACY_WINDOW_NS = 2_000_000_000


def _recorded_size(f: FoundFile) -> int:
    return -1 if time.time_ns() - f.mtime_ns < RACY_WINDOW_NS else f.size


def _plan_file(store, f: FoundFile, doc, settings: IndexSettings, vanished, vanished_by_sha, report: SyncReport,
               embedder: Embedder | None = None, ocr: PageOcr | None = None, rechunk: bool = False) -> _Plan | None:
    try:
        data = _read(f, settings)
        data_sha = hashlib.sha256(data).hexdigest()
        if doc is not None and doc.sha256 == data_sha and not rechunk:
            # the same content: not extracted again (OCR takes seconds a page)
            with store.transaction():
                store.docs.touch(doc.id, _recorded_size(f), f.mtime_ns)
            report.touched += 1
            return None
        loaded = load_data(Path(f.rel), data, ocr)  # the title falls back to the display name
        f = replace(f, size=_recorded_size(f))
    except SkipFile as skip:
        with store.transaction():
            if doc is not None:
                report.passages_removed += len(store.docs.passage_hashes(doc.id))
                store.docs.delete(doc.id)
                report.removed += 1
            store.docs.record_skip(f.rel, f.size, f.mtime_ns, skip.reason, skip.detail)
        report.skipped.append(SkippedFile(f.rel, skip.reason, skip.detail))
        return None
    report.ocr_pages += loaded.ocr_pages
    if doc is None and vanished_by_sha.get(data_sha):
        old_path = vanished_by_sha[data_sha].pop(0)
        old = vanished.pop(old_path)
        with store.transaction():
            store.docs.update(old.id, path=f.rel, size=f.size, mtime_ns=f.mtime_ns, sha256=data_sha, title=loaded.title)
            store.docs.clear_skip(f.rel)
            store.vault.set_names(old.id, f.rel)
        report.moved += 1
        report.passages_kept += len(store.docs.passage_hashes(old.id))
        return None
    chunks = _chunks(loaded, settings)
    chunks = fit_window(chunks, loaded.text, embedder)  # no text past the embedder's window
    if chunks and loaded.meta is not None and loaded.meta.description:
        # front matter is not passage text, but its summary says what the note is about (docs/vault.md)
        chunks[0] = replace(chunks[0], note_context=loaded.meta.description)
    layout = loaded.layout
    mapped = [(c, loaded.source_line(c.start_line), loaded.source_line(c.end_line), locator(c, layout) if layout else "")
              for c in chunks]
    tags = tuple(inline_tags(loaded.text)) if loaded.kind == "markdown" else ()
    return _Plan(f, data_sha, loaded.kind, loaded.title, mapped, doc.id if doc else None, _note_meta(loaded), tags,
                 rechunk and doc is not None and doc.sha256 == data_sha)


def _chunks(loaded: LoadedText, settings: IndexSettings) -> list[Chunk]:
    if loaded.layout is not None:  # a document: Markdown from its extractor, pages and slides apart
        return chunk_document(loaded.text, loaded.layout, loaded.title, settings.chunk_min_tokens, settings.chunk_max_tokens)
    return chunk_text(loaded.text, loaded.kind, loaded.title, settings.chunk_min_tokens, settings.chunk_max_tokens)


def _note_meta(loaded: LoadedText) -> NoteMeta | None:
    """The front matter, carrying the loader's warning too (``status`` lists both; the note is indexed)."""
    if not loaded.warning:
        return loaded.meta
    meta = loaded.meta or NoteMeta()
    return replace(meta, warning="; ".join(w for w in (meta.warning, loaded.warning) if w))


def _read(f: FoundFile, settings: IndexSettings) -> bytes:
    # f.path is a regular file or a symlink's resolved target: a symlink there now was swapped in
    return read_bytes(f.path, settings.max_file_bytes, follow_symlinks=False)


def _stops_sync(exc: Exception) -> bool:
    """Failures of the index or the machine (damage, disk full, I/O errors), not of one file's content:
    going on would only fail again on the next file. (Reading a file turns its own OSError into SkipFile.)"""
    return is_database_failure(exc) or isinstance(exc, OSError)


def _record_failure(store: Store, f: FoundFile, exc: Exception, report: SyncReport) -> None:
    """A file whose indexing failed unexpectedly: skipped with the error, its old version (if any) kept."""
    detail = f"{type(exc).__name__}: {exc}"[:300]
    try:
        with store.transaction():
            store.docs.record_skip(f.rel, f.size, f.mtime_ns, FAILED, detail)
    except Exception as record_exc:
        if _stops_sync(record_exc):
            raise
    report.skipped.append(SkippedFile(f.rel, FAILED, detail))


class _EmbedPipeline:
    """Embeds one group of files on a worker thread while the previous group is written.

    The model (torch) and SQLite both release the GIL, so the writes hide behind the next
    group's embedding. Store reads and writes stay on the calling thread; only
    ``embedder.encode`` runs on the worker. Each file is still written in its own transaction,
    in order, so an interrupted sync resumes exactly as before.
    """

    def __init__(self, store: Store, embedder: Embedder, settings: IndexSettings, report: SyncReport, emit: ProgressFn):
        self.store, self.embedder, self.settings, self.report, self.emit = store, embedder, settings, report, emit
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="localrag-embed")
        self._waiting: tuple[Sequence[_Plan], dict[str, np.ndarray], list[str], Future] | None = None

    def __enter__(self) -> "_EmbedPipeline":
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        try:
            if exc_type is None:
                self._drain()
        finally:
            self._pool.shutdown(wait=True, cancel_futures=True)

    def submit(self, plans: Sequence[_Plan]) -> None:
        # which passages need a vector: those whose text is new to this document
        needed: dict[str, str] = {}
        for plan in plans:
            old = {sha for _, sha, _ in self.store.docs.passage_hashes(plan.doc_id)} if plan.doc_id else set()
            for chunk, _, _, _ in plan.chunks:
                if chunk.sha256 not in old:
                    needed[chunk.sha256] = chunk.embed_text
        vectors = self.store.vectors.by_sha(list(needed))
        self.report.vectors_reused += len(vectors)
        missing = [sha for sha in needed if sha not in vectors]
        texts = [needed[sha] for sha in missing]
        future = self._pool.submit(_encode_group, self.embedder, texts, self.settings.embed_batch)
        self._drain()
        self._waiting = (plans, vectors, missing, future)

    def _drain(self) -> None:
        if self._waiting is None:
            return
        plans, vectors, missing, future = self._waiting
        self._waiting = None
        done = self.report.embedded
        self.emit(Progress("embed", done, done + len(missing)))
        encoded = future.result()
        for sha, vec in zip(missing, encoded):
            vectors[sha] = vec
        self.report.embedded += len(missing)
        self.emit(Progress("embed", self.report.embedded, self.report.embedded))
        for plan in plans:
            _write_guarded(self.store, plan, vectors, self.report)


def _encode_group(embedder: Embedder, texts: list[str], batch: int) -> np.ndarray:
    """One group's vectors, on the embedding thread; the pages its activations freed go back to the
    system before the next group (``native_memory``)."""
    vectors = embedder.encode(texts, batch)
    release_freed_memory()
    return vectors


_WRITE_COUNTS = ("added", "updated", "rechunked", "passages_added", "passages_kept", "passages_removed")


def _write_guarded(store: Store, plan: _Plan, vectors: dict[str, np.ndarray], report: SyncReport) -> None:
    """Write one file; an unexpected failure rolls back that file only and records it as skipped."""
    delta = SyncReport()
    try:
        _write_file(store, plan, vectors, delta)
    except Exception as exc:
        if _stops_sync(exc):
            raise
        _record_failure(store, plan.found, exc, report)
        return
    for name in _WRITE_COUNTS:
        setattr(report, name, getattr(report, name) + getattr(delta, name))


def _write_file(store: Store, plan: _Plan, vectors: dict[str, np.ndarray], report: SyncReport) -> None:
    f = plan.found
    with store.transaction():
        if plan.doc_id is None:
            doc_id = store.docs.insert(f.rel, f.size, f.mtime_ns, plan.sha, plan.kind, plan.title)
            old: list[tuple[int, str, int]] = []
            report.added += 1
        else:
            doc_id = plan.doc_id
            store.docs.update(doc_id, path=f.rel, size=f.size, mtime_ns=f.mtime_ns, sha256=plan.sha, title=plan.title)
            old = store.docs.passage_hashes(doc_id)
            if plan.rechunk:
                report.rechunked += 1
            else:
                report.updated += 1
        store.docs.clear_skip(f.rel)
        free: dict[str, list[int]] = defaultdict(list)
        for pid, sha, _ in old:
            free[sha].append(pid)
        inserts: list[tuple[int, np.ndarray]] = []
        for ordinal, (chunk, start, end, place) in enumerate(plan.chunks):
            new = NewPassage(ordinal, chunk.heading, chunk.text, chunk.sha256, start, end, chunk.tokens,
                             tuple(link_hrefs(chunk.text)), place)
            if free.get(chunk.sha256):
                store.docs.move_passage(free[chunk.sha256].pop(0), new)
                report.passages_kept += 1
            else:
                pid = store.docs.insert_passage(doc_id, plan.title, new)
                inserts.append((pid, vectors[chunk.sha256]))
                report.passages_added += 1
        stale = [pid for ids in free.values() for pid in ids]
        store.docs.delete_passages(stale)
        report.passages_removed += len(stale)
        store.vectors.put_many(inserts)
        store.vault.set_note(doc_id, f.rel, plan.meta, plan.tags)
