"""Typed records shared by the store, ingestion, retrieval and the UIs."""

from __future__ import annotations

import json
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
    start_line: int  # 1-based lines of the note, or of a document's extracted text (what MCP `open` returns)
    end_line: int
    locator: str = ""  # where a person finds a document's passage: "p. 12", "slide 3", "§ Results"; "" for notes

    @property
    def location(self) -> str:
        """``notes/a.md:3-9``, or ``report.pdf p. 12`` for a document."""
        return f"{self.path} {self.locator}" if self.locator else f"{self.path}:{self.start_line}-{self.end_line}"

    def location_of_line(self, line: int) -> str:
        """Where one line of the passage is: ``notes/a.md:5``, or the passage's locator in a document."""
        return f"{self.path} {self.locator}" if self.locator else f"{self.path}:{line}"


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


@dataclass(frozen=True)
class NoteMeta:
    title: str = ""
    aliases: tuple[str, ...] = ()
    tags: tuple[str, ...] = ()  # lowercased, without '#'
    properties: tuple[tuple[str, str], ...] = ()  # scalar (key, value) pairs, in file order
    warning: str = ""  # what `status` warns about the indexed note: front matter it could not use, bytes not UTF-8
    lines: int = 0  # lines the front matter takes (0: none)

    @property
    def empty(self) -> bool:
        return not (self.title or self.aliases or self.tags or self.properties or self.warning)

    def to_json(self) -> str:
        return json.dumps({"title": self.title, "aliases": list(self.aliases), "tags": list(self.tags),
                           "properties": [list(p) for p in self.properties], "warning": self.warning})

    @classmethod
    def from_json(cls, raw: str) -> "NoteMeta":
        d = json.loads(raw)
        return cls(d.get("title", ""), tuple(d.get("aliases", ())), tuple(d.get("tags", ())),
                   tuple((str(k), str(v)) for k, v in d.get("properties", ())), d.get("warning", ""))

    @property
    def description(self) -> str:
        """The note's summary, as vault tools name it (Dendron ``desc``, ``description``, ``summary``)."""
        for key in ("desc", "description", "summary", "abstract"):
            value = next((v for k, v in self.properties if k.lower() == key), None)
            if value:
                return value
        return ""

    @property
    def alias_names(self) -> tuple[str, ...]:
        """Names the note is also known by: its aliases, and a front-matter title unlike its own
        (the note's title is its first heading or file name, as Obsidian names notes)."""
        return tuple(dict.fromkeys(self.aliases + ((self.title,) if self.title else ())))


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
