"""Which span of the evidence answers a short question, ranked without a model.

A 135M model asked to pick among hundreds of n-grams picks close to at random (measured:
docs/benchmarks.md "What we tried"). So the candidates are ranked first by what a reader would
look at: the span's kind against the question's type (a date for *when*, a name for *who*),
how well its sentence matches the question, how close it sits to the question's own words
in that sentence, the word before it ("born in ___", "directed by ___"), and how often the
top sentences repeat it. The model then chooses among the few best only. The weights were
set by hand on the dev questions (`scripts/answer_sweeps.py candidates`, docs/benchmarks.md
"Answers: evidence and candidates").
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Sequence

from localrag.answer.evidence import EvidenceSentence
from localrag.answer.shape import Shape
from localrag.text.normalise import title_key
from localrag.text.spans import find_spans
from localrag.text.stopwords import CONTENT_STOPWORDS
from localrag.text.words import (DEMONYM, NGRAM_TOKEN, POSSESSIVE_END, WORD as _WORD, content_word_forms, word_forms,
                                 words as _words)

_YEAR = re.compile(r"^(1[0-9]{3}|20[0-9]{2})$")
_ADVERB = re.compile(r"^[a-z]{3,}ly$")
# the word right before a span that says what kind of answer it is
_CUES: dict[str, frozenset[str]] = {
    "who": frozenset("by to married son daughter wife husband father mother brother sister with and".split()),
    "where": frozenset("in at from near to".split()),
    "when": frozenset("in on since until from of".split()),
    "how many": frozenset("of about approximately over nearly than".split()),
}

# how well a span kind answers a question type (name / date / number / quoted / title / ngram)
_KIND_FIT: dict[str, dict[str, float]] = {
    "who": {"name": 1.0, "title": 0.8, "quoted": 0.0, "date": -2.0, "number": -2.0, "ngram": -0.6},
    "where": {"name": 1.0, "title": 0.6, "quoted": -0.5, "date": -2.0, "number": -2.0, "ngram": -0.6},
    "when": {"date": 1.2, "number": 0.6, "name": -1.5, "title": -1.5, "quoted": -1.5, "ngram": -1.0},
    "how many": {"number": 1.2, "date": -0.5, "name": -1.5, "title": -1.5, "quoted": -1.5, "ngram": -0.3},
    "which": {"name": 0.8, "title": 0.6, "quoted": 0.6, "date": -0.3, "number": -0.3, "ngram": -0.3},
    "what": {"name": 0.5, "title": 0.4, "quoted": 0.6, "date": 0.0, "number": 0.0, "ngram": -0.1},
}


@dataclass(frozen=True)
class PriorWeights:
    """The linear score of a candidate; chosen on the dev questions (see the module docstring)."""

    sentence: float = 4.0  # cosine of its best sentence to the question
    first_sentence: float = 0.4  # it is in the very best sentence
    kind: float = 1.0  # _KIND_FIT of its kind for the question type
    year: float = 0.8  # a bare year, for "when" questions
    near: float = 0.8  # closeness to the question's words in its sentence (1 = next to one)
    cue: float = 0.4  # the word before it is a cue for the question type
    repeats: float = 0.3  # how many of the top sentences hold it (log)
    overlap: float = -1.0  # share of its words that the question already says
    length: float = -0.15  # per word beyond the second
    demonym: float = -1.0  # "American", "South Korean" (its sign flips when the question asks a nationality)
    subject: float = -0.8  # the title of its own note: the note is about it, the answer is something it says
    lower: float = -0.5  # an n-gram that does not start with a capital (unless the question names a common noun)
    head: float = 2.5  # closeness to the noun a "which / what" question asks for ("which spice" -> "spice")


WEIGHTS = PriorWeights()


@dataclass(frozen=True)
class SpanCandidate:
    text: str
    kind: str  # "name" | "date" | "number" | "quoted" | "title" | "ngram"
    sentence: EvidenceSentence
    position: int  # index of its sentence among the evidence (0 = best)
    start: int  # offsets in the sentence's plain text
    end: int
    features: dict[str, float] = field(default_factory=dict, compare=False)
    score: float = 0.0


_ASKS_WHEN = re.compile(r"\b(date|year|century|decade|day|month)\b( of| did| was| were| when|\?|$)", re.I)
_ASKS_WHERE = re.compile(r"\b(place|city|country|state|town|county|village|region|province|location|island)\b"
                         r"(?! of (the )?(film|song|album|band|company))", re.I)
_ASKS_NATIONALITY = re.compile(r"\b(nationality|in common|which country .* from|what country .* from)\b", re.I)


_PLACE_BEFORE = frozenset("in at near from to".split())

_HEAD = re.compile(r"\b(?:which|what)\s+(?:is\s+the\s+name\s+of\s+(?:the\s+)?|(?:kind|type|sort)\s+of\s+)?"
                   r"([a-z][a-z\-]+)\b")
# a quantity as written, with its thousands separators and unit: "2,140 m", "210°C", "150 million"
_QUANTITY = re.compile(r"(?<![\w.,])\d{1,3}(?:,\d{3})+(?:\.\d+)?(?:\s?(?:%|°[CF]|[a-zA-Z]{1,3}\b|million|billion))?"
                       r"|(?<![\w.,])\d+(?:\.\d+)?(?:\s?(?:km|m|kg|g|cm|mm|ft|mi|million|billion)\b|\s?%|°[CF])")


def head_noun(question: str) -> str:
    """The noun a "which / what" question asks for ("Which spice goes …" -> "spice"); "" if none."""
    m = _HEAD.search(question.lower())
    if not m or m.group(1) in CONTENT_STOPWORDS or m.group(1) in ("is", "was", "are", "were", "did", "does", "do"):
        return ""
    return m.group(1)


def question_type(shape: Shape, question: str = "") -> str:
    """The answer type: the shape's wh-word, sharpened by what a "what / which" question names."""
    qtype = shape.qtype if shape.qtype in _KIND_FIT else "what"
    if qtype in ("what", "which"):
        # the noun right after the asking word says it ("what Australian city"), not one anywhere in the
        # question ("… within a year of each other. Which was first?")
        asked = " ".join((shape.focus or question).split()[:4])
        if _ASKS_WHEN.search(asked):
            return "when"
        if _ASKS_WHERE.search(asked):
            return "where"
    return qtype


def _near(plain: str, start: int, end: int, cue_words: set[str]) -> float:
    """1 / (1 + words between the span and the nearest question word in the sentence); 0 if none."""
    best: int | None = None
    for m in _WORD.finditer(plain):
        if m.group(0).lower() not in cue_words or (start <= m.start() < end):
            continue
        if m.end() <= start:
            gap = len(_WORD.findall(plain[m.end():start]))
        elif m.start() >= end:
            gap = len(_WORD.findall(plain[end:m.start()]))
        else:
            continue
        best = gap if best is None else min(best, gap)
    return 0.0 if best is None else 1.0 / (1.0 + best)


def _head_fit(candidate: SpanCandidate, head: str) -> float:
    """0.5 when its sentence names the asked-for noun ("The spice … is cardamom"), up to 1 right beside it."""
    said = {w.lower() for w in _WORD.findall(candidate.sentence.plain)}
    if head not in said or head in _words(candidate.text):
        return 0.0
    return 0.5 + 0.5 * _near(candidate.sentence.plain, candidate.start, candidate.end, {head})


def _word_before(plain: str, start: int) -> str:
    before = _WORD.findall(plain[:start])
    return before[-1].lower() if before else ""


def score(candidate: SpanCandidate, qtype: str, question_words: set[str], repeats: int, best_score: float,
          weights: PriorWeights = WEIGHTS, asks_nationality: bool = False, head: str = "") -> SpanCandidate:
    words = _words(candidate.text)
    overlap = sum(1 for w in words if w in question_words) / max(1, len(words))
    # "died in Munich", "born in Manhattan": a place, whatever its ending
    demonym = 1.0 if DEMONYM.match(candidate.text) and \
        _word_before(candidate.sentence.plain, candidate.start) not in _PLACE_BEFORE else 0.0
    features = {
        "demonym": demonym if not asks_nationality else -demonym,
        "subject": 1.0 if title_key(candidate.text) and title_key(candidate.text) == title_key(candidate.sentence.passage.title) else 0.0,
        "lower": 1.0 if candidate.kind == "ngram" and not candidate.text[:1].isupper() and not head else 0.0,
        "head": _head_fit(candidate, head) if head else 0.0,
        "sentence": candidate.sentence.score - best_score,
        "first_sentence": 1.0 if candidate.position == 0 else 0.0,
        "kind": _KIND_FIT[qtype].get(candidate.kind, 0.0),
        "year": 1.0 if qtype == "when" and _YEAR.match(candidate.text) else 0.0,
        "near": _near(candidate.sentence.plain, candidate.start, candidate.end, question_words),
        "cue": 1.0 if _word_before(candidate.sentence.plain, candidate.start) in _CUES.get(qtype, ()) else 0.0,
        "repeats": float(min(repeats, 4) - 1),
        "overlap": overlap,
        "length": float(max(0, len(words) - 2)),
    }
    total = sum(getattr(weights, name) * value for name, value in features.items())
    return SpanCandidate(candidate.text, candidate.kind, candidate.sentence, candidate.position, candidate.start,
                     candidate.end, features, total)


def ngram_spans(plain: str, max_n: int, stop: frozenset[str]) -> list[tuple[str, int, int]]:
    tokens = [(m.group(0).rstrip(".,"), m.start()) for m in NGRAM_TOKEN.finditer(plain)]
    out = []
    for n in range(1, max_n + 1):
        for i in range(len(tokens) - n + 1):
            gram = tokens[i:i + n]
            if gram[0][0].lower() in stop or gram[-1][0].lower() in stop:
                continue
            if n == 1 and _ADVERB.match(gram[0][0]):
                continue  # "obviously", "slightly": a manner, not an answer
            start = gram[0][1]
            end = gram[-1][1] + len(gram[-1][0])
            text = plain[start:end]
            if any(not plain[a[1] + len(a[0]):b[1]].isspace() for a, b in zip(gram, gram[1:])) or \
                    text.rstrip(".,") != text:
                continue  # a phrase does not run across a comma, a dash or a bracket
            out.append((text, start, end))
    return out


def candidates(question: str, evidence: Sequence[EvidenceSentence], *, span_sentences: int, ngram_sentences: int,
               max_ngram: int, ngram_stop: frozenset[str]) -> list[SpanCandidate]:
    """Every span of the best sentences that the question does not already say, first occurrence kept."""
    question_words = word_forms(question)
    out: list[SpanCandidate] = []
    seen: set[str] = set()

    def add(text: str, kind: str, sentence: EvidenceSentence, position: int, start: int, end: int) -> None:
        text = " ".join(text.strip(" \t\n.,;:!?\"'“”()[]*_`|").split())
        owner = POSSESSIVE_END.search(text)
        if owner:  # "Pharoahe Monch's": the answer is the name, not its owner form
            text, end = text[:owner.start()], end - len(owner.group(0))
        words = _words(text)
        if not text or len(text) > 120 or not words or all(w in question_words for w in words):
            return
        key = text.lower()
        if key in seen:
            return
        seen.add(key)
        out.append(SpanCandidate(text, kind, sentence, position, start, end))

    for position, sentence in enumerate(evidence[:span_sentences]):
        quantities = [(m.start(), m.end()) for m in _QUANTITY.finditer(sentence.plain)]
        for start, end in quantities:
            add(sentence.plain[start:end], "number", sentence, position, start, end)
        for span in find_spans(sentence.plain):
            if span.kind == "number" and any(a <= span.start and span.end <= b for a, b in quantities):
                continue  # "140" of "2,140 m" is not a reading of it
            add(span.text, span.kind, sentence, position, span.start, span.end)
    for position, sentence in enumerate(evidence[:ngram_sentences]):
        for text, start, end in ngram_spans(sentence.plain, max_ngram, ngram_stop):
            add(text, "ngram", sentence, position, start, end)
    return out


def rank(question: str, shape: Shape, found: Sequence[SpanCandidate], evidence: Sequence[EvidenceSentence],
         weights: PriorWeights = WEIGHTS) -> list[SpanCandidate]:
    """``found`` scored and sorted best first (ties: earlier sentence, earlier in it)."""
    if not found:
        return []
    qtype = question_type(shape, question)
    question_words = content_word_forms(question)
    plains = [e.plain.lower() for e in evidence[:6]]
    best = evidence[0].score if evidence else 0.0
    nationality = bool(_ASKS_NATIONALITY.search(question))
    head = head_noun(shape.focus or question) if qtype in ("what", "which") else ""
    scored = [score(c, qtype, question_words, sum(1 for p in plains if c.text.lower() in p), best, weights,
                    nationality, head) for c in found]
    scored.sort(key=lambda c: (-c.score, c.position, c.start))
    return scored
