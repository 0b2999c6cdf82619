"""Typed records shared by the store, ingestion, retrieval and the UIs."""

from __future__ import annotations

import threading
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Callable, Iterator, Mapping

from localrag.trace import TraceEvent, event_from_json, event_json


@dataclass(frozen=True)
class Document:
    id: int
    path: str  # relative to the notes folder, POSIX separators
    size: int
    mtime_ns: int
    sha256: str
    kind: str
    title: str


@dataclass(frozen=True)
class Passage:
    id: int
    doc_id: int
    path: str
    title: str
    ordinal: int
    heading: str
    text: str
    sha256: str
    start_line: int
    end_line: int

    @property
    def location(self) -> str:
        return f"{self.path}:{self.start_line}-{self.end_line}"


@dataclass(frozen=True)
class SkippedFile:
    path: str
    reason: str
    detail: str


@dataclass
class ScoredPassage:
    passage: Passage
    score: float
    source: str = ""  # which retriever / step put it here


@dataclass
class LLMCallRecord:
    phase: str
    model: str
    prompt_tokens: int
    completion_tokens: int
    ms: float
    ok: bool = True
    error: str = ""
    cached_tokens: int = 0

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens


@dataclass
class Trace:
    """What a strategy did: its typed steps (``localrag.trace``), plus the LLM calls it made."""

    strategy: str
    steps: list[TraceEvent] = field(default_factory=list)
    calls: list[LLMCallRecord] = field(default_factory=list)
    ms: float = 0.0

    def add(self, event: TraceEvent) -> None:
        self.steps.append(event)
        listener = getattr(_step_listeners, "fn", None)
        if listener is not None:
            listener(self.strategy, event)

    def tokens_by_phase(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for call in self.calls:
            out[call.phase] = out.get(call.phase, 0) + call.total_tokens
        return out

    def to_json(self) -> dict:
        return {
            "strategy": self.strategy,
            "ms": round(self.ms, 2),
            "steps": [event_json(e) for e in self.steps],
            "calls": [c.__dict__ | {"total_tokens": c.total_tokens} for c in self.calls],
            "tokens_by_phase": self.tokens_by_phase(),
        }

    @classmethod
    def from_json(cls, data: Mapping) -> "Trace":
        """A stored trace (``to_json``) with its steps typed (its LLM calls are not read back). The
        strategies' event modules must be imported first (``localrag.retrieve.strategy_names()``
        loads the built-in ones), else their steps stay ``UnknownStep``."""
        strategy = str(data.get("strategy", ""))
        steps = [event_from_json(strategy, s) for s in data.get("steps", []) if isinstance(s, Mapping)]
        return cls(strategy, steps, ms=float(data.get("ms", 0.0) or 0.0))


StepListener = Callable[[str, TraceEvent], None]
_step_listeners = threading.local()


@contextmanager
def observe_steps(listener: StepListener) -> Iterator[None]:
    """Within the block, every trace step this thread records is also sent to ``listener`` as it happens."""
    previous = getattr(_step_listeners, "fn", None)
    _step_listeners.fn = listener
    try:
        yield
    finally:
        _step_listeners.fn = previous


@dataclass
class Retrieval:
    """Ranked passages with scores and a trace: every strategy returns this."""

    query: str
    passages: list[ScoredPassage]
    trace: Trace
    # called with the passage ids the answer cited, once it exists: a strategy learns from it
    on_answer: Callable[[list[int]], None] | None = field(default=None, repr=False, compare=False)

    def top(self, k: int) -> list[ScoredPassage]:
        return self.passages[:k]


@dataclass(frozen=True)
class Triple:
    """A normalised (head, relation, tail) before it is stored; origin says who produced it."""

    head: str
    relation: str
    tail: str
    origin: str = "llm"  # "llm" | "rules" | "link"


@dataclass(frozen=True)
class Fact:
    """A stored fact: entity ids and their names."""

    id: int
    head: int
    relation: str
    tail: int
    head_name: str
    tail_name: str


@dataclass(frozen=True)
class GraphCounts:
    entities: int
    facts: int
    coref_pairs: int
    mentions: int
    queued: int
    failed: int
