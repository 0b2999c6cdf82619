"""NeuroPath's trace events: query NER, seeds, tracking rounds with their candidate paths,
memory replay and completion (localrag/trace.py has the base and the JSON form), and how each
shows itself (progress line, reasoning-path tree node, path facts, notes)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from localrag.trace import MemoryEvent, SeedsEvent, TraceEvent, omit_empty, optional, renamed
from localrag.trace_views import StepProgress, TreeNode, TreePlace, plural, seeds_node, short, shown

if TYPE_CHECKING:
    from localrag.config import Settings

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

    def progress(self, settings: "Settings") -> StepProgress:
        return StepProgress("question_entities", "question entities: " + (", ".join(self.entities[:6]) or "none"),
                            {"entities": self.entities})

    def tree_node(self, place: TreePlace) -> TreeNode:
        return TreeNode(f"Question entities: {short(self.entities) or 'none'}" + (f" ({self.source})" if self.source else ""))


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

    def ranking_inputs(self) -> dict[str, Any]:
        return {"seeds": [s.id for s in self.seeds]}

    def tree_node(self, place: TreePlace) -> TreeNode:
        return seeds_node(f"{s.query} → {s.entity}  (sim {s.sim:.2f})" for s in self.seeds)


@dataclass(frozen=True)
class CandidatePath:
    """A path shown to the model in a tracking round, by its id in that round's prompt."""

    id: int
    text: str
    sim: float = 0.0
    docs: tuple[int, ...] = ()
    expandable: bool = False
    recalled: bool = False  # came from the edge memory, not from this round's expansion

    def fact(self) -> str:
        """The path as a line of the tree: its facts, its similarity, whether memory recalled it."""
        text = self.text.strip().rstrip(";").strip()
        label = short(text) + f"  (sim {self.sim:.2f})"
        return label + ("  · recalled from memory" if self.recalled else "")


# the round fields the hop node shows in its own lines; the others follow as "name: value"
_ROUND_SHOWN = {"round", "g", "candidates", "selected", "expand", "chain", "continue", "requirement"}


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

    path_part = "hop"

    def kept_paths(self) -> list[CandidatePath]:
        by_id = {c.id: c for c in self.candidates}
        return [by_id[i] for i in self.selected if i in by_id]

    def progress(self, settings: "Settings") -> StepProgress:
        of, kept = settings.neuropath.max_hop, len(self.selected)
        return StepProgress("tracking_round", f"tracking round {self.round or 0} of {of}: {plural(kept, 'path')} kept",
                            {"round": self.round or 0, "of": of, "kept": kept})

    def path_facts(self) -> tuple[str, ...]:
        selected = set(self.selected)
        return tuple(c.text for c in self.candidates if c.id in selected)

    def tree_node(self, place: TreePlace) -> TreeNode:
        hop = TreeNode(f"Hop {self.round if self.round is not None else place.hop + 1}", style="bold")
        if self.g:
            hop.add(f"pruned against: {short(self.g)}", style="dim")
        candidates = {c.id: c for c in self.candidates}
        if candidates:
            hop.add(f"{len(candidates)} candidate paths shown to the model", style="dim")
        kept = hop.add(f"kept ({len(self.selected)})", style="green")
        kept.add_lines(candidates[pid].fact() if pid in candidates else f"path {pid}" for pid in self.selected)
        if not self.selected:
            kept.add("nothing kept", style="dim")
        if self.expand:
            grow = hop.add(f"to expand ({len(self.expand)})", style="yellow")
            grow.add_lines(candidates[pid].fact() if pid in candidates else f"path {pid}" for pid in self.expand)
        if self.chain:
            hop.add(f"chain: {short(self.chain)}")
        if self.requirement:
            hop.add(f"expansion requirement: {short(self.requirement)}", style="yellow")
        if self.cont is not None:
            hop.add(self._next(place), style="dim")
        for key, value in self.fields().items():
            if key not in _ROUND_SHOWN and shown(value):
                hop.add(f"{key}: {short(value)}", style="red" if key in ("fallback", "errors") else "dim")
        return hop

    def _next(self, place: TreePlace) -> str:
        if not self.cont:
            return "■ stop: enough found"
        return "→ another hop wanted, but this was the last one (max_hop)" if place.last_hop else "→ continue to the next hop"


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

    def memory_figures(self) -> dict[str, int]:
        return {**super().memory_figures(), "from_knn": self.from_knn}


@dataclass(frozen=True)
class MemoryAnswerStep(TraceEvent, step="memory_answer", strategy=STRATEGY):
    """What the answer's citations taught after an unusable tracking reply."""

    cited: tuple[int, ...] = ()
    paths: tuple[str, ...] = ()
    enhanced: int = 0
    not_written: str = omit_empty()

    def notes(self) -> tuple[str, ...]:
        return (f"memory: learned from the answer's citations: +{self.enhanced} edges",) if self.enhanced else ()

    def memory_figures(self) -> dict[str, int]:
        return {"enhanced": self.enhanced}

    def plain_node(self) -> TreeNode:
        return super().plain_node().add_lines(short(p) for p in self.paths)


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

    def progress(self, settings: "Settings") -> StepProgress:
        n = len(self.path_docs)
        return StepProgress("completion", f"completion: {plural(n, 'passage')} from paths", {"path_docs": n})

    def path_facts(self) -> tuple[str, ...]:
        return (self.chain,) if self.chain else ()

    def ranking_inputs(self) -> dict[str, Any]:
        """What tracking handed to completion (with the seeds, a ``CompletionInput``'s fields)."""
        return {"path_docs": list(self.path_docs), "path_ends": list(self.path_ends), "fallback": self.fallback,
                "chain": self.chain, "requirement": self.requirement}
