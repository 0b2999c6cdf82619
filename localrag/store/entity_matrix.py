"""Every entity vector in memory, for the graph phase's batched nearest-neighbour search.

Pseudo-coreference asks, for each new entity, which entities are nearest. A vec0 KNN per
new entity scans every vector each time (the graph phase's main cost as the graph grows);
here the new entities of a whole batch of passages are compared with the matrix in one
BLAS product, block by block, and the candidates are rescored exactly in float64, one
pair at a time, so a pair's similarity does not depend on which batch it was computed
in (a killed and resumed run must write the rows an uninterrupted one writes).

The matrix follows the ``entities`` table: rows are appended as entities are inserted
(``add``), and ``check`` drops the rows of entities deleted since (garbage collection by
the triggers) or reloads everything when it cannot tell.

Each row also holds a floor (``set_floors``, kept by store/coref.py): the similarity a newcomer
must reach to enter that entity's aliases (its weakest alias when it holds all it can, else
none). A new entity is offered only to the rows whose floor it reaches, and at most ``cap``
candidates per entity are rescored exactly: on a note of 20,000 ``[[Note i]]`` links every name
is above the threshold of every other, and rescoring and offering each new one to all the
others made the graph phase quadratic (docs/benchmarks.md "Scale: adversarial notes").
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING

import numpy as np
from threadpoolctl import ThreadpoolController

from localrag.store.vectors import from_blob, hamming, sign_bits

if TYPE_CHECKING:
    from localrag.store.db import Store

BLOCK = 64  # new entities per matrix product: 64 x 200k float32 similarities = 51 MB
MARGIN = 1e-4  # float32 product error is ~1e-6: candidates this close to a cut are rescored
NO_FLOOR = -np.inf  # a row that still takes any alias above the threshold


@lru_cache(maxsize=1)
def _blas() -> ThreadpoolController:
    return ThreadpoolController()


@dataclass(frozen=True)
class Neighbours:
    ids: np.ndarray  # int64 entity ids, best first (ties by id)
    sims: np.ndarray  # float64 cosine similarities, rounded to 7 decimals

    def pairs(self) -> list[tuple[int, float]]:
        return [(int(i), float(s)) for i, s in zip(self.ids, self.sims)]


class EntityMatrix:
    def __init__(self, store: "Store") -> None:
        self.s = store
        self.dim = store.dim
        self._ids = np.zeros(0, dtype=np.int64)
        self._vecs = np.zeros((0, self.dim), dtype=np.float32)
        self._norms = np.zeros(0, dtype=np.float64)  # float64 norm per row, kept as rows are added
        self._floors = np.zeros(0, dtype=np.float64)  # per row: what a newcomer must reach (see the module doc)
        self._n = 0
        self._pos: dict[int, int] = {}
        self._loaded = False
        self._gen = 0  # moves when rows are reloaded, compacted or overwritten (appends keep it)
        self._bits = np.zeros((0, 0), dtype=np.uint64)
        self._bits_gen = -1

    def __len__(self) -> int:
        return self._n

    def __contains__(self, eid: object) -> bool:
        return eid in self._pos

    @property
    def generation(self) -> int:
        """Moves when rows are reloaded, dropped or overwritten (not when rows are appended)."""
        return self._gen

    def load(self) -> None:
        rows = self.s.query("SELECT rowid, embedding FROM entity_vec ORDER BY rowid")
        self._ids = np.fromiter((int(r[0]) for r in rows), dtype=np.int64, count=len(rows))
        self._vecs = np.zeros((max(len(rows), 1024), self.dim), dtype=np.float32)
        if rows:  # one copy of all the blobs: a row-by-row copy was ~1 s at 100k entities
            self._vecs[: len(rows)] = np.frombuffer(b"".join(r[1] for r in rows), dtype=np.float32).reshape(len(rows), self.dim)
        self._n = len(rows)
        self._ids = np.concatenate([self._ids, np.zeros(len(self._vecs) - self._n, dtype=np.int64)])
        self._norms = np.zeros(len(self._vecs), dtype=np.float64)
        for start in range(0, self._n, 8192):  # in slices: no float64 copy of the whole matrix
            block = self._vecs[start:min(self._n, start + 8192)].astype(np.float64)
            self._norms[start:start + len(block)] = np.linalg.norm(block, axis=1)
        self._floors = np.full(len(self._vecs), NO_FLOOR)
        self._pos = {int(e): i for i, e in enumerate(self._ids[: self._n])}
        self._loaded = True
        self._gen += 1

    def invalidate(self) -> None:
        """A rolled-back transaction may have added rows that do not exist: load again on next use."""
        self._loaded = False

    def check(self) -> None:
        """Make the rows match the ``entities`` table (inside the caller's transaction)."""
        if not self._loaded:
            self.load()
            return
        count, top = self.s.one("SELECT COUNT(*), COALESCE(MAX(id), 0) FROM entities")
        if int(count) == self._n and (self._n == 0 or int(top) == int(self._ids[: self._n].max())):
            return
        if int(count) > self._n:  # rows written by someone else: the newer ones, or all if any went
            if not self._append_newer(int(count)):
                self.load()
            return
        alive = np.fromiter((int(r[0]) for r in self.s.query("SELECT id FROM entities")), dtype=np.int64)
        keep = np.isin(self._ids[: self._n], alive)
        if int(keep.sum()) != len(alive):
            self.load()
            return
        n = int(keep.sum())
        self._ids[:n] = self._ids[: self._n][keep]
        self._vecs[:n] = self._vecs[: self._n][keep]
        self._norms[:n] = self._norms[: self._n][keep]
        self._floors[:n] = self._floors[: self._n][keep]
        self._n = n
        self._pos = {int(e): i for i, e in enumerate(self._ids[:n])}
        self._gen += 1

    def _append_newer(self, count: int) -> bool:
        """Read the rows past the highest id held; False when that does not make ``count`` rows."""
        top = int(self._ids[: self._n].max()) if self._n else 0
        rows = self.s.query("SELECT rowid, embedding FROM entity_vec WHERE rowid > ? ORDER BY rowid", (top,))
        if self._n + len(rows) != count:
            return False
        if rows:
            self.add([int(r[0]) for r in rows], np.stack([from_blob(r[1]) for r in rows]))
        return True

    def add(self, ids: list[int], vectors: np.ndarray) -> None:
        if not self._loaded:
            return  # check() loads everything, these included
        need = self._n + len(ids)
        if need > len(self._vecs):
            size = max(need, 2 * len(self._vecs))
            grown = np.zeros((size, self.dim), dtype=np.float32)
            grown[: self._n] = self._vecs[: self._n]
            self._vecs = grown
            norms = np.zeros(size, dtype=np.float64)
            norms[: self._n] = self._norms[: self._n]
            self._norms = norms
            floors = np.full(size, NO_FLOOR)
            floors[: self._n] = self._floors[: self._n]
            self._floors = floors
            self._ids = np.concatenate([self._ids[: self._n], np.zeros(size - self._n, dtype=np.int64)])
        vectors = np.asarray(vectors, dtype=np.float32)
        rows = np.empty(len(ids), dtype=np.int64)
        for i, eid in enumerate(ids):
            at = self._pos.get(int(eid))
            if at is None:
                at = self._n
                self._n += 1
                self._pos[int(eid)] = at
                self._ids[at] = eid
            else:
                self._gen += 1
            rows[i] = at
        self._vecs[rows] = vectors
        self._norms[rows] = np.linalg.norm(vectors.astype(np.float64), axis=1)
        self._floors[rows] = NO_FLOOR

    def set_floors(self, floors: dict[int, float], *, reset: bool = False) -> None:
        """Each entity's floor (NO_FLOOR: none); with ``reset`` every other row's floor is cleared."""
        if reset:
            self._floors[:] = NO_FLOOR
        for eid, value in floors.items():
            at = self._pos.get(int(eid))
            if at is not None:
                self._floors[at] = value

    def nearest(self, queries: np.ndarray, k: int, candidates: int) -> list[list[tuple[int, float]]]:
        """Each query's ``k`` nearest entities (id, cosine), best first: a Hamming prefilter over the
        rows' sign bits keeps ``candidates`` rows, which are then scored exactly (query seeds at scale)."""
        queries = np.atleast_2d(np.asarray(queries, dtype=np.float32))
        if self._n == 0 or k < 1:
            return [[] for _ in queries]
        columns = self._sign_columns()
        out: list[list[tuple[int, float]]] = []
        for q in queries:
            distances = hamming(columns, sign_bits(q)[0])
            n_cand = min(max(candidates, k), self._n)
            picked = np.argpartition(distances, n_cand - 1)[:n_cand] if n_cand < self._n else np.arange(self._n)
            sims = (self._vecs[picked] @ q).astype(np.float64)
            sims /= np.maximum(self._norms[picked] * float(np.linalg.norm(q.astype(np.float64))), 1e-12)
            ids = self._ids[picked]
            order = np.lexsort((ids, -sims))[:k]
            out.append([(int(ids[i]), float(sims[i])) for i in order])
        return out

    def _sign_columns(self) -> np.ndarray:
        """(dim/64, n) uint64 sign bits of the rows, word-major; extended as rows are appended."""
        if self._bits_gen != self._gen or self._bits.shape[1] > self._n:
            self._bits, self._bits_gen = np.zeros((len(sign_bits(self._vecs[:1])[0]), 0), dtype=np.uint64), self._gen
        have = self._bits.shape[1]
        if have < self._n:
            self._bits = np.ascontiguousarray(np.concatenate([self._bits, sign_bits(self._vecs[have: self._n]).T], axis=1))
        return self._bits

    def vector(self, eid: int) -> np.ndarray:
        return self._vecs[self._pos[eid]]

    def neighbours(self, ids: list[int], k: int, threshold: float, *, floors: bool = False,
                   cap: int | None = None) -> dict[int, Neighbours]:
        """For each entity in ``ids`` (already added): its top ``k`` entities (itself included) and
        beyond them every entity with similarity >= ``threshold`` (with ``floors``: that also reaches
        the entity's floor, i.e. that could take it as an alias), best first. With ``cap``, at most
        ``cap`` candidates each, the best of the float32 prefilter."""
        bar = np.maximum(self._floors[: self._n], threshold) if floors else threshold
        return self._search(ids, k, threshold, bar - MARGIN, cap)

    def top(self, ids: list[int], k: int, threshold: float, cap: int | None = None) -> dict[int, Neighbours]:
        """Each entity's top ``k`` (itself included), those at or above ``threshold`` only."""
        found = self._search(ids, k, threshold, np.inf, cap)
        return {e: Neighbours(n.ids[n.sims >= threshold], n.sims[n.sims >= threshold]) for e, n in found.items()}

    def _search(self, ids: list[int], k: int, threshold: float, bar: "np.ndarray | float",
                cap: int | None) -> dict[int, Neighbours]:
        out: dict[int, Neighbours] = {}
        if not ids or self._n == 0:
            return out
        matrix = self._vecs[: self._n]
        alike = self._by_vector(ids)
        # one BLAS thread: the graph phase embeds names on the other core meanwhile, and two BLAS
        # threads fighting it for a core were 5x slower than one (0.58 s against 2.8 s, 5,000 names)
        with _blas().limit(limits=1, user_api="blas"):
            for start in range(0, len(alike), BLOCK):
                block = [same[0] for same in alike[start:start + BLOCK]]
                sims = np.stack([self.vector(e) for e in block]) @ matrix.T  # float32: a prefilter only
                for same, cand in zip(alike[start:start + BLOCK], self._candidates(sims, bar, k, cap)):
                    found = self._rescored(same[0], cand, k, threshold)
                    out.update(dict.fromkeys(same, found))
        return out

    def _by_vector(self, ids: list[int]) -> list[list[int]]:
        """``ids`` grouped by identical vectors, in order of first appearance: such entities have the
        same neighbours (a family of names that share one vector: kg/name_families.py), found once."""
        groups: dict[bytes, list[int]] = {}
        for eid in ids:
            groups.setdefault(self.vector(eid).tobytes(), []).append(eid)
        return list(groups.values())

    def _candidates(self, sims: np.ndarray, bar: "np.ndarray | float", k: int, cap: int | None) -> list[np.ndarray]:
        """Per row of ``sims``, the positions worth an exact score: the top ``k`` (and ties within the
        margin), and those at or above ``bar``; over ``cap``, the ``cap`` best."""
        n = sims.shape[1]
        kk = min(k, n)
        kth = np.partition(sims, n - kk, axis=1)[:, n - kk]
        rows, cols = np.nonzero((sims >= kth[:, None] - MARGIN) | (sims >= bar))
        out = np.split(cols, np.searchsorted(rows, np.arange(1, len(sims))))
        limit = max(cap, kk) if cap is not None else None
        for i, cand in enumerate(out):
            if limit is not None and len(cand) > limit:
                out[i] = self._best(cand, sims[i, cand], limit)
        return out

    @staticmethod
    def _best(cand: np.ndarray, sims: np.ndarray, limit: int) -> np.ndarray:
        """The ``limit`` best of ``cand`` (positions, ascending), ties at the cut by lowest position,
        i.e. lowest id: entities that share a vector tie, and the rows must not depend on which of
        them a partition happened to keep."""
        cut = np.partition(sims, len(sims) - limit)[len(sims) - limit]
        above = cand[sims > cut]
        return np.concatenate([above, cand[sims == cut][: limit - len(above)]])

    def _rescored(self, eid: int, cand: np.ndarray, k: int, threshold: float) -> Neighbours:
        mine = self.vector(eid).astype(np.float64)
        exact = (self._vecs[cand].astype(np.float64) @ mine) / np.maximum(
            self._norms[cand] * self._norms[self._pos[eid]], 1e-12)
        exact = np.round(exact, 7)
        cand_ids = self._ids[cand]
        order = np.lexsort((cand_ids, -exact))
        exact, cand_ids = exact[order], cand_ids[order]
        keep = (np.arange(len(exact)) < k) | (exact >= threshold)
        return Neighbours(cand_ids[keep], exact[keep])
