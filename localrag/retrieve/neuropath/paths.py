"""NeuroPath path state, candidate generation, pruning and rendering (docs/algorithms.md
"NeuroPath: path tracking")."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, Sequence

import numpy as np


class FactLike(Protocol):
    id: int
    head: int
    relation: str
    tail: int
    head_name: str
    tail_name: str


class FactsView(Protocol):
    def passages_mentioning(self, entity_id: int) -> list[int]: ...
    def of_entity_in_passage(self, entity_id: int, passage_id: int) -> Sequence[FactLike]: ...


class GraphView(Protocol):
    """What path tracking needs from the graph (store.graph implements it)."""

    @property
    def facts(self) -> FactsView: ...
    def aliases(self, entity_id: int) -> list[tuple[int, float]]: ...


@dataclass(frozen=True)
class Path:
    text: str  # "h->r->t; h2->r2->t2; "
    facts: tuple[int, ...]
    link: int  # entity id at the open end
    docs: tuple[int, ...]  # passage ids in hop order
    sim: float = 0.0
    recalled: bool = False  # came from edge memory, not from the model

    def extend(self, fact: FactLike, link: int, passage: int) -> "Path":
        return Path(self.text + segment(fact), self.facts + (fact.id,), link, self.docs + (passage,))


def segment(fact: FactLike) -> str:
    return f"{fact.head_name}->{fact.relation}->{fact.tail_name}; "


def with_coref(graph: GraphView, ids: Sequence[int]) -> list[int]:
    """ids followed by their pseudo-coreference aliases, unique, order kept (N1)."""
    out: list[int] = []
    for e in ids:
        for x in [e] + [a for a, _ in graph.aliases(e)]:
            if x not in out:
                out.append(x)
    return out


def first_hop(graph: GraphView, seeds: Sequence[int]) -> list[Path]:
    """Round 1 candidates: every fact of every passage mentioning a seed (or alias) that contains it."""
    paths: list[Path] = []
    seen: set[str] = set()
    for p in with_coref(graph, seeds):
        for d in graph.facts.passages_mentioning(p):
            for f in graph.facts.of_entity_in_passage(p, d):
                text = segment(f)
                if text in seen:
                    continue
                seen.add(text)
                link = f.tail if f.head == p else f.head
                paths.append(Path(text, (f.id,), link, (d,)))
    return paths


def next_hop(graph: GraphView, base: Path, blocked: set[str]) -> list[Path]:
    """Extensions of one path from its link phrase (and aliases); no fact twice on a path."""
    out: list[Path] = []
    for p in with_coref(graph, [base.link]):
        for d in graph.facts.passages_mentioning(p):
            for f in graph.facts.of_entity_in_passage(p, d):
                seg = segment(f)
                if f.id in base.facts or seg in blocked:
                    continue
                out.append(base.extend(f, f.tail if f.head == p else f.head, d))
    return out


def dedupe(paths: Sequence[Path]) -> list[Path]:
    """Same text reached through several documents: keep the first (N10)."""
    seen: set[str] = set()
    out = []
    for p in paths:
        if p.text not in seen:
            seen.add(p.text)
            out.append(p)
    return out


def embed_text(path: Path) -> str:
    return path.text.replace("->", " ")


def prune(paths: Sequence[Path], sims: np.ndarray, k: int) -> list[Path]:
    """Top-k by cosine to g, best first; ties keep generation order (stable, N3)."""
    order = sorted(range(len(paths)), key=lambda i: (-float(sims[i]), i))[:k]
    return [Path(paths[i].text, paths[i].facts, paths[i].link, paths[i].docs, float(sims[i]), paths[i].recalled) for i in order]


def render(paths: Sequence[Path], expandable: set[int], names: dict[int, str]) -> list[str]:
    lines = []
    for i, p in enumerate(paths):
        tag = f" <expandable>: [{names.get(p.link, '?')}]" if i in expandable else ""
        lines.append(f"{i}: {p.text.strip()}{tag}")
    return lines


def path_docs(paths: Sequence[Path]) -> list[int]:
    """Docs of the paths in order, hop order inside each path, first occurrence kept (b.2 step 3)."""
    out: list[int] = []
    for p in paths:
        for d in p.docs:
            if d not in out:
                out.append(d)
    return out
