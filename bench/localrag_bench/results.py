"""What a benchmark run produces: per-question records, per-strategy summaries, the JSON file.

Records carry a ``round`` label so a multi-round protocol (memory replay: same /
different / similar questions) is the same data with more labels; summaries are
grouped by (strategy, round). A rounds run also carries :class:`RoundsInfo`: the
protocol, its question sets, the memory settings used and what memory held per round.
"""

from __future__ import annotations

import dataclasses
import json
import os
import platform
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

from localrag_bench.metrics import mean, percentile

RECALL_KS = (2, 5)
RESULT_VERSION = 1


@dataclass
class QuestionRecord:
    id: str
    question: str
    strategy: str
    gold_doc_ids: list[int]
    retrieved_doc_ids: list[int]  # distinct documents in rank order (passages merged at their best rank)
    recall: dict[str, float]  # "2" -> recall@2, "5" -> recall@5
    round: str = ""  # "" for a single pass; memory rounds label theirs
    passages_retrieved: int = 0
    answer: str = ""
    prediction: str = ""  # short_answer(answer): what EM/F1 score
    gold_answers: list[str] = field(default_factory=list)
    em: float | None = None
    f1: float | None = None
    llm_calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    calls_by_phase: dict[str, int] = field(default_factory=dict)
    tokens_by_phase: dict[str, int] = field(default_factory=dict)
    retrieve_ms: float = 0.0
    answer_ms: float = 0.0
    ms: float = 0.0
    cpu_ms: float = 0.0  # process CPU time (all threads): stable when the machine is busy, unlike ms
    error: str = ""
    # the strategy's memory step (recalled_edges, skipped_rounds, enhanced, penalised, ...); {} = memory not used
    memory: dict[str, int] = field(default_factory=dict)
    # neuropath: what tracking left for completion (seeds, path documents, chain, requirement,
    # fallback), so other fusions can be replayed offline (scripts/neuropath_refuse.py)
    tracking: dict[str, Any] = field(default_factory=dict)
    # --answer (localrag/answer/): the constrained answer above (answer, prediction, em, f1), and beside it
    question_type: str = ""  # localrag.answer.shape: who / when / where / how many / which / what / choice / yesno / open
    answer_mode: str = ""  # "short" (grammar-constrained span) | "open" | "free"
    choices: int = 0  # spans the grammar admitted
    random_prediction: str = ""  # a uniformly random choice among them (seeded by question id)
    random_em: float | None = None
    ranked_prediction: str = ""  # the best choice by the no-model ranking: the answer without the model's pick
    ranked_em: float | None = None
    decided: bool = False  # a comparison the notes' dates decided (no model call)
    picked_by: str = ""  # a short answer's: "dates" | "ranking" (no model call) | "model"
    free_answer: str = ""  # the old free generation (short prompt), on the same retrieval
    free_prediction: str = ""
    free_em: float | None = None
    free_f1: float | None = None
    abstained: bool = False
    abstain_reason: str = ""
    evidence: list[dict[str, Any]] = field(default_factory=list)  # the shown evidence sentences
    evidence_score: float | None = None  # cosine of the best evidence sentence
    gold_in_evidence: bool | None = None  # a gold answer (normalised) inside the shown evidence sentences
    evidence_ms: float | None = None  # since the question was asked
    first_token_ms: float | None = None
    free_first_token_ms: float | None = None
    free_answer_ms: float = 0.0
    # the notes suite (bench/localrag_bench/notes_suite.py): the question's kind and where its gold answer shows
    kind: str = ""  # fact / howto / two-notes / unanswerable ("" for the QA sets)
    evidence_hit1: bool | None = None  # a gold answer inside the first shown evidence sentence (None: no gold)
    evidence_hit3: bool | None = None  # ... inside one of the first three
    answer_shown: str = ""  # what the user reads as the answer: the short answer and the sentence shown with it
    answer_hit: bool | None = None  # a gold answer inside answer_shown
    answer_grounded: bool | None = None  # the short answer is a span of the cited sentence it is shown with

    @property
    def tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens


@dataclass
class AnswerFigures:
    """Answer figures of one strategy over one question type ("all" = every question)."""

    question_type: str
    questions: int
    em: float | None  # constrained (by question shape)
    f1: float | None
    random_em: float | None  # the same constraint, a uniformly random choice
    ranked_em: float | None  # the same constraint, the no-model ranking's first choice
    free_em: float | None  # the old free generation
    free_f1: float | None
    gold_in_evidence: float | None
    gold_in_evidence_r5: float | None  # among questions whose recall@5 is 1
    abstained: float  # share of questions answered "not in your notes"
    evidence_ms_p50: float | None
    evidence_ms_p95: float | None
    first_token_ms_p50: float | None
    first_token_ms_p95: float | None
    ms_p50: float
    ms_p95: float


def _pcts(values: list[float | None]) -> tuple[float | None, float | None]:
    kept = [v for v in values if v is not None]
    return (percentile(kept, 50), percentile(kept, 95)) if kept else (None, None)


def answer_figures(rows: list[QuestionRecord], question_type: str) -> AnswerFigures:
    full = [r for r in rows if r.recall.get("5") == 1.0]
    ev50, ev95 = _pcts([r.evidence_ms for r in rows])
    ft50, ft95 = _pcts([r.first_token_ms for r in rows])
    return AnswerFigures(
        question_type, len(rows), mean(r.em for r in rows), mean(r.f1 for r in rows),
        mean(r.random_em for r in rows), mean(r.ranked_em for r in rows), mean(r.free_em for r in rows),
        mean(r.free_f1 for r in rows),
        mean(None if r.gold_in_evidence is None else float(r.gold_in_evidence) for r in rows),
        mean(None if r.gold_in_evidence is None else float(r.gold_in_evidence) for r in full),
        sum(1 for r in rows if r.abstained) / max(len(rows), 1), ev50, ev95, ft50, ft95,
        percentile([r.ms for r in rows], 50), percentile([r.ms for r in rows], 95),
    )


def answer_breakdown(rows: list[QuestionRecord]) -> list[AnswerFigures]:
    """"all", then one row per question type (most frequent first); [] when nothing was answered."""
    answered = [r for r in rows if r.answer_mode]
    if not answered:
        return []
    types: dict[str, list[QuestionRecord]] = {}
    for r in answered:
        types.setdefault(r.question_type or "?", []).append(r)
    ordered = sorted(types.items(), key=lambda kv: (-len(kv[1]), kv[0]))
    return [answer_figures(answered, "all")] + [answer_figures(v, k) for k, v in ordered]


@dataclass
class StrategySummary:
    strategy: str
    round: str
    questions: int
    errors: int
    recall: dict[str, float | None]
    em: float | None
    f1: float | None
    llm_calls_per_q: float
    tokens_per_q: float
    prompt_tokens_per_q: float
    completion_tokens_per_q: float
    tokens_by_phase_per_q: dict[str, float]
    ms_p50: float
    ms_p95: float
    retrieve_ms_p50: float
    cpu_ms_p50: float = 0.0
    calls_by_phase_per_q: dict[str, float] = field(default_factory=dict)
    memory_per_q: dict[str, float] = field(default_factory=dict)  # memory-step figures per question; {} = none
    answers: list[AnswerFigures] = field(default_factory=list)  # --answer: "all" and per question type


def summarise(records: Iterable[QuestionRecord]) -> list[StrategySummary]:
    """One summary per (strategy, round), in first-seen order."""
    groups: dict[tuple[str, str], list[QuestionRecord]] = {}
    for r in records:
        groups.setdefault((r.strategy, r.round), []).append(r)
    out: list[StrategySummary] = []
    for (strategy, round_label), rows in groups.items():
        n = len(rows)
        ks = sorted({k for r in rows for k in r.recall}, key=int)
        phases = sorted({p for r in rows for p in r.tokens_by_phase})
        call_phases = sorted({p for r in rows for p in r.calls_by_phase})
        memory_keys = sorted({m for r in rows for m in r.memory})
        out.append(StrategySummary(
            strategy=strategy,
            round=round_label,
            questions=n,
            errors=sum(1 for r in rows if r.error),
            recall={k: mean(r.recall.get(k) for r in rows) for k in ks},
            em=mean(r.em for r in rows),
            f1=mean(r.f1 for r in rows),
            llm_calls_per_q=sum(r.llm_calls for r in rows) / n,
            tokens_per_q=sum(r.tokens for r in rows) / n,
            prompt_tokens_per_q=sum(r.prompt_tokens for r in rows) / n,
            completion_tokens_per_q=sum(r.completion_tokens for r in rows) / n,
            tokens_by_phase_per_q={p: sum(r.tokens_by_phase.get(p, 0) for r in rows) / n for p in phases},
            ms_p50=percentile([r.ms for r in rows], 50),
            ms_p95=percentile([r.ms for r in rows], 95),
            retrieve_ms_p50=percentile([r.retrieve_ms for r in rows], 50),
            cpu_ms_p50=percentile([r.cpu_ms for r in rows], 50),
            calls_by_phase_per_q={p: sum(r.calls_by_phase.get(p, 0) for r in rows) / n for p in call_phases},
            memory_per_q={m: sum(r.memory.get(m, 0) for r in rows) / n for m in memory_keys},
            answers=answer_breakdown(rows),
        ))
    return out


def relative_change(value: float, base: float) -> float | None:
    """(value − base) / base: −0.5 is "half the tokens of round 1"; None when there is no base."""
    return None if not base else (value - base) / base


@dataclass
class MemoryConfig:
    """The memory settings a rounds run used (docs/algorithms.md "ReMindRAG: parameters"; penalty R1)."""

    penalty: str  # "intended" | "off"
    alpha: float
    lam: float
    knn_recall: bool
    knn_k: int = 0
    max_depth: int = 0
    skip_above: float = 0.0


@dataclass
class MemoryCounts:
    """Edge memory of the index at one moment (``localrag memory stats``)."""

    reinforced: int = 0
    queries_learned: int = 0
    updates: int = 0


@dataclass
class RoundStat:
    """One (strategy, round) of a rounds run: which set, memory on or off, and what memory held."""

    strategy: str
    round: str
    question_set: str  # "A" or "B"
    memory: str  # "on" (read and written) or "off" (neither)
    questions: int
    memory_before: MemoryCounts = field(default_factory=MemoryCounts)
    memory_after: MemoryCounts = field(default_factory=MemoryCounts)
    tokens_change_vs_first: float | None = None  # relative change of tokens/question against round `first`
    calls_change_vs_first: float | None = None


@dataclass
class RoundsInfo:
    rounds: list[str]  # round labels in the order asked
    split: str  # how sets A and B were drawn
    set_a: list[str]  # question ids
    set_b: list[str]
    memory: MemoryConfig
    reset: str  # what was done to memory before `first`
    query_cache: str  # what was done to the query-entity (NER) cache between rounds
    stats: list[RoundStat] = field(default_factory=list)


@dataclass
class AskedExtraction:
    """`bench --extract-asked N`: the graph phase with the model on the passages the questions retrieved."""
    top: int  # each question's first N retrieved passages were queued
    model: str
    passages: int  # distinct passages queued
    extracted: int  # passages the graph phase wrote
    extractor: str  # as resolved, with the reason
    llm_calls: int
    cached: int  # passages whose reply came from the extraction cache
    prompt_tokens: int
    completion_tokens: int
    facts_added: int
    failed: int
    fallback: int  # passages whose reply was unusable: the rules' facts instead
    seconds: float
    cpu_seconds: float
    load_after: float


@dataclass
class ReferenceRow:
    """A recall figure not produced by localrag, printed beside ours for comparison."""

    name: str
    source: str
    questions: int
    recall: dict[str, float]


@dataclass
class IndexInfo:
    work_dir: str
    notes_dir: str
    db_path: str
    documents: int
    passages: int
    notes_written: int
    sync_seconds: float
    sync_changed: bool
    graph: str = ""  # what was done about the graph (extracted, not available, not needed)


@dataclass
class MachineInfo:
    cpus: int
    load_before: list[float]
    load_after: list[float] = field(default_factory=list)
    python: str = ""
    platform: str = ""


def machine_info() -> MachineInfo:
    return MachineInfo(os.cpu_count() or 0, [round(x, 2) for x in os.getloadavg()],
                       python=platform.python_version(), platform=platform.platform(terse=True))


@dataclass
class BenchResult:
    dataset: str
    data_dir: str
    ids_file: str
    questions: int
    corpus_passages: int
    strategies: list[str]
    k: int
    depth: int
    answer: bool
    command: str
    created: str
    index: IndexInfo
    machine: MachineInfo
    model: str = ""
    missing_ids: list[str] = field(default_factory=list)
    reference: list[ReferenceRow] = field(default_factory=list)
    summaries: list[StrategySummary] = field(default_factory=list)
    records: list[QuestionRecord] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    version: int = RESULT_VERSION
    rounds: RoundsInfo | None = None  # set by a memory-rounds run (`bench --rounds`)
    drop_gold: bool = False  # the index holds the corpus without the asked questions' gold passages
    abstain_below: float = 0.0  # answer.abstain_below of the run
    abstain_unnamed_below: float = 0.0  # answer.abstain_unnamed_below of the run
    asked_extraction: AskedExtraction | None = None  # set by `bench --extract-asked N`

    def to_json(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    def write(self, path: Path) -> Path:
        return write_json(path, self.to_json())


def write_json(path: Path, data: dict[str, Any]) -> Path:
    """A result file written whole or not at all (a temporary file renamed over it)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(data, ensure_ascii=False, separators=(",", ":")) + "\n", encoding="utf-8")
    tmp.replace(path)
    return path


def _build(cls: type, data: dict[str, Any]) -> Any:
    names = {f.name for f in dataclasses.fields(cls)}
    return cls(**{k: v for k, v in data.items() if k in names})


def load_result(path: Path) -> BenchResult:
    """Read a result file written by :meth:`BenchResult.write` (unknown keys are ignored)."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError as exc:
        raise ValueError(f"result file {path} not found") from exc
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ValueError(f"{path} is not a readable JSON result file ({exc})") from exc
    if not isinstance(data, dict) or "summaries" not in data or "dataset" not in data:
        raise ValueError(f"{path} is not a localrag bench result (no dataset / summaries)")
    try:
        data["index"] = _build(IndexInfo, data["index"])
        data["machine"] = _build(MachineInfo, data["machine"])
        data["reference"] = [_build(ReferenceRow, r) for r in data.get("reference", [])]
        data["summaries"] = [_summary(s) for s in data["summaries"]]
        data["records"] = [_build(QuestionRecord, r) for r in data.get("records", [])]
        if data.get("rounds") is not None:
            data["rounds"] = _rounds_info(data["rounds"])
        if data.get("asked_extraction") is not None:
            data["asked_extraction"] = _build(AskedExtraction, data["asked_extraction"])
        return _build(BenchResult, data)
    except (KeyError, TypeError) as exc:
        raise ValueError(f"{path}: result file has an unexpected shape ({exc})") from exc


def _summary(data: dict[str, Any]) -> StrategySummary:
    data = dict(data)
    data["answers"] = [_build(AnswerFigures, a) for a in data.get("answers") or []]
    return _build(StrategySummary, data)


def _rounds_info(data: dict[str, Any]) -> RoundsInfo:
    stats = []
    for st in data.get("stats", []):
        st = dict(st)
        st["memory_before"] = _build(MemoryCounts, st.get("memory_before") or {})
        st["memory_after"] = _build(MemoryCounts, st.get("memory_after") or {})
        stats.append(_build(RoundStat, st))
    return _build(RoundsInfo, {**data, "memory": _build(MemoryConfig, data["memory"]), "stats": stats})
