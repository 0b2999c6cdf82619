"""The state and figures of one graph run: progress events, the report, a server outage."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Callable

from localrag.llm.base import LLMError

BATCH = 16  # passages taken from the queue at a time
# what a failed extraction call may raise: counted against the passage, never a crash
CALL_ERRORS = (LLMError, ValueError, RuntimeError, OSError)


@dataclass
class GraphProgress:
    done: int  # passages written in this run
    total: int  # done + still queued
    failed: int
    fallback: int
    path: str  # the passage just written (path:lines)
    elapsed: float = 0.0  # seconds since the run started (rate and ETA come from it)

    @property
    def rate(self) -> float:
        return self.done / self.elapsed if self.elapsed > 0 else 0.0

    @property
    def eta_s(self) -> float | None:
        return (self.total - self.done) / self.rate if self.rate > 0 else None


@dataclass
class StepTimes:
    """Seconds per step of a graph run: extract (rules or model), embed (entity names, on the worker
    thread: overlaps the others), embed_wait (the main thread waiting for it), coref, write."""

    seconds: dict[str, float] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def add(self, step: str, seconds: float) -> None:
        with self._lock:
            self.seconds[step] = self.seconds.get(step, 0.0) + seconds


@dataclass
class GraphReport:
    passages: int = 0
    facts_added: int = 0
    failed: int = 0
    fallback: int = 0
    llm_calls: int = 0
    seconds: float = 0.0
    cached: int = 0  # passages whose model reply came from the extraction cache
    prompt_tokens: int = 0
    cached_tokens: int = 0  # prompt tokens llama.cpp reused from its KV cache
    completion_tokens: int = 0
    remaining: int = 0  # still queued when the run ended (stopped, or passages that keep failing)
    requeued: int = 0  # passages queued again at the start: the graph was read by other span rules
    stopped: bool = False
    rejected: dict[str, int] = field(default_factory=dict)  # grounding rejections by reason
    extractor: str = ""  # the extractor used ("auto" resolved) and why
    concurrency: int = 1  # model calls in flight
    steps: StepTimes = field(default_factory=StepTimes)


class ServerUnreachable(LLMError):
    """The model server stopped answering mid-run. Every reply that came back was written; the
    rest of the queue is untouched and the next run resumes it."""

    def __init__(self, report: GraphReport, cause: BaseException):
        super().__init__(f"graph extraction stopped: {cause} ({report.passages} passages written in this run, "
                         f"{report.remaining} still queued: run the extraction again once the server is back "
                         "and it resumes)")
        self.report = report


@dataclass
class GraphRun:
    """One run's state, shared by the sequential loop and the concurrent driver."""

    report: GraphReport
    progress: Callable[[GraphProgress], None] | None
    should_stop: Callable[[], bool] | None
    started: float
    outage: BaseException | None = None  # the model server became unreachable

    def stop_requested(self) -> bool:
        return bool(self.should_stop and self.should_stop())
