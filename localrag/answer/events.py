"""Typed progress events of one question, in the order they happen, each with its elapsed time.

``Assistant.ask(on_event=...)`` sends them while the question is being answered: the CLI
prints them to stderr, the TUI shows them in the answer block. Trace steps of a strategy
(query entities, seeds, tracking rounds, completion) arrive as they are recorded.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, ClassVar

from localrag.config import Settings
from localrag.trace import TraceEvent
from localrag.trace_views import StepProgress


@dataclass(frozen=True, kw_only=True)
class AskEvent:
    elapsed_s: float  # since the question was asked
    kind: ClassVar[str] = "event"

    def label(self) -> str:
        return self.kind

    def to_json(self) -> dict:
        data = {k: v for k, v in self.__dict__.items()}
        return {"event": self.kind, **data}


@dataclass(frozen=True, kw_only=True)
class RetrievalStarted(AskEvent):
    strategy: str
    kind: ClassVar[str] = "retrieval"

    def label(self) -> str:
        return f"retrieving ({self.strategy})"


@dataclass(frozen=True, kw_only=True)
class StrategyStep(AskEvent):
    """A step of the strategy's trace, as the step shows itself (``TraceEvent.progress``)."""

    shown: StepProgress
    kind: ClassVar[str] = "step"

    def label(self) -> str:
        return self.shown.label

    def to_json(self) -> dict:
        return {"event": self.shown.kind, "elapsed_s": self.elapsed_s, **self.shown.data}


@dataclass(frozen=True, kw_only=True)
class Retrieved(AskEvent):
    passages: int
    kind: ClassVar[str] = "retrieved"

    def label(self) -> str:
        return f"{self.passages} passages retrieved"


@dataclass(frozen=True, kw_only=True)
class EvidenceReady(AskEvent):
    quotes: tuple[str, ...]  # "path:line  sentence" of the best sentences
    weak: bool
    kind: ClassVar[str] = "evidence"

    def label(self) -> str:
        return f"evidence: {len(self.quotes)} sentence{'s' if len(self.quotes) != 1 else ''}" + \
            (" (weak)" if self.weak else "")


@dataclass(frozen=True, kw_only=True)
class AnswerStarted(AskEvent):
    shape: str  # "short" | "open"
    choices: int  # spans the grammar admits (0 for open answers)
    kind: ClassVar[str] = "answer_started"

    def label(self) -> str:
        return f"short answer from {self.choices} spans" if self.shape == "short" else "answering"


@dataclass(frozen=True, kw_only=True)
class FirstToken(AskEvent):
    kind: ClassVar[str] = "first_token"

    def label(self) -> str:
        return "first answer token"


@dataclass(frozen=True, kw_only=True)
class AnswerDone(AskEvent):
    abstained: bool
    kind: ClassVar[str] = "answer"

    def label(self) -> str:
        return "not in your notes" if self.abstained else "answered"


EventSink = Callable[[AskEvent], None]


def from_trace_event(event: TraceEvent, elapsed_s: float, settings: Settings) -> StrategyStep:
    """The progress event of a strategy's trace step (a step without a line of its own shows its name)."""
    return StrategyStep(elapsed_s=elapsed_s, shown=event.progress(settings))
