"""Memory-first recall for NeuroPath: follow fact edges from the seeds whose read-out exceeds λ.

This is ReMindRAG's memory expansion DFS (c.4 step 2) on NeuroPath's graph. An edge with no
stored memory reads at most α·1 < λ, so only reinforced edges are ever looked at closely.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from localrag.memory.settings import MemorySettings
from localrag.memory.edges import readout
from localrag.retrieve.neuropath.paths import Path, segment
from localrag.store import Store


@dataclass
class Recall:
    paths: list[Path] = field(default_factory=list)
    weights: dict[str, float] = field(default_factory=dict)  # path text -> weakest edge read-out
    edges: int = 0
    from_knn: int = 0

    @property
    def strongest(self) -> float:
        return max(self.weights.values(), default=0.0)


def _const(store: Store, head: int, tail: int) -> float:
    vecs = store.graph.entities.vectors([head, tail])
    if head in vecs and tail in vecs:
        return float(np.dot(vecs[head], vecs[tail]))
    return 0.0


def recall_paths(store: Store, qvec: np.ndarray, seeds: list[int], cfg: MemorySettings) -> Recall:
    out = Recall()
    if store.memory.count() == 0:
        return out
    visited: set[int] = set(seeds)

    def dfs(entity: int, base: Path | None, weakest: float, depth: int) -> None:
        if depth >= cfg.max_depth:
            return
        candidates = [(d, f) for d in store.graph.facts.passages_mentioning(entity)
                      for f in store.graph.facts.of_entity_in_passage(entity, d)]
        memories = store.memory.get([("fact", f.id, d) for d, f in candidates])
        for d, f in candidates:
            v = memories.get(("fact", f.id, d))
            if v is None:
                continue
            other = f.tail if f.head == entity else f.head
            if other in visited:
                continue
            w = readout(_const(store, f.head, f.tail), v, qvec, cfg.alpha)
            if w <= cfg.lam:
                continue
            visited.add(other)
            path = base.extend(f, other, d) if base else Path(segment(f), (f.id,), other, (d,), recalled=True)
            path = Path(path.text, path.facts, path.link, path.docs, w, True)
            out.paths.append(path)
            out.weights[path.text] = min(weakest, w)
            out.edges += 1
            dfs(other, path, min(weakest, w), depth + 1)

    for s in seeds:
        dfs(s, None, 1.0, 0)
    if cfg.knn_recall:
        _knn_recall(store, qvec, cfg, out)
    # keep maximal paths: a recalled prefix of a longer recalled path adds nothing
    texts = [p.text for p in out.paths]
    out.paths = [p for p in out.paths if not any(t != p.text and t.startswith(p.text) for t in texts)]
    return out


def _knn_recall(store: Store, qvec: np.ndarray, cfg: MemorySettings, out: Recall) -> None:
    """Beyond the papers: edges whose memory is nearest the query, wherever they are."""
    have = {(f, d) for p in out.paths for f, d in zip(p.facts, p.docs)}
    for (kind, a, b), _ in store.memory.knn(qvec, cfg.knn_k):
        if kind != "fact" or (a, b) in have:
            continue
        facts = [f for f in store.graph.facts.in_passage(b) if f.id == a]
        if not facts:
            continue
        f = facts[0]
        v = store.memory.get([(kind, a, b)]).get((kind, a, b))
        w = readout(_const(store, f.head, f.tail), v, qvec, cfg.alpha)
        if w <= cfg.lam:
            continue
        path = Path(segment(f), (f.id,), f.tail, (b,), w, True)
        if path.text in out.weights:
            continue
        out.paths.append(path)
        out.weights[path.text] = w
        out.edges += 1
        out.from_knn += 1
