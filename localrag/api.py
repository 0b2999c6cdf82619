"""The core API used by both the CLI and the TUI: Index (store + sync) and Assistant (ask)."""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Collection

from localrag.answer import EMPTY_ANSWER, Answer
from localrag.answer.events import AnswerDone, EventSink, Retrieved, RetrievalStarted, from_trace_event
from localrag.answer.compare import has_body
from localrag.answer.flow import Composed, compose
from localrag.question import AnswerRequest, Asked, Outcome, StrategyChoice
from localrag.config import Settings
from localrag.embed import Embedder, default_embedder, similarity_scale
from localrag.embedders import embedder_for, is_default
from localrag.errors import LocalragError
from localrag.language import is_english
from localrag.reembed import finish as reembed_finish
from localrag.reembed import start as reembed_start
from localrag.ingest.documents.ocr import OcrAvailability
from localrag.ingest.documents.ocr import availability as ocr_availability
from localrag.ingest.sync import Progress, SyncReport, recut_due, sync_folder
from localrag.kg.builder import GraphBuilder
from localrag.kg.entity_graph import save_entity_graph
from localrag.kg.run import GraphProgress, GraphReport
from localrag.kg.vault import linked_paths
from localrag.llm.base import RecordingLLM
from localrag.llm import factory  # called as factory.make_llm: tests replace it there
from localrag.llm.model_info import ModelSize, format_params, is_served, model_size
from localrag.records import LLMCallRecord, Passage, Retrieval, SkippedFile, Trace, observe_steps
from localrag.retrieve import Context, get_strategy
from localrag.store import EmbedderMismatch, Store
from localrag.store.connection import StoreError, database_error_message, is_unexplained
from localrag.store.health import HealthCheck
from localrag.store.lock import writer_lock
from localrag.store.vault import PassageFilter, link_key
from localrag.trace import FeedbackStep, TraceEvent

if TYPE_CHECKING:
    from localrag.conversation import Conversation

logger = logging.getLogger(__name__)


# `auto` switches to NeuroPath when at most this share of passages still waits for extraction
AUTO_GRAPH_QUEUE_SHARE = 0.1
SPELLING_PASSAGES = 200  # read for a misspelt name's near spellings: ~1 ms on the Wikipedia and tldr folders


class EmptyIndexError(LocalragError, RuntimeError):
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
    warnings: list[tuple[str, str]] = field(default_factory=list)  # (path, problem): e.g. front matter that is not YAML
    by_kind: dict[str, int] = field(default_factory=dict)  # documents per format: markdown, pdf, docx, ...
    ocr: OcrAvailability | None = None  # which OCR engine reads scanned PDF pages, or why none does
    recut_due: bool = False  # cut into passages by other rules: the next full sync cuts every file again


class Index:
    """A notes folder and its SQLite index."""

    def __init__(self, settings: Settings, embedder: Embedder | None = None, *, readonly: bool = False,
                 reembed: bool = False):
        """``reembed``: an index built with another embedder is started again for this one
        (localrag/reembed.py); the sync then embeds every note, and ``finish_reembed`` drops the old file."""
        self.settings = settings
        self.embedder = embedder or (default_embedder() if is_default(settings) else embedder_for(settings))
        self.replaced: Path | None = None  # the old embedder's index, moved aside until the new one is complete
        try:
            self.store = Store(settings.db_path, dim=self.embedder.dim, embedder_id=self.embedder.id,
                               readonly=readonly)
        except EmbedderMismatch:
            if not reembed or readonly:
                raise
            self.store, self.replaced = reembed_start(settings.db_path, self.embedder)
        self.store.graph.coref.configure(settings.graph.coref_k, settings.graph.coref_threshold,
                                        similarity_scale(self.embedder))

    @property
    def folder(self) -> Path:
        return self.settings.folder_path

    def sync(self, progress: Callable[[Progress], None] | None = None,
             should_stop: Callable[[], bool] | None = None, wait_s: float = 600.0,
             only: Collection[str] | None = None) -> SyncReport:
        """Bring the index in step with the folder (one writer at a time); ``only``: just these
        relative file paths (and documents under them as folders), as a watcher's batch names them."""
        if not self.folder.is_dir():
            raise FileNotFoundError(f"notes folder not found: {self.folder}")
        with writer_lock(self.settings.db_path, wait_s=wait_s):
            return sync_folder(self.store, self.folder, self.settings.index, self.embedder, progress, should_stop,
                               only=only)

    def extract_graph(self, progress: Callable[["GraphProgress"], None] | None = None,
                      should_stop: Callable[[], bool] | None = None, llm=None,
                      wait_s: float = 0.0) -> "GraphReport":
        """The graph phase: drain the extraction queue (resumable; one passage per transaction).

        ``llm=None`` loads the configured index model on first need (none with extractor "rules").
        One graph builder per index at a time (LockBusy after ``wait_s``); the fast phase (sync)
        may run alongside it.
        """
        db = self.settings.db_path
        with writer_lock(db if str(db) == ":memory:" else Path(str(db) + "-graph"), wait_s=wait_s):
            return GraphBuilder(self.store, self.embedder, self.settings, llm=llm).run(progress, should_stop)

    def save_entity_graph(self) -> None:
        """The walk matrix saved at the graph's current version: after a sync that removed or
        changed passages, a new process then loads it as it is."""
        save_entity_graph(self.store)

    def note_titled(self, name: str) -> Passage | None:
        """The first passage of the note titled (or, in a vault, named) ``name``: the note a
        comparison question names when retrieval did not bring it."""
        paths = self.store.docs.titled(name) + [n.path for n in self.store.vault.notes_named(link_key(name))]
        for path in dict.fromkeys(paths):
            opening = next((p for p in self.store.docs.passages_of(path) if has_body(p.text)), None)
            if opening is not None:
                return opening
        return None

    def linked_passages(self, text: str, source_path: str) -> list[Passage]:
        """The passages of the notes a sentence of ``source_path`` links to (answer/flow.py: a link in
        the best evidence brings its note into the evidence)."""
        return [p for path in linked_paths(self.store, text, source_path) for p in self.store.docs.passages_of(path)]

    def words_starting(self, prefix: str) -> set[str]:
        """The folder's words that start with ``prefix`` (those of up to ``SPELLING_PASSAGES`` passages)."""
        return self.store.lexical.words_starting(prefix, SPELLING_PASSAGES)

    def passages_saying(self, name: str) -> int:
        """How many passages say ``name``, counted up to ``answer.abstain_common_from``."""
        return self.store.lexical.passages_saying(name, max(1, self.settings.answer.abstain_common_from))

    def check_health(self, force: bool = False) -> HealthCheck:
        """SQLite's quick_check when damage is suspected or the periodic check is due (``force``: always);
        a StoreError pointing at `localrag doctor --repair` when it fails."""
        check = self.store.check_if_due(force)
        check.raise_if_damaged(self.settings.db_path)
        return check

    def diagnosed(self, exc: BaseException) -> BaseException:
        """``exc``, or the damage it came from: an SQLite error that names no cause is followed by
        quick_check, whose failure is the error to show (with the repair hint)."""
        if not is_unexplained(exc):
            return exc
        try:
            HealthCheck(f"reading it failed ({exc})", self.store.quick_check()).raise_if_damaged(self.settings.db_path)
        except StoreError as found:
            return found
        return exc

    def graph_figures(self) -> dict[str, int]:
        """Graph size and extraction state, for `localrag status` and the TUI."""
        c = self.store.graph.counts()
        return {"entities": c.entities, "facts": c.facts, "coref_pairs": c.coref_pairs, "mentions": c.mentions,
                "graph_queue": c.queued, "extraction_failures": c.failed}

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
            extra=dict(self.graph_figures()) | self.store.vault.counts(),
            warnings=self.store.vault.warnings(),
            by_kind=self.store.docs.count_by_kind(),
            ocr=ocr_availability(self.settings.index.ocr, self.settings.index.ocr_max_pages),
            recut_due=recut_due(self.store, self.settings.index),
        )

    def finish_reembed(self) -> Path | None:
        """After a complete sync of a re-embedded index: the old embedder's file removed (returned)."""
        replaced, self.replaced = self.replaced, None
        if replaced is not None:
            reembed_finish(replaced)
        return replaced

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
                inner, self.model_source = factory.make_llm(self.settings.llm)
                self._llm = RecordingLLM(inner)
                self._llm.sinks.append(self._log_call)
            return self._llm

    def _log_call(self, record: LLMCallRecord) -> None:
        qid = getattr(self._current, "query_id", None)
        try:
            self.index.store.calls.log_call(record, qid)
        except Exception:  # a log write must never break an answer
            logger.warning("could not log the %s call", record.phase, exc_info=True)

    _current = threading.local()

    def context(self, where: PassageFilter | None = None, read_memory: bool = True) -> Context:
        settings = self.settings
        if not read_memory:  # the last answer to this question was marked wrong: full retrieval
            settings = dataclasses.replace(settings, memory=dataclasses.replace(settings.memory, read=False))
        return Context(self.index.store, self.index.embedder, settings, llm_factory=self.llm, filter=where)

    def resolve_strategy(self, name: str | None) -> str:
        return self.resolve(name).strategy

    def resolve(self, name: str | None) -> StrategyChoice:
        """``auto``: `graph` (no LLM) unless the model is large enough to track paths and the graph is built.

        The rule is measured, not assumed: with SmolLM2-135M and Qwen2.5-Coder-0.5B NeuroPath's
        tracking adds at most one gold passage in twenty questions to the no-LLM fusion it starts
        from, for calls and seconds a question (docs/benchmarks.md "`auto`: the strategy by model
        size"), so a model below ``auto_min_params`` (read from its GGUF metadata without
        loading weights; unknown counts as small) never tracks paths by default.
        """
        name = name or self.settings.strategy
        if name != "auto":
            return StrategyChoice(name, "chosen" if name == (self.settings.strategy or "auto") else "asked for")
        size = self.model_size()
        floor = format_params(self.settings.auto_min_params)
        if not size.known:
            return StrategyChoice("graph", f"auto: model size {size.source}; graph fusion needs no model")
        if size.params < self.settings.auto_min_params:
            return StrategyChoice("graph", f"auto: {size.model} has {size.label} parameters ({size.source}), below "
                                  f"{floor}: too small to track paths, graph fusion needs no model")
        counts = self.index.store.graph.counts()
        passages = self.index.store.docs.passage_count()
        built = passages > 0 and counts.facts > 0 and counts.queued <= AUTO_GRAPH_QUEUE_SHARE * passages
        if not built:
            return StrategyChoice("graph", f"auto: {size.model} ({size.label}) could track paths, but the graph is "
                                  "still being built")
        return StrategyChoice("neuropath", f"auto: {size.model} has {size.label} parameters (>= {floor}): NeuroPath, "
                              "starting from the graph fusion")

    def resolve_pick(self) -> str:
        """``answer.pick = auto``: below ``answer.pick_min_params`` the no-model ranking's first span;
        from there the model picks among the ranking's best spans; from ``answer.copy_min_params`` it
        writes the answer in the passages' words (``copy``). A served model (whatever its
        ``llm.params``) or one of unknown size picks among the best spans: copy's constraint is
        thousands of strings, which a llama.cpp server takes as a GBNF grammar but other servers
        may take neither as that nor as an enum (docs/benchmarks.md "Answers: who picks the short answer")."""
        pick = self.settings.answer.pick
        if pick != "auto":
            return pick
        size, answer = self.model_size(), self.settings.answer
        if not size.known:
            return "model"
        if size.params >= answer.copy_min_params and not is_served(self.settings.llm):
            return "copy"  # in process only: not every server takes copy's thousands of spans
        return "ranking" if size.params < answer.pick_min_params else "model"

    def resolve_writer(self) -> str:
        """``answer.writer = auto``: the quoted evidence below ``answer.write_min_params`` (and for a
        model of unknown size, a served one included), the model's own answer from there, when a model
        pick was asked for (``answer.pick`` = model / likelihood / copy) or when the caller handed the
        assistant a model object to answer with."""
        writer = self.settings.answer.writer
        if writer != "auto":
            return writer
        if self.settings.answer.pick in ("model", "likelihood", "copy") or self.model_source == "given":
            return "model"  # a pick asked of the model, or a model object the caller handed over to answer
        size = self.model_size()
        return "model" if size.known and size.params >= self.settings.answer.write_min_params else "quote"

    def model_size(self):
        """The answer model's size: what a loaded or given backend reports, else its GGUF metadata."""
        inner = self._llm.inner if self._llm is not None else None
        if inner is not None and callable(getattr(inner, "model_size", None)):
            return inner.model_size()
        if inner is not None and self.model_source == "given":
            return ModelSize(0, "", str(getattr(inner, "model_id", "given")), "unknown: the given model does not say")
        return model_size(self.settings.llm)

    # -- asking ------------------------------------------------------------------
    def retrieve(self, question: str, strategy: str | None = None, k: int | None = None,
                 where: PassageFilter | None = None, read_memory: bool = True) -> Retrieval:
        name = self.resolve_strategy(strategy)
        if self.index.store.docs.passage_count() == 0:
            raise EmptyIndexError(
                f"the index of {self.index.folder} has no passages yet: run `localrag index {self.index.folder}` first"
            )
        retrieval = get_strategy(name).retrieve(self.context(where, read_memory), question, k or max(self.settings.top_k, 10))
        if self.settings.index.queue_asked_first:  # the graph grows where the user asks first
            self._log_query(lambda: self.index.store.graph.queue.prioritise([sp.passage.id for sp in retrieval.passages]))
        return retrieval

    def ask(self, question: str, *, strategy: str | None = None, k: int | None = None, answer: bool = True,
            short: bool = False, on_token: Callable[[str], None] | None = None, mode: str | None = None,
            on_event: EventSink | None = None, where: PassageFilter | None = None,
            conversation: "Conversation | None" = None) -> Answer:
        """Retrieve, show evidence, answer by question shape (``mode`` "shape") or freely ("free").

        ``short`` asks free generation for a few words (the old short answer, kept for the bench);
        ``on_event`` receives each step (entities, seeds, rounds, evidence, first token) as it happens;
        ``conversation``: a follow-up is resolved against its turns before retrieval, the answer
        prompt sees the earlier turns, and the turn is recorded in the session.
        """
        question = question.strip()
        if not question:
            raise ValueError("the question is empty")
        asked = self._open_question(question, self.resolve(strategy), on_event)
        try:
            outcome = self._run_question(asked, conversation, k, where, AnswerRequest(answer, mode, short, on_token))
        except BaseException:
            self._forget(asked.query_id)  # a failed answer teaches memory nothing
            raise
        finally:
            self._current.query_id = None
        return self._close_question(asked, outcome, answer, conversation)

    def _open_question(self, question: str, choice: StrategyChoice, on_event: EventSink | None) -> Asked:
        """Log the question, and read whether its last answer was marked wrong (then memory is not read)."""
        qid = self._log_query(lambda: self.index.store.calls.start_query(question, choice.strategy))
        self._current.query_id = qid
        rejected = self._log_query(lambda: self.index.store.memory.verdict_for(question)) == "wrong"
        return Asked(question, choice, qid, rejected, time.perf_counter(), on_event)

    def _run_question(self, asked: Asked, conversation: "Conversation | None", k: int | None,
                      where: PassageFilter | None, request: "AnswerRequest") -> Outcome:
        """Resolve a follow-up, retrieve, answer; the model's calls and memory's writes are attributed to the question."""
        needs_llm = self._needs_llm(asked.strategy, request, conversation, asked.question)
        scope = self.llm().scoped(asked.calls.append) if needs_llm else contextlib.nullcontext()
        with scope, self.index.store.memory.attributed(asked.query_id), observe_steps(self._step_sink(asked)):
            asked.emit(RetrievalStarted(elapsed_s=0.0, strategy=asked.strategy))
            resolution = conversation.resolve(asked.question, self.llm) if conversation is not None else None
            query = resolution.query if resolution is not None else asked.question
            retrieval = self.retrieve(query, asked.strategy, k, where, read_memory=not asked.rejected)
            retrieve_ms = asked.elapsed_ms()
            asked.emit(Retrieved(elapsed_s=retrieve_ms / 1000, passages=len(retrieval.passages)))
            composed = self._compose(asked, query, retrieval, request, conversation) if request.answer else None
        return Outcome(resolution, query, retrieval, retrieve_ms, composed)

    def _step_sink(self, asked: Asked) -> Callable[[str, TraceEvent], None]:
        """Each trace step of the strategy, as an event on the question's sink."""
        def on_step(strategy_name: str, event: TraceEvent) -> None:
            asked.emit(from_trace_event(event, asked.elapsed_ms() / 1000, self.settings))

        return on_step

    def _compose(self, asked: Asked, query: str, retrieval: Retrieval, request: "AnswerRequest",
                 conversation: "Conversation | None") -> Composed:
        """The answer, and what memory learns from its citations."""
        composed = compose(
            self.llm, self.index.embedder, query, retrieval,
            dataclasses.replace(self.settings.answer, pick=self.resolve_pick(), writer=self.resolve_writer()),
            n_passages=self.settings.answer.passages,
            max_tokens=self.settings.llm.answer_max_tokens, since=asked.started, emit=asked.emit,
            mode=request.asked_mode, short_prompt=request.short,
            on_token=request.on_token, history=conversation.prompt_history() if conversation is not None else (),
            lookup=self.index.note_titled, links=self.index.linked_passages, mentions=self.index.passages_saying,
            words_starting=self.index.words_starting,
            asked_as=asked.question,
        )
        # an abstention learns nothing: memory is written only for an answer that stands
        if retrieval.on_answer is not None and composed.text and not composed.abstained:
            retrieval.on_answer([c.passage.id for c in composed.citations if c.cited])
        return composed

    def _close_question(self, asked: Asked, outcome: Outcome, answer: bool,
                        conversation: "Conversation | None") -> Answer:
        """Undo memory for a failed answer, send the last event, record the turn and the query log."""
        composed, retrieval = outcome.composed, outcome.retrieval
        if answer and (composed is None or composed.abstained or composed.text.strip() in ("", EMPTY_ANSWER)):
            self._forget(asked.query_id)  # an empty reply is a failed answer too; an abstention learns nothing either
        if asked.rejected:
            retrieval.trace.add(FeedbackStep(note="the last answer to this question was marked wrong: memory not read"))
        total_ms = asked.elapsed_ms()
        asked.emit(AnswerDone(elapsed_s=total_ms / 1000, abstained=bool(composed and composed.abstained)))
        result = self._answer_record(asked, outcome, total_ms)
        if conversation is not None and outcome.resolution is not None:
            result.session = conversation.session.label
            self._log_query(lambda: conversation.record(asked.question, outcome.resolution, result))
        qid = asked.query_id
        if qid is not None:
            self._log_query(lambda: self.index.store.calls.finish_query(qid, result.text, retrieval.trace.to_json()))
        return result

    def _answer_record(self, asked: Asked, outcome: Outcome, total_ms: float) -> Answer:
        composed, retrieval = outcome.composed, outcome.retrieval
        return Answer(asked.question, composed.text if composed else "", composed.citations if composed else [],
                      retrieval, asked.strategy, asked.calls, outcome.retrieve_ms,
                      composed.answer_ms if composed else 0.0, asked.query_id,
                      notes=memory_notes(retrieval.trace) + (composed.notes if composed else []),
                      resolved_query=outcome.query, strategy_reason=asked.choice.reason,
                      evidence_shown=self.settings.answer.evidence_shown, total_ms=total_ms, events=asked.events,
                      composed=composed)

    def _forget(self, qid: int | None) -> None:
        """Undo the memory writes of a question whose answer failed or came back empty."""
        if qid is not None:
            self._log_query(lambda: self.index.store.memory.undo(qid))

    @staticmethod
    def _log_query(write: Callable[[], object]):
        """The query log is a record, not part of the answer: a busy or read-only index never fails a question."""
        try:
            return write()
        except Exception as exc:
            if database_error_message(exc) is None:
                raise
            return None

    def _needs_llm(self, strategy: str, request: "AnswerRequest", conversation: "Conversation | None",
                   question: str) -> bool:
        """The model is loaded only when something calls it: the answer (unless its writer quotes the
        evidence, as it does for a question not in English; a free-text answer never does), the strategy
        (as it declares), or the resolution of a follow-up."""
        free = (request.asked_mode or self.settings.answer.mode) == "free"
        writes = request.answer and (free or (self.resolve_writer() != "quote" and is_english(question)))
        return writes or get_strategy(strategy).needs_llm or (conversation is not None and conversation.uses_llm)


def memory_notes(trace: Trace) -> list[str]:
    """'recalled 3 edges, skipped 1 round, ~1,240 tokens saved' from a trace's memory step, and what the answer taught."""
    return [note for step in trace.steps for note in step.notes()]
