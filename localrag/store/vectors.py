"""Passage embeddings: vec0 float vectors for exact KNN, and a fast path for large indexes.

Each vector is stored twice: in the ``passage_vec`` vec0 table (exact brute-force KNN,
and what the design's "vec0 of passage embeddings" promises) and in the plain
``passage_f32`` table, whose primary-key lookups take microseconds where a vec0 point
lookup takes ~1 ms (measured: 200 lookups 1 ms vs 270 ms at 100k rows under load).

Above EXACT_LIMIT passages ``knn`` uses ``knn_fast``: a Hamming prefilter over
sign-quantised vectors (48 bytes per passage, held in memory as uint64 words and
refreshed when ``vector_state.version`` moves), then exact cosine rescoring of the
best ``max(k * OVERSAMPLE, MIN_CANDIDATES)`` candidates read from ``passage_f32``.
docs/benchmarks.md "Scale: 100,000 passages, the fast phase" has the figures (latency and
recall against exact).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import TYPE_CHECKING, Collection, Iterable, Sequence

import numpy as np

if TYPE_CHECKING:
    from localrag.store.db import Store

# Below this many passages exact brute-force KNN is fast enough (a few ms).
EXACT_LIMIT = 20_000
# Candidates kept by the Hamming prefilter: k·OVERSAMPLE, at least MIN_CANDIDATES. Measured at
# 100k MiniLM passages (k = 10): 200 -> recall@10 0.946 in 5.4 ms, 400 -> 0.979 / 7.0 ms,
# 800 -> 0.996 / 9.3 ms, 1,200 -> 0.999 / 11.9 ms (docs/benchmarks.md "Scale: 100,000 passages,
# the fast phase").
OVERSAMPLE = 16
MIN_CANDIDATES = 800
_LOAD_BATCH = 8192


def to_blob(vec: np.ndarray) -> bytes:
    return np.asarray(vec, dtype=np.float32).tobytes()


def from_blob(blob: bytes) -> np.ndarray:
    return np.frombuffer(blob, dtype=np.float32)


def sign_bits(vectors: np.ndarray) -> np.ndarray:
    """Rows of sign bits (1 where the component is > 0), packed into uint64 words."""
    packed = np.packbits(np.atleast_2d(vectors) > 0, axis=1)
    pad = (-packed.shape[1]) % 8
    if pad:
        packed = np.pad(packed, ((0, 0), (0, pad)))
    return np.ascontiguousarray(packed).view(np.uint64)


@dataclass
class _BitsCache:
    version: int
    ids: np.ndarray  # int64 passage ids
    columns: np.ndarray  # (dim/64, n) uint64 sign bits, word-major: the Hamming sum adds whole rows (5x faster)

    def hamming(self, query_words: np.ndarray) -> np.ndarray:
        return hamming(self.columns, query_words)


def hamming(columns: np.ndarray, query_words: np.ndarray) -> np.ndarray:
    """Hamming distance of one query's sign bits to every column of a word-major bit matrix."""
    total = np.bitwise_count(columns[0] ^ query_words[0]).astype(np.uint16)
    for i in range(1, len(query_words)):
        total += np.bitwise_count(columns[i] ^ query_words[i])
    return total


class PassageVectors:
    def __init__(self, store: "Store") -> None:
        self.s = store
        self._cache: _BitsCache | None = None
        self._cache_lock = threading.Lock()

    def put(self, passage_id: int, vec: np.ndarray) -> None:
        self.put_many([(passage_id, vec)])

    def put_many(self, rows: Iterable[tuple[int, np.ndarray]]) -> None:
        items = [(pid, to_blob(v)) for pid, v in rows]
        if not items:
            return
        self.s.executemany("INSERT INTO passage_vec(rowid, embedding) VALUES(?, ?)", items)
        self.s.executemany("INSERT INTO passage_bits(rowid, embedding) VALUES(?, vec_quantize_binary(?))", items)
        self.s.executemany("INSERT INTO passage_f32(id, emb) VALUES(?, ?)", items)

    def by_sha(self, shas: Sequence[str]) -> dict[str, np.ndarray]:
        """Existing vectors for passage texts with these hashes (re-embedding is never needed for them)."""
        out: dict[str, np.ndarray] = {}
        wanted = list(dict.fromkeys(shas))
        for start in range(0, len(wanted), 500):
            chunk = wanted[start:start + 500]
            marks = ",".join("?" * len(chunk))
            rows = self.s.query(
                f"SELECT p.sha256, v.emb FROM passages p JOIN passage_f32 v ON v.id = p.id WHERE p.sha256 IN ({marks})",
                chunk,
            )
            for sha, blob in rows:
                out.setdefault(sha, from_blob(blob).copy())
        return out

    def get(self, ids: Sequence[int]) -> dict[int, np.ndarray]:
        out: dict[int, np.ndarray] = {}
        ids = [int(i) for i in ids]
        for start in range(0, len(ids), 500):
            chunk = ids[start:start + 500]
            marks = ",".join("?" * len(chunk))
            for pid, blob in self.s.query(f"SELECT id, emb FROM passage_f32 WHERE id IN ({marks})", chunk):
                out[int(pid)] = from_blob(blob).copy()
        return out

    def version(self) -> tuple[int, int]:
        """(change counter, vector count), both kept by triggers: reading them costs microseconds."""
        row = self.s.one("SELECT version, count FROM vector_state WHERE id = 1")
        return (int(row[0]), int(row[1])) if row else (0, 0)

    def count(self) -> int:
        return self.version()[1]

    def knn_exact(self, query: np.ndarray, k: int) -> list[tuple[int, float]]:
        """(passage id, cosine similarity), best first, by brute force over float vectors."""
        rows = self.s.query(
            "SELECT rowid, distance FROM passage_vec WHERE embedding MATCH ? AND k = ? ORDER BY distance",
            (to_blob(query), k),
        )
        return [(int(r[0]), 1.0 - float(r[1])) for r in rows]

    def knn_fast(self, query: np.ndarray, k: int, oversample: int = OVERSAMPLE,
                 min_candidates: int = MIN_CANDIDATES) -> list[tuple[int, float]]:
        """Hamming prefilter over in-memory sign bits, then exact cosine over the candidates."""
        cache = self._bits()
        n = len(cache.ids)
        if n == 0 or k < 1:
            return []
        q = np.asarray(query, dtype=np.float32)
        distances = cache.hamming(sign_bits(q)[0])
        n_cand = min(max(k * oversample, min_candidates), n)
        picked = np.argpartition(distances, n_cand - 1)[:n_cand] if n_cand < n else np.arange(n)
        return self._rescored(cache.ids[picked].tolist(), q, k)

    def _matrix(self, ids: list[int]) -> tuple[np.ndarray, np.ndarray]:
        """(ids found, their vectors as one float32 matrix) with one read per 500 ids."""
        found: list[int] = []
        blobs: list[bytes] = []
        for start in range(0, len(ids), 500):
            chunk = ids[start:start + 500]
            marks = ",".join("?" * len(chunk))
            for pid, blob in self.s.query(f"SELECT id, emb FROM passage_f32 WHERE id IN ({marks})", chunk):
                found.append(int(pid))
                blobs.append(blob)
        matrix = np.frombuffer(b"".join(blobs), dtype=np.float32).reshape(len(found), self.s.dim)
        return np.asarray(found, dtype=np.int64), matrix

    def knn_vec0_prefilter(self, query: np.ndarray, k: int, oversample: int = OVERSAMPLE) -> list[tuple[int, float]]:
        """The all-vec0 variant of knn_fast (bit KNN in vec0, rescoring by vec0 rowid lookups).

        Not used by retrieval: kept so `localrag bench scale` can show why knn_fast reads
        candidates from passage_f32 and prefilters in memory instead.
        """
        blob = to_blob(query)
        n_cand = max(k * oversample, MIN_CANDIDATES)
        ids = [int(r[0]) for r in self.s.query(
            "SELECT rowid FROM passage_bits WHERE embedding MATCH vec_quantize_binary(?) AND k = ?", (blob, n_cand))]
        if not ids:
            return []
        marks = ",".join("?" * len(ids))
        rows = self.s.query(
            f"SELECT rowid, vec_distance_cosine(embedding, ?) FROM passage_vec WHERE rowid IN ({marks})", [blob, *ids])
        return sorted(((int(r[0]), 1.0 - float(r[1])) for r in rows), key=lambda t: (-t[1], t[0]))[:k]

    def knn(self, query: np.ndarray, k: int, only: Collection[int] | None = None) -> list[tuple[int, float]]:
        """(passage id, cosine similarity), best first; ``only``: among these passages (a filter)."""
        if only is not None:
            return self.knn_among(query, k, only)
        if self.count() <= EXACT_LIMIT:
            return self.knn_exact(query, k)
        return self.knn_fast(query, k)

    def knn_among(self, query: np.ndarray, k: int, only: Collection[int]) -> list[tuple[int, float]]:
        """KNN among ``only``: where the unrestricted search prefilters (over ``EXACT_LIMIT`` vectors),
        a filter of more passages than it rescores is prefiltered the same way among its own sign
        bits; otherwise cosine over all their vectors."""
        if not only or k < 1:
            return []
        n_cand = max(k * OVERSAMPLE, MIN_CANDIDATES)
        if len(only) > n_cand and self.count() > EXACT_LIMIT:
            return self._knn_fast_among(query, k, only, n_cand)
        return self._rescored(sorted(only), query, k)

    def _knn_fast_among(self, query: np.ndarray, k: int, only: Collection[int], n_cand: int) -> list[tuple[int, float]]:
        """``knn_fast`` with the Hamming prefilter over ``only``'s sign bits alone."""
        cache = self._bits()
        q = np.asarray(query, dtype=np.float32)
        inside = np.flatnonzero(np.isin(cache.ids, np.fromiter(only, dtype=np.int64, count=len(only))))
        distances = cache.hamming(sign_bits(q)[0])[inside]
        picked = inside[np.argpartition(distances, n_cand - 1)[:n_cand]] if n_cand < len(inside) else inside
        return self._rescored(cache.ids[picked].tolist(), q, k)

    def _rescored(self, ids: list[int], query: np.ndarray, k: int) -> list[tuple[int, float]]:
        """The k of ``ids`` nearest ``query`` by cosine over their float vectors, ties by id."""
        found, matrix = self._matrix(ids)
        if not len(found):
            return []
        scores = matrix @ np.asarray(query, dtype=np.float32)
        order = np.lexsort((found, -scores))[:k]
        return [(int(found[i]), float(scores[i])) for i in order]

    def _bits(self) -> _BitsCache:
        """The sign-bit matrix of every vector, reloaded when the vector set has changed."""
        version = self.version()[0]
        with self._cache_lock:
            if self._cache is not None and self._cache.version == version:
                return self._cache
            ids: list[np.ndarray] = []
            words: list[np.ndarray] = []  # (batch, dim/64) row-major while loading
            with self.s._lock:  # one consistent read of the table
                cur = self.s.conn.execute("SELECT id, emb FROM passage_f32 ORDER BY id")
                while True:
                    rows = cur.fetchmany(_LOAD_BATCH)
                    if not rows:
                        break
                    ids.append(np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows)))
                    words.append(sign_bits(np.frombuffer(b"".join(r[1] for r in rows), dtype=np.float32)
                                           .reshape(len(rows), -1)))
            dim_words = self.s.dim // 64 + (1 if self.s.dim % 64 else 0)
            rows = np.concatenate(words) if words else np.zeros((0, dim_words), dtype=np.uint64)
            self._cache = _BitsCache(
                version,
                np.concatenate(ids) if ids else np.zeros(0, dtype=np.int64),
                np.ascontiguousarray(rows.T),
            )
            return self._cache

    def similarities(self, query: np.ndarray, ids: Sequence[int]) -> dict[int, float]:
        vecs = self.get(ids)
        q = np.asarray(query, dtype=np.float32)
        return {pid: float(np.dot(v, q)) for pid, v in vecs.items()}
