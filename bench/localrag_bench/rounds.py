"""The memory-rounds protocol (ReMindRAG's same / similar / different queries) over one index.

The selected questions (after ``--ids`` / ``--limit``) are split in two: set A is the
first ⌈n/2⌉, set B the rest. For each strategy, on its own fresh memory (reset before
``first``), the rounds run in the order given:

- ``first``: ask A with memory on (read and written: the memories are learned here);
- ``same``: ask A again, memory on;
- ``similar``: ask A reworded (a deterministic carrier phrase, see :func:`reword`), memory on;
- ``different``: ask B (other questions over the same corpus) with what A taught, memory on;
- ``different-nomem``: ask B with memory off (neither read nor written): the control for
  "recall on different questions not lower than with memory off".

A round named twice (``first,same,same``) is labelled ``same``, ``same-2``, ... The
query-entity (NER) cache is cleared before every round unless asked otherwise, so a
repeat's savings are memory's alone and not the cache's.
"""

from __future__ import annotations

import contextlib
import dataclasses
import math
from dataclasses import dataclass
from typing import Any, Iterator, Sequence

from localrag.api import Assistant, Index
from localrag_bench.data import Question
from localrag_bench.results import (
    BenchResult, MemoryConfig, MemoryCounts, QuestionRecord, RoundsInfo, RoundStat, StrategySummary, relative_change,
    summarise,
)
from localrag_bench.runner import (
    BenchError, BenchSpec, ProgressSink, RecordSink, RunOptions, build_result, check_strategies, open_index,
    run_questions,
)
from localrag.embed import Embedder

ROUND_NAMES = ("first", "same", "similar", "different", "different-nomem")
DEFAULT_ROUNDS = "first,same,different,different-nomem"
MEMORY_STRATEGIES = ("neuropath", "remind")  # the strategies that read and write edge memories
SPLIT = "A = the first ceil(n/2) selected questions (after --ids/--limit), B = the rest"

_MEMORY_OFF = ("--rounds measures edge memory, but memory.enabled is off (--no-memory, --set, the environment or "
               "a config file); round `different-nomem` is the memory-off control")
_WH_WORDS = {"what", "which", "who", "whom", "whose", "where", "when", "why", "how"}


@dataclass(frozen=True)
class RoundPlan:
    label: str  # as recorded: the round name, "-2", "-3" ... on a repeat
    name: str  # one of ROUND_NAMES
    question_set: str  # "A" or "B"
    memory: bool  # read and written (True) or neither (False)
    reworded: bool = False


_PLANS = {
    "first": ("A", True, False),
    "same": ("A", True, False),
    "similar": ("A", True, True),
    "different": ("B", True, False),
    "different-nomem": ("B", False, False),
}


def parse_rounds(spec: str) -> list[RoundPlan]:
    """``first,same,different`` -> plans; ``first`` must come first, once."""
    names = [n.strip().lower() for n in str(spec).split(",")]
    if not any(names):
        raise BenchError(f"--rounds needs round names, e.g. {DEFAULT_ROUNDS}")
    unknown = [n or "(empty)" for n in names if n not in ROUND_NAMES]
    if unknown:
        raise BenchError(f"unknown round {', '.join(unknown)} in --rounds {spec!r}; choose from: {', '.join(ROUND_NAMES)}")
    if names[0] != "first" or names.count("first") > 1:
        raise BenchError(f"--rounds must start with `first` (memory is reset and learned there) and name it once, "
                         f"got {spec!r}")
    plans: list[RoundPlan] = []
    seen: dict[str, int] = {}
    for name in names:
        seen[name] = seen.get(name, 0) + 1
        label = name if seen[name] == 1 else f"{name}-{seen[name]}"
        question_set, memory, reworded = _PLANS[name]
        plans.append(RoundPlan(label, name, question_set, memory, reworded))
    return plans


def split_sets(questions: Sequence[Question]) -> tuple[list[Question], list[Question]]:
    """A = the first ⌈n/2⌉ questions, B = the rest (deterministic: the order of --ids / the data set)."""
    half = math.ceil(len(questions) / 2)
    return list(questions[:half]), list(questions[half:])


def reword(text: str) -> str:
    """A deterministic rewording with the same entities: "Where was X?" -> "Could you tell me where was X?".

    It changes the wording the model and the query vector see, not the meaning: a cheap,
    weak stand-in for the paper's GPT-4o paraphrases.
    """
    t = " ".join(text.split())
    first, _, rest = t.partition(" ")
    if first.lower() in _WH_WORDS and rest:
        return f"Could you tell me {first.lower()} {rest.rstrip('?').rstrip()}?"
    return f"Please answer this question: {t}"


def _questions(plan: RoundPlan, set_a: list[Question], set_b: list[Question]) -> list[Question]:
    chosen = set_a if plan.question_set == "A" else set_b
    if plan.reworded:
        return [dataclasses.replace(q, question=reword(q.question)) for q in chosen]
    return chosen


def check_plans(plans: Sequence[RoundPlan], set_a: Sequence[Question], set_b: Sequence[Question]) -> None:
    if not set_a:
        raise BenchError("--rounds needs at least one question")
    if not set_b and any(p.question_set == "B" for p in plans):
        raise BenchError(f"round `different` needs set B, the second half of the questions: only {len(set_a)} "
                         "question(s) selected; select at least 2 (--limit / --ids)")


@contextlib.contextmanager
def memory_switched(assistant: Assistant, enabled: bool) -> Iterator[None]:
    """Ask with memory on or off (``memory.enabled``) without touching the index's own settings."""
    saved = assistant.settings
    assistant.settings = dataclasses.replace(saved, memory=dataclasses.replace(saved.memory, enabled=enabled))
    try:
        yield
    finally:
        assistant.settings = saved


def memory_counts(index: Index) -> MemoryCounts:
    st = index.store.memory.stats()
    return MemoryCounts(st.reinforced, st.queries_learned, st.updates)


def memory_config(index: Index) -> MemoryConfig:
    m = index.settings.memory
    return MemoryConfig(m.penalty, m.alpha, m.lam, m.knn_recall, m.knn_k, m.max_depth, m.skip_above)


@dataclass
class ProtocolRun:
    records: list[QuestionRecord]
    stats: list[RoundStat]


def run_protocol(assistant: Assistant, strategies: Sequence[str], plans: Sequence[RoundPlan],
                 set_a: list[Question], set_b: list[Question], options: RunOptions, *,
                 clear_query_cache: bool = True, on_record: RecordSink | None = None) -> ProtocolRun:
    """Every round for each strategy in turn; memory reset before each strategy's ``first``."""
    check_plans(plans, set_a, set_b)
    store = assistant.index.store
    records: list[QuestionRecord] = []
    stats: list[RoundStat] = []
    for strategy in strategies:
        for plan in plans:
            if plan.name == "first":
                store.memory.reset()
            if clear_query_cache:
                with store.transaction():
                    store.cache.clear("ner")
            questions = _questions(plan, set_a, set_b)
            before = memory_counts(assistant.index)
            with memory_switched(assistant, plan.memory):
                got = run_questions(assistant, questions, strategy, options, plan.label, on_record)
            records += got
            stats.append(RoundStat(strategy, plan.label, plan.question_set, "on" if plan.memory else "off",
                                   len(got), before, memory_counts(assistant.index)))
    fill_changes(stats, summarise(records))
    return ProtocolRun(records, stats)


def fill_changes(stats: Sequence[RoundStat], summaries: Sequence[StrategySummary]) -> None:
    """Each round's relative change in tokens and calls per question against its strategy's ``first``."""
    by_key = {(s.strategy, s.round): s for s in summaries}
    for st in stats:
        first, this = by_key.get((st.strategy, "first")), by_key.get((st.strategy, st.round))
        if first is None or this is None:
            continue
        st.tokens_change_vs_first = relative_change(this.tokens_per_q, first.tokens_per_q)
        st.calls_change_vs_first = relative_change(this.llm_calls_per_q, first.llm_calls_per_q)


def run_rounds(spec: BenchSpec, plans: Sequence[RoundPlan], *, embedder: Embedder | None = None, llm: Any = None,
               clear_query_cache: bool = True, on_record: RecordSink | None = None,
               on_progress: ProgressSink | None = None) -> BenchResult:
    """The protocol on the data set's index; the result carries per-round summaries and :class:`RoundsInfo`."""
    strategies = check_strategies(spec.strategies)
    spec.options.doc_of = spec.dataset.doc_of
    set_a, set_b = split_sets(spec.dataset.questions)
    check_plans(plans, set_a, set_b)
    if str(spec.overrides.get("memory.enabled", "true")).strip().lower() in {"false", "0", "no", "off"}:
        raise BenchError(_MEMORY_OFF)
    index, info, machine = open_index(spec, strategies, embedder, on_progress)
    try:
        if not index.settings.memory.enabled:
            raise BenchError(_MEMORY_OFF)
        assistant = Assistant(index, llm=llm)
        for plan in plans:  # memoised query vectors: per-question ms compare rounds, not MiniLM
            for q in _questions(plan, set_a, set_b):
                index.embedder.encode_one(q.question)
        run = run_protocol(assistant, strategies, plans, set_a, set_b, spec.options,
                           clear_query_cache=clear_query_cache, on_record=on_record)
        model = assistant.model_source if spec.options.answer or any(r.llm_calls for r in run.records) else ""
        config = memory_config(index)
    finally:
        index.close()
    result = build_result(spec, strategies, info, machine, run.records, model)
    result.rounds = RoundsInfo(
        rounds=[p.label for p in plans], split=SPLIT, set_a=[q.id for q in set_a], set_b=[q.id for q in set_b],
        memory=config, reset="memory reset (every edge memory and the memory log) before each strategy's `first`",
        query_cache="query-entity (NER) cache cleared before every round" if clear_query_cache
        else "query-entity (NER) cache kept between rounds (a repeat may skip NER for that reason alone)",
        stats=run.stats,
    )
    plain = [s for s in strategies if s not in MEMORY_STRATEGIES]
    if plain:
        result.notes.append(f"{', '.join(plain)} read(s) no edge memory: those rounds differ only by question set")
    return result


def rounds_for(plans: Sequence[RoundPlan], n_questions: int) -> int:
    """Questions asked per strategy by these rounds (for a progress bar)."""
    a = math.ceil(n_questions / 2)
    return sum(a if p.question_set == "A" else n_questions - a for p in plans)
