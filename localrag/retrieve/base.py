"""What every strategy gets and gives, and the registry of strategies."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Callable, Iterable, Protocol

from localrag.config import Settings
from localrag.embed import Embedder
from localrag.records import Retrieval, ScoredPassage, Trace
from localrag.store import Store
from localrag.store.vault import PassageFilter


@dataclass
class Context:
    store: Store
    embedder: Embedder
    settings: Settings
    llm_factory: Callable[[], object] | None = None  # lazily gives a RecordingLLM for LLM-guided strategies
    # tag: / path: filter (retrieve/filters.py): every strategy keeps only the passages it lets through
    filter: PassageFilter | None = None
    _allowed: set[int] | None = field(default=None, init=False, repr=False)

    def allowed(self) -> set[int] | None:
        """The passage ids the filter lets through (one query per Context), None without a filter."""
        if self.filter is None or self.filter.empty:
            return None
        if self._allowed is None:
            self._allowed = self.store.vault.filtered_passage_ids(self.filter)
        return self._allowed

    def keep(self, ranked: list[tuple[int, float]]) -> list[tuple[int, float]]:
        """``ranked`` without the passages the filter excludes (order kept)."""
        allowed = self.allowed()
        return ranked if allowed is None else [r for r in ranked if r[0] in allowed]

    def keep_ids(self, ids: Iterable[int]) -> list[int]:
        allowed = self.allowed()
        return list(ids) if allowed is None else [i for i in ids if i in allowed]

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
    ranked = ctx.keep(ranked)  # the last guard: no strategy returns a filtered-out passage
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
