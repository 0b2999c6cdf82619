"""What every strategy gets and gives, and the registry of strategies."""

from __future__ import annotations

import dataclasses
import logging
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Protocol

from localrag.config import Settings
from localrag.embed import Embedder
from localrag.llm.base import LLM, RecordingLLM
from localrag.records import Retrieval, ScoredPassage, Trace
from localrag.registry import PluginError, Registry
from localrag.store import Store
from localrag.store.vault import PassageFilter

logger = logging.getLogger(__name__)


@dataclass
class Context:
    store: Store
    embedder: Embedder
    settings: Settings
    llm_factory: Callable[[], LLM] | None = None  # lazily gives a RecordingLLM for LLM-guided strategies
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

    def section(self, strategy: "Strategy") -> Any:
        """``strategy``'s own settings section (a plugin's dataclass, as a built-in reads ``settings.neuropath``)."""
        if strategy.settings_section is None:
            raise ValueError(f"the strategy {strategy.name!r} declares no settings section")
        return self.settings.section(strategy.settings_section, strategy.settings_type)

    def llm(self) -> LLM:
        if self.llm_factory is None:
            raise RuntimeError("this strategy needs a language model, and none is configured")
        return self.llm_factory()

    def traced(self, trace: Trace) -> "Context":
        """The same context whose LLM also records each call in ``trace.calls``."""
        parent = self

        def factory() -> RecordingLLM:
            inner = parent.llm()
            return RecordingLLM(inner, [trace.calls.append])

        return dataclasses.replace(self, llm_factory=factory)


class Strategy(Protocol):
    """What a strategy declares: its name, whether it calls a model, and the settings section it reads.

    Class attributes, read without making one: a plugin's ``settings_type`` (a dataclass) becomes the
    config section ``settings_section``, set like a built-in's ([section] in a config file,
    LOCALRAG_<SECTION>_<FIELD>, a dotted flag) and read with ``ctx.section(self)``."""

    name: str
    needs_llm: bool  # False: retrieval never calls the model (api.py then loads none unless answering)
    settings_section: str | None  # the [section] of the config it reads ("neuropath"), None for none
    settings_type: type | None  # that section's dataclass (NeuroPathSettings); None with no section of its own

    def retrieve(self, ctx: Context, query: str, k: int) -> Retrieval: ...


STRATEGIES: Registry[Callable[[], Strategy]] = Registry("strategy", "localrag.strategies", {
    "dense": "localrag.retrieve.dense:Dense",
    "lexical": "localrag.retrieve.lexical:Lexical",
    "hybrid": "localrag.retrieve.hybrid:Hybrid",
    "ppr": "localrag.retrieve.ppr:PPR",
    "graph": "localrag.retrieve.graph:GraphFusion",
    "neuropath": "localrag.retrieve.neuropath.strategy:NeuroPath",
    "remind": "localrag.retrieve.remind.strategy:Remind",
})


def register(name: str, factory: Callable[[], Strategy]) -> None:
    """A strategy added at run time (tests, an application embedding localrag); plugins use entry points."""
    STRATEGIES.add(name, factory)


def unregister(name: str) -> None:
    STRATEGIES.remove(name)


def strategy_names() -> list[str]:
    return STRATEGIES.names()


def plugin_settings() -> dict[str, type]:
    """The settings dataclass of each plugin strategy's own section, by section name (config.py reads them;
    the built-ins' sections are fields of ``Settings``). A plugin that cannot be loaded is left out here:
    it fails, in one line, when it is chosen."""
    out: dict[str, type] = {}
    for name in STRATEGIES.plugin_names():
        try:
            factory = STRATEGIES.get(name)
        except PluginError as exc:
            logger.info("%s", exc)
            continue
        section, kind = getattr(factory, "settings_section", None), getattr(factory, "settings_type", None)
        if section is None or kind is None:
            continue
        if not (isinstance(kind, type) and dataclasses.is_dataclass(kind)):
            raise PluginError(f"the strategy {name!r} declares settings_type {kind!r}, which is not a dataclass")
        out[section] = kind
    return out


def get_strategy(name: str) -> Strategy:
    """A new instance of the strategy ``name`` (UnknownPlugin, a ValueError, lists the choices)."""
    return STRATEGIES.get(name)()


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
