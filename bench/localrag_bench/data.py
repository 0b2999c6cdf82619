"""Benchmark data sets (the format of ../shared/data/README.md) and their notes folders.

A data set folder holds ``corpus.jsonl`` (``doc_id``, ``title``, ``text``) and
``questions.jsonl`` (``id``, ``question``, ``answers``, ``gold_doc_ids`` ...).
The corpus is materialised once as one Markdown note per passage, ``<doc_id>.md``
containing ``# {title}\\n\\n{text}``, so the benchmark indexes it with the real
pipeline and maps every retrieved passage back to its doc id through the file name.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, TypeVar

from localrag_bench.workdir import bench_cache_root, write_if_changed

CORPUS_FILE = "corpus.jsonl"
QUESTIONS_FILE = "questions.jsonl"
GENERIC_SPLITS = {"dev", "test", "train", "val", "small"}
_NOTE_NAME = re.compile(r"^(\d+)\.md$")
Item = TypeVar("Item")


class BenchDataError(ValueError):
    """A data set folder or ids file cannot be used; the message says which line and why."""


@dataclass(frozen=True)
class CorpusPassage:
    doc_id: int
    title: str
    text: str

    @property
    def note_text(self) -> str:
        return f"# {_one_line(self.title)}\n\n{self.text.strip()}\n"


@dataclass(frozen=True)
class Question:
    id: str
    question: str
    answers: tuple[str, ...]
    gold_doc_ids: tuple[int, ...]
    gold_titles: tuple[str, ...] = ()
    hops: str = ""
    kind: str = ""  # a notes question's kind: fact / howto / two-notes / unanswerable ("" for the QA sets)
    lang: str = ""  # the language it is written in ("de", "zh"; "" = not said)


@dataclass
class Dataset:
    name: str
    folder: Path
    corpus: list[CorpusPassage]
    questions: list[Question]
    corpus_sha: str  # sha256 of corpus.jsonl: names the cache folder
    ids_file: str = ""
    missing_ids: list[str] = field(default_factory=list)  # ids asked for but not in questions.jsonl
    # a real notes folder (localrag_bench.notes_set): copied as it is, gold answers are note paths
    source_notes: Path | None = None
    note_ids: dict[str, int] = field(default_factory=dict)  # note path (relative) -> doc id of its corpus entry
    source_paths: tuple[str, ...] | None = None  # the notes of source_notes it uses (None: every note)

    @property
    def short_hash(self) -> str:
        return self.corpus_sha[:10]

    def doc_of(self, path: str) -> int | None:
        """The corpus doc id of a retrieved passage's note path (None for a note outside the corpus)."""
        if self.source_notes is not None:
            return self.note_ids.get(path)
        return doc_id_of(path)


def _one_line(text: str) -> str:
    return " ".join(str(text).split())


def dataset_name(folder: Path) -> str:
    """``2wiki/dev`` -> ``2wiki-dev``; ``musique100`` -> ``musique100``."""
    folder = folder.resolve()
    if folder.name.lower() in GENERIC_SPLITS and folder.parent.name:
        return f"{folder.parent.name}-{folder.name}"
    return folder.name


def _read_jsonl(path: Path) -> list[tuple[int, dict]]:
    if not path.is_file():
        raise BenchDataError(f"{path} not found: a data set folder needs {CORPUS_FILE} and {QUESTIONS_FILE}")
    rows: list[tuple[int, dict]] = []
    with path.open(encoding="utf-8") as fh:
        for lineno, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as exc:
                raise BenchDataError(f"{path}:{lineno}: not valid JSON ({exc.msg})") from exc
            if not isinstance(row, dict):
                raise BenchDataError(f"{path}:{lineno}: expected a JSON object")
            rows.append((lineno, row))
    return rows


def load_corpus(path: Path) -> list[CorpusPassage]:
    out: list[CorpusPassage] = []
    seen: set[int] = set()
    for lineno, row in _read_jsonl(path):
        try:
            doc_id = int(row["doc_id"])
            passage = CorpusPassage(doc_id, str(row.get("title", "")), str(row["text"]))
        except (KeyError, TypeError, ValueError) as exc:
            raise BenchDataError(f"{path}:{lineno}: a passage needs an integer doc_id and a text ({exc})") from exc
        if doc_id in seen:
            raise BenchDataError(f"{path}:{lineno}: doc_id {doc_id} appears twice")
        seen.add(doc_id)
        out.append(passage)
    if not out:
        raise BenchDataError(f"{path} has no passages")
    return out


def load_questions(path: Path) -> list[Question]:
    out: list[Question] = []
    for lineno, row in _read_jsonl(path):
        try:
            answers = row.get("answers") or []
            out.append(Question(
                id=str(row["id"]),
                question=str(row["question"]),
                answers=tuple(str(a) for a in answers) if isinstance(answers, list) else (str(answers),),
                gold_doc_ids=tuple(int(d) for d in row.get("gold_doc_ids") or []),
                gold_titles=tuple(str(t) for t in row.get("gold_titles") or []),
                hops=str(row.get("hops", "")),
            ))
        except (KeyError, TypeError, ValueError) as exc:
            raise BenchDataError(f"{path}:{lineno}: a question needs id, question and integer gold_doc_ids ({exc})") from exc
    return out


def read_ids(path: Path) -> list[str]:
    """Question ids, one a line (blank lines and # comments ignored), in file order."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError as exc:
        raise BenchDataError(f"ids file {path} not found") from exc
    except (OSError, UnicodeDecodeError) as exc:
        raise BenchDataError(f"ids file {path} cannot be read ({exc})") from exc
    ids = [line.strip() for line in text.splitlines() if line.strip() and not line.lstrip().startswith("#")]
    return list(dict.fromkeys(ids))


def pick_ids(items: list[Item], ids_file: str | Path, id_of: Callable[[Item], str]) -> tuple[list[Item], list[str]]:
    """The items whose ids ``ids_file`` names, in its order; and the ids it names that no item has."""
    wanted = read_ids(Path(ids_file).expanduser())
    by_id = {id_of(item): item for item in items}
    return [by_id[i] for i in wanted if i in by_id], [i for i in wanted if i not in by_id]


def _file_sha(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def load_dataset(folder: str | Path, ids_file: str | Path | None = None, limit: int | None = None) -> Dataset:
    """The corpus and the chosen questions: those of ``ids_file`` (in its order), then the first ``limit``."""
    folder = Path(folder).expanduser()
    if not folder.is_dir():
        raise BenchDataError(f"data set folder {folder} not found")
    corpus_path = folder / CORPUS_FILE
    corpus = load_corpus(corpus_path)
    questions = load_questions(folder / QUESTIONS_FILE)
    missing: list[str] = []
    if ids_file:
        questions, missing = pick_ids(questions, ids_file, lambda q: q.id)
        if not questions:
            raise BenchDataError(f"none of the {len(missing)} ids in {ids_file} is a question of {folder / QUESTIONS_FILE}")
    if limit is not None:
        if limit < 1:
            raise BenchDataError("--limit must be at least 1")
        questions = questions[:limit]
    if not questions:
        raise BenchDataError(f"{folder / QUESTIONS_FILE} has no questions")
    known = {p.doc_id for p in corpus}
    for q in questions:
        unknown = [d for d in q.gold_doc_ids if d not in known]
        if unknown:
            raise BenchDataError(f"question {q.id}: gold doc ids {unknown} are not in {corpus_path}")
    return Dataset(dataset_name(folder), folder.resolve(), corpus, questions, _file_sha(corpus_path),
                   str(ids_file or ""), missing)


def default_work_dir(dataset: Dataset) -> Path:
    return bench_cache_root() / f"{dataset.name}-{dataset.short_hash}"


@dataclass
class MaterialiseReport:
    written: int = 0
    unchanged: int = 0
    removed: int = 0

    def count(self, written: bool) -> None:
        if written:
            self.written += 1
        else:
            self.unchanged += 1


def materialise(corpus: list[CorpusPassage], notes_dir: Path) -> MaterialiseReport:
    """Write ``<doc_id>.md`` per passage; files already right are left alone (their mtime too).

    Notes named ``<integer>.md`` that are not in the corpus are removed; nothing else
    in the folder is touched.
    """
    notes_dir.mkdir(parents=True, exist_ok=True)
    report = MaterialiseReport()
    wanted: set[str] = set()
    for p in corpus:
        name = f"{p.doc_id}.md"
        wanted.add(name)
        report.count(write_if_changed(notes_dir / name, p.note_text.encode("utf-8")))
    for entry in notes_dir.iterdir():
        if _NOTE_NAME.match(entry.name) and entry.name not in wanted and entry.is_file():
            entry.unlink()
            report.removed += 1
    return report


def doc_id_of(path: str) -> int | None:
    """The corpus doc id of a note path written by :func:`materialise` (None for any other file)."""
    m = _NOTE_NAME.match(path.rsplit("/", 1)[-1])
    return int(m.group(1)) if m else None
