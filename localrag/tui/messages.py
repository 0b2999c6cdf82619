"""Messages that worker threads post to the app (``post_message`` is thread-safe)."""

from __future__ import annotations

from textual.message import Message

from localrag.answer import Answer
from localrag.answer.events import AskEvent
from localrag.api import IndexStatus
from localrag.ingest.observers import WatchFallback
from localrag.ingest.watcher import IndexCycle


class IndexCycleDone(Message):
    """A sync (and graph) cycle finished; ``status`` was read in the worker."""

    def __init__(self, cycle: IndexCycle, status: IndexStatus | None) -> None:
        super().__init__()
        self.cycle = cycle
        self.status = status


class WatchFellBack(Message):
    """The folder could not be watched natively (the inotify limit): it is polled instead."""

    def __init__(self, fallback: WatchFallback) -> None:
        super().__init__()
        self.fallback = fallback


class AnswerTokens(Message):
    """New answer text is waiting in the block's buffer (one message per burst, not per token)."""

    def __init__(self, block_id: int) -> None:
        super().__init__()
        self.block_id = block_id


class AnswerStage(Message):
    """What the answer worker is doing now: retrieving, loading the model, answering."""

    def __init__(self, block_id: int, text: str) -> None:
        super().__init__()
        self.block_id = block_id
        self.text = text


class AnswerStep(Message):
    """One typed step of the question (entities, seeds, tracking round, evidence, first token), as it happens."""

    def __init__(self, block_id: int, event: AskEvent) -> None:
        super().__init__()
        self.block_id = block_id
        self.event = event


class AnswerFinished(Message):
    def __init__(self, block_id: int, answer: Answer) -> None:
        super().__init__()
        self.block_id = block_id
        self.answer = answer


class AnswerFailed(Message):
    def __init__(self, block_id: int, error: str) -> None:
        super().__init__()
        self.block_id = block_id
        self.error = error


class ModelState(Message):
    """The LLM is loading / ready / failed (``state``), with a line for the header and status panel."""

    def __init__(self, state: str, detail: str) -> None:
        super().__init__()
        self.state = state
        self.detail = detail


class ModelOffload(Message):
    """Where the model's layers will go ("CPU", "CUDA 29/29 layers"), known once llama.cpp's backend was read."""

    def __init__(self, text: str) -> None:
        super().__init__()
        self.text = text
