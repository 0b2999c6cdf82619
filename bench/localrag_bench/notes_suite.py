"""The notes suite: three real notes folders of different shapes, one command, one table, one file.

    localrag bench notes --split untouched --answer

Each corpus is a notes folder under the data root and a question set in ``bench_data/<name>/``
(``questions.jsonl``, ``dev_ids.txt`` = the tuning half; every other question is the untouched
half). A question has a kind (fact / howto / two-notes / unanswerable) and a short exact answer
that occurs in its gold note, so the figures are, per corpus, strategy and kind: note recall@2 /
@5, evidence hit (the gold answer inside the first and the first three shown sentences), answer
hit (inside what the user reads as the answer), EM, abstention on the unanswerable questions and
false abstention on the answerable ones, and the time to evidence / first token / answer.
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence

from localrag_bench.data import BenchDataError, Dataset, Question, default_work_dir, read_ids
from localrag_bench.metrics import mean, percentile
from localrag_bench.multilingual import layout_paths, view_datasets
from localrag_bench.notes_set import UNANSWERABLE, load_notes_dataset
from localrag_bench.results import BenchResult, QuestionRecord, write_json
from localrag_bench.runner import BenchSpec, RunOptions, run_bench


@dataclass(frozen=True)
class SuiteCorpus:
    name: str  # its question set is bench_data/<questions or name>/
    notes: str  # its notes folder, relative to the data root
    shape: str  # what kind of folder it stands for
    # a multilingual layout of the tldr-pages folder (bench/localrag_bench/multilingual.py): its notes are that
    # layout's, its questions are read as one set per language; "" = every note, one question set
    layout: str = ""
    questions: str = ""  # the question set's folder name when it is not the corpus name

    @property
    def question_folder(self) -> str:
        return self.questions or self.name


SUITE = (
    SuiteCorpus("dendron-vault", "dendron-vault/notes", "a knowledge base: 1,012 notes, hierarchy names, links"),
    SuiteCorpus("tldr-pages", "tldr-pages/pages", "7,425 short command notes that look alike"),
    SuiteCorpus("rust-book", "rust-book/notes", "112 long chapters with code"),
)
# asked for by name only (`--corpus tldr-multilingual`): not part of the default run
MULTILINGUAL = (
    SuiteCorpus("tldr-multilingual", "tldr-pages", "2,880 command notes in five languages (576 pages each)",
                layout="parallel"),
    SuiteCorpus("tldr-multilingual-full", "tldr-pages", "8,886 command notes: four translations and their English",
                layout="full", questions="tldr-multilingual"),
)
SPLITS = ("tuning", "untouched", "all")
KINDS = ("fact", "howto", "two-notes", UNANSWERABLE)
QUESTIONS_FILE = "questions.jsonl"
TUNING_FILE = "dev_ids.txt"


def corpora_named(names: str | None) -> list[SuiteCorpus]:
    """The suite's corpora, or those of a comma-separated list of names."""
    if not names:
        return list(SUITE)
    known = {c.name: c for c in (*SUITE, *MULTILINGUAL)}
    wanted = [n.strip() for n in names.split(",") if n.strip()]
    unknown = [n for n in wanted if n not in known]
    if unknown or not wanted:
        raise BenchDataError(f"unknown corpus {', '.join(unknown) or '(none)'}; choose from: {', '.join(known)}")
    return [known[n] for n in dict.fromkeys(wanted)]


def split_questions(questions: Sequence[Question], tuning_ids: Sequence[str], split: str) -> list[Question]:
    """The tuning half (the ids of dev_ids.txt), the untouched half (every other question), or all."""
    if split not in SPLITS:
        raise BenchDataError(f"--split must be one of {', '.join(SPLITS)}, got {split!r}")
    tuning = set(tuning_ids)
    if split == "all":
        return list(questions)
    return [q for q in questions if (q.id in tuning) == (split == "tuning")]


def load_corpus(corpus: SuiteCorpus, data_root: Path, questions_root: Path, split: str,
                limit: int | None = None) -> Dataset:
    folder = questions_root / corpus.question_folder
    notes = data_root / corpus.notes
    paths = layout_paths(notes, corpus.layout) if corpus.layout else None
    dataset = load_notes_dataset(notes, folder / QUESTIONS_FILE, paths=paths)
    tuning = read_ids(folder / TUNING_FILE) if (folder / TUNING_FILE).is_file() else []
    if split != "all" and not tuning:
        raise BenchDataError(f"{folder / TUNING_FILE} is missing: the halves of {corpus.name} are not defined")
    questions = split_questions(dataset.questions, tuning, split)
    if limit is not None:
        questions = questions[:max(limit, 0)]
    if not questions:
        raise BenchDataError(f"no {split} questions in {folder / QUESTIONS_FILE}")
    return dataclasses.replace(dataset, name=corpus.name, questions=questions, ids_file=f"{split} half")


@dataclass
class SuiteRow:
    """One corpus × strategy × kind ("all" = every question of the corpus)."""

    corpus: str
    strategy: str
    kind: str
    questions: int
    answerable: int
    recall2: float | None
    recall5: float | None
    evidence_hit1: float | None
    evidence_hit3: float | None
    answer_hit: float | None
    em: float | None
    abstained_unanswerable: float | None  # share of unanswerable questions answered "not in your notes"
    false_abstention: float | None  # share of answerable questions answered "not in your notes"
    ungrounded: int  # short answers that are not a span of the sentence shown with them
    evidence_ms_p50: float | None
    evidence_ms_p95: float | None
    first_token_ms_p50: float | None
    ms_p50: float
    ms_p95: float
    cpu_ms_p50: float


def _share(values: Sequence[bool | None]) -> float | None:
    return mean(None if v is None else float(v) for v in values)


def _pct(values: Sequence[float | None], q: float) -> float | None:
    kept = [v for v in values if v is not None]
    return percentile(kept, q) if kept else None


def suite_row(corpus: str, strategy: str, kind: str, rows: Sequence[QuestionRecord]) -> SuiteRow:
    answerable = [r for r in rows if r.kind != UNANSWERABLE]
    unanswerable = [r for r in rows if r.kind == UNANSWERABLE]
    answered = [r for r in rows if r.answer_mode]
    return SuiteRow(
        corpus, strategy, kind, len(rows), len(answerable),
        mean(r.recall.get("2") for r in answerable), mean(r.recall.get("5") for r in answerable),
        _share([r.evidence_hit1 for r in answerable]), _share([r.evidence_hit3 for r in answerable]),
        _share([r.answer_hit for r in answerable]), mean(r.em for r in answerable),
        _share([r.abstained for r in unanswerable if r.answer_mode]),
        _share([r.abstained for r in answerable if r.answer_mode]),
        sum(1 for r in answered if r.answer_grounded is False),
        _pct([r.evidence_ms for r in answered], 50), _pct([r.evidence_ms for r in answered], 95),
        _pct([r.first_token_ms for r in answered], 50),
        percentile([r.ms for r in rows], 50), percentile([r.ms for r in rows], 95),
        percentile([r.cpu_ms for r in rows], 50),
    )


def suite_rows(result: BenchResult) -> list[SuiteRow]:
    """Per strategy: "all", then one row per kind present."""
    out: list[SuiteRow] = []
    for strategy in result.strategies:
        rows = [r for r in result.records if r.strategy == strategy]
        out.append(suite_row(result.dataset, strategy, "all", rows))
        for kind in KINDS:
            of_kind = [r for r in rows if r.kind == kind]
            if of_kind:
                out.append(suite_row(result.dataset, strategy, kind, of_kind))
    return out


@dataclass
class SuiteResult:
    command: str
    created: str
    split: str
    strategies: list[str]
    answer: bool
    model: str
    corpora: list[str]
    rows: list[SuiteRow] = field(default_factory=list)
    runs: list[BenchResult] = field(default_factory=list)

    def gaps(self) -> dict[str, dict[str, float]]:
        """Per corpus, each strategy's recall@5 minus the best strategy's there (0 = the best)."""
        out: dict[str, dict[str, float]] = {}
        for corpus in self.corpora:
            r5 = {r.strategy: r.recall5 for r in self.rows if r.corpus == corpus and r.kind == "all"
                  and r.recall5 is not None}
            best = max(r5.values(), default=0.0)
            out[corpus] = {s: round(v - best, 4) for s, v in r5.items()}
        return out

    def to_json(self) -> dict[str, Any]:
        data = dataclasses.asdict(self)
        data["gaps_r5"] = self.gaps()
        return data

    def write(self, path: Path) -> Path:
        return write_json(path, self.to_json())


def load_suite_result(path: Path) -> dict[str, Any]:
    """A suite result file as written (``bench table`` reads its rows)."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ValueError(f"{path} is not a readable notes-suite result ({exc})") from exc
    if not isinstance(data, dict) or "rows" not in data or "corpora" not in data:
        raise ValueError(f"{path} is not a notes-suite result (no corpora / rows)")
    return data


@dataclass
class SuiteSpec:
    data_root: Path
    questions_root: Path
    corpora: list[SuiteCorpus]
    split: str
    strategies: list[str]
    options: RunOptions
    overrides: dict[str, Any] = field(default_factory=dict)
    limit: int | None = None
    work_root: Path | None = None  # <work_root>/<corpus>; None = the bench's default cache folders
    command: str = ""
    config_file: str | None = None


def run_suite(spec: SuiteSpec, *, embedder: Any = None, llm: Any = None,
              on_record: Callable[[QuestionRecord], None] | None = None,
              on_corpus: Callable[[SuiteCorpus, Dataset], None] | None = None,
              on_progress: Callable[[Any], None] | None = None) -> SuiteResult:
    """Every corpus of ``spec`` through the real pipeline, one bench run each, one suite result."""
    datasets = [load_corpus(c, spec.data_root, spec.questions_root, spec.split, spec.limit) for c in spec.corpora]
    runs = [(corpus, dataset, question_sets(corpus, dataset)) for corpus, dataset in zip(spec.corpora, datasets)]
    result = SuiteResult(spec.command, _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"), spec.split,
                         list(spec.strategies), spec.options.answer, "",
                         [d.name for _, _, sets in runs for d in sets])
    for corpus, dataset, sets in runs:
        # the question sets of one corpus share its index (one work folder)
        work_dir = spec.work_root / corpus.name if spec.work_root else default_work_dir(dataset)
        for questions in sets:
            if on_corpus is not None:
                on_corpus(corpus, questions)
            bench = BenchSpec(questions, list(spec.strategies), dataclasses.replace(spec.options), work_dir,
                              dict(spec.overrides), spec.command, config_file=spec.config_file)
            run = run_bench(bench, embedder=embedder, llm=llm, on_record=on_record, on_progress=on_progress)
            result.runs.append(run)
            result.rows += suite_rows(run)
            result.model = result.model or run.model
    return result


def question_sets(corpus: SuiteCorpus, dataset: Dataset) -> list[Dataset]:
    """The corpus's questions as asked: one set, or a multilingual layout's per-language views."""
    return view_datasets(dataset) if corpus.layout else [dataset]
