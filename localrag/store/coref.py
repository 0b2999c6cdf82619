"""Pseudo-coreference rows (NeuroPath): each entity's nearest others above a similarity threshold.

Kept exact by ``add`` on insert and ``refresh_dirty`` on delete (the triggers of schema._graph
mark entities that lost an alias in ``coref_dirty``).

A new entity is offered only to the entities it could enter (its similarity reaches their
floor: their weakest alias once they hold k - 1), and at most ``CANDIDATE_CAP`` candidates per
new entity are scored exactly. Below the cap (every entity of a real vault: a handful of names
above the threshold) the rows are exactly those of a search over all pairs; a note that makes
thousands of names alike (``[[Note 1]]`` … ``[[Note 20000]]``) costs a bounded amount per name.
"""

from __future__ import annotations

import contextlib
import json
import time
from typing import TYPE_CHECKING, Iterator

import numpy as np

from localrag.store.connection import driver
from localrag.store.entity_matrix import NO_FLOOR, EntityMatrix

if TYPE_CHECKING:
    from localrag.embed import SimilarityScale
    from localrag.store.db import Store

CANDIDATE_CAP = 64  # candidates scored exactly per new entity (real vaults: far fewer above the threshold)


class Coreference:
    def __init__(self, store: "Store", matrix: EntityMatrix) -> None:
        self.s = store
        self.matrix = matrix
        self.k = 5
        self.threshold = 0.8
        self._deferred: list[int] | None = None  # new entities whose coref waits for the batch's end
        self.seconds = 0.0  # spent in add (the graph phase reports its share)
        self.cap = CANDIDATE_CAP
        self._floors_gen: int | None = None  # the matrix generation the floors were read at (None: read again)
        store.before_commit.append(self.refresh_dirty)

    def configure(self, k: int, threshold: float, scale: "SimilarityScale | None" = None) -> None:
        """``threshold`` on MiniLM's scale; ``scale``: the index's embedder's (embed.similarity_scale)."""
        # the rows hold the embedder's own cosines and the matrix compares them by the thousand: the
        # threshold goes through the inverse scale once instead of every cosine through the scale
        self.k = int(k)
        self.threshold = float(threshold) if scale is None else scale.cosine_at(float(threshold))

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

    def _floor(self, aliases: list[tuple[int, float]]) -> float:
        """What a newcomer must reach to enter these aliases (sorted best first)."""
        if len(aliases) < self.k - 1:
            return NO_FLOOR
        return aliases[-1][1] if aliases else np.inf

    def _ensure_floors(self) -> None:
        """The floors as the coref table gives them, whenever the matrix rows were reloaded or dropped.

        Only a deletion lowers a floor, and a deletion drops matrix rows (a new generation); a
        rolled-back write removes the entities it added, so the matrix drops those rows too."""
        if self._floors_gen == self.matrix.generation:
            return
        rows = self.s.query("SELECT entity, COUNT(*), MIN(sim) FROM coref GROUP BY entity")
        floors = {int(e): float(low) if int(n) >= self.k - 1 else NO_FLOOR for e, n, low in rows}
        self.matrix.set_floors(floors, reset=True)
        self._floors_gen = self.matrix.generation

    def _set_aliases(self, entity_id: int, hits: list[tuple[int, float]]) -> None:
        own = self._own_aliases(entity_id, hits)
        self.s.execute("DELETE FROM coref WHERE entity = ?", (entity_id,))
        self.s.executemany("INSERT INTO coref(entity, alias, sim) VALUES(?,?,?)", [(entity_id, a, s) for a, s in own])
        self.matrix.set_floors({entity_id: self._floor(own)})

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
        self._ensure_floors()
        fresh = set(new_ids)
        self.matrix.set_floors({e: np.inf for e in new_ids})  # nothing is offered to each other: own rows below
        hits = self.matrix.neighbours(new_ids, self.k, self.threshold, floors=True, cap=self.cap)
        rows: list[tuple[int, int, float]] = []
        offered: dict[int, list[tuple[int, float]]] = {}
        floors: dict[int, float] = {}
        for found, same in self._alike(new_ids, hits):
            offer = [(other, sim) for other, sim in found if other not in fresh and sim >= self.threshold]
            for eid in same:
                own = self._own_aliases(eid, found)
                rows += [(eid, a, s) for a, s in own]
                floors[eid] = self._floor(own)
            # newcomers alike in every similarity: an entity keeps at most k - 1 of them, the lowest ids
            for eid in sorted(same)[: self.k - 1] if offer else ():
                for other, sim in offer:
                    offered.setdefault(other, []).append((eid, sim))
        self.s.executemany("INSERT INTO coref(entity, alias, sim) VALUES(?,?,?)", rows)
        floors.update(self._offer(offered))
        self.matrix.set_floors(floors)

    @staticmethod
    def _alike(new_ids: list[int], hits: dict) -> list[tuple[list[tuple[int, float]], list[int]]]:
        """(neighbours, the new entities that have exactly these): the matrix finds them once for
        entities that share a vector, so their rows and offers are worked out once too."""
        groups: dict[int, tuple[list[tuple[int, float]], list[int]]] = {}
        for eid in new_ids:
            found = hits.get(eid)
            key = id(found) if found is not None else -eid
            if key not in groups:
                groups[key] = (found.pairs() if found is not None else [], [])
            groups[key][1].append(eid)
        return list(groups.values())

    def _stored_of(self, entities: list[int]) -> dict[int, list[tuple[int, float]]]:
        """``stored`` for many entities in one query."""
        out: dict[int, list[tuple[int, float]]] = {e: [] for e in entities}
        rows = self.s.query("SELECT entity, alias, sim FROM coref WHERE entity IN (SELECT value FROM json_each(?))",
                            (json.dumps(entities),))
        for e, a, sim in rows:
            out[int(e)].append((int(a), float(sim)))
        return out

    def _offer(self, offered: dict[int, list[tuple[int, float]]]) -> dict[int, float]:
        """Each entity takes those of its offered newcomers that now rank in its top k - 1; their new floors."""
        current = self._stored_of(list(offered))
        gone: list[tuple[int, int]] = []
        taken: list[tuple[int, int, float]] = []
        floors: dict[int, float] = {}
        for other, new in offered.items():
            best = sorted(current[other] + new, key=lambda t: (-t[1], t[0]))[: self.k - 1]
            keep = {a for a, _ in best}
            gone += [(other, a) for a, _ in current[other] if a not in keep]
            taken += [(other, a, s) for a, s in new if a in keep]
            floors[other] = self._floor(best)
        self.s.executemany("DELETE FROM coref WHERE entity = ? AND alias = ?", gone)
        self.s.executemany("INSERT INTO coref(entity, alias, sim) VALUES(?,?,?)", taken)
        return floors

    def refresh_dirty(self) -> None:
        """Recompute entities that lost an alias to a deletion (runs just before each COMMIT)."""
        try:
            dirty = [int(r[0]) for r in self.s.query("SELECT entity FROM coref_dirty")]
        except driver().OperationalError:  # an index older than the graph migration, opened read-only
            return
        if not dirty:
            return
        self.matrix.check()
        hits = self.matrix.top([e for e in dirty if e in self.matrix], self.k, self.threshold, self.cap)
        for eid, found in hits.items():
            self._set_aliases(eid, found.pairs())
        self.s.execute("DELETE FROM coref_dirty")

    def rebuild(self) -> None:
        """Recompute every coref row from scratch (a check, and a repair after changing k or threshold)."""
        with self.s.transaction():
            self.s.execute("DELETE FROM coref")
            self.matrix.load()
            ids = [int(r[0]) for r in self.s.query("SELECT id FROM entities ORDER BY id")]
            for eid, found in self.matrix.top(ids, self.k, self.threshold, self.cap).items():
                self._set_aliases(eid, found.pairs())
