"""How a follow-up question was made self-contained (sessions and turns are in localrag/records.py:
the store keeps them)."""

from __future__ import annotations

from dataclasses import dataclass


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
