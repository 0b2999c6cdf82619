"""Passage embeddings in vec0: float vectors for exact scores, bit vectors for a fast prefilter."""

from __future__ import annotations

from typing import TYPE_CHECKING, Iterable, Sequence

import numpy as np

if TYPE_CHECKING:
    from localrag.store.db import Store

# Below this many passages exact brute-force KNN is fast enough (a few ms).
EXACT_LIMIT = 20_000


def to_blob(vec: np.ndarray) -> bytes:
    return np.asarray(vec, dtype=np.float32).tobytes()


def from_blob(blob: bytes) -> np.ndarray:
    return np.frombuffer(blob, dtype=np.float32)


class PassageVectors:
    def __init__(self, store: "Store"):
        self.s = store

    def put(self, passage_id: int, vec: np.ndarray) -> None:
        blob = to_blob(vec)
        self.s.execute("INSERT INTO passage_vec(rowid, embedding) VALUES(?, ?)", (passage_id, blob))
        self.s.execute("INSERT INTO passage_bits(rowid, embedding) VALUES(?, vec_quantize_binary(?))", (passage_id, blob))

    def put_many(self, rows: Iterable[tuple[int, np.ndarray]]) -> None:
        items = [(pid, to_blob(v)) for pid, v in rows]
        self.s.executemany("INSERT INTO passage_vec(rowid, embedding) VALUES(?, ?)", items)
        self.s.executemany("INSERT INTO passage_bits(rowid, embedding) VALUES(?, vec_quantize_binary(?))", items)

    def by_sha(self, shas: Sequence[str]) -> dict[str, np.ndarray]:
        """Existing vectors for passage texts with these hashes (re-embedding is never needed for them)."""
        out: dict[str, np.ndarray] = {}
        wanted = list(dict.fromkeys(shas))
        for start in range(0, len(wanted), 500):
            chunk = wanted[start:start + 500]
            marks = ",".join("?" * len(chunk))
            rows = self.s.query(
                f"SELECT p.sha256, v.embedding FROM passages p JOIN passage_vec v ON v.rowid = p.id "
                f"WHERE p.sha256 IN ({marks})",
                chunk,
            )
            for sha, blob in rows:
                out.setdefault(sha, from_blob(blob).copy())
        return out

    def get(self, ids: Sequence[int]) -> dict[int, np.ndarray]:
        out: dict[int, np.ndarray] = {}
        for start in range(0, len(ids), 500):
            chunk = list(ids[start:start + 500])
            marks = ",".join("?" * len(chunk))
            for pid, blob in self.s.query(f"SELECT rowid, embedding FROM passage_vec WHERE rowid IN ({marks})", chunk):
                out[int(pid)] = from_blob(blob).copy()
        return out

    def count(self) -> int:
        return int(self.s.one("SELECT COUNT(*) FROM passage_vec")[0])

    def knn_exact(self, query: np.ndarray, k: int) -> list[tuple[int, float]]:
        """(passage id, cosine similarity), best first, by brute force over float vectors."""
        rows = self.s.query(
            "SELECT rowid, distance FROM passage_vec WHERE embedding MATCH ? AND k = ? ORDER BY distance",
            (to_blob(query), k),
        )
        return [(int(r[0]), 1.0 - float(r[1])) for r in rows]

    def knn_fast(self, query: np.ndarray, k: int, oversample: int = 16) -> list[tuple[int, float]]:
        """Binary-quantised Hamming prefilter (k·oversample candidates), then exact cosine rescoring."""
        blob = to_blob(query)
        n_cand = max(k * oversample, 200)
        cands = self.s.query(
            "SELECT rowid FROM passage_bits WHERE embedding MATCH vec_quantize_binary(?) AND k = ?",
            (blob, n_cand),
        )
        ids = [int(r[0]) for r in cands]
        if not ids:
            return []
        marks = ",".join("?" * len(ids))
        rows = self.s.query(
            f"SELECT rowid, vec_distance_cosine(embedding, ?) FROM passage_vec WHERE rowid IN ({marks})",
            [blob, *ids],
        )
        scored = sorted(((int(r[0]), 1.0 - float(r[1])) for r in rows), key=lambda t: -t[1])
        return scored[:k]

    def knn(self, query: np.ndarray, k: int) -> list[tuple[int, float]]:
        if self.count_cached() <= EXACT_LIMIT:
            return self.knn_exact(query, k)
        return self.knn_fast(query, k)

    def count_cached(self) -> int:
        # passages change only inside index transactions; the count is cheap enough to read each time
        return int(self.s.one("SELECT COUNT(*) FROM passages")[0])

    def similarities(self, query: np.ndarray, ids: Sequence[int]) -> dict[int, float]:
        vecs = self.get(ids)
        q = np.asarray(query, dtype=np.float32)
        return {pid: float(np.dot(v, q)) for pid, v in vecs.items()}
