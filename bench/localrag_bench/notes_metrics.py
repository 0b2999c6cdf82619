"""Where a notes question's gold answer shows: in the evidence sentences, in what is read as the answer.

A notes question's gold answer is a short exact string of its gold note (a flag, a key, a number,
a command such as ``tar xf``), so a hit is that string inside the text shown: compared in lower
case with Markdown's inline marks (backticks, emphasis) removed and spaces collapsed, or, for
answers that are words, after SQuAD normalisation on word boundaries (``30x`` in "30x faster").
"""

from __future__ import annotations

import re
from typing import Sequence

from localrag.answer import Answer
from localrag_bench.metrics import normalize_answer
from localrag_bench.results import QuestionRecord

_MARKS = re.compile(r"[`*_~]")


def _loose(text: str) -> str:
    return " ".join(_MARKS.sub("", text).lower().split())


def contains_answer(text: str, answers: Sequence[str]) -> bool | None:
    """A gold answer inside ``text`` (None: the question has no gold answer)."""
    golds = [a for a in answers if _loose(a)]
    if not golds:
        return None
    loose = _loose(text)
    words = f" {normalize_answer(text)} "
    for gold in golds:
        if _loose(gold) in loose:
            return True
        normal = normalize_answer(gold)
        if normal and f" {normal} " in words:
            return True
    return False


def answer_shown(result: Answer) -> str:
    """What the user reads as the answer: the short answer and the sentence (or lines) shown with it;
    an open or free answer's text; nothing when it abstained."""
    if result.abstained:
        return ""
    if result.span_sentence is not None:
        return f"{result.span} — {result.span_sentence.plain}"
    return result.span or result.text


def answer_grounded(result: Answer) -> bool | None:
    """A short answer is a span of the sentence it is shown with (None: no short answer to check)."""
    if result.abstained or not result.span:
        return None
    if result.span_sentence is None:
        return bool(result.decided)  # a comparison the dates decided names an option, not a span
    return _loose(result.span) in _loose(result.span_sentence.plain) or _loose(result.span) in _loose(
        result.span_sentence.text)


def _hit_within(sentences: Sequence[str], answers: Sequence[str]) -> bool | None:
    """A gold answer inside one of ``sentences`` (each on its own: never across two)."""
    if not [a for a in answers if _loose(a)]:
        return None
    return any(contains_answer(s, answers) for s in sentences)


def score_notes(record: QuestionRecord, result: Answer, answers: Sequence[str]) -> None:
    """The notes suite's answer figures of one answered question."""
    shown = [e.plain for e in result.shown_evidence]
    record.evidence_hit1 = _hit_within(shown[:1], answers)
    record.evidence_hit3 = _hit_within(shown[:3], answers)
    record.answer_shown = answer_shown(result)
    record.answer_hit = contains_answer(record.answer_shown, answers)
    record.answer_grounded = answer_grounded(result)
