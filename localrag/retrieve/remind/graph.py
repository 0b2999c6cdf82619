"""ReMindRAG's heterogeneous graph (docs/algorithms.md "ReMindRAG: the
graph" and "ReMindRAG: edge weight") mapped onto localrag's store.

Nodes are entities and passages. A passage plays both of ReMindRAG's roles, anchor and
chunk: its anchor→chunk connection has const = 1 in the paper, so the two collapse into
one node, and visiting a passage collects it. Edges (keys as in store.memory):
- ("mention", entity, passage): ReMindRAG's entity→anchor relation, walked both ways;
- ("fact", fact, passage): an entity–entity relation, as read in one passage;
- ("next", passage, next passage): the anchor chain inside one note.
const(e) is the cosine of the two endpoint embeddings (entity_vec / passage_vec), and
w(e, q) = α·const(e) + (1 − α)·⟨q̂, v_e⟩ with v_e the edge's memory (zero when absent).
Everything is read once per query and cached here; the graph does not change mid-query.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from localrag.memory.edges import readout
from localrag.records import Passage
from localrag.store import Store
from localrag.store.memory import EdgeKey

ENTITY = "entity"
PASSAGE = "passage"


@dataclass(frozen=True)
class Node:
    kind: str  # ENTITY | PASSAGE
    id: int

    def __str__(self) -> str:
        return f"{self.kind}:{self.id}"


@dataclass(frozen=True)
class Edge:
    key: EdgeKey
    src: Node
    dst: Node
    relation: str = ""  # the fact as a sentence ("heron project hosted in vessby"), else ""


@dataclass(frozen=True)
class Candidate:
    """An unexplored neighbour of the current node, reached by its best edge."""

    edge: Edge
    weight: float  # w(e, q)
    sim: float  # cosine of the query and the neighbour

    @property
    def score(self) -> float:
        # the order candidates are shown and the shortcut picks passages: remembered weight, then query fit
        return self.weight + self.sim


def entity(i: int) -> Node:
    return Node(ENTITY, int(i))


def passage(i: int) -> Node:
    return Node(PASSAGE, int(i))


class RemindGraph:
    def __init__(self, store: Store, qvec: np.ndarray, alpha: float, use_memory: bool = True):
        self.store = store
        self.q = np.asarray(qvec, dtype=np.float32)
        self.alpha = alpha
        self._edges: dict[Node, list[Edge]] = {}
        self._vecs: dict[Node, np.ndarray | None] = {}
        self._names: dict[int, str] = {}
        self._passages: dict[int, Passage] = {}
        self._memory: dict[EdgeKey, np.ndarray | None] = {}
        # memory off (--no-memory), or a cold start: every memory reads as zero, no reads needed
        self._no_memory = not use_memory or store.memory.count() == 0

    # -- structure ------------------------------------------------------------------------
    def edges(self, node: Node) -> list[Edge]:
        """Every edge leaving ``node`` (fact and mention edges are walked in both directions)."""
        if node not in self._edges:
            self._edges[node] = self._entity_edges(node) if node.kind == ENTITY else self._passage_edges(node)
        return self._edges[node]

    def _entity_edges(self, node: Node) -> list[Edge]:
        g = self.store.graph
        out = [Edge(("mention", node.id, p), node, passage(p)) for p in g.facts.passages_mentioning(node.id)]
        for f in g.facts.of_entity(node.id):
            other = f.tail if f.head == node.id else f.head
            if other == node.id:
                continue
            sentence = f"{f.head_name} {f.relation} {f.tail_name}"
            out += [Edge(("fact", f.id, d), node, entity(other), sentence) for d in g.facts.passages(f.id)]
        return out

    def _passage_edges(self, node: Node) -> list[Edge]:
        out = [Edge(("mention", e, node.id), node, entity(e)) for e in self.store.graph.facts.passage_entities(node.id)]
        nxt = self.store.memory.next_passage(node.id)
        if nxt is not None:
            out.append(Edge(("next", node.id, nxt), node, passage(nxt)))
        prv = self.store.memory.prev_passage(node.id)
        if prv is not None:
            out.append(Edge(("next", prv, node.id), node, passage(prv)))
        return out

    # -- vectors and weights ------------------------------------------------------------------
    def _load_vectors(self, nodes: list[Node]) -> None:
        want = [n for n in dict.fromkeys(nodes) if n not in self._vecs]
        ents = self.store.graph.entities.vectors([n.id for n in want if n.kind == ENTITY])
        pas = self.store.vectors.get([n.id for n in want if n.kind == PASSAGE])
        for n in want:
            self._vecs[n] = (ents if n.kind == ENTITY else pas).get(n.id)

    def vector(self, node: Node) -> np.ndarray | None:
        self._load_vectors([node])
        return self._vecs[node]

    def const(self, edge: Edge) -> float:
        a, b = self.vector(edge.src), self.vector(edge.dst)
        return float(np.dot(a, b)) if a is not None and b is not None else 0.0

    def sim(self, node: Node) -> float:
        v = self.vector(node)
        return float(np.dot(self.q, v)) if v is not None else 0.0

    def memories(self, keys: list[EdgeKey]) -> dict[EdgeKey, np.ndarray | None]:
        if self._no_memory:
            return {k: None for k in keys}
        missing = [k for k in dict.fromkeys(keys) if k not in self._memory]
        if missing:
            got = self.store.memory.get(missing)
            for k in missing:
                self._memory[k] = got.get(k)
        return {k: self._memory[k] for k in keys}

    def weights(self, edges: list[Edge]) -> list[float]:
        """w(e, q) of each edge (one memory read per edge, vectors in batches)."""
        self._load_vectors([n for e in edges for n in (e.src, e.dst)])
        mem = self.memories([e.key for e in edges])
        return [readout(self.const(e), mem[e.key], self.q, self.alpha) for e in edges]

    def candidates(self, node: Node, visited: set[Node]) -> list[Candidate]:
        """Unvisited neighbours of ``node``, one per neighbour (its best edge), best first."""
        edges = [e for e in self.edges(node) if e.dst not in visited]
        if not edges:
            return []
        self._load_vectors([e.dst for e in edges])
        best: dict[Node, Candidate] = {}
        for e, w in zip(edges, self.weights(edges)):
            c = Candidate(e, w, self.sim(e.dst))
            if e.dst not in best or c.weight > best[e.dst].weight:
                best[e.dst] = c
        return sorted(best.values(), key=lambda c: (-c.score, c.edge.dst.kind, c.edge.dst.id))

    # -- labels for prompts and traces --------------------------------------------------------
    def passage_record(self, pid: int) -> Passage | None:
        if pid not in self._passages:
            for p in self.store.docs.passages([pid]):
                self._passages[p.id] = p
        return self._passages.get(pid)

    def name(self, node: Node) -> str:
        if node.kind == ENTITY:
            if node.id not in self._names:
                self._names.update(self.store.graph.entities.names([node.id]))
            return self._names.get(node.id, f"entity {node.id}")
        p = self.passage_record(node.id)
        return f"{p.path}: {p.heading or p.title}" if p else f"passage {node.id}"

    def label(self, node: Node) -> str:
        if node.kind == ENTITY:
            return f'entity "{self.name(node)}"'
        return f"passage {node.id} ({self.name(node)})"

    def describe(self, edge: Edge) -> str:
        """How the edge leads from its source to its target, in words."""
        kind = edge.key[0]
        if kind == "fact":
            return f"relation: {edge.relation}"
        if kind == "next":
            return "the next passage of the same note" if edge.key[1] == edge.src.id else "the previous passage of the same note"
        return "mentioned in it" if edge.src.kind == PASSAGE else "a passage that mentions it"

    def step_line(self, edge: Edge) -> str:
        """One recorded walk step, for the walk list, the labelling prompt and the trace."""
        return f"{self.label(edge.src)} -> {self.label(edge.dst)} ({self.describe(edge)})"
