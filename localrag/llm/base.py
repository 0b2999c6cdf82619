"""LLM protocol: chat(messages, schema, max_tokens, phase) -> Reply."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any, Callable, NamedTuple, Protocol, Sequence, TypedDict, TypeVar

from localrag.errors import LocalragError
from localrag.records import LLMCallRecord


class LLMError(LocalragError, RuntimeError):
    """The model cannot be loaded or reached; the message says what to do."""


class Message(TypedDict):
    role: str
    content: str


@dataclass
class Usage:
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_tokens: int = 0  # prompt tokens served from the KV cache (not evaluated)

    @property
    def total(self) -> int:
        return self.prompt_tokens + self.completion_tokens


@dataclass
class Reply:
    text: str
    usage: Usage = field(default_factory=Usage)
    ms: float = 0.0
    model: str = ""
    finish_reason: str = ""
    data: Any = None  # parsed JSON when a schema was given and the text parsed


@dataclass
class Scored:
    """How likely the model finds each of some replies as its whole answer (``LlamaCppLLM.score_replies``)."""

    logprobs: list[float]  # natural log, the reply's tokens and its end of turn summed
    usage: Usage = field(default_factory=Usage)  # completion_tokens: the reply tokens evaluated
    ms: float = 0.0
    model: str = ""


TokenSink = Callable[[str], None]
_Call = TypeVar("_Call", Reply, Scored)  # what a recorded call returns: both carry model, usage and ms


class LLM(Protocol):
    model_id: str

    def chat(
        self,
        messages: list[Message],
        *,
        schema: dict | None = None,
        max_tokens: int = 512,
        phase: str = "answer",
        on_token: TokenSink | None = None,
        choices: Sequence[str] | None = None,  # the reply must be exactly one of these (grammar / guided)
    ) -> Reply: ...


class BuiltLLM(NamedTuple):
    """What a backend of the registry (llm/factory.py) builds: the model and where it came from."""

    llm: LLM
    source: str  # shown to the user: "bundled: …/SmolLM2.gguf", "server http://… (model …)"


CallSink = Callable[[LLMCallRecord], None]


class RecordingLLM:
    """Wraps a backend and reports every call (phase, tokens, ms) to the sinks."""

    def __init__(self, inner: LLM, sinks: list[CallSink] | None = None):
        self.inner = inner
        self.sinks: list[CallSink] = list(sinks or [])
        self._local = threading.local()

    @property
    def model_id(self) -> str:
        return self.inner.model_id

    def chat(self, messages: list[Message], *, schema: dict | None = None, max_tokens: int = 512,
             phase: str = "answer", on_token: TokenSink | None = None, choices: Sequence[str] | None = None) -> Reply:
        extra = {"choices": list(choices)} if choices is not None else {}  # older backends take no choices
        return self._recorded(phase, lambda: self.inner.chat(messages, schema=schema, max_tokens=max_tokens,
                                                             phase=phase, on_token=on_token, **extra))

    def score_replies(self, messages: list[Message], replies: Sequence[str], *, phase: str = "answer") -> Scored | None:
        """Each reply's log-probability as the model's answer, or None when the backend cannot tell
        (a server returns text, not the likelihood of a given reply)."""
        score = getattr(self.inner, "score_replies", None)
        return None if score is None else self._recorded(phase, lambda: score(messages, replies))

    def _recorded(self, phase: str, call: Callable[[], _Call]) -> _Call:
        """``call()``'s reply, its phase, tokens and time reported to the sinks (a failure too)."""
        try:
            out = call()
        except LLMError as exc:
            self._emit(LLMCallRecord(phase, self.model_id, 0, 0, 0.0, ok=False, error=str(exc)[:500]))
            raise
        self._emit(LLMCallRecord(phase, out.model or self.model_id, out.usage.prompt_tokens,
                                 out.usage.completion_tokens, out.ms, cached_tokens=out.usage.cached_tokens))
        return out

    def _emit(self, record: LLMCallRecord) -> None:
        for sink in self.sinks:
            sink(record)
        for sink in getattr(self._local, "scoped", []):
            sink(record)

    def scoped(self, sink: CallSink) -> "_Scope":
        """Within the block, this thread's calls also go to ``sink`` (e.g. one query's trace)."""
        return _Scope(self, sink)


class _Scope:
    def __init__(self, llm: RecordingLLM, sink: CallSink):
        self.llm, self.sink = llm, sink

    def __enter__(self) -> None:
        stack = getattr(self.llm._local, "scoped", None)
        if stack is None:
            stack = self.llm._local.scoped = []
        stack.append(self.sink)

    def __exit__(self, *exc: object) -> None:
        self.llm._local.scoped.remove(self.sink)
