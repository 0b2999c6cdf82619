"""What every strategy gets and gives, and the registry of strategies."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Callable, Protocol

from localrag.config import Settings
from localrag.embed import Embedder
from localrag.records import Retrieval, ScoredPassage, Trace
from localrag.store import Store


@dataclass
class Context:
    store: Store
    embedder: Embedder
    settings: Settings
    llm_factory: Callable[[], object] | None = None  # lazily gives a RecordingLLM for LLM-guided strategies

    def llm(self):
        if self.llm_factory is None:
            raise RuntimeError("this strategy needs a language model, and none is configured")
        return self.llm_factory()

    def traced(self, trace: Trace) -> "Context":
        """The same context whose LLM also records each call in ``trace.calls``."""
        import dataclasses

        from localrag.llm.base import RecordingLLM

        parent = self

        def factory():
            inner = parent.llm()
            return RecordingLLM(inner, [trace.calls.append])

        return dataclasses.replace(self, llm_factory=factory)


class Strategy(Protocol):
    name: str

    def retrieve(self, ctx: Context, query: str, k: int) -> Retrieval: ...


_REGISTRY: dict[str, Callable[[], Strategy]] = {}
_LOADED = False


def register(name: str, factory: Callable[[], Strategy]) -> None:
    _REGISTRY[name] = factory


def _load_builtin() -> None:
    global _LOADED
    if _LOADED:
        return
    _LOADED = True
    from localrag.retrieve import dense, hybrid, lexical  # noqa: F401  (they register themselves)

    for optional in ("localrag.retrieve.ppr", "localrag.retrieve.graph", "localrag.retrieve.neuropath", "localrag.retrieve.remind"):
        try:
            __import__(optional)
        except ModuleNotFoundError as exc:
            if exc.name != optional:
                raise


def strategy_names() -> list[str]:
    _load_builtin()
    return sorted(_REGISTRY)


def get_strategy(name: str) -> Strategy:
    _load_builtin()
    if name not in _REGISTRY:
        raise ValueError(f"unknown strategy {name!r}; choose one of: {', '.join(strategy_names())}")
    return _REGISTRY[name]()


def scored(ctx: Context, ranked: list[tuple[int, float]], source: str) -> list[ScoredPassage]:
    passages = ctx.store.docs.passages([pid for pid, _ in ranked])
    score = dict(ranked)
    return [ScoredPassage(p, score[p.id], source) for p in passages]


class Timer:
    def __init__(self, trace: Trace):
        self.trace = trace

    def __enter__(self) -> "Timer":
        self._t = time.perf_counter()
        return self

    def __exit__(self, *exc: object) -> None:
        self.trace.ms += (time.perf_counter() - self._t) * 1000
