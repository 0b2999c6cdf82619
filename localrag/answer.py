"""Grounded answers: the LLM answers from the top passages and cites them as [1], [2] …"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass, field

from localrag.llm.base import LLM, TokenSink
from localrag.llm.prompts import PromptPassage, answer_messages
from localrag.records import LLMCallRecord, Passage, Retrieval

_CITE = re.compile(r"\[(\d{1,3})\]")
_AFTER_ANSWER = re.compile(r"answer\s*:\s*(.*)", re.I | re.S)


@dataclass
class Citation:
    number: int
    passage: Passage
    cited: bool  # the answer text refers to it (otherwise it was context only)

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

    @property
    def tokens(self) -> int:
        return sum(c.total_tokens for c in self.calls)

    def tokens_by_phase(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for c in self.calls:
            out[c.phase] = out.get(c.phase, 0) + c.total_tokens
        return out

    def to_json(self) -> dict:
        return {
            "question": self.question,
            "answer": self.text,
            "strategy": self.strategy,
            "citations": [
                {"n": c.number, "cited": c.cited, "path": c.passage.path, "start_line": c.passage.start_line,
                 "end_line": c.passage.end_line, "location": c.location}
                for c in self.citations
            ],
            "passages": [
                {"rank": i + 1, "id": sp.passage.id, "path": sp.passage.path, "location": sp.passage.location,
                 "score": round(sp.score, 6), "source": sp.source, "text": sp.passage.text}
                for i, sp in enumerate(self.retrieval.passages)
            ],
            "llm_calls": [c.__dict__ | {"total_tokens": c.total_tokens} for c in self.calls],
            "tokens": {"total": self.tokens, "by_phase": self.tokens_by_phase()},
            "timings_ms": {"retrieve": round(self.retrieve_ms, 1), "answer": round(self.answer_ms, 1)},
            "trace": self.retrieval.trace.to_json(),
            "notes": self.notes,
        }


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


def build_citations(text: str, passages: list[Passage]) -> list[Citation]:
    cited = cited_numbers(text, len(passages))
    order = cited + [i for i in range(1, len(passages) + 1) if i not in cited]
    return [Citation(n, passages[n - 1], n in cited) for n in order]


def short_answer(text: str) -> str:
    """The bare answer for EM/F1: after 'Answer:' if present, citations and trailing dots removed."""
    m = _AFTER_ANSWER.search(text)
    core = m.group(1) if m else text
    core = _CITE.sub("", core).strip().splitlines()[0] if core.strip() else ""
    return core.strip().rstrip(".").strip()


def generate(llm: LLM, question: str, retrieval: Retrieval, n_passages: int, *, max_tokens: int,
             short: bool = False, on_token: TokenSink | None = None) -> tuple[str, list[Citation], float]:
    given = prompt_passages(retrieval, n_passages)
    started = time.perf_counter()
    reply = llm.chat(answer_messages(question, given, short=short), max_tokens=max_tokens, phase="answer", on_token=on_token)
    text = strip_invalid_citations(reply.text.strip(), len(given))
    passages = [sp.passage for sp in retrieval.passages[:n_passages]]
    return text, build_citations(text, passages), (time.perf_counter() - started) * 1000
