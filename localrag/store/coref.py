"""Pseudo-coreference rows (NeuroPath): each entity's nearest others above a similarity threshold.

Kept exact by ``add`` on insert and ``refresh_dirty`` on delete (the triggers of schema._graph
mark entities that lost an alias in ``coref_dirty``).
"""

from __future__ import annotations

import contextlib
import time
from typing import TYPE_CHECKING, Iterator

from localrag.store.connection import driver
from localrag.store.entity_matrix import EntityMatrix

if TYPE_CHECKING:
    from localrag.store.db import Store


class Coreference:
    def __init__(self, store: "Store", matrix: EntityMatrix) -> None:
        self.s = store
        self.matrix = matrix
        self.k = 5
        self.threshold = 0.8
        self._deferred: list[int] | None = None  # new entities whose coref waits for the batch's end
        self.seconds = 0.0  # spent in add (the graph phase reports its share)
        store.before_commit.append(self.refresh_dirty)

    def configure(self, k: int, threshold: float) -> None:
        self.k, self.threshold = int(k), float(threshold)

    def stored(self, entity_id: int) -> list[tuple[int, float]]:
        """The coref rows alone (the similarity aliases that coreference maintains)."""
        rows = self.s.query("SELECT alias, sim FROM coref WHERE entity = ? ORDER BY sim DESC, alias", (entity_id,))
        return [(int(a), float(sim)) for a, sim in rows]

    def all(self) -> list[tuple[int, int, float]]:
        return [(int(e), int(a), float(s)) for e, a, s in self.s.query("SELECT entity, alias, sim FROM coref ORDER BY entity, alias")]

    def added(self, new_ids: list[int]) -> None:
        """These entities were just inserted: their rows now, or at the end of a ``deferred`` batch."""
        if self._deferred is not None:
            self._deferred += new_ids
        else:
            self._add(new_ids)

    @contextlib.contextmanager
    def deferred(self) -> Iterator[None]:
        """Inside one transaction: the coref rows of every entity the enclosed writes add are
        computed once, at the end, by one batched search. The rows are those the writes one by
        one would give: an entity's aliases are its top k - 1 others above the threshold, ordered
        by (similarity, id), whatever order the entities came in."""
        if self._deferred is not None:  # nested: the outer batch computes them
            yield
            return
        self._deferred = []
        try:
            yield
            self._add(self._deferred)
        except BaseException:
            self.matrix.invalidate()
            raise
        finally:
            self._deferred = None

    def _own_aliases(self, entity_id: int, hits: list[tuple[int, float]]) -> list[tuple[int, float]]:
        """NeuroPath's rule: the top-k neighbours including the entity itself, >= threshold, self
        dropped (an exact duplicate ranked above self keeps k - 1 others)."""
        others = [(e, s) for e, s in hits if e != entity_id][: self.k - 1]
        return [(e, s) for e, s in others if s >= self.threshold]

    def _set_aliases(self, entity_id: int, hits: list[tuple[int, float]]) -> None:
        self.s.execute("DELETE FROM coref WHERE entity = ?", (entity_id,))
        self.s.executemany("INSERT INTO coref(entity, alias, sim) VALUES(?,?,?)",
                           [(entity_id, a, s) for a, s in self._own_aliases(entity_id, hits)])

    def _add(self, new_ids: list[int]) -> None:
        """New entities get their own rows; an existing entity takes a new one as alias when it
        now ranks in its top k - 1 (by similarity, then id), dropping the ones it outranks."""
        if not new_ids:
            return
        started = time.perf_counter()
        try:
            self._rows(new_ids)
        finally:
            self.seconds += time.perf_counter() - started

    def _rows(self, new_ids: list[int]) -> None:
        self.matrix.check()
        hits = self.matrix.neighbours(new_ids, self.k, self.threshold)
        fresh = set(new_ids)
        rows: list[tuple[int, int, float]] = []
        offered: dict[int, list[tuple[int, float]]] = {}
        for eid in new_ids:
            found = hits[eid].pairs() if eid in hits else []
            rows += [(eid, a, s) for a, s in self._own_aliases(eid, found)]
            for other, sim in found:
                if other not in fresh and sim >= self.threshold:
                    offered.setdefault(other, []).append((eid, sim))
        self.s.executemany("INSERT INTO coref(entity, alias, sim) VALUES(?,?,?)", rows)
        for other, new in offered.items():
            current = self.stored(other)
            best = sorted(current + new, key=lambda t: (-t[1], t[0]))[: self.k - 1]
            keep = {a for a, _ in best}
            self.s.executemany("DELETE FROM coref WHERE entity = ? AND alias = ?",
                               [(other, a) for a, _ in current if a not in keep])
            self.s.executemany("INSERT INTO coref(entity, alias, sim) VALUES(?,?,?)",
                               [(other, a, s) for a, s in new if a in keep])

    def refresh_dirty(self) -> None:
        """Recompute entities that lost an alias to a deletion (runs just before each COMMIT)."""
        try:
            dirty = [int(r[0]) for r in self.s.query("SELECT entity FROM coref_dirty")]
        except driver().OperationalError:  # an index older than the graph migration, opened read-only
            return
        if not dirty:
            return
        self.matrix.check()
        hits = self.matrix.neighbours([e for e in dirty if e in self.matrix], self.k, self.threshold)
        for eid, found in hits.items():
            self._set_aliases(eid, found.pairs())
        self.s.execute("DELETE FROM coref_dirty")

    def rebuild(self) -> None:
        """Recompute every coref row from scratch (a check, and a repair after changing k or threshold)."""
        with self.s.transaction():
            self.s.execute("DELETE FROM coref")
            self.matrix.load()
            ids = [int(r[0]) for r in self.s.query("SELECT id FROM entities ORDER BY id")]
            for eid, found in self.matrix.neighbours(ids, self.k, self.threshold).items():
                self._set_aliases(eid, found.pairs())
