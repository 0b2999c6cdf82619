"""ReMindRAG's two graph searches that need no LLM (docs/algorithms.md
"ReMindRAG: query pipeline", steps 2 and 9.2).

``expand``: memory-based subgraph expansion. From each seed, follow every edge whose
read-out w(e, q) exceeds λ, depth first, collecting the passages reached. Merging rules of
the paper: an edge into an already visited node is dropped (it may close a loop), and so is
a passage already collected. Unlike the released code the walk also goes on from the
passages it reaches (their mention and next edges), because in localrag a passage is also
the anchor node through which ReMindRAG's walks continue.

``valid_steps``: which recorded steps were useful, by the cleaner rule of pitfall R6: a
step is valid when it lies on a route from a seed to a labelled-useful step or to a
labelled-useful passage. Each valid step counts once however many seeds reach it, and a
labelled step that no seed reaches is not valid (the released code can confirm such steps).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence

from localrag.retrieve.remind.graph import PASSAGE, Edge, Node, RemindGraph


@dataclass(frozen=True)
class Step:
    """One recorded edge of the walk, in the order it was taken."""

    edge: Edge
    origin: str  # "memory" (expansion), "shortcut" (exploitation, no LLM) or "choice" (the model's)
    weight: float  # w(e, q) when it was taken


@dataclass
class Expansion:
    steps: list[Step] = field(default_factory=list)
    passages: list[int] = field(default_factory=list)  # collected, in order

    @property
    def edges(self) -> int:
        return len(self.steps)


def expand(graph: RemindGraph, seeds: Sequence[Node], lam: float, visited: set[Node]) -> Expansion:
    """Memory expansion from the seeds; adds what it reaches to ``visited`` (seeds must be in it)."""
    out = Expansion()
    if graph.alpha <= lam and graph.store.memory.count() == 0:
        return out  # every read-out is α·const ≤ α ≤ λ: nothing can pass (cold start, R4)
    for seed in seeds:
        stack = [iter(_strong(graph, seed, lam))]
        while stack:
            step = next(stack[-1], None)
            if step is None:
                stack.pop()
                continue
            dst = step.edge.dst
            if dst in visited:  # reached meanwhile by another branch: the merge drops this edge
                continue
            visited.add(dst)
            out.steps.append(step)
            if dst.kind == PASSAGE:
                out.passages.append(dst.id)
            stack.append(iter(_strong(graph, dst, lam)))
    return out


def _strong(graph: RemindGraph, node: Node, lam: float) -> list[Step]:
    """Edges of ``node`` whose read-out exceeds λ, in the graph's order."""
    edges = graph.edges(node)
    if graph.alpha <= lam:
        # an edge without a memory reads at most α: only remembered edges can pass
        mem = graph.memories([e.key for e in edges])
        edges = [e for e in edges if mem[e.key] is not None]
    if not edges:
        return []
    return [Step(e, "memory", w) for e, w in zip(edges, graph.weights(edges)) if w > lam]


def valid_steps(seeds: Sequence[Node], steps: Sequence[Step], useful_steps: set[int],
                useful_passages: set[int]) -> list[int]:
    """Indices of the steps on some route from a seed to a useful step or passage (R6's rule)."""
    out_edges: dict[Node, list[int]] = {}
    in_edges: dict[Node, list[int]] = {}
    for i, s in enumerate(steps):
        out_edges.setdefault(s.edge.src, []).append(i)
        in_edges.setdefault(s.edge.dst, []).append(i)
    # forward: nodes a seed reaches along recorded steps
    reached = set(seeds)
    todo = list(seeds)
    while todo:
        for i in out_edges.get(todo.pop(), []):
            if steps[i].edge.dst not in reached:
                reached.add(steps[i].edge.dst)
                todo.append(steps[i].edge.dst)
    # backward: nodes from which a useful step or a useful passage can be reached
    leads = {steps[i].edge.src for i in useful_steps if 0 <= i < len(steps)}
    leads |= {s.edge.dst for s in steps if s.edge.dst.kind == PASSAGE and s.edge.dst.id in useful_passages}
    leads |= {n for n in seeds if n.kind == PASSAGE and n.id in useful_passages}
    todo = list(leads)
    while todo:
        for i in in_edges.get(todo.pop(), []):
            if steps[i].edge.src not in leads:
                leads.add(steps[i].edge.src)
                todo.append(steps[i].edge.src)
    valid: list[int] = []
    seen_keys: set = set()
    for i, s in enumerate(steps):
        if s.edge.src in reached and (i in useful_steps or s.edge.dst in leads) and s.edge.key not in seen_keys:
            seen_keys.add(s.edge.key)
            valid.append(i)
    return valid
