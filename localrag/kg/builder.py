"""The graph phase: drain the persistent queue, a batch of passages per transaction.

Newest documents first. Each passage: extraction cache -> (model call | rules) ->
grounding -> + title mention and link facts. A batch's new entity names are embedded in
one call, its passages written in one transaction that also dequeues them, and the
pseudo-coreference of all its new entities found by one batched search at the end
(store/entity_matrix.py). Killing the process at any point loses at most the batch in
flight; the next run continues. Model extractions are written at least every
FLUSH_AFTER_S, so a kill loses at most a second of model work. With a served model and
llm.concurrency > 1 the model calls run N in flight (kg/concurrent_build.py); the writes
stay on the calling thread.
"""

from __future__ import annotations

import logging
import time
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Callable

import numpy as np
from localrag.config import Settings
from localrag.embed import Embedder, similarity_scale
from localrag.ingest.chunker import Chunk
from localrag.kg.extract import Extraction, ExtractorOptions, extract_passage
from localrag.kg.name_families import embed_names
from localrag.kg.concurrent_build import drain_in_flight
from localrag.kg.entity_graph import save_entity_graph
from localrag.kg.run import BATCH, CALL_ERRORS, GraphProgress, GraphReport, GraphRun, ServerUnreachable, StepTimes
from localrag.kg.vault import passage_signals
from localrag.llm import factory  # called as factory.make_llm: tests replace it there
from localrag.llm.base import LLMError, RecordingLLM
from localrag.llm.concurrent import accepts_parallel_calls, server_unreachable
from localrag.llm.discovery import discover
from localrag.records import LLMCallRecord, Passage, Triple
from localrag.store import Store
from localrag.store.db import SPAN_RULES_KEY
from localrag.store.extractions import CachedExtraction
from localrag.text.spans import SPAN_RULES_VERSION

logger = logging.getLogger(__name__)

RETITLED_ROUNDS = 3  # drain passes when writes were refused because a note was renamed meanwhile
FLUSH_AFTER_S = 1.0
SAVE_MATRIX_EVERY_S = 120.0
# names are a few tokens: 256 a batch embedded 1,000 names in 1.7 s of CPU, 32 a batch in 9.2 s
# (MiniLM, one thread; sentence-transformers' cost per batch dominates such short texts)
NAME_BATCH = 256


def resolve_extractor(settings: Settings, given_llm: bool = False) -> tuple[str, str]:
    """index.extractor, with "auto" decided by the model at hand (docs/benchmarks_kg.md):
    the bundled SmolLM2's triples are too poor to be worth seconds per passage, so it gets
    the rules extractor; any other model (or a server) gets llm+rules; no model at all: rules."""
    chosen = settings.index.extractor
    if chosen != "auto":
        return chosen, "configured"
    if given_llm or factory.backend_for(settings.llm, "index")[0] != "llamacpp":
        return "llm+rules", "auto: a model was given"
    try:
        choice = discover(settings.llm.index_model or settings.llm.model)
    except LLMError:
        return "rules", "auto: no model found"
    if choice.source == "bundled":
        return "rules", "auto: the bundled SmolLM2 is too small for useful triples"
    return "llm+rules", f"auto: {choice.name}"


@dataclass
class _Embedding:
    """A batch extracted and waiting for its new entity names' vectors (computed on the worker)."""

    pending: list[tuple[Passage, Extraction]]
    names: list[str]
    future: Future | None
    written: bool = False


def extraction_text(p: Passage) -> str:
    """The passage as embedded and hashed (heading path + text): its sha256 keys the cache."""
    return Chunk(p.text, p.heading, p.start_line, p.end_line, 0).embed_text


def _pending_key(p: Passage) -> tuple[int, str, str, str]:
    """What a pending passage's signals are read for: a sync that changed any of it re-queued the passage."""
    return p.id, p.sha256, p.title, p.path


def requeue_for_span_rules(store: Store) -> int:
    """Queue every passage for extraction again, once, when the index's graph was read by other span
    rules than this code's (``SPAN_RULES_VERSION``; an index from before the mark counts as such; a new
    index records the rules it is created with); model replies come from the extraction cache, so only
    the rules run again."""
    if store.get_meta(SPAN_RULES_KEY) == str(SPAN_RULES_VERSION):
        return 0
    requeued = store.graph.queue.enqueue_all()
    store.set_meta(SPAN_RULES_KEY, str(SPAN_RULES_VERSION))
    return requeued


class GraphBuilder:
    def __init__(self, store: Store, embedder: Embedder, settings: Settings, llm=None):
        self.store = store
        self.embedder = embedder
        self.settings = settings
        extractor, self.extractor_reason = resolve_extractor(settings, given_llm=llm is not None)
        self.options = ExtractorOptions.from_settings(settings.index, extractor=extractor)
        self._llm: RecordingLLM | None = None
        self._model_key = ""
        self.timings = StepTimes()
        self._saved_at = time.perf_counter()
        self._requeued = 0  # writes refused this pass: the note was renamed or retitled meanwhile
        # a pending passage's signals with the database's data_version they were read at: the write
        # reuses them only if no other connection (a sync in another process) committed since; the
        # names embedded ahead of the write are the extraction's and these (_new_names)
        self._pending_signals: dict[tuple[int, str, str, str], tuple[int, list[Triple], list[str]]] = {}
        if llm is not None:
            self._llm = llm if isinstance(llm, RecordingLLM) else RecordingLLM(llm)
            self._llm.sinks.append(self._log_call)
        store.graph.coref.configure(settings.graph.coref_k, settings.graph.coref_threshold, similarity_scale(embedder))

    # -- model ---------------------------------------------------------------------------
    def llm(self) -> RecordingLLM:
        """Loaded on first need: a re-run served entirely from the cache never loads a model."""
        if self._llm is None:
            inner, _source = factory.make_llm(self.settings.llm, role="index")
            self._llm = RecordingLLM(inner, [self._log_call])
        return self._llm

    def model_id(self) -> str:
        """The extraction cache's model key, known without loading a local model."""
        if not self._model_key:
            if self._llm is None and not self.settings.llm.url:
                self._model_key = discover(self.settings.llm.index_model or self.settings.llm.model).name
            else:
                self._model_key = self.llm().model_id
        return self._model_key

    def _log_call(self, record: LLMCallRecord) -> None:
        try:
            self.store.calls.log_call(record)
        except Exception:  # the call log must never stop indexing
            logger.warning("could not log the %s call", record.phase, exc_info=True)

    # -- one passage -----------------------------------------------------------------------
    def extract(self, p: Passage) -> Extraction:
        ex = self.extract_without_call(p)
        return ex if ex is not None else self.extract_with_model(p)

    def extract_without_call(self, p: Passage) -> Extraction | None:
        """The extraction when it needs no model call (rules only, or the cache has the reply), else None."""
        text = extraction_text(p)
        if not self.options.uses_llm:
            return extract_passage(text, p.title, self.options)
        cached = self.store.graph.extractions.cached(p.sha256, self.model_id(), self.options.prompt_version(),
                                                    max_tokens=self.options.max_tokens)
        if cached is not None:
            return extract_passage(text, p.title, self.options, cached=cached)
        return None

    def extract_with_model(self, p: Passage) -> Extraction:
        """The model call and grounding; no store access, so pool threads may run it."""
        return extract_passage(extraction_text(p), p.title, self.options, llm=self.llm())

    def call_failed(self, p: Passage, exc: BaseException, run: GraphRun) -> Extraction | None:
        """An extraction that raised: counted, the passage stays queued (None) until it has raised
        extract_max_attempts times, then it is given up (rules fallback or a recorded failure).
        An unreachable server also ends the run: every further call would fail the same way."""
        if server_unreachable(exc) and run.outage is None:
            run.outage, run.report.stopped = exc, True
        max_attempts = max(1, self.settings.index.extract_max_attempts)
        if self.store.graph.queue.record_attempt(p.id, f"{type(exc).__name__}: {exc}") < max_attempts:
            return None
        return self._give_up(p, f"extraction raised {max_attempts} times: {exc}")

    def concurrency(self) -> int:
        """Model calls in flight: llm.concurrency with a served model, else 1 (one llama.cpp
        context in process is not thread-safe; rules need no calls)."""
        n = self.settings.llm.concurrency
        if n <= 1 or not self.options.uses_llm or (self._llm is None and not self.settings.llm.url):
            return 1
        return n if accepts_parallel_calls(self.llm()) else 1

    def signals(self, p: Passage) -> tuple[list[Triple], list[str]]:
        """Link, embed, alias, tag and property facts and the title mention (kg/vault.py): no model,
        never wrong about the notes' own structure."""
        key, version = _pending_key(p), self.store.data_version()
        read = self._pending_signals.get(key)
        if read is not None and read[0] == version:
            return read[1], read[2]
        found = passage_signals(self.store, p, frozenset(k.lower() for k in self.settings.index.skip_properties))
        self._pending_signals[key] = (version, found.triples, found.mentions)
        return found.triples, found.mentions

    def write(self, p: Passage, ex: Extraction, vectors: dict[str, np.ndarray] | None = None) -> int | None:
        # the check and the write are one transaction: a sync that renamed or retitled the document
        # while this passage was being extracted re-queued it, and that must not be undone here
        with self.store.transaction():
            now = self.store.docs.passages([p.id])
            if now and (now[0].title, now[0].path) != (p.title, p.path):
                self._requeued += 1
                return None  # still queued: extracted again, under its new title and path
            return self._write(p, ex, vectors)

    def _write(self, p: Passage, ex: Extraction, vectors: dict[str, np.ndarray] | None) -> int | None:
        links, mentions = self.signals(p)
        seen = {(t.head, t.relation, t.tail) for t in ex.triples}
        triples = ex.triples + [t for t in links if (t.head, t.relation, t.tail) not in seen]
        cache = None
        if ex.payload is not None:
            cache = CachedExtraction(p.sha256, self.model_id(), self.options.prompt_version(), ex.payload)
        result = self.store.graph.write_extraction(
            p.id, triples, mentions, self._embedder_with(vectors or {}),
            cache=cache, failure=ex.reason if ex.status in ("fallback", "failed") else "",
            fallback=ex.status == "fallback", model=self._llm.model_id if self._llm is not None else "",
        )
        return None if result is None else result.facts_added

    def _embedder_with(self, ready: dict[str, np.ndarray]) -> Callable[[list[str]], np.ndarray]:
        def embed(names: list[str]) -> np.ndarray:
            missing = [n for n in names if n not in ready]
            if missing:
                ready.update(zip(missing, self.encode_names(missing)))
            return np.stack([ready[n] for n in names])

        return embed

    def encode_names(self, names: list[str]) -> np.ndarray:
        """Entity names are a few words each: one torch thread embeds a batch of them as fast as two
        on an idle machine and 40x faster on a busy one (OpenMP's barriers spin when cores are
        shared: 1.79 s against 0.04 s for six names at load 15), and leaves the other core to
        the extraction and the writes. Many names that differ only in a number share one vector
        (kg/name_families.py)."""
        started = time.perf_counter()
        try:
            return embed_names(names, self._encode_one_thread)
        finally:
            self.timings.add("embed", time.perf_counter() - started)

    def _encode_one_thread(self, names: list[str]) -> np.ndarray:
        encode = self.embedder.encode
        try:
            return encode(names, batch_size=NAME_BATCH, threads=1)
        except TypeError:  # an embedder without per-call threads
            return encode(names, batch_size=NAME_BATCH)

    def _new_names(self, pending: list[tuple[Passage, Extraction]], exclude: set[str] = frozenset()) -> list[str]:
        """The entity names of these passages not in the graph yet (nor in ``exclude``)."""
        names: list[str] = []
        for p, ex in pending:
            # the signals as first read, whatever committed since: these names are only embedded
            # ahead, and the write reads the signals again (what it adds then is embedded then)
            read = self._pending_signals.get(_pending_key(p))
            links, mentions = (read[1], read[2]) if read is not None else self.signals(p)
            names += [n for t in ex.triples + links for n in (t.head, t.tail)] + mentions
        names = [n for n in dict.fromkeys(names) if n and n not in exclude]
        known = self.store.graph.entities.ids(names)
        return [n for n in names if n not in known]

    # -- the queue ---------------------------------------------------------------------------
    def run(self, progress: Callable[[GraphProgress], None] | None = None,
            should_stop: Callable[[], bool] | None = None) -> GraphReport:
        """Drain the queue. Raises ServerUnreachable (after writing what came back) when the
        model server stops answering; the passages not written stay queued."""
        report = GraphReport(extractor=f"{self.options.extractor} ({self.extractor_reason})")
        report.requeued = requeue_for_span_rules(self.store)
        self.timings = report.steps
        run = GraphRun(report, progress, should_stop, time.perf_counter())
        report.concurrency = self.concurrency()
        if report.concurrency > 1:
            drain_in_flight(self, run, report.concurrency)
        else:
            self._drain(run)
        self.save_matrix()
        report.remaining = self.store.graph.queue.length()
        report.seconds = time.perf_counter() - run.started
        if run.outage is not None:
            raise ServerUnreachable(report, run.outage)
        return report

    def _drain(self, run: GraphRun) -> None:
        """Drain the queue; again when a passage was renamed or retitled while it was being
        extracted (its write was refused and it stayed queued, after the queue looked empty)."""
        for _ in range(RETITLED_ROUNDS):
            self._requeued = 0
            self._drain_once(run)
            if run.report.stopped or not self._requeued:
                return

    def _drain_once(self, run: GraphRun) -> None:
        """Extract a batch while the previous batch's new entity names are embedded on a worker
        thread, then write the previous batch: the rules, the embedding and the writes overlap."""
        report, graph = run.report, self.store.graph
        with ThreadPoolExecutor(max_workers=1, thread_name_prefix="localrag-entities") as pool:
            ahead: _Embedding | None = None
            while not report.stopped:
                taken = {p.id for p, _ in ahead.pending} if ahead else set()
                batch = [i for i in graph.queue.next_batch(BATCH + len(taken)) if i.passage not in taken]
                if not batch:
                    break
                pending = self._extract_batch(batch, run, ahead)
                if ahead is not None and ahead.written:
                    ahead = None  # a slow extraction wrote it already
                exclude = set(ahead.names) if ahead else set()
                names = self._new_names(pending, exclude)
                nxt = _Embedding(pending, names, pool.submit(self.encode_names, names) if names else None)
                if ahead is not None:
                    self._write_embedded(ahead, run)
                ahead = nxt
            if ahead is not None:
                self._write_embedded(ahead, run)

    def _extract_batch(self, batch: list, run: GraphRun, ahead: "_Embedding | None") -> list[tuple[Passage, Extraction]]:
        report = run.report
        pending: list[tuple[Passage, Extraction]] = []
        since = time.perf_counter()
        for item in batch:
            if run.stop_requested():
                report.stopped = True
                break
            found = self.store.docs.passages([item.passage])
            if not found:
                continue  # deleted since it was queued: the cascade removed its queue row
            p = found[0]
            started = time.perf_counter()
            try:
                ex: Extraction | None = self.extract(p)
            except CALL_ERRORS as exc:
                ex = self.call_failed(p, exc, run)
            self.timings.add("extract", time.perf_counter() - started)
            if ex is not None:
                pending.append((p, ex))
            if run.outage is not None:
                break
            # slow (model) extractions are written at once, so a kill loses at most a second of model work
            if time.perf_counter() - since >= FLUSH_AFTER_S:
                if ahead is not None and not ahead.written:
                    self._write_embedded(ahead, run)
                self.write_all(pending, run)
                since = time.perf_counter()
        return pending

    def _write_embedded(self, job: "_Embedding", run: GraphRun) -> None:
        started = time.perf_counter()
        vectors = dict(zip(job.names, job.future.result())) if job.future is not None else {}
        self.timings.add("embed_wait", time.perf_counter() - started)
        self.write_all(job.pending, run, vectors)
        job.written = True

    def write_all(self, pending: list[tuple[Passage, Extraction]], run: GraphRun,
                  vectors: dict[str, np.ndarray] | None = None) -> None:
        """Write the passages in one transaction (each also leaves the queue in it), coref for all
        their new entities computed once at its end; then report progress. Empties ``pending``.
        A kill before the commit leaves every one of them queued, as if never extracted."""
        if not pending:
            return
        report = run.report
        vectors = dict(vectors or {})
        missing = self._new_names(pending, set(vectors))
        if missing:
            vectors.update(zip(missing, self.encode_names(missing)))
        written: list[tuple[Passage, Extraction, int]] = []
        started, coref_before = time.perf_counter(), self.store.graph.coref.seconds
        with self.store.transaction(), self.store.graph.coref.deferred():
            for p, ex in pending:
                if ex.payload is None and run.stop_requested():  # a model's reply is always kept
                    report.stopped = True
                    continue
                added = self.write(p, ex, vectors)
                if added is not None:
                    written.append((p, ex, added))
        for p, _ in pending:
            self._pending_signals.pop(_pending_key(p), None)
        coref = self.store.graph.coref.seconds - coref_before
        self.timings.add("coref", coref)
        self.timings.add("write", time.perf_counter() - started - coref)
        for p, ex, added in written:
            self._count(report, ex, added)
            if run.progress:
                total = report.passages + self.store.graph.queue.length()
                run.progress(GraphProgress(report.passages, total, report.failed, report.fallback, p.location,
                                           time.perf_counter() - run.started))
        pending.clear()
        if time.perf_counter() - self._saved_at >= SAVE_MATRIX_EVERY_S:  # readers meanwhile update from fewer marks
            self.save_matrix()

    def save_matrix(self) -> None:
        """The walk matrix saved at the graph's current version, so a new process loads it."""
        started = time.perf_counter()
        save_entity_graph(self.store)
        self._saved_at = time.perf_counter()
        self.timings.add("matrix", self._saved_at - started)

    def _give_up(self, p: Passage, reason: str) -> Extraction:
        if self.options.extractor == "llm+rules":
            fallback = extract_passage(extraction_text(p), p.title, ExtractorOptions("rules", max_triples=self.options.max_triples))
            return Extraction(fallback.triples, "fallback", reason)
        return Extraction([], "failed", reason)

    @staticmethod
    def _count(report: GraphReport, ex: Extraction, added: int) -> None:
        report.passages += 1
        report.facts_added += added
        report.failed += ex.status == "failed"
        report.fallback += ex.status == "fallback"
        report.llm_calls += ex.calls
        report.cached += ex.from_cache
        report.prompt_tokens += ex.prompt_tokens
        report.cached_tokens += ex.cached_tokens
        report.completion_tokens += ex.completion_tokens
        for reason, n in ex.rejected.items():
            report.rejected[reason] = report.rejected.get(reason, 0) + n
