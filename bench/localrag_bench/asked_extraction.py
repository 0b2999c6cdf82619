"""The model's graph on the passages questions asked for, against the rules graph (`bench --extract-asked N`).

What a user with a model gets: every question's retrieved passages jump the graph queue
(``index.queue_asked_first``), the graph phase extracts them with the model (``auto`` is
``llm+rules`` with a model above the bundled one), and the next question reads a graph
that holds the model's facts where it was asked. The protocol, on one rules-built index:

1. ``graph`` on every question (the rules graph): the baseline records, strategy ``graph``;
2. a copy of the index; each question's first N retrieved passages (best first) queued on it;
3. the graph phase on the copy with ``llm+rules`` and the run's model, timed, calls and tokens counted;
4. ``graph`` on every question again on the copy: strategy ``graph+asked``.

The bench's own index is never written: the copy (SQLite's backup) is ``WORK/asked-llm-N.db``.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Sequence

from localrag.api import Assistant, Index
from localrag.config import load_settings
from localrag.llm.discovery import discover
from localrag_bench.data import Question
from localrag_bench.results import AskedExtraction, BenchResult
from localrag_bench.runner import (
    BenchSpec, ProgressSink, RecordSink, build_result, open_index, run_questions,
)
from localrag_bench.workdir import remove_db

BASE = "graph"
ASKED = "graph+asked"  # the strategy label of the second pass (graph, on the copy with the model's facts)
EXTRACTOR = "llm+rules"  # what `auto` resolves to with a model above the bundled one


def asked_passages(assistant: Assistant, questions: Sequence[Question], top: int, depth: int) -> list[int]:
    """Each question's first ``top`` retrieved passages (``graph``, the depth the bench retrieves), in order,
    without repeats: what ``queue_asked_first`` moves to the front of the queue."""
    ids: list[int] = []
    for q in questions:
        ids += [sp.passage.id for sp in assistant.retrieve(q.question, BASE, depth).passages[:top]]
    return list(dict.fromkeys(ids))


def extract_on_copy(spec: BenchSpec, index: Index, passages: Sequence[int], top: int) -> tuple[Index, AskedExtraction]:
    """A copy of ``index`` with ``passages`` extracted by the run's model (the caller closes the copy)."""
    db = Path(index.settings.db_path).with_name(f"asked-llm-{top}.db")
    remove_db(db)
    index.store.copy_to(db)
    overrides = {**spec.overrides, "db": str(db), "index.extractor": EXTRACTOR}
    settings = load_settings(index.folder, overrides, env=spec.env, config_file=spec.config_file)
    copy = Index(settings, index.embedder)
    try:
        queued = copy.store.graph.queue.enqueue(passages)
        started, cpu = time.perf_counter(), time.process_time()
        report = copy.extract_graph(progress=lambda p: None)
        figures = AskedExtraction(
            top=top, model=discover(settings.llm.index_model or settings.llm.model).name, passages=queued,
            extracted=report.passages, extractor=report.extractor, llm_calls=report.llm_calls,
            cached=report.cached, prompt_tokens=report.prompt_tokens, completion_tokens=report.completion_tokens,
            facts_added=report.facts_added, failed=report.failed, fallback=report.fallback,
            seconds=round(time.perf_counter() - started, 1), cpu_seconds=round(time.process_time() - cpu, 1),
            load_after=round(os.getloadavg()[0], 2),
        )
    except BaseException:
        copy.close()
        raise
    return copy, figures


def run_asked_extraction(spec: BenchSpec, top: int, on_record: RecordSink | None = None,
                         on_progress: ProgressSink | None = None) -> BenchResult:
    """The protocol of the module docstring on ``spec``'s questions; ``top`` passages a question go to the model."""
    spec.options.doc_of = spec.dataset.doc_of
    spec.overrides = {**spec.overrides, "index.extractor": "rules"}  # the baseline graph is the rules one
    index, info, machine = open_index(spec, [BASE], on_progress=on_progress)
    try:
        assistant = Assistant(index)
        questions = spec.dataset.questions
        for q in questions:  # memoised query vectors: per-question ms compare the graphs, not MiniLM
            index.embedder.encode_one(q.question)
        records = run_questions(assistant, questions, BASE, spec.options, on_record=on_record)
        passages = asked_passages(assistant, questions, top, spec.options.retrieval_depth)
        copy, figures = extract_on_copy(spec, index, passages, top)
        try:
            after = run_questions(Assistant(copy), questions, BASE, spec.options)
        finally:
            copy.close()
        for record in after:
            record.strategy = ASKED
            if on_record is not None:
                on_record(record)
    finally:
        index.close()
    result = build_result(spec, [BASE, ASKED], info, machine, records + after, figures.model)
    result.asked_extraction = figures
    return result
