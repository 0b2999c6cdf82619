"""The graph phase's queue: passages waiting for extraction, in the order they will be read."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Sequence

from localrag.store.sqlparts import marks

if TYPE_CHECKING:
    from localrag.store.db import Store

# queue priorities are file mtimes in ns (~1.8e18) until a question asks for a passage: then this plus ms
ASKED = 1 << 62


def asked_priority() -> int:
    """The priority of passages asked for now: above every file-ordered one and every earlier ask,
    with room below it (up to 1,000) to order one ask's passages."""
    return ASKED + (time.time_ns() // 1_000_000) * 1000


@dataclass(frozen=True)
class QueueItem:
    passage: int
    priority: int
    attempts: int
    error: str


class GraphQueue:
    def __init__(self, store: "Store") -> None:
        self.s = store

    def next_batch(self, n: int, max_attempts: int = 0) -> list[QueueItem]:
        """The next passages to extract: newest documents first, then reading order."""
        where = "WHERE attempts < ?" if max_attempts else ""
        params: tuple = (max_attempts, n) if max_attempts else (n,)
        rows = self.s.query(
            f"SELECT passage, priority, attempts, error FROM graph_queue {where} ORDER BY priority DESC, passage LIMIT ?", params
        )
        return [QueueItem(int(r[0]), int(r[1]), int(r[2]), r[3]) for r in rows]

    def prioritise(self, passage_ids: Sequence[int]) -> int:
        """Move these queued passages (best first) ahead of every file-ordered one, the latest call's
        first (a question retrieved them: LazyGraphRAG's insight). Reads first, so nothing to move
        costs no write transaction. Returns how many moved."""
        ids = list(dict.fromkeys(int(p) for p in passage_ids))
        if not ids:
            return 0
        waiting = [int(r[0]) for r in self.s.query(
            f"SELECT passage FROM graph_queue WHERE passage IN ({marks(len(ids))}) AND priority < ?", (*ids, ASKED))]
        if not waiting:
            return 0
        now = asked_priority()
        rank = {p: i for i, p in enumerate(ids)}
        with self.s.transaction():
            self.s.executemany("UPDATE graph_queue SET priority = ? WHERE passage = ?",
                               [(now + 999 - min(rank[p], 999), p) for p in waiting])
        return len(waiting)

    def length(self) -> int:
        return int(self.s.one("SELECT COUNT(*) FROM graph_queue")[0])

    def record_attempt(self, passage_id: int, error: str) -> int:
        """An extraction raised: count it and keep the passage queued; returns the attempts so far."""
        with self.s.transaction():
            self.s.execute("UPDATE graph_queue SET attempts = attempts + 1, error = ? WHERE passage = ?", (error[:500], passage_id))
            row = self.s.one("SELECT attempts FROM graph_queue WHERE passage = ?", (passage_id,))
        return int(row[0]) if row else 0

    def enqueue_all(self) -> int:
        """Queue every passage again (e.g. after changing extractor); the cache keeps it cheap."""
        with self.s.transaction():
            cur = self.s.execute(
                "INSERT OR REPLACE INTO graph_queue(passage, priority) "
                "SELECT p.id, d.mtime_ns FROM passages p JOIN documents d ON d.id = p.doc_id"
            )
        return int(cur.rowcount or 0)

    def enqueue(self, passage_ids: Sequence[int]) -> int:
        """Queue these passages for extraction again, ahead of every file-ordered one, the first
        given first (as ``prioritise`` orders a question's passages). Returns how many are queued."""
        ids = list(dict.fromkeys(int(p) for p in passage_ids))
        now = asked_priority()
        with self.s.transaction():
            cur = self.s.executemany(
                "INSERT OR REPLACE INTO graph_queue(passage, priority) SELECT id, ? FROM passages WHERE id = ?",
                [(now + len(ids) - i, p) for i, p in enumerate(ids)])
        return int(cur.rowcount or 0)

    def remove(self, passage_id: int) -> None:
        self.s.execute("DELETE FROM graph_queue WHERE passage = ?", (passage_id,))
