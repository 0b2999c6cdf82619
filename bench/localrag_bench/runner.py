"""Run a data set's questions through localrag's real pipeline and score them.

``prepare_index`` materialises the corpus as notes and syncs them into an index (an
unchanged corpus costs ~nothing on a re-run); ``run_questions`` asks a list of
questions of one Assistant with one strategy and returns a record per question. A
multi-round protocol (ask, ask the same again, ask others: memory replay) is a loop
over ``run_questions`` with a different ``round_label`` and question list each time.
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
import hashlib
import inspect
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence

import random

from localrag.answer import Answer, short_answer
from localrag.answer.flow import compose
from localrag.answer.spans import NOT_IN_NOTES
from localrag.api import Assistant, Index
from localrag_bench.data import Dataset, Question, default_work_dir, doc_id_of, materialise
from localrag_bench.metrics import exact_match, f1_score, normalize_answer, recall_at_k
from localrag_bench.notes_metrics import score_notes
from localrag_bench.notes_set import mirror_notes
from localrag_bench.reference import references
from localrag_bench.results import (
    RECALL_KS, BenchResult, IndexInfo, MachineInfo, QuestionRecord, machine_info, summarise,
)
from localrag.config import load_settings
from localrag.embed import Embedder
from localrag.embedders import is_default
from localrag.ingest.sync import Progress
from localrag.records import LLMCallRecord, Trace
from localrag.retrieve import strategy_names

# strategies that read the knowledge graph: the index must extract it first
GRAPH_STRATEGIES = ("ppr", "graph", "neuropath", "remind")


@dataclass
class RunOptions:
    k: int = 5  # the largest recall cut-off reported (recall@2 and @5 always)
    depth: int = 0  # passages asked of the retriever; 0 = 2·k, so merged passages still leave k documents
    answer: bool = False  # answer with the LLM (by question shape) and score EM/F1
    free_too: bool = True  # with answer: also the old free generation on the same retrieval, side by side
    drop_gold: bool = False  # index the corpus without the asked questions' gold passages (abstention)
    doc_of: Callable[[str], int | None] = doc_id_of  # a passage's note path -> its corpus doc id (Dataset.doc_of)

    @property
    def retrieval_depth(self) -> int:
        return self.depth or 2 * self.k

    @property
    def recall_ks(self) -> tuple[int, ...]:
        return tuple(sorted({*RECALL_KS, self.k}))


@dataclass
class BenchSpec:
    dataset: Dataset
    strategies: list[str]
    options: RunOptions = field(default_factory=RunOptions)
    work_dir: Path | None = None
    overrides: dict[str, Any] = field(default_factory=dict)  # settings flags (model, llm url, ...)
    command: str = ""
    env: dict[str, str] | None = None  # settings environment; None = os.environ
    config_file: str | None = None  # an extra TOML settings file (--config)


RecordSink = Callable[[QuestionRecord], None]
ProgressSink = Callable[[Progress], None]


class BenchError(ValueError):
    """The benchmark cannot run as asked (unknown strategy, bad option)."""


def check_strategies(names: Sequence[str]) -> list[str]:
    known = strategy_names()
    wanted = [n.strip() for n in names if n.strip()]
    unknown = [n for n in wanted if n not in known]
    if unknown or not wanted:
        raise BenchError(f"unknown strategy {', '.join(unknown) or '(none)'}; choose from: {', '.join(known)}")
    return list(dict.fromkeys(wanted))


def prepare_index(dataset: Dataset, work_dir: Path, overrides: dict[str, Any], embedder: Embedder | None = None,
                  progress: ProgressSink | None = None, env: dict[str, str] | None = None,
                  config_file: str | None = None) -> tuple[Index, IndexInfo]:
    """Notes for the corpus under ``work_dir/notes``, indexed into ``work_dir/index.db``."""
    notes_dir = work_dir / "notes"
    settings = load_settings(notes_dir, {**overrides, "db": str(work_dir / "index.db")}, env=env,
                             config_file=config_file)  # a bad setting fails before anything is written
    if embedder is None and not is_default(settings):  # one index file per embedder beside the same notes
        settings.db = str(work_dir / f"index-{Path(settings.index.embedder).stem}.db")
    if dataset.source_notes is not None:
        written = mirror_notes(dataset.source_notes, notes_dir, dataset.source_paths)
    else:
        written = materialise(dataset.corpus, notes_dir)
    index = Index(settings, embedder)
    report = index.sync(progress)
    status = index.status()
    info = IndexInfo(str(work_dir), str(notes_dir), str(settings.db_path), status.documents, status.passages,
                     written.written, round(report.seconds, 3), report.changed)
    return index, info


def ensure_graph(index: Index, strategies: Sequence[str], progress: Callable[[Any], None] | None = None) -> str:
    """Extract the knowledge graph when a strategy reads it and the Index can build one."""
    if not any(s in GRAPH_STRATEGIES for s in strategies):
        return "not needed"
    extract = getattr(index, "extract_graph", None)
    if extract is None:
        return "not available: this Index has no extract_graph (graph strategies use whatever graph exists)"
    started = time.perf_counter()
    if progress is not None and "progress" in inspect.signature(extract).parameters:
        outcome = extract(progress=progress)
    else:
        outcome = extract()
    return f"extracted in {time.perf_counter() - started:.1f} s" + (f" ({_describe(outcome)})" if outcome else "")


def _describe(outcome: Any) -> str:
    """A report dataclass as `name value` pairs of its numbers (anything else as text)."""
    if dataclasses.is_dataclass(outcome):
        pairs = [(f.name, getattr(outcome, f.name)) for f in dataclasses.fields(outcome)]
        return ", ".join(f"{name} {value:g}" if isinstance(value, float) else f"{name} {value}"
                         for name, value in pairs if isinstance(value, (int, float)))
    return str(outcome)[:300]


def _calls_summary(calls: Sequence[LLMCallRecord]) -> tuple[int, int, dict[str, int], dict[str, int]]:
    by_calls: dict[str, int] = {}
    by_tokens: dict[str, int] = {}
    for c in calls:
        by_calls[c.phase] = by_calls.get(c.phase, 0) + 1
        by_tokens[c.phase] = by_tokens.get(c.phase, 0) + c.total_tokens
    return (sum(c.prompt_tokens for c in calls), sum(c.completion_tokens for c in calls), by_calls, by_tokens)


# the free answer is scored on its first line: 64 tokens hold it, and a rambling small model
# would otherwise spend minutes per question on text EM never reads
FREE_MAX_TOKENS = 64


def gold_in_evidence(evidence_texts: Sequence[str], answers: Sequence[str]) -> bool | None:
    """A gold answer, SQuAD-normalised, inside one of the shown evidence sentences (None: no gold / yes-no)."""
    golds = [normalize_answer(a) for a in answers if normalize_answer(a) not in ("", "yes", "no")]
    if not golds:
        return None
    shown = [f" {normalize_answer(t)} " for t in evidence_texts]
    return any(f" {g} " in s for g in golds for s in shown)


def _score_answer(record: QuestionRecord, result: Answer, question: Question) -> None:
    record.answer = result.text
    record.prediction = NOT_IN_NOTES if result.abstained else (result.span or short_answer(result.text))
    record.em = exact_match(record.prediction, question.answers)
    record.f1 = f1_score(record.prediction, question.answers)
    record.question_type = result.shape.qtype if result.shape else ""
    record.answer_mode = result.mode
    record.choices = result.choices
    record.abstained, record.abstain_reason = result.abstained, result.abstain_reason
    record.evidence = [e.to_json() for e in result.shown_evidence]
    record.evidence_score = round(max(e.similarity for e in result.evidence), 4) if result.evidence else None
    record.gold_in_evidence = gold_in_evidence([e.plain for e in result.shown_evidence], question.answers)
    record.evidence_ms = None if result.evidence_ms is None else round(result.evidence_ms, 2)
    record.first_token_ms = None if result.first_token_ms is None else round(result.first_token_ms, 2)
    if result.choice_texts:
        record.random_prediction = random.Random(question.id).choice(result.choice_texts)
        record.random_em = exact_match(record.random_prediction, question.answers)
        record.ranked_prediction = next((t for t in result.choice_texts if t != NOT_IN_NOTES), NOT_IN_NOTES)
        record.ranked_em = exact_match(record.ranked_prediction, question.answers)
    record.decided = bool(result.decided)
    record.picked_by = result.picked_by
    score_notes(record, result, question.answers)


def _free_answer(assistant: Assistant, record: QuestionRecord, result: Answer, question: Question) -> None:
    """The old free generation (short prompt) on the same retrieval, scored beside the constrained one."""
    started = time.perf_counter()
    free = compose(assistant.llm, assistant.index.embedder, question.question, result.retrieval,
                   assistant.settings.answer, n_passages=assistant.settings.answer.passages,
                   max_tokens=min(assistant.settings.llm.answer_max_tokens, FREE_MAX_TOKENS), since=started,
                   emit=lambda e: None,
                   mode="free", short_prompt=True, on_token=lambda t: None)
    record.free_answer = free.text
    record.free_prediction = short_answer(free.text)
    record.free_em = exact_match(record.free_prediction, question.answers)
    record.free_f1 = f1_score(record.free_prediction, question.answers)
    record.free_first_token_ms = None if free.first_token_ms is None else round(free.first_token_ms, 2)
    record.free_answer_ms = round((time.perf_counter() - started) * 1000, 2)


def ask_one(assistant: Assistant, question: Question, strategy: str, options: RunOptions, round_label: str = "") -> QuestionRecord:
    """One question: retrieval (and the answers with ``options.answer``), scored. Never raises."""
    record = QuestionRecord(question.id, question.question, strategy, list(question.gold_doc_ids), [], {},
                            round=round_label, gold_answers=list(question.answers) if options.answer else [],
                            kind=question.kind)
    started, cpu_started = time.perf_counter(), time.process_time()
    try:
        if options.answer:
            result = assistant.ask(question.question, strategy=strategy, k=options.retrieval_depth,
                                   on_token=lambda t: None)  # streamed, so the first token is timed
            retrieval, calls = result.retrieval, result.calls
            _score_answer(record, result, question)
            record.retrieve_ms, record.answer_ms = result.retrieve_ms, result.answer_ms
            record.ms = round(result.total_ms, 2)
            if options.free_too:
                _free_answer(assistant, record, result, question)
        else:
            retrieval = assistant.retrieve(question.question, strategy, options.retrieval_depth)
            calls = retrieval.trace.calls
            record.retrieve_ms = (time.perf_counter() - started) * 1000
    except Exception as exc:  # one bad question is a recorded failure, never the end of the run
        record.error = f"{type(exc).__name__}: {exc}"[:500]
        record.recall = {str(k): 0.0 for k in options.recall_ks} if question.gold_doc_ids else {}
        if options.answer:
            record.em = record.f1 = 0.0
        record.ms = (time.perf_counter() - started) * 1000
        return record
    if not record.ms:  # with --answer: the constrained answer's own total, the free one is timed apart
        record.ms = round((time.perf_counter() - started) * 1000, 2)
    record.cpu_ms = round((time.process_time() - cpu_started) * 1000, 2)
    record.retrieve_ms, record.answer_ms = round(record.retrieve_ms, 2), round(record.answer_ms, 2)
    ranked = [options.doc_of(sp.passage.path) for sp in retrieval.passages]
    record.passages_retrieved = len(ranked)
    distinct = list(dict.fromkeys(d for d in ranked if d is not None))
    record.retrieved_doc_ids = distinct[:options.retrieval_depth]
    for k in options.recall_ks:
        value = recall_at_k(distinct, question.gold_doc_ids, k)
        if value is not None:
            record.recall[str(k)] = value
    record.prompt_tokens, record.completion_tokens, record.calls_by_phase, record.tokens_by_phase = _calls_summary(calls)
    record.llm_calls = len(calls)
    record.memory = memory_figures(retrieval.trace)
    record.tracking = tracking_summary(retrieval.trace)
    return record


def tracking_summary(trace: Trace) -> dict:
    """A record's ``tracking``: what each step handed to the final ranking (``TraceEvent.ranking_inputs``:
    NeuroPath's seeds and completion inputs, remind's walked passages, ``collected``); {} for other strategies.

    Kept in result files so other fusions can be replayed offline (``neuropath_replay.completion_input``
    reads NeuroPath's back; scripts/neuropath_refuse.py, scripts/keep_top_replay.py).
    """
    out: dict = {}
    for step in trace.steps:
        out.update(step.ranking_inputs())
    return out


MEMORY_FIGURES = ("recalled_edges", "from_knn", "skipped_rounds", "tokens_saved_est", "enhanced", "penalised")


def memory_figures(trace: Trace) -> dict[str, int]:
    """The numbers of a trace's memory step(s) (``TraceEvent.memory_figures``); {} when the strategy
    neither read nor wrote memory."""
    out: dict[str, int] = {}
    for step in trace.steps:
        numbers = step.memory_figures()
        if not numbers:
            continue
        for name in MEMORY_FIGURES:
            out[name] = out.get(name, 0) + int(numbers.get(name, 0))
    return out


def run_questions(assistant: Assistant, questions: Sequence[Question], strategy: str, options: RunOptions,
                  round_label: str = "", on_record: RecordSink | None = None) -> list[QuestionRecord]:
    """Ask every question with one strategy; the unit a memory-round protocol repeats."""
    records: list[QuestionRecord] = []
    for q in questions:
        record = ask_one(assistant, q, strategy, options, round_label)
        records.append(record)
        if on_record is not None:
            on_record(record)
    return records


def open_index(spec: BenchSpec, strategies: Sequence[str], embedder: Embedder | None = None,
               on_progress: ProgressSink | None = None) -> tuple[Index, IndexInfo, MachineInfo]:
    """The data set's index, synced, with its graph when a strategy reads one (the caller closes it)."""
    if spec.options.k < 1:
        raise BenchError("--k must be at least 1")
    machine = machine_info()
    dataset = without_gold(spec.dataset) if spec.options.drop_gold else spec.dataset
    work_dir = (spec.work_dir or default_work_dir(dataset)).expanduser().resolve()
    index, info = prepare_index(dataset, work_dir, spec.overrides, embedder, on_progress, spec.env,
                                spec.config_file)
    try:
        info.graph = ensure_graph(index, strategies, on_progress)
    except BaseException:
        index.close()
        raise
    return index, info, machine


def without_gold(dataset: Dataset) -> Dataset:
    """The data set with every asked question's gold passages left out of the corpus (its own cache folder)."""
    gold = {d for q in dataset.questions for d in q.gold_doc_ids}
    digest = hashlib.sha256(",".join(map(str, sorted(gold))).encode()).hexdigest()[:8]
    return dataclasses.replace(dataset, corpus=[p for p in dataset.corpus if p.doc_id not in gold],
                               corpus_sha=f"{dataset.corpus_sha[:10]}-nogold{digest}", name=f"{dataset.name}-nogold")


def run_bench(spec: BenchSpec, *, embedder: Embedder | None = None, llm: Any = None,
              on_record: RecordSink | None = None, on_progress: ProgressSink | None = None) -> BenchResult:
    strategies = check_strategies(spec.strategies)
    spec.options.doc_of = spec.dataset.doc_of
    index, info, machine = open_index(spec, strategies, embedder, on_progress)
    try:
        assistant = Assistant(index, llm=llm)
        for q in spec.dataset.questions:  # memoised query vectors: per-question ms compare strategies, not MiniLM
            index.embedder.encode_one(q.question)
        records: list[QuestionRecord] = []
        for strategy in strategies:
            records += run_questions(assistant, spec.dataset.questions, strategy, spec.options, on_record=on_record)
        model = assistant.model_source if spec.options.answer or any(r.llm_calls for r in records) else ""
    finally:
        index.close()
    return build_result(spec, strategies, info, machine, records, model)


def build_result(spec: BenchSpec, strategies: list[str], info: IndexInfo, machine: MachineInfo,
                 records: list[QuestionRecord], model: str = "") -> BenchResult:
    """The result of any protocol over one index (one pass, or rounds labelled in the records)."""
    machine.load_after = [round(x, 2) for x in os.getloadavg()]
    notes = []
    if spec.dataset.missing_ids:
        notes.append(f"{len(spec.dataset.missing_ids)} ids of {spec.dataset.ids_file} are not questions of this set")
    errors = sum(1 for r in records if r.error)
    if errors:
        notes.append(f"{errors} question(s) failed; their error is in the record and they score 0")
    thresholds = _abstain_thresholds(spec)
    return BenchResult(
        dataset=spec.dataset.name, data_dir=str(spec.dataset.folder), ids_file=spec.dataset.ids_file,
        questions=len(spec.dataset.questions), corpus_passages=len(spec.dataset.corpus), strategies=strategies,
        k=spec.options.k, depth=spec.options.retrieval_depth, answer=spec.options.answer, command=spec.command,
        created=_dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"), index=info, machine=machine,
        model=model, missing_ids=spec.dataset.missing_ids, reference=references(spec.dataset),
        summaries=summarise(records), records=records, notes=notes, drop_gold=spec.options.drop_gold,
        abstain_below=thresholds[0], abstain_unnamed_below=thresholds[1],
    )


def _abstain_thresholds(spec: BenchSpec) -> tuple[float, float]:
    """answer.abstain_below and answer.abstain_unnamed_below of the run (0, 0 if the settings do not load)."""
    try:
        answer = load_settings(None, spec.overrides, env=spec.env or {}, config_file=spec.config_file).answer
    except Exception:  # only a label on the result
        return 0.0, 0.0
    return answer.abstain_below, answer.abstain_unnamed_below
