"""NeuroPath's trace events: query NER, seeds, tracking rounds with their candidate paths,
memory replay and completion (localrag/trace.py has the base and the JSON form)."""

from __future__ import annotations

from dataclasses import dataclass

from localrag.trace import MemoryEvent, SeedsEvent, TraceEvent, omit_empty, optional, renamed

STRATEGY = "neuropath"


@dataclass(frozen=True)
class NerStep(TraceEvent, step="ner", strategy=STRATEGY):
    model: tuple[str, ...] = ()  # what the model named (or the cache held)
    grounded: tuple[str, ...] = ()  # of those, the names the question contains
    generic: tuple[str, ...] = omit_empty(())  # grounded, but common nouns, not names
    error: str = omit_empty()


@dataclass(frozen=True)
class QueryEntitiesStep(TraceEvent, step="query_entities", strategy=STRATEGY):
    entities: tuple[str, ...] = ()
    source: str = ""  # "llm" | "rules" | "none"


@dataclass(frozen=True)
class SeedLink:
    """A query entity and the graph entity it was linked to."""

    query: str
    entity: str  # the graph entity's name
    id: int
    sim: float


@dataclass(frozen=True)
class SeedsStep(SeedsEvent, step="seeds", strategy=STRATEGY):
    seeds: tuple[SeedLink, ...] = ()

    def seed_names(self) -> tuple[str, ...]:
        return tuple(s.entity for s in self.seeds)


@dataclass(frozen=True)
class CandidatePath:
    """A path shown to the model in a tracking round, by its id in that round's prompt."""

    id: int
    text: str
    sim: float = 0.0
    docs: tuple[int, ...] = ()
    expandable: bool = False
    recalled: bool = False  # came from the edge memory, not from this round's expansion


@dataclass(frozen=True)
class RoundStep(TraceEvent, step="round", strategy=STRATEGY):
    round: int | None = optional()
    g: str = ""  # what the candidates were pruned against (the question, then the requirement)
    candidates: tuple[CandidatePath, ...] = ()
    selected: tuple[int, ...] = ()  # valid path ids
    expand: tuple[int, ...] = ()
    chain: str = ""
    requirement: str = ""
    cont: int | None = renamed("continue")  # the model asked for another hop (None: no reply this round)
    fallback: str = ""  # why the model's choice was replaced, when it was
    errors: tuple[str, ...] = ()  # why replies were rejected
    note: str | None = optional()

    def kept_paths(self) -> list[CandidatePath]:
        by_id = {c.id: c for c in self.candidates}
        return [by_id[i] for i in self.selected if i in by_id]


@dataclass(frozen=True)
class MemoryStep(MemoryEvent, step="memory", strategy=STRATEGY):
    recalled_paths: tuple[str, ...] = ()
    from_knn: int = 0
    skipped_rounds: int = 0
    tokens_saved_est: int = 0
    enhanced: int = 0
    penalised: int = 0
    penalty: str = ""
    not_written: str = omit_empty()

    def savings(self) -> tuple[int, int]:
        return self.skipped_rounds, self.tokens_saved_est

    def learned(self) -> tuple[int, int]:
        return self.enhanced, self.penalised


@dataclass(frozen=True)
class MemoryAnswerStep(TraceEvent, step="memory_answer", strategy=STRATEGY):
    """What the answer's citations taught after an unusable tracking reply."""

    cited: tuple[int, ...] = ()
    paths: tuple[str, ...] = ()
    enhanced: int = 0
    not_written: str = omit_empty()


@dataclass(frozen=True)
class CompletionGraph:
    """The graph list completion fused in: the `graph` fusion, or a PPR from seeds and path ends."""

    retriever: str
    chain_weight: float | None = optional()
    restart: tuple[int, ...] | None = optional()
    scored_passages: int | None = optional()


@dataclass(frozen=True)
class CompletionStep(TraceEvent, step="completion", strategy=STRATEGY):
    path_docs: tuple[int, ...] = ()
    query: str = ""
    merge: str = ""
    retriever: str = ""
    path_ends: tuple[int, ...] = ()
    path_weight: float = 1.0
    fallback: bool = False
    chain: str = ""
    requirement: str = ""
    graph: CompletionGraph | None = optional()
    set_aside: bool | None = optional()  # True: the chain said none of the question's words, the fusion ranked alone
