"""A benchmark over a real notes folder: questions whose gold answers are note paths.

    localrag bench --notes ../shared/data/dendron-vault/notes --questions bench_data/dendron-vault/questions.jsonl

The questions file has one JSON object a line: ``id``, ``question``, ``gold_notes``
(paths relative to the notes folder), optional ``answers``, ``hops`` and ``kind`` (fact / howto /
two-notes / unanswerable; an unanswerable question has no gold notes). Every note of
the folder becomes one corpus entry (doc id = its rank in sorted path order), so recall@k
is counted per note: a note split into several passages counts once, at its best rank,
as the passage benchmarks count a document. The folder is mirrored into the bench work
folder before indexing (an index is never written inside the source folder).
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from localrag_bench.data import BenchDataError, CorpusPassage, Dataset, MaterialiseReport, Question, pick_ids
from localrag_bench.workdir import write_if_changed

NOTE_SUFFIXES = (".md", ".markdown", ".txt")


def note_paths(folder: Path) -> list[str]:
    """The notes of ``folder`` (relative POSIX paths, sorted), hidden folders left out."""
    out = []
    for path in folder.rglob("*"):
        rel = path.relative_to(folder)
        if path.is_file() and path.suffix.lower() in NOTE_SUFFIXES and not any(p.startswith(".") for p in rel.parts):
            out.append(rel.as_posix())
    return sorted(out)


UNANSWERABLE = "unanswerable"  # a question the notes do not answer: no gold notes, no answers


def _read_questions(path: Path, note_ids: dict[str, int]) -> list[Question]:
    if not path.is_file():
        raise BenchDataError(f"questions file {path} not found")
    out: list[Question] = []
    for lineno, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
            # gold_files: the name examples/questions.jsonl gives them
            gold = [str(g) for g in (row["gold_notes"] if "gold_notes" in row else row["gold_files"])]
            answers = row.get("answers") or []
            question = Question(str(row["id"]), str(row["question"]), tuple(str(a) for a in answers), (),
                                hops=str(row.get("hops", "")), kind=str(row.get("kind", "")),
                                lang=str(row.get("lang", "")))
        except (json.JSONDecodeError, KeyError, TypeError) as exc:
            raise BenchDataError(f"{path}:{lineno}: a question needs id, question and gold_notes (or gold_files) ({exc})") from exc
        unknown = [g for g in gold if g not in note_ids]
        if unknown or (not gold and question.kind != UNANSWERABLE):
            raise BenchDataError(f"{path}:{lineno}: gold notes {unknown or '(none)'} are not notes of the folder"
                                 + ("" if unknown else f" (only a kind '{UNANSWERABLE}' question has none)"))
        if gold and question.kind == UNANSWERABLE:
            raise BenchDataError(f"{path}:{lineno}: an '{UNANSWERABLE}' question has no gold notes")
        out.append(Question(question.id, question.question, question.answers, tuple(note_ids[g] for g in gold),
                            tuple(gold), question.hops, question.kind, question.lang))
    return out


def load_notes_dataset(notes: str | Path, questions_file: str | Path, ids_file: str | Path | None = None,
                       limit: int | None = None, paths: list[str] | None = None) -> Dataset:
    """``paths``: the notes of the folder to use (relative, as ``note_paths`` writes them); None = every note."""
    folder = Path(notes).expanduser()
    if not folder.is_dir():
        raise BenchDataError(f"notes folder {folder} not found")
    chosen = sorted(paths) if paths is not None else None
    paths = chosen if chosen is not None else note_paths(folder)
    if not paths:
        raise BenchDataError(f"{folder} has no notes ({', '.join(NOTE_SUFFIXES)})")
    note_ids = {p: i for i, p in enumerate(paths, 1)}
    digest = hashlib.sha256()
    corpus = []
    for p in paths:
        try:
            data = (folder / p).read_bytes()
        except OSError as exc:
            raise BenchDataError(f"note {p} of {folder} cannot be read ({exc})") from exc
        digest.update(p.encode() + b"\0" + data)
        corpus.append(CorpusPassage(note_ids[p], p, data.decode("utf-8", errors="replace")))
    questions = _read_questions(Path(questions_file).expanduser(), note_ids)
    missing: list[str] = []
    if ids_file:
        questions, missing = pick_ids(questions, ids_file, lambda q: q.id)
    if limit is not None:
        questions = questions[:max(limit, 0)]
    if not questions:
        raise BenchDataError(f"no questions selected from {questions_file}")
    folder = folder.resolve()
    name = folder.parent.name if folder.name == "notes" else folder.name
    return Dataset(name, folder, corpus, questions, digest.hexdigest(), str(ids_file or ""), missing,
                   source_notes=folder, note_ids=note_ids,
                   source_paths=tuple(chosen) if chosen is not None else None)


def mirror_notes(source: Path, target: Path, paths: tuple[str, ...] | None = None) -> MaterialiseReport:
    """Make ``target`` hold the notes of ``source`` (only ``paths`` of them when given): changed files
    copied, vanished ones removed."""
    report = MaterialiseReport()
    wanted = set(paths) if paths is not None else set(note_paths(source))
    for rel in sorted(wanted):
        report.count(write_if_changed(target / rel, (source / rel).read_bytes()))
    if target.is_dir():
        for rel in note_paths(target):
            if rel not in wanted:
                (target / rel).unlink()
                report.removed += 1
    return report
