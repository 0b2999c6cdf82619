"""ReMindRAG's trace events: seeds, settings, memory expansion, the walk (summaries, judge
verdicts, moves with the options shown), where it stopped, the path, memory replay and the
ranking (localrag/trace.py has the base and the JSON form), and how the seeds and the path
show themselves in the reasoning-path tree and the answer's path facts."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from localrag.trace import MemoryEvent, SeedsEvent, TraceEvent, optional, to_json_value
from localrag.trace_views import TreeNode, TreePlace, seeds_node, short

STRATEGY = "remind"


@dataclass(frozen=True)
class NodeSeed:
    node: str  # the node's label
    id: int
    kind: str  # "entity" | "passage"
    sim: float


@dataclass(frozen=True)
class RemindSeedsStep(SeedsEvent, step="seeds", strategy=STRATEGY):
    seeds: tuple[NodeSeed, ...] = ()

    def seed_names(self) -> tuple[str, ...]:
        return tuple(s.node for s in self.seeds)

    def tree_node(self, place: TreePlace) -> TreeNode:
        return seeds_node(short(to_json_value(s)) for s in self.seeds)


@dataclass(frozen=True)
class ConfigStep(TraceEvent, step="config", strategy=STRATEGY):
    alpha: float = 0.0
    lam: float = 0.0
    penalty: str = ""
    memory: bool = False
    max_jumps: int = 0
    max_llm_calls: int = 0
    max_iterations: int = 0
    zero_jump: str = ""
    deviations: tuple[str, ...] = ()  # where this implementation departs from the paper, and why


@dataclass(frozen=True)
class RecalledEdge:
    step: str  # the edge as a line ("a -[rel]-> b")
    w: float


@dataclass(frozen=True)
class ExpansionStep(TraceEvent, step="expansion", strategy=STRATEGY):
    recalled_edges: int = 0
    passages: tuple[int, ...] = ()
    edges: tuple[RecalledEdge, ...] = ()
    memory: str = ""  # "on" | "off"


@dataclass(frozen=True)
class SummaryStep(TraceEvent, step="summary", strategy=STRATEGY):
    passage: int = 0
    tokens: int = 0
    summary: str = ""


@dataclass(frozen=True)
class JudgeStep(TraceEvent, step="judge", strategy=STRATEGY):
    after: str = ""
    collected: tuple[int, ...] = ()
    sufficient: str = ""  # "yes" | "no"
    reason: str = ""
    usable: bool = True


@dataclass(frozen=True)
class MoveOption:
    """A neighbour offered to the model (c1…) with the edge it is reached by and its weight."""

    id: str
    node: str
    via: str
    w: float


@dataclass(frozen=True)
class MoveStep(TraceEvent, step="move", strategy=STRATEGY):
    """One turn of the walk: a shortcut or chosen move, a backtrack, or a stop (``to`` empty)."""

    n: int = 0
    kind: str = ""  # "shortcut" | "choice" | "backtrack"
    at: str = ""
    to: str = ""
    jumps: int = 0
    candidates: tuple[MoveOption, ...] | None = optional()  # None: no model call (the shortcut)
    back: tuple[str, ...] | None = optional()
    choice: str | None = optional()
    reason: str | None = optional()
    attempts: int | None = optional()
    errors: tuple[str, ...] | None = optional()
    w: float | None = optional()  # the weight of the edge moved along


@dataclass(frozen=True)
class StopStep(TraceEvent, step="stop", strategy=STRATEGY):
    reason: str = ""
    sufficient: bool = False
    jumps: int = 0
    iterations: int = 0
    llm_calls: int = 0
    collected: tuple[int, ...] = ()


@dataclass(frozen=True)
class PathsStep(TraceEvent, step="paths", strategy=STRATEGY):
    paths: tuple[str, ...] = ()  # "origin: a -[rel]-> b (w 0.42)" per step walked

    path_part = "path"

    def path_facts(self) -> tuple[str, ...]:
        return self.paths

    def plain_node(self) -> TreeNode:
        return super().plain_node().add_lines(short(p) for p in self.paths)


@dataclass(frozen=True)
class RemindMemoryStep(MemoryEvent, step="memory", strategy=STRATEGY):
    enhanced: int = 0
    penalised: int = 0
    penalty: str = ""
    mode: str = ""  # what the replay did, and why (zero-jump, labelled, no update: ...)
    labelled_steps: tuple[int, ...] | None = optional()
    labelled_passages: tuple[int, ...] | None = optional()
    valid: int | None = optional()
    invalid: int | None = optional()

    def learned(self) -> tuple[int, int]:
        return self.enhanced, self.penalised


@dataclass(frozen=True)
class RankingStep(TraceEvent, step="ranking", strategy=STRATEGY):
    collected: tuple[int, ...] = ()  # every passage the walk collected, seeds and memory included
    backfill: int = 0
    rank: str = ""
    sufficient: bool = False  # the judge found the collected passages sufficient (or memory was trusted)
    recalled: tuple[int, ...] = ()  # passages memory expansion reached
    fused: tuple[int, ...] = ()  # the passages fused into the ranking (collected, or recalled only: confirmed_only)

    def ranking_inputs(self) -> dict[str, Any]:
        return {"collected": list(self.collected), "sufficient": self.sufficient, "recalled": list(self.recalled)}
