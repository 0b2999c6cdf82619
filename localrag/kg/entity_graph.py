"""The entity graph as PPR walks it, saved in the index and brought up to date incrementally.

Entities are nodes; facts (head-tail, one unit of weight per distinct fact, self-loops
dropped) and pseudo-coreference pairs (weight = similarity, only where no fact joins the
pair) are undirected edges; the mentions matrix says which passages mention which
entity. The saved form is id-keyed arrays (store/graph_matrix.py) tagged with the
graph_state.version they reflect. A new process loads them; if the graph moved on since,
only the rows of the entities and passages marked dirty by the triggers are read again
and merged in, so the result is always the one a rebuild from every row would give
(nodes sorted by id, whatever order the changes came in). The graph phase and the
watcher save it (``save_entity_graph``); readers never write.
"""

from __future__ import annotations

import threading
import time
import weakref
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING

import numpy as np
import scipy.sparse as sp

from localrag.store import Store
from localrag.store.graph_matrix import GraphMatrixStore

if TYPE_CHECKING:
    import networkx as nx

_PAIR = np.int64(1 << 32)


@dataclass(frozen=True)
class WalkArrays:
    """The saved form: everything keyed by entity and passage ids."""

    nodes: np.ndarray  # entity ids, ascending
    edge_a: np.ndarray  # edge endpoints, a < b
    edge_b: np.ndarray
    edge_w: np.ndarray
    mention_p: np.ndarray  # (passage, entity) pairs
    mention_e: np.ndarray

    def to_dict(self) -> dict[str, np.ndarray]:
        return {k: getattr(self, k) for k in ("nodes", "edge_a", "edge_b", "edge_w", "mention_p", "mention_e")}

    @classmethod
    def from_dict(cls, d: dict[str, np.ndarray]) -> "WalkArrays":
        return cls(**{k: d[k] for k in ("nodes", "edge_a", "edge_b", "edge_w", "mention_p", "mention_e")})


@dataclass
class EntityGraph:
    version: int
    nodes: list[int]  # entity id per matrix row
    index: dict[int, int]  # entity id -> row
    adjacency: sp.csr_matrix  # symmetric edge weights
    transition: sp.csr_matrix  # column-stochastic walk matrix (rows: to, columns: from)
    dangling: np.ndarray  # bool per node: no edges
    mentions: sp.csr_matrix  # passages x entities, 1 where the passage mentions the entity
    passages: list[int]  # passage id per mentions row
    mention_counts: np.ndarray  # passages mentioning each entity
    arrays: WalkArrays = field(repr=False)
    how: str = ""  # "memory" | "saved" | "updated" | "built": where this one came from (traces, benchmarks)

    @property
    def empty(self) -> bool:
        return not self.nodes

    @property
    def edge_count(self) -> int:
        return int(len(self.arrays.edge_w))

    @cached_property
    def graph(self) -> "nx.Graph":
        """The same graph in networkx (exports and checks; the walk never needs it)."""
        import networkx as nx  # here, not at the top: its import is ~0.1 s of every cold `ask`

        g = nx.Graph()
        g.add_nodes_from(self.nodes)
        g.add_weighted_edges_from(zip(self.arrays.edge_a.tolist(), self.arrays.edge_b.tolist(), self.arrays.edge_w.tolist()))
        return g


# -- arrays from rows ------------------------------------------------------------------
def _edges(gm: GraphMatrixStore, dirty_only: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    heads, tails, counts = gm.fact_pairs(dirty_only)
    loops = heads != tails
    a, b = np.minimum(heads, tails)[loops], np.maximum(heads, tails)[loops]
    fact_keys, inverse = np.unique(a * _PAIR + b, return_inverse=True)
    fact_w = np.bincount(inverse, weights=counts[loops].astype(np.float64), minlength=len(fact_keys))
    entities, aliases, sims = gm.coref_rows(dirty_only)  # ordered by (entity, alias): the first row of a pair wins
    coref_keys, first = np.unique(np.minimum(entities, aliases) * _PAIR + np.maximum(entities, aliases), return_index=True)
    only_coref = ~np.isin(coref_keys, fact_keys)
    keys = np.concatenate([fact_keys, coref_keys[only_coref]])
    weights = np.concatenate([fact_w, sims[first][only_coref]])
    order = np.argsort(keys, kind="stable")
    return keys[order] // _PAIR, keys[order] % _PAIR, weights[order]


def build_arrays(gm: GraphMatrixStore) -> WalkArrays:
    a, b, w = _edges(gm, dirty_only=False)
    mp, me = gm.mention_rows(dirty_only=False)
    return WalkArrays(gm.entity_ids(dirty_only=False), a, b, w, mp, me)


def update_arrays(base: WalkArrays, gm: GraphMatrixStore) -> WalkArrays:
    """``base`` with the rows of every marked entity and passage read again."""
    dirty_e, dirty_p = gm.dirty()
    if not len(dirty_e) and not len(dirty_p):
        return base
    nodes = np.union1d(np.setdiff1d(base.nodes, dirty_e), gm.entity_ids(dirty_only=True))
    keep = ~(np.isin(base.edge_a, dirty_e) | np.isin(base.edge_b, dirty_e))
    a, b, w = _edges(gm, dirty_only=True) if len(dirty_e) else (np.zeros(0, np.int64),) * 2 + (np.zeros(0),)
    keys = np.concatenate([base.edge_a[keep] * _PAIR + base.edge_b[keep], a * _PAIR + b])
    weights = np.concatenate([base.edge_w[keep], w])
    order = np.argsort(keys, kind="stable")
    kept_m = ~np.isin(base.mention_p, dirty_p)
    mp, me = gm.mention_rows(dirty_only=True) if len(dirty_p) else (np.zeros(0, np.int64),) * 2
    return WalkArrays(nodes, keys[order] // _PAIR, keys[order] % _PAIR, weights[order],
                      np.concatenate([base.mention_p[kept_m], mp]), np.concatenate([base.mention_e[kept_m], me]))


def assemble(version: int, arrays: WalkArrays, how: str) -> EntityGraph:
    nodes = arrays.nodes
    n = len(nodes)
    known = np.isin(arrays.edge_a, nodes) & np.isin(arrays.edge_b, nodes)  # a read racing a writer
    rows, cols = np.searchsorted(nodes, arrays.edge_a[known]), np.searchsorted(nodes, arrays.edge_b[known])
    w = arrays.edge_w[known]
    adj = sp.csr_matrix((np.concatenate([w, w]), (np.concatenate([rows, cols]), np.concatenate([cols, rows]))), shape=(n, n))
    if n:
        out_weight = np.asarray(adj.sum(axis=1)).ravel()
        dangling = out_weight == 0
        inv = np.divide(1.0, out_weight, out=np.zeros_like(out_weight), where=~dangling)
        transition = sp.csr_matrix((sp.diags(inv) @ adj).T)
    else:
        transition, dangling = sp.csr_matrix((0, 0)), np.zeros(0, dtype=bool)
    seen = np.isin(arrays.mention_e, nodes)
    mp, me = arrays.mention_p[seen], arrays.mention_e[seen]
    passages = np.unique(mp)
    mentions = sp.csr_matrix((np.ones(len(mp)), (np.searchsorted(passages, mp), np.searchsorted(nodes, me))),
                             shape=(len(passages), n))
    counts = np.asarray(mentions.sum(axis=0)).ravel() if n else np.zeros(0)
    node_list = nodes.tolist()
    return EntityGraph(version, node_list, dict(zip(node_list, range(n))), adj, transition, dangling, mentions,
                       passages.tolist(), counts, arrays, how)


# -- loading and saving ------------------------------------------------------------------
_CACHE: "weakref.WeakKeyDictionary[Store, EntityGraph]" = weakref.WeakKeyDictionary()
_CACHE_LOCK = threading.Lock()


def _current(store: Store, version: int) -> tuple[WalkArrays, str]:
    """The arrays at ``version``: from this process's copy, the saved one, or every row."""
    gm = GraphMatrixStore(store)
    if not gm.available():  # an index from before the saved matrix, opened read-only
        return build_arrays(gm), "built"
    saved = gm.saved_version()
    with _CACHE_LOCK:
        mine = _CACHE.get(store)
    if saved is None:
        return build_arrays(gm), "built"
    if mine is not None and mine.version >= saved:  # the marks since the save cover what changed since mine
        base, how = mine.arrays, "updated"
    else:
        loaded = gm.load()
        if loaded is None:
            return build_arrays(gm), "built"
        saved, raw = loaded
        base, how = WalkArrays.from_dict(raw), "saved"
    if saved == version and how == "saved":
        return base, how
    return update_arrays(base, gm), how if saved == version else "updated"


def entity_graph(store: Store) -> EntityGraph:
    """The graph of this store at its current version: cached per process, else loaded."""
    version = store.graph.version()
    with _CACHE_LOCK:
        hit = _CACHE.get(store)
        if hit is not None and hit.version == version:
            return hit
    # tagged with the version read before the rows: a write racing the reads moves the version
    # on, so the next call updates again (the marks still list it)
    arrays, how = _current(store, version)
    built = assemble(version, arrays, how)
    with _CACHE_LOCK:
        _CACHE[store] = built
    return built


@dataclass(frozen=True)
class SaveReport:
    saved: bool
    seconds: float
    how: str = ""


def save_entity_graph(store: Store) -> SaveReport:
    """Bring the saved graph up to the current version (one write transaction; a no-op when it is)."""
    started = time.perf_counter()
    gm = GraphMatrixStore(store)
    if not gm.available() or gm.saved_version() == store.graph.version():  # a read: no write lock when current
        return SaveReport(False, time.perf_counter() - started)
    with store.transaction():
        version = store.graph.version()
        if gm.saved_version() == version:
            return SaveReport(False, time.perf_counter() - started)
        arrays, how = _current(store, version)
        gm.save(version, arrays.to_dict())
    with _CACHE_LOCK:
        hit = _CACHE.get(store)
    if hit is None or hit.version != version:
        with _CACHE_LOCK:
            _CACHE[store] = assemble(version, arrays, how)
    return SaveReport(True, time.perf_counter() - started, how)
