"""Grounded answers: evidence sentences first, then the LLM's answer citing passages as [1], [2] …

``flow.compose`` is the one answer path (evidence, question shape, a grammar-constrained
short span or free text, abstention) for the CLI, the TUI, the MCP server and the bench;
this module holds the Answer record and the checks every
model reply goes through (citations, repeats, prompt markup).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from localrag.llm.prompts import PromptPassage
from localrag.records import LLMCallRecord, Passage, Retrieval
from localrag.text.sentences import SENTENCE_GAP
from localrag.text.words import attribution_words

if TYPE_CHECKING:
    from localrag.answer.events import AskEvent
    from localrag.answer.flow import Composed
    from localrag.answer.evidence import EvidenceSentence
    from localrag.answer.shape import Shape

ABSTAIN_TEXT = "Not in your notes: nothing retrieved answers this. The closest passages are listed below."

_CITE = re.compile(r"\[(\d{1,3})\]")
_AFTER_ANSWER = re.compile(r"answer(?:\s+is)?\s*:\s*(.*)", re.I | re.S)
_LOCATION = re.compile(r"\s*\((?:[^()\s]+\.\w+:\d+(?:-\d+)?[,;\s]*)+\)")  # "(505.md:1-3)": a citation, not the answer


@dataclass
class Citation:
    number: int
    passage: Passage
    cited: bool  # the answer text refers to it (otherwise it was context only)
    inferred: bool = False  # the model gave no marker; attributed by word overlap

    @property
    def location(self) -> str:
        return self.passage.location


@dataclass
class Answer:
    question: str
    text: str
    citations: list[Citation]
    retrieval: Retrieval
    strategy: str
    calls: list[LLMCallRecord] = field(default_factory=list)
    retrieve_ms: float = 0.0
    answer_ms: float = 0.0
    query_id: int | None = None
    notes: list[str] = field(default_factory=list)  # e.g. what memory saved
    resolved_query: str = ""  # what retrieval searched for when a conversation resolved a follow-up
    session: str = ""  # the conversation this turn belongs to ("" for a single question)
    strategy_reason: str = ""  # why this strategy ran (Assistant.resolve: `auto`'s rule, or asked for)
    evidence_shown: int = 3
    total_ms: float = 0.0
    events: list["AskEvent"] = field(default_factory=list)
    # what the answer step made (evidence, shape, span, abstention ...); None: retrieval only, no answer asked
    composed: "Composed | None" = None

    # the composed answer's parts, read through (flow.Composed says what each is)
    @property
    def evidence(self) -> list["EvidenceSentence"]:  # best first
        return self.composed.evidence if self.composed else []

    @property
    def shape(self) -> "Shape | None":
        return self.composed.shape if self.composed else None

    @property
    def mode(self) -> str:  # "short" (constrained span) | "open" | "free" | "" (no answer asked)
        return self.composed.mode if self.composed else ""

    @property
    def span(self) -> str:
        return self.composed.span if self.composed else ""

    @property
    def span_sentence(self) -> "EvidenceSentence | None":
        return self.composed.span_sentence if self.composed else None

    @property
    def abstained(self) -> bool:
        return self.composed.abstained if self.composed else False

    @property
    def abstain_reason(self) -> str:
        return self.composed.abstain_reason if self.composed else ""

    @property
    def choices(self) -> int:  # how many spans the grammar admitted
        return len(self.composed.choices) if self.composed and self.composed.choices else 0

    @property
    def choice_texts(self) -> tuple[str, ...]:  # best first (the bench draws its random baseline from them)
        return self.composed.choices.texts if self.composed and self.composed.choices else ()

    @property
    def decided(self) -> str:
        return self.composed.decided if self.composed else ""

    @property
    def picked_by(self) -> str:
        return self.composed.picked_by if self.composed else ""

    @property
    def overridden(self) -> str:
        return self.composed.overridden if self.composed else ""

    @property
    def unsupported(self) -> list[str]:
        return self.composed.unsupported if self.composed else []

    @property
    def evidence_ms(self) -> float | None:  # since the question was asked
        return self.composed.evidence_ms if self.composed else None

    @property
    def first_token_ms(self) -> float | None:
        return self.composed.first_token_ms if self.composed else None

    @property
    def shown_evidence(self) -> list["EvidenceSentence"]:
        return self.evidence[:self.evidence_shown]

    @property
    def tokens(self) -> int:
        return sum(c.total_tokens for c in self.calls)

    def tokens_by_phase(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for c in self.calls:
            out[c.phase] = out.get(c.phase, 0) + c.total_tokens
        return out


def prompt_passages(retrieval: Retrieval, n: int) -> list[PromptPassage]:
    return [
        PromptPassage(i + 1, sp.passage.location, sp.passage.title, sp.passage.text)
        for i, sp in enumerate(retrieval.passages[:n])
    ]


def cited_numbers(text: str, limit: int) -> list[int]:
    seen: list[int] = []
    for m in _CITE.finditer(text):
        n = int(m.group(1))
        if 1 <= n <= limit and n not in seen:
            seen.append(n)
    return seen


def strip_invalid_citations(text: str, limit: int) -> str:
    """A marker that points at no passage given to the model is removed, never shown as a source."""
    return _CITE.sub(lambda m: m.group(0) if 1 <= int(m.group(1)) <= limit else "", text)




def attribute(text: str, passages: list[Passage], min_overlap: float = 0.3) -> list[int]:
    """Passages (1-based) whose words best cover an answer that carries no [n] markers.

    Small models often answer correctly but cite nothing; a user still needs to see where
    the answer came from, so the best-covering passage is cited and marked as inferred.
    """
    words = attribution_words(text)
    if not words:
        return []
    scores = []
    for i, p in enumerate(passages, start=1):
        overlap = len(words & attribution_words(f"{p.title} {p.text}")) / len(words)
        scores.append((overlap, -i, i))
    scores.sort(reverse=True)
    best = scores[0] if scores else None
    if best is None or best[0] < min_overlap:
        return []
    return [i for overlap, _, i in scores if overlap >= best[0] - 1e-9][:2]


def build_citations(text: str, passages: list[Passage]) -> list[Citation]:
    cited = cited_numbers(text, len(passages))
    inferred: list[int] = [] if cited else attribute(text, passages)
    first = cited or inferred
    order = first + [i for i in range(1, len(passages) + 1) if i not in first]
    return [Citation(n, passages[n - 1], n in first, inferred=n in inferred) for n in order]


def short_answer(text: str) -> str:
    """The bare answer for EM/F1: after 'Answer:' if present, citations and trailing dots removed."""
    m = _AFTER_ANSWER.search(text)
    core = m.group(1) if m else text
    lines = _LOCATION.sub("", _CITE.sub("", core)).strip().splitlines()
    core = lines[0] if lines else ""  # a reply that was only citations has no answer
    return core.strip().rstrip(".").strip()


EMPTY_ANSWER = "The model gave no answer; the passages below are the closest matches in your notes."
# a stretch of 4+ characters, starting with a letter, repeated 3+ times in a row: a model stuck in a loop
_LOOP = re.compile(r"(\b[^\W\d_][^\n]{3,199}?)(?:\s*\1){2,}")


def collapse_repetition(text: str) -> str:
    """Keep one copy of any run of repeats, and drop sentences the reply already said."""
    text = _LOOP.sub(lambda m: m.group(1), text)
    parts = SENTENCE_GAP.split(text)  # sentences at even indexes, the gaps after them at odd ones
    seen: set[str] = set()
    kept: list[str] = []
    for i in range(0, len(parts), 2):
        key = " ".join(parts[i].lower().split())
        if key and key in seen:
            continue
        seen.add(key)
        kept.append(parts[i] + (parts[i + 1] if i + 1 < len(parts) else ""))
    return "".join(kept).strip()


# prompt markup a small model may echo: <passage n="6" source="a.md:1-3">, </passage>, "< passage", source="...",
# and a header's location "(a.md:1-3)" (the [n] markers are the citations; a location can name a file never given)
_MARKUP = re.compile(r"<\s*/?\s*passage\b[^>\n]*>?|\b(?:n|source|title)=\"[^\"\n]*\"|" + _LOCATION.pattern, re.I)


def strip_markup(text: str) -> str:
    """The reply without any of the prompt's passage markup (and the blank space it leaves)."""
    cleaned = _MARKUP.sub(" ", text)
    return "\n".join(" ".join(line.split()) for line in cleaned.splitlines()).strip() if cleaned != text else text


def checked_reply(text: str, finish_reason: str, max_tokens: int, limit: int) -> tuple[str, list[str]]:
    """The answer as shown, with notes on what was wrong with the model's reply (never an exception)."""
    notes: list[str] = []
    text = text.strip()
    unmarked = strip_markup(text)
    if unmarked != text:
        notes.append("answer: prompt markup the model copied was removed")
        text = unmarked
    collapsed = collapse_repetition(text)
    if collapsed != text:
        notes.append("answer: the model repeated itself; repeats removed")
        text = collapsed
    cleaned = strip_invalid_citations(text, limit)
    if cleaned != text:
        notes.append("answer: citations of passages the model was not given were removed")
        text = cleaned.strip()
    if finish_reason == "length":
        notes.append(f"answer: cut at {max_tokens} tokens (llm.answer_max_tokens)")
    if not text:
        notes.append("answer: the model's reply was empty")
        text = EMPTY_ANSWER
    return text, notes
