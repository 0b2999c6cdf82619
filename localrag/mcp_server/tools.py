"""What the MCP tools do, without MCP: search, ask, status and open over one notes folder.

Every result is a plain JSON-able dict; every refusal is a ToolRefused with a message meant
for the calling assistant. ``open`` reads only indexed notes inside the folder; nothing here
writes outside the index (read-only mode writes nothing at all).
"""

from __future__ import annotations

import dataclasses
import re
import threading
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Callable

from localrag.answer.record import answer_record, passage_record
from localrag.api import Assistant, EmptyIndexError, Index
from localrag.config import Settings
from localrag.errors import LocalragError
from localrag.ingest.documents.formats import DOCUMENT_KINDS
from localrag.ingest.documents.ocr import page_ocr
from localrag.ingest.loaders import SkipFile, load_file
from localrag.ingest.places import IndexedText, place_lines, range_locator
from localrag.retrieve import strategy_names
from localrag.retrieve.filters import FilterError, parse_where
from localrag.store.vault import PassageFilter

Progress = Callable[[float, float, str], None]  # (done, total, message)
MAX_K = 50
MAX_OPEN_LINES = 400
_LINES = re.compile(r"^\s*(\d+)\s*(?:[-:]\s*(\d+)\s*)?$")


class ToolRefused(LocalragError, ValueError):
    """A call the server will not carry out, with the reason."""

    internal = True


@dataclass
class ServerOptions:
    readonly: bool = True  # no sync, no query log, no edge-memory learning


def _no_progress(done: float, total: float, message: str) -> None:
    return None


class NotesTools:
    """One folder's index, shared by the tool calls (one call at a time)."""

    def __init__(self, settings: Settings, options: ServerOptions, embedder=None, llm=None):
        self.settings = settings
        self.options = options
        self.folder = settings.folder_path.resolve()
        if options.readonly and not settings.db_path.exists():
            raise ToolRefused(f"{self.folder} is not indexed yet: run `localrag index {self.folder}` first, "
                              "or start the server with --index")
        self.index = Index(settings, embedder, readonly=options.readonly)
        self.assistant = Assistant(self.index, llm=llm)
        self._lock = threading.Lock()

    def close(self) -> None:
        self.index.close()

    # -- helpers -------------------------------------------------------------------------------
    @staticmethod
    def _filter(filters: list[str] | None) -> PassageFilter | None:
        try:
            return parse_where(filters or [])
        except FilterError as exc:
            raise ToolRefused(str(exc)) from exc

    @staticmethod
    def _strategy(name: str) -> str:
        if name != "auto" and name not in strategy_names():
            raise ToolRefused(f"unknown strategy {name!r}: choose auto or one of {', '.join(strategy_names())}")
        return name

    @staticmethod
    def _k(k: int) -> int:
        if not 1 <= k <= MAX_K:
            raise ToolRefused(f"k must be between 1 and {MAX_K}, not {k}")
        return k

    def sync(self, progress: Progress = _no_progress) -> dict:
        """Bring the index in step with the folder (not in read-only mode)."""
        if self.options.readonly:
            return {"synced": False, "reason": "read-only server"}
        progress(0, 1, "syncing the index with the folder")
        report = self.index.sync(wait_s=0)
        progress(1, 1, "index in step with the folder")
        return {"synced": True, "added": report.added, "updated": report.updated, "removed": report.removed}

    # -- tools ---------------------------------------------------------------------------------
    def search(self, query: str, k: int = 5, strategy: str = "hybrid", filters: list[str] | None = None,
               progress: Progress = _no_progress) -> dict:
        query = query.strip()
        if not query:
            raise ToolRefused("the query is empty")
        where, k, strategy = self._filter(filters), self._k(k), self._strategy(strategy)
        with self._lock:
            progress(0, 1, f"searching with {strategy}")
            try:
                got = self.assistant.retrieve(query, strategy, k, where=where)
            except EmptyIndexError as exc:
                raise ToolRefused(str(exc)) from exc
            progress(1, 1, "done")
        return {
            "query": query, "strategy": got.trace.strategy, "filter": where.describe() if where else "",
            "passages": [passage_record(i + 1, sp) for i, sp in enumerate(got.passages[:k])],
        }

    def ask(self, question: str, strategy: str = "auto", filters: list[str] | None = None, k: int | None = None,
            progress: Progress = _no_progress, trace: bool = False) -> dict:
        question = question.strip()
        if not question:
            raise ToolRefused("the question is empty")
        where, strategy = self._filter(filters), self._strategy(strategy)
        if k is not None:
            self._k(k)
        tokens = [0]

        def on_token(_: str) -> None:
            tokens[0] += 1
            if tokens[0] % 16 == 0:
                progress(2, 3, f"answering: {tokens[0]} tokens")

        with self._lock:
            progress(0, 3, "loading the model")
            try:
                self.assistant.llm()
                progress(1, 3, "retrieving passages")
                answer = self.assistant.ask(question, strategy=strategy, k=k, where=where, on_token=on_token)
            except EmptyIndexError as exc:
                raise ToolRefused(str(exc)) from exc
            progress(3, 3, "answered")
        # the form `localrag ask --json` prints; the trace and the step events only when asked for
        return answer_record(answer, filter_text=where.describe() if where else "", detail=trace)

    def status(self) -> dict:
        with self._lock:
            st = self.index.status()
        return {
            "folder": st.folder, "documents": st.documents, "documents_by_kind": st.by_kind, "passages": st.passages, "embedded": st.embedded,
            "embedder": st.embedder, "schema_version": st.schema_version, "db_bytes": st.db_bytes,
            "graph": st.extra, "readonly": self.options.readonly, "strategies": ["auto", *strategy_names()],
            "skipped": [{"path": s.path, "reason": s.reason, "detail": s.detail} for s in st.skipped],
            "warnings": [{"path": p, "warning": w} for p, w in st.warnings],
            "ocr": dataclasses.asdict(st.ocr) if st.ocr else None,
        }

    def open(self, path: str, lines: str = "") -> dict:
        rel = self._inside(path)
        doc = self.index.store.docs.get(rel)
        if doc is None:
            raise ToolRefused(f"{rel} is not an indexed note of this folder (see the status tool)")
        if doc.kind in DOCUMENT_KINDS:
            return self._open_document(rel, doc.title, doc.kind, lines)
        try:
            text = (self.folder / rel).read_text(encoding="utf-8", errors="replace")
        except OSError as exc:
            raise ToolRefused(f"{rel} cannot be read: {exc.strerror or exc}") from exc
        all_lines = text.split("\n")
        start, end = self._range(lines, len(all_lines))
        return {"path": rel, "start_line": start, "end_line": end, "location": f"{rel}:{start}-{end}",
                "title": doc.title, "total_lines": len(all_lines), "text": "\n".join(all_lines[start - 1:end])}

    def _open_document(self, rel: str, title: str, kind: str, lines: str) -> dict:
        """A PDF, Word file, deck or e-book as its indexed text (the lines its citations count), a page
        or slide picked by its locator ("p. 12") or a line range. A PDF's text comes from its stored
        passages: a scanned one would otherwise be read by OCR again on every call, seconds a page."""
        if kind == "pdf":
            return self._open_pdf(rel, title, lines)
        index = self.settings.index
        try:
            loaded = load_file(self.folder / rel, index.max_file_bytes, page_ocr(index.ocr, index.ocr_max_pages))
        except SkipFile as exc:
            raise ToolRefused(f"{rel} cannot be read now: {exc.detail}") from exc
        all_lines = loaded.text.split("\n")
        picked = place_lines(loaded.layout, lines) if loaded.layout is not None else None
        start, end = picked or self._range(lines, len(all_lines))
        end = min(end, start + MAX_OPEN_LINES - 1)
        place = range_locator(loaded.layout, start, end) if loaded.layout is not None else f"{start}-{end}"
        return _document_reply(rel, title, all_lines, start, end, place)

    def _open_pdf(self, rel: str, title: str, lines: str) -> dict:
        text = IndexedText.of(self.index.store.docs.passages_of(rel))
        if not text.lines:
            raise ToolRefused(f"{rel} has no indexed text")
        start, end = text.place(lines) or self._range(lines, len(text.lines))
        end = min(end, start + MAX_OPEN_LINES - 1)
        return _document_reply(rel, title, text.lines, start, end, text.locator(start, end))

    def _inside(self, path: str) -> str:
        """The folder-relative POSIX path, refusing anything that would leave the folder."""
        raw = path.strip()
        if not raw:
            raise ToolRefused("the path is empty")
        if "\x00" in raw:
            raise ToolRefused("the path holds a NUL byte, which no file name can: give a note's path as search "
                              "returns it (e.g. projects/lanternfish.md)")
        candidate = Path(raw)
        try:
            resolved = candidate.resolve() if candidate.is_absolute() else (self.folder / candidate).resolve()
        except (OSError, ValueError) as exc:
            raise ToolRefused(f"{raw!r} cannot be a path of this folder: {exc}") from exc
        if not resolved.is_relative_to(self.folder) or resolved == self.folder:
            raise ToolRefused(f"{raw} is outside the notes folder {self.folder}: only its notes can be opened")
        rel = PurePosixPath(resolved.relative_to(self.folder).as_posix())
        if rel.parts and rel.parts[0] == ".localrag":
            raise ToolRefused(f"{raw} is the index itself, not a note")
        return str(rel)

    @staticmethod
    def _range(lines: str, total: int) -> tuple[int, int]:
        if not lines or not lines.strip():
            return 1, min(total, MAX_OPEN_LINES)
        m = _LINES.match(lines)
        if m is None:
            raise ToolRefused(f"cannot read the line range {lines!r}: write 12-20 or 12")
        start = int(m.group(1))
        end = int(m.group(2) or m.group(1))
        if start < 1 or end < start:
            raise ToolRefused(f"the line range {lines!r} is empty: lines start at 1 and end after they start")
        if start > total:
            raise ToolRefused(f"the note has {total} lines; line {start} does not exist")
        return start, min(end, total, start + MAX_OPEN_LINES - 1)


def _document_reply(rel: str, title: str, lines: list[str], start: int, end: int, place: str) -> dict:
    return {"path": rel, "start_line": start, "end_line": end, "locator": place, "location": f"{rel} {place}",
            "title": title, "total_lines": len(lines), "text": "\n".join(lines[start - 1:end])}

