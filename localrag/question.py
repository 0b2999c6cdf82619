"""One question in flight through ``Assistant.ask`` (api.py): what the caller asked for, the
question's log id, events and calls, and what its retrieval and answer produced."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Callable

from localrag.answer.events import AskEvent, EventSink
from localrag.answer.flow import Composed
from localrag.records import LLMCallRecord, Retrieval

if TYPE_CHECKING:
    from localrag.conversation.records import Resolution


@dataclass(frozen=True)
class StrategyChoice:
    """The strategy a question runs with, and why (shown in the TUI header and ``--json``)."""

    strategy: str
    reason: str


@dataclass(frozen=True)
class AnswerRequest:
    """How the caller wants the answer (Assistant.ask's arguments)."""

    answer: bool
    mode: str | None
    short: bool
    on_token: Callable[[str], None] | None

    @property
    def asked_mode(self) -> str | None:
        """The answer mode asked for (``--short`` asks for free text in few words); None: the settings'."""
        return self.mode or ("free" if self.short else None)


@dataclass
class Asked:
    """One question in flight: its log id, the events it sent and the model calls it made."""

    question: str
    choice: StrategyChoice
    query_id: int | None
    rejected: bool  # its last answer was marked wrong: full retrieval, memory not read
    started: float  # perf_counter when it was asked
    on_event: EventSink | None
    calls: list[LLMCallRecord] = field(default_factory=list)
    events: list[AskEvent] = field(default_factory=list)

    @property
    def strategy(self) -> str:
        return self.choice.strategy

    def elapsed_ms(self) -> float:
        return (time.perf_counter() - self.started) * 1000

    def emit(self, event: AskEvent) -> None:
        self.events.append(event)
        if self.on_event is not None:
            self.on_event(event)


@dataclass(frozen=True)
class Outcome:
    """What one question's retrieval and answer produced."""

    resolution: "Resolution | None"  # how a follow-up was made self-contained
    query: str  # what retrieval searched for
    retrieval: Retrieval
    retrieve_ms: float
    composed: Composed | None
