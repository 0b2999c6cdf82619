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
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from localrag.store.vectors import from_blob, hamming, sign_bits

if TYPE_CHECKING:
    from localrag.store.db import Store

BLOCK = 64  # new entities per matrix product: 64 x 200k float32 similarities = 51 MB
MARGIN = 1e-4  # float32 product error is ~1e-6: candidates this close to a cut are rescored


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
            self._ids = np.concatenate([self._ids[: self._n], np.zeros(size - self._n, dtype=np.int64)])
        for eid, vec in zip(ids, np.asarray(vectors, dtype=np.float32)):
            at = self._pos.get(int(eid))
            if at is None:
                at = self._n
                self._n += 1
                self._pos[int(eid)] = at
                self._ids[at] = eid
            else:
                self._gen += 1
            self._vecs[at] = vec
            self._norms[at] = float(np.linalg.norm(vec.astype(np.float64)))

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

    def neighbours(self, ids: list[int], k: int, threshold: float) -> dict[int, Neighbours]:
        """For each entity in ``ids`` (already added): its top ``k`` entities (itself included) and
        beyond them every entity with similarity >= ``threshold``, best first."""
        out: dict[int, Neighbours] = {}
        if not ids or self._n == 0:
            return out
        matrix, all_ids, norms = self._vecs[: self._n], self._ids[: self._n], self._norms[: self._n]
        for start in range(0, len(ids), BLOCK):
            block = ids[start:start + BLOCK]
            rows = np.stack([self.vector(e) for e in block])
            sims = rows @ matrix.T  # float32: a prefilter only
            for eid, row in zip(block, sims):
                out[eid] = self._rescored(eid, row, matrix, all_ids, norms, k, threshold)
        return out

    def _rescored(self, eid: int, row: np.ndarray, matrix: np.ndarray, all_ids: np.ndarray, norms: np.ndarray,
                  k: int, threshold: float) -> Neighbours:
        kk = min(k, len(row))
        kth = np.partition(row, len(row) - kk)[len(row) - kk] if kk else np.inf
        cut = min(float(kth), threshold) - MARGIN
        cand = np.flatnonzero(row >= cut)
        mine = self.vector(eid).astype(np.float64)
        exact = (matrix[cand].astype(np.float64) @ mine) / np.maximum(norms[cand] * self._norms[self._pos[eid]], 1e-12)
        exact = np.round(exact, 7)
        cand_ids = all_ids[cand]
        order = np.lexsort((cand_ids, -exact))
        exact, cand_ids = exact[order], cand_ids[order]
        keep = (np.arange(len(exact)) < k) | (exact >= threshold)
        return Neighbours(cand_ids[keep], exact[keep])
