"""The core API used by both the CLI and the TUI: Index (store + sync) and Assistant (ask)."""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from localrag.answer import Answer, generate
from localrag.config import Settings
from localrag.embed import Embedder, default_embedder
from localrag.ingest.sync import Progress, SyncReport, sync_folder
from localrag.llm.base import LLMError, RecordingLLM
from localrag.records import LLMCallRecord, Retrieval, SkippedFile, Trace
from localrag.retrieve import Context, get_strategy
from localrag.store import Store
from localrag.store.lock import writer_lock


class EmptyIndexError(RuntimeError):
    """A question was asked of an index with no passages."""


@dataclass
class IndexStatus:
    folder: str
    db_path: str
    db_bytes: int
    documents: int
    passages: int
    embedded: int
    skipped: list[SkippedFile]
    embedder: str
    schema_version: int
    extra: dict[str, object] = field(default_factory=dict)  # graph and memory figures, when present


class Index:
    """A notes folder and its SQLite index."""

    def __init__(self, settings: Settings, embedder: Embedder | None = None, *, readonly: bool = False):
        self.settings = settings
        self.embedder = embedder or default_embedder()
        self.store = Store(settings.db_path, dim=self.embedder.dim, embedder_id=self.embedder.id, readonly=readonly)

    @property
    def folder(self) -> Path:
        return self.settings.folder_path

    def sync(self, progress: Callable[[Progress], None] | None = None,
             should_stop: Callable[[], bool] | None = None, wait_s: float = 600.0) -> SyncReport:
        """Bring the index in step with the folder (one writer at a time)."""
        if not self.folder.is_dir():
            raise FileNotFoundError(f"notes folder not found: {self.folder}")
        with writer_lock(self.settings.db_path, wait_s=wait_s):
            return sync_folder(self.store, self.folder, self.settings.index, self.embedder, progress, should_stop)

    def status(self) -> IndexStatus:
        return IndexStatus(
            folder=str(self.folder),
            db_path=str(self.settings.db_path),
            db_bytes=self.store.size_bytes(),
            documents=self.store.docs.count(),
            passages=self.store.docs.passage_count(),
            embedded=self.store.vectors.count(),
            skipped=self.store.docs.skipped(),
            embedder=self.store.get_meta("embedder"),
            schema_version=self.store.schema_version(),
        )

    def close(self) -> None:
        self.store.close()


class Assistant:
    """Answers questions over an Index with a lazily loaded LLM."""

    def __init__(self, index: Index, llm=None):
        self.index = index
        self.settings = index.settings
        self._llm: RecordingLLM | None = RecordingLLM(llm) if llm is not None and not isinstance(llm, RecordingLLM) else llm
        self._llm_lock = threading.Lock()
        self.model_source = "given" if llm is not None else ""

    # -- model -------------------------------------------------------------------
    def llm(self) -> RecordingLLM:
        with self._llm_lock:
            if self._llm is None:
                from localrag.llm.factory import make_llm

                inner, self.model_source = make_llm(self.settings.llm)
                self._llm = RecordingLLM(inner)
                self._llm.sinks.append(self._log_call)
            return self._llm

    def _log_call(self, record: LLMCallRecord) -> None:
        qid = getattr(self._current, "query_id", None)
        try:
            self.index.store.calls.log_call(record, qid)
        except Exception:  # a log write must never break an answer
            pass

    _current = threading.local()

    def context(self) -> Context:
        return Context(self.index.store, self.index.embedder, self.settings, llm_factory=self.llm)

    def resolve_strategy(self, name: str | None) -> str:
        name = name or self.settings.strategy
        if name == "auto":
            from localrag.retrieve.base import strategy_names

            has_graph = "neuropath" in strategy_names() and self.index.store.one(
                "SELECT name FROM sqlite_master WHERE name = 'facts'") is not None
            if has_graph:
                from localrag.retrieve.base import get_strategy as _g  # noqa: F401
                count = self.index.store.one("SELECT COUNT(*) FROM facts")[0]
                return "neuropath" if count else "hybrid"
            return "hybrid"
        return name

    # -- asking ------------------------------------------------------------------
    def retrieve(self, question: str, strategy: str | None = None, k: int | None = None) -> Retrieval:
        name = self.resolve_strategy(strategy)
        if self.index.store.docs.passage_count() == 0:
            raise EmptyIndexError(
                f"the index of {self.index.folder} has no passages yet: run `localrag index {self.index.folder}` first"
            )
        return get_strategy(name).retrieve(self.context(), question, k or max(self.settings.top_k, 10))

    def ask(self, question: str, *, strategy: str | None = None, k: int | None = None, answer: bool = True,
            short: bool = False, on_token: Callable[[str], None] | None = None) -> Answer:
        question = question.strip()
        if not question:
            raise ValueError("the question is empty")
        name = self.resolve_strategy(strategy)
        calls: list[LLMCallRecord] = []
        qid = self.index.store.calls.start_query(question, name)
        self._current.query_id = qid
        started = time.perf_counter()
        try:
            scope = self.llm().scoped(calls.append) if self._needs_llm(name, answer) else _null()
            with scope:
                retrieval = self.retrieve(question, name, k)
                retrieve_ms = (time.perf_counter() - started) * 1000
                text, citations, answer_ms = "", [], 0.0
                if answer:
                    text, citations, answer_ms = generate(
                        self.llm(), question, retrieval, self.settings.neuropath.answer_passages,
                        max_tokens=self.settings.llm.answer_max_tokens, short=short, on_token=on_token,
                    )
        finally:
            self._current.query_id = None
        result = Answer(question, text, citations, retrieval, name, calls, retrieve_ms, answer_ms, qid)
        self.index.store.calls.finish_query(qid, text, result.to_json()["trace"])
        return result

    def _needs_llm(self, strategy: str, answer: bool) -> bool:
        return answer or strategy not in {"dense", "lexical", "hybrid", "ppr"}


class _null:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        return None


def trace_of(answer: Answer) -> Trace:
    return answer.retrieval.trace
