"""The choices a short answer is constrained to, and the grammar that admits exactly them.

Choices: the entity / date / number spans the project already finds (localrag.text.spans) in
the best evidence sentences and word n-grams of the best ones, ranked without a model
(localrag.answer.prior) and cut to the best few; the options a question names ("X or Y");
yes / no; and "not in your notes". The grammar that admits exactly them is
localrag.llm.grammar's.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Iterator, Sequence

from localrag.answer import prior
from localrag.answer.compare import Decision, NoteLookup, decide_choice, decide_same, options_absent
from localrag.answer.evidence import EvidenceSentence
from localrag.answer.shape import CHOICE, YESNO, Shape
from localrag.records import Passage
from localrag.text.stopwords import CANDIDATE_EDGE_STOPWORDS
from localrag.llm.grammar import choice_grammar, choice_schema  # noqa: F401 (the constraint, re-exported)

NOT_IN_NOTES = "not in your notes"
MAX_SPAN_CHARS = 120  # a longer span is a clause, not an answer
YES, NO = "yes", "no"


@dataclass(frozen=True)
class Choices:
    texts: tuple[str, ...]  # what the grammar admits, best first by the no-model ranking (localrag.answer.prior)
    source: dict[str, EvidenceSentence] = field(default_factory=dict, compare=False)  # span -> its sentence
    decision: Decision | None = field(default=None, compare=False)  # a comparison the notes' dates decided
    unknown_options: bool = False  # the notes know none of the options the question names

    def __contains__(self, text: str) -> bool:
        return text in self.texts

    def __len__(self) -> int:
        return len(self.texts)


def _clean(span: str) -> str:
    return span.strip(" \t\n.,;:!?\"'“”()[]*_`|")


def ngrams(text: str, max_n: int) -> list[str]:
    """Word n-grams (1..max_n) as the candidates use them: not starting or ending with a function word."""
    return [gram for gram, _, _ in prior.ngram_spans(text, max_n, CANDIDATE_EDGE_STOPWORDS)]


def build_choices(question: str, shape: Shape, evidence: Sequence[EvidenceSentence],
                  passages: Sequence[Passage] = (), lookup: NoteLookup | None = None, *, span_sentences: int = 10,
                  ngram_sentences: int = 6, max_ngram: int = 4, max_choices: int = 8,
                  offer_abstain: bool = True) -> Choices:
    """Everything a short answer to ``question`` may be, best first; spans keep the sentence they came from.

    Spans: ranked by localrag.answer.prior, the best ``max_choices`` kept. Options and yes / no: a
    comparison the notes' dates (or nationalities) decide puts its answer first (``decision``).
    """
    texts: list[str] = []
    source: dict[str, EvidenceSentence] = {}
    decision: Decision | None = None
    unknown = False

    def add(text: str, sentence: EvidenceSentence | None = None) -> None:
        text = " ".join(_clean(text).split())
        if not text or text in texts or len(text) > MAX_SPAN_CHARS:
            return
        texts.append(text)
        if sentence is not None:
            source[text] = sentence

    look = lookup or (lambda name: None)
    if shape.qtype == YESNO:
        decision = decide_same(question, passages, look)
        if decision:
            add(decision.answer, _sentence_of(decision.passage, evidence))
        add(YES)
        add(NO)
    elif shape.qtype == CHOICE and shape.options:
        decision = decide_choice(question, shape.options, passages, look)
        unknown = decision is None and bool(passages) and options_absent(question, shape.options, passages, look)
        for option in ([decision.answer] if decision else []) + list(shape.options):
            add(option, _first_mentioning(option, evidence))
    else:
        found = prior.candidates(question, evidence, span_sentences=span_sentences, ngram_sentences=ngram_sentences,
                                 max_ngram=max_ngram, ngram_stop=CANDIDATE_EDGE_STOPWORDS)
        for candidate in prior.rank(question, shape, found, evidence)[:max_choices]:
            add(candidate.text, candidate.sentence)
    if offer_abstain or not texts:
        add(NOT_IN_NOTES)
    return Choices(tuple(texts), source, decision, unknown_options=unknown)


def with_copied_spans(choices: Choices, evidence: Sequence[EvidenceSentence], max_words: int) -> Choices:
    """``choices`` widened to every run of 1..``max_words`` words of the evidence sentences
    (``answer.pick = copy``): a model that can answer writes its own words, and the grammar holds
    them to the notes' text. The ranked spans stay first, "not in your notes" last."""
    texts = [t for t in choices.texts if t != NOT_IN_NOTES]
    source, seen = dict(choices.source), set(texts)
    for sentence in evidence:
        for span in word_runs(sentence.plain, max_words):
            if span not in seen:
                seen.add(span)
                texts.append(span)
                source[span] = sentence
    if NOT_IN_NOTES in choices.texts:
        texts.append(NOT_IN_NOTES)
    return replace(choices, texts=tuple(texts), source=source)


def word_runs(plain: str, max_words: int) -> Iterator[str]:
    """Runs of 1..``max_words`` whitespace-separated words, outer punctuation stripped as the spans' is."""
    words = plain.split()
    for i in range(len(words)):
        for j in range(i + 1, min(len(words), i + max_words) + 1):
            span = _clean(" ".join(words[i:j]))
            if span and len(span) <= MAX_SPAN_CHARS and any(ch.isalnum() for ch in span):
                yield span


def _sentence_of(passage: Passage, evidence: Sequence[EvidenceSentence]) -> EvidenceSentence | None:
    return next((e for e in evidence if e.passage.id == passage.id), None)


def _first_mentioning(text: str, evidence: Sequence[EvidenceSentence]) -> EvidenceSentence | None:
    low = text.lower()
    return next((e for e in evidence if low in e.plain.lower()), None)


def sentence_for(answer: str, choices: Choices, evidence: Sequence[EvidenceSentence]) -> EvidenceSentence | None:
    """The evidence sentence an answer came from: its own source, else the best one that mentions it."""
    if answer in choices.source:
        return choices.source[answer]
    if answer in (YES, NO):
        return evidence[0] if evidence else None
    return _first_mentioning(answer, evidence)
