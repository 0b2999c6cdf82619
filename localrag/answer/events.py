"""Typed progress events of one question, in the order they happen, each with its elapsed time.

``Assistant.ask(on_event=...)`` sends them while the question is being answered: the CLI
prints them to stderr, the TUI shows them in the answer block. Trace steps of a strategy
(query entities, seeds, tracking rounds, completion) arrive as they are recorded.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, ClassVar

from localrag.retrieve.neuropath.events import CompletionStep, QueryEntitiesStep, RoundStep
from localrag.trace import SeedsEvent, TraceEvent, event_name


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
class QuestionEntities(AskEvent):
    entities: tuple[str, ...]
    kind: ClassVar[str] = "question_entities"

    def label(self) -> str:
        return "question entities: " + (", ".join(self.entities[:6]) or "none")


@dataclass(frozen=True, kw_only=True)
class Seeds(AskEvent):
    names: tuple[str, ...]
    kind: ClassVar[str] = "seeds"

    def label(self) -> str:
        return f"{len(self.names)} seed{'s' if len(self.names) != 1 else ''}: " + ", ".join(self.names[:5])


@dataclass(frozen=True, kw_only=True)
class TrackingRound(AskEvent):
    round: int
    of: int
    kept: int
    kind: ClassVar[str] = "tracking_round"

    def label(self) -> str:
        return f"tracking round {self.round} of {self.of}: {self.kept} path{'s' if self.kept != 1 else ''} kept"


@dataclass(frozen=True, kw_only=True)
class StrategyStep(AskEvent):
    """Any other named step of a strategy's trace (rrf, knn, ppr, ...)."""

    name: str
    kind: ClassVar[str] = "step"

    def label(self) -> str:
        return self.name


@dataclass(frozen=True, kw_only=True)
class Completion(AskEvent):
    path_docs: int
    kind: ClassVar[str] = "completion"

    def label(self) -> str:
        return f"completion: {self.path_docs} passage{'s' if self.path_docs != 1 else ''} from paths"


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


def from_trace_event(event: TraceEvent, elapsed_s: float, max_hop: int) -> AskEvent:
    """The progress event of a strategy's trace step (steps without their own keep their name)."""
    if isinstance(event, QueryEntitiesStep):
        return QuestionEntities(elapsed_s=elapsed_s, entities=event.entities)
    if isinstance(event, SeedsEvent):
        return Seeds(elapsed_s=elapsed_s, names=event.seed_names())
    if isinstance(event, RoundStep):
        return TrackingRound(elapsed_s=elapsed_s, round=event.round or 0, of=max_hop, kept=len(event.selected))
    if isinstance(event, CompletionStep):
        return Completion(elapsed_s=elapsed_s, path_docs=len(event.path_docs))
    return StrategyStep(elapsed_s=elapsed_s, name=event_name(event))
