"""Conversation records: a session (a thread of turns) and one turn of it."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class TurnCitation:
    """A passage the answer cited, as stored with the turn (the passage itself may change later)."""

    number: int
    location: str  # path:start-end
    title: str = ""


@dataclass(frozen=True)
class Turn:
    session_id: int
    ordinal: int  # 1, 2, … within the session
    question: str  # as the user asked it
    resolved: str  # what retrieval searched for (the question made self-contained)
    answer: str = ""
    citations: tuple[TurnCitation, ...] = ()
    strategy: str = ""
    query_id: int | None = None
    resolver: str = ""  # "unchanged" | "rules" | "llm"
    created: float = 0.0
    id: int | None = None

    @property
    def was_resolved(self) -> bool:
        return self.resolved.strip() != self.question.strip()


@dataclass(frozen=True)
class Session:
    id: int
    name: str | None
    created: float
    updated: float
    turns: int = 0
    first_question: str = ""

    @property
    def label(self) -> str:
        return self.name or f"#{self.id}"


@dataclass(frozen=True)
class Resolution:
    """A follow-up question made self-contained, and how."""

    question: str
    query: str  # what retrieval searches for
    method: str  # "unchanged" | "rules" | "llm"
    reason: str = ""  # e.g. "'she' -> Ilse Varnhagen" or why the LLM rewrite was rejected
    notes: tuple[str, ...] = ()

    @property
    def changed(self) -> bool:
        return self.query.strip() != self.question.strip()
