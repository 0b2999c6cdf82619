"""LooGLE (bigai-nlco/LooGLE), the long-document QA set ReMindRAG benchmarks on, as a passage data set.

A folder with ``longdep_qa.jsonl`` and/or ``shortdep_qa.jsonl``: one long document a line
(``input``, ``title``, ``qa_pairs`` = a JSON string of ``{Q, A, S}``; ``S`` is the evidence,
one string or a list). Each document is cut into passages of about ``PASSAGE_WORDS`` words
at sentence ends; a question's gold passages are, for each evidence string, the passage of
its document that holds the largest share of the evidence's words (and a second one when the
evidence straddles two). Only the documents of the selected questions are indexed, so a
small run indexes a small corpus.

    localrag bench --data ../shared/data/loogle --rounds --strategy remind,neuropath --limit 12
"""

from __future__ import annotations

import ast
import hashlib
import json
from collections import Counter
from pathlib import Path

from localrag.text.sentences import SENTENCE_END
from localrag.text.words import WORD_RUN
from localrag_bench.data import BenchDataError, CorpusPassage, Dataset, Question, pick_ids

FILES = ("shortdep_qa.jsonl", "longdep_qa.jsonl")
PASSAGE_WORDS = 150
STRADDLE_SHARE = 0.3  # a second passage is gold when it holds this share of the evidence's words too


def is_loogle(folder: Path) -> bool:
    return any((folder / f).is_file() for f in FILES) and not (folder / "corpus.jsonl").is_file()


def split_passages(text: str, words: int = PASSAGE_WORDS) -> list[str]:
    """Consecutive sentences gathered until about ``words`` words (a longer sentence stands alone)."""
    out: list[str] = []
    current: list[str] = []
    count = 0
    for sentence in SENTENCE_END.split(" ".join(text.split())):
        n = len(sentence.split())
        if current and count + n > words:
            out.append(" ".join(current))
            current, count = [], 0
        current.append(sentence)
        count += n
    if current:
        out.append(" ".join(current))
    return out


def _tokens(text: str) -> Counter:
    return Counter(w.lower() for w in WORD_RUN.findall(text))


def gold_passages(evidence: list[str], passages: list[tuple[int, Counter]]) -> list[int]:
    """Doc ids of the passages that hold each evidence string (by shared words)."""
    gold: list[int] = []
    for item in evidence:
        want = _tokens(item)
        total = sum(want.values())
        if not total:
            continue
        shares = sorted(((sum((want & have).values()) / total, doc_id) for doc_id, have in passages), reverse=True)
        if not shares or shares[0][0] == 0:
            continue
        gold.append(shares[0][1])
        if len(shares) > 1 and shares[0][0] < 0.9 and shares[1][0] >= STRADDLE_SHARE:
            gold.append(shares[1][1])
    return list(dict.fromkeys(gold))


def _qa_pairs(raw: object, where: str) -> list[dict]:
    if isinstance(raw, list):
        return raw
    try:
        return json.loads(str(raw))
    except json.JSONDecodeError:
        try:
            return ast.literal_eval(str(raw))
        except (ValueError, SyntaxError) as exc:
            raise BenchDataError(f"{where}: qa_pairs is neither JSON nor a Python literal ({exc})") from exc


def load_loogle(folder: str | Path, ids_file: str | Path | None = None, limit: int | None = None) -> Dataset:
    folder = Path(folder).expanduser()
    docs: list[tuple[str, str, str, list[dict]]] = []  # (set, title, text, qa)
    digest = hashlib.sha256()
    for name in FILES:
        path = folder / name
        if not path.is_file():
            continue
        for lineno, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if line.strip():
                row = json.loads(line)
                docs.append((name.split("_")[0], str(row["title"]), str(row["input"]),
                             _qa_pairs(row["qa_pairs"], f"{path}:{lineno}")))
    questions: list[tuple[Question, int, list[str]]] = []  # (question without gold, doc index, evidence)
    for d, (kind, title, _, qa) in enumerate(docs):
        for i, pair in enumerate(qa):
            evidence = pair.get("S") or []
            evidence = [evidence] if isinstance(evidence, str) else [str(e) for e in evidence]
            answer = pair.get("A", "")
            q = Question(f"{kind}-{d}-{i}", str(pair["Q"]).strip(), (str(answer).strip(),), ())
            questions.append((q, d, evidence))
    if ids_file:
        questions, _ = pick_ids(questions, ids_file, lambda item: item[0].id)
    if limit is not None:
        questions = questions[:max(limit, 0)]
    if not questions:
        raise BenchDataError(f"no LooGLE questions selected in {folder}")
    used = sorted({d for _, d, _ in questions})
    corpus: list[CorpusPassage] = []
    by_doc: dict[int, list[tuple[int, Counter]]] = {}
    seen_text: dict[str, int] = {}  # the same document in both files is indexed once
    for d in used:
        _, title, text, _ = docs[d]
        if text in seen_text:
            by_doc[d] = by_doc[seen_text[text]]
            continue
        seen_text[text] = d
        by_doc[d] = []
        for part in split_passages(text):
            doc_id = len(corpus) + 1
            corpus.append(CorpusPassage(doc_id, title, part))
            by_doc[d].append((doc_id, _tokens(part)))
            digest.update(f"{doc_id}\0{title}\0{part}\n".encode())
    out = [Question(q.id, q.question, q.answers, tuple(gold_passages(e, by_doc[d]))) for q, d, e in questions]
    out = [q for q in out if q.gold_doc_ids]
    return Dataset("loogle", folder.resolve(), corpus, out, digest.hexdigest(), str(ids_file or ""))
