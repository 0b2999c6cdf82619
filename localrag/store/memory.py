"""Edge memories (ReMindRAG): one vector per reinforced graph edge, in vec0.

An edge is a (kind, a, b) triple:
- "fact":    a = fact id,   b = passage id (the fact as read in that passage: a fact_sources row)
- "mention": a = entity id, b = passage id (entity -> passage, a mentions row)
- "next":    a = passage,   b = the next passage of the same document
Edges with no row have the zero memory. Triggers delete an edge (and its vector) when the
fact source, mention or passage behind it goes, so memories never outlive their edges.
"""

from __future__ import annotations

import contextlib
import threading
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Iterator, Sequence

import numpy as np

from localrag.store.vectors import from_blob, to_blob

if TYPE_CHECKING:
    from localrag.store.db import Store

EdgeKey = tuple[str, int, int]


@dataclass(frozen=True)
class MemoryStats:
    reinforced: int
    norms: list[float]
    queries_learned: int
    updates: int


class EdgeMemory:
    def __init__(self, store: "Store") -> None:
        self.s = store
        self._attribution = threading.local()

    @contextlib.contextmanager
    def attributed(self, query_id: int | None) -> Iterator[None]:
        """Within the block, this thread's writes are recorded against ``query_id`` (with the memory before)."""
        previous = getattr(self._attribution, "query_id", None)
        self._attribution.query_id = query_id
        try:
            yield
        finally:
            self._attribution.query_id = previous

    def exists(self, key: EdgeKey) -> bool:
        """Does the graph edge behind this key exist (updates only ever touch real edges)?"""
        kind, a, b = key
        if kind == "fact":
            sql = "SELECT 1 FROM fact_sources WHERE fact = ? AND passage = ?"
        elif kind == "mention":
            sql = "SELECT 1 FROM mentions WHERE entity = ? AND passage = ?"
        elif kind == "next":
            sql = ("SELECT 1 FROM passages p JOIN passages q ON q.doc_id = p.doc_id AND q.ordinal = p.ordinal + 1 "
                   "WHERE p.id = ? AND q.id = ?")
        else:
            return False
        return self.s.one(sql, (a, b)) is not None

    def get(self, keys: Sequence[EdgeKey]) -> dict[EdgeKey, np.ndarray]:
        """Stored memories of these edges (missing = zero vector)."""
        out: dict[EdgeKey, np.ndarray] = {}
        for key in dict.fromkeys(keys):
            row = self.s.one(
                "SELECT m.embedding FROM edges e JOIN edge_memory m ON m.rowid = e.id WHERE e.kind = ? AND e.a = ? AND e.b = ?",
                key,
            )
            if row is not None:
                out[key] = from_blob(row[0]).copy()
        return out

    def put(self, key: EdgeKey, vec: np.ndarray) -> None:
        """Write one edge's memory (inside the caller's transaction)."""
        query_id = getattr(self._attribution, "query_id", None)
        if query_id is not None:
            before = self.get([key]).get(key)
            self.s.execute("INSERT INTO memory_writes(query_id, kind, a, b, before, at) VALUES(?,?,?,?,?,?)",
                           (query_id, *key, None if before is None else to_blob(before), time.time()))
        norm = float(np.linalg.norm(vec))
        self.s.execute(
            "INSERT INTO edges(kind, a, b, updates, norm, updated) VALUES(?,?,?,1,?,?) "
            "ON CONFLICT(kind, a, b) DO UPDATE SET updates = updates + 1, norm = excluded.norm, updated = excluded.updated",
            (*key, norm, time.time()),
        )
        eid = int(self.s.one("SELECT id FROM edges WHERE kind = ? AND a = ? AND b = ?", key)[0])
        self.s.execute("DELETE FROM edge_memory WHERE rowid = ?", (eid,))
        self.s.execute("INSERT INTO edge_memory(rowid, embedding) VALUES(?, ?)", (eid, to_blob(vec)))

    def log(self, query: str, strategy: str, enhanced: int, penalised: int, penalty: str) -> None:
        self.s.execute(
            "INSERT INTO memory_log(query, strategy, enhanced, penalised, penalty, at) VALUES(?,?,?,?,?,?)",
            (query, strategy, enhanced, penalised, penalty, time.time()),
        )

    def written_by(self, query_id: int) -> list[EdgeKey]:
        """The edges a query's answer wrote, first write first."""
        rows = self.s.query("SELECT kind, a, b FROM memory_writes WHERE query_id = ? ORDER BY id", (query_id,))
        return list(dict.fromkeys((r[0], int(r[1]), int(r[2])) for r in rows))

    def undo(self, query_id: int) -> int:
        """Put back the memory every edge had before this query wrote it; returns the edges restored."""
        rows = self.s.query("SELECT kind, a, b, before FROM memory_writes WHERE query_id = ? ORDER BY id DESC",
                            (query_id,))
        if not rows:
            return 0
        with self.s.transaction():
            for kind, a, b, before in rows:
                key = (kind, int(a), int(b))
                if before is None:
                    self.s.execute("DELETE FROM edges WHERE kind = ? AND a = ? AND b = ?", key)
                else:
                    self._restore(key, from_blob(before))
            self.s.execute("DELETE FROM memory_writes WHERE query_id = ?", (query_id,))
        return len({(r[0], r[1], r[2]) for r in rows})

    def _restore(self, key: EdgeKey, vec: np.ndarray) -> None:
        row = self.s.one("SELECT id FROM edges WHERE kind = ? AND a = ? AND b = ?", key)
        if row is None:
            return
        self.s.execute("UPDATE edges SET norm = ?, updated = ? WHERE id = ?", (float(np.linalg.norm(vec)), time.time(), row[0]))
        self.s.execute("DELETE FROM edge_memory WHERE rowid = ?", (row[0],))
        self.s.execute("INSERT INTO edge_memory(rowid, embedding) VALUES(?, ?)", (row[0], to_blob(vec)))

    def set_verdict(self, query_id: int, text: str, verdict: str) -> None:
        self.s.execute("INSERT INTO query_feedback(query_id, text, verdict, at) VALUES(?,?,?,?) "
                       "ON CONFLICT(query_id) DO UPDATE SET verdict = excluded.verdict, at = excluded.at",
                       (query_id, text, verdict, time.time()))

    def verdict_for(self, text: str) -> str | None:
        """The latest verdict on any answer to exactly this question."""
        row = self.s.one("SELECT verdict FROM query_feedback WHERE text = ? ORDER BY at DESC, query_id DESC LIMIT 1",
                         (text,))
        return row[0] if row else None

    def knn(self, query: np.ndarray, k: int) -> list[tuple[EdgeKey, float]]:
        """Edges whose memory points most towards the query (cosine), best first."""
        rows = self.s.query(
            "SELECT e.kind, e.a, e.b, m.distance FROM (SELECT rowid, distance FROM edge_memory "
            "WHERE embedding MATCH ? AND k = ?) m JOIN edges e ON e.id = m.rowid ORDER BY m.distance",
            (to_blob(query), k),
        )
        return [((r[0], int(r[1]), int(r[2])), 1.0 - float(r[3])) for r in rows]

    def stats(self) -> MemoryStats:
        rows = self.s.query("SELECT norm, updates FROM edges WHERE norm > 0")
        learned = int(self.s.one("SELECT COUNT(DISTINCT query) FROM memory_log")[0])
        return MemoryStats(len(rows), [float(r[0]) for r in rows], learned, sum(int(r[1]) for r in rows))

    def reinforced_by_kind(self) -> list[tuple[str, int]]:
        """(edge kind, edges with a non-zero memory), by kind."""
        return [(k, int(n)) for k, n in self.s.query("SELECT kind, COUNT(*) FROM edges WHERE norm > 0 GROUP BY kind")]

    def reset(self) -> int:
        n = int(self.s.one("SELECT COUNT(*) FROM edges")[0])
        with self.s.transaction():
            self.s.execute("DELETE FROM edges")
            self.s.execute("DELETE FROM memory_log")
        return n

    def count(self) -> int:
        return int(self.s.one("SELECT COUNT(*) FROM edges")[0])

    def keys(self) -> list[EdgeKey]:
        return [(r[0], int(r[1]), int(r[2])) for r in self.s.query("SELECT kind, a, b FROM edges ORDER BY id")]

    def next_passage(self, passage_id: int) -> int | None:
        row = self.s.one(
            "SELECT q.id FROM passages p JOIN passages q ON q.doc_id = p.doc_id AND q.ordinal = p.ordinal + 1 WHERE p.id = ?",
            (passage_id,),
        )
        return int(row[0]) if row else None

    def prev_passage(self, passage_id: int) -> int | None:
        row = self.s.one(
            "SELECT q.id FROM passages p JOIN passages q ON q.doc_id = p.doc_id AND q.ordinal = p.ordinal - 1 WHERE p.id = ?",
            (passage_id,),
        )
        return int(row[0]) if row else None
