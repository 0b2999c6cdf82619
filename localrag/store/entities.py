"""Graph entities: names, their vectors (vec0 ``entity_vec``) and the in-memory matrix of them."""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Callable, Sequence

import numpy as np

from localrag.store.entity_matrix import EntityMatrix
from localrag.store.sqlparts import chunks, marks
from localrag.store.vectors import from_blob, to_blob

if TYPE_CHECKING:
    from localrag.store.db import Store

EmbedFn = Callable[[list[str]], np.ndarray]


# Up to this many entities a query's nearest ones come from vec0's exact scan (a few ms each);
# above, from the second lookup of a process on, from an in-memory sign-bit prefilter and exact
# rescoring of LOOKUP_CANDIDATES rows: the seed lookups were most of `ppr` at 100k passages, and
# loading the vectors takes ~1 s there, which a one-question process skips (docs/benchmarks.md
# "Scale: the graph phase and graph retrieval").
EXACT_LIMIT = 20_000
LOOKUP_CANDIDATES = 800


class Entities:
    def __init__(self, store: "Store") -> None:
        self.s = store
        self.matrix = EntityMatrix(store)  # the graph phase's (coreference), written inside its transactions
        self._lookup = EntityMatrix(store)  # the readers' (query seeds), kept apart from the writer's
        self._lookup_lock = threading.Lock()
        self._lookups = 0

    def id(self, name: str) -> int | None:
        row = self.s.one("SELECT id FROM entities WHERE name = ?", (name,))
        return int(row[0]) if row else None

    def ids(self, names: Sequence[str]) -> dict[str, int]:
        out: dict[str, int] = {}
        for chunk in chunks(list(dict.fromkeys(names))):
            for eid, name in self.s.query(f"SELECT id, name FROM entities WHERE name IN ({marks(len(chunk))})", list(chunk)):
                out[name] = int(eid)
        return out

    def names(self, ids: Sequence[int]) -> dict[int, str]:
        out: dict[int, str] = {}
        for chunk in chunks(list(dict.fromkeys(ids))):
            for eid, name in self.s.query(f"SELECT id, name FROM entities WHERE id IN ({marks(len(chunk))})", list(chunk)):
                out[int(eid)] = name
        return out

    def vectors(self, ids: Sequence[int]) -> dict[int, np.ndarray]:
        out: dict[int, np.ndarray] = {}
        for chunk in chunks(list(dict.fromkeys(ids))):
            for eid, blob in self.s.query(f"SELECT rowid, embedding FROM entity_vec WHERE rowid IN ({marks(len(chunk))})", list(chunk)):
                out[int(eid)] = from_blob(blob).copy()
        return out

    def knn(self, vec: np.ndarray, k: int) -> list[tuple[int, float]]:
        """(entity id, cosine similarity), best first."""
        if k <= 0:
            return []
        rows = self.s.query(
            "SELECT rowid, distance FROM entity_vec WHERE embedding MATCH ? AND k = ? ORDER BY distance",
            (to_blob(vec), min(int(k), 4096)),
        )
        return [(int(r[0]), 1.0 - float(r[1])) for r in rows]

    def nearest(self, vecs: np.ndarray, k: int) -> list[list[tuple[int, float]]]:
        """``knn`` of each vector: exact through vec0 on small graphs, prefiltered in memory on large ones."""
        vecs = np.atleast_2d(np.asarray(vecs, dtype=np.float32))
        with self._lookup_lock:
            self._lookups += 1
            in_memory = self._lookups > 1 and self.count() > EXACT_LIMIT
        if not in_memory:  # a process that asks once (a CLI `ask`) does not pay for loading every vector
            return [self.knn(v, k) for v in vecs]
        with self._lookup_lock:
            self._lookup.check()
            return self._lookup.nearest(vecs, k, max(LOOKUP_CANDIDATES, 16 * k))

    def count(self) -> int:
        return int(self.s.one("SELECT COUNT(*) FROM entities")[0])

    def all(self) -> dict[int, str]:
        return {int(i): n for i, n in self.s.query("SELECT id, name FROM entities ORDER BY id")}

    def ensure(self, names: list[str], embed: EmbedFn) -> tuple[dict[str, int], list[int]]:
        """Ids of these names, inserting (and embedding) the missing ones: (every id, the new ids)."""
        ids = self.ids(names)
        missing = [n for n in names if n not in ids]
        new_ids: list[int] = []
        if missing:
            vectors = np.asarray(embed(missing), dtype=np.float32)
            # one statement each for all of them: one a name was most of a 20,000-link note's writes
            self.s.executemany("INSERT INTO entities(name) VALUES(?)", [(name,) for name in missing])
            ids.update(self.ids(missing))
            new_ids = [ids[name] for name in missing]
            self.s.executemany("INSERT INTO entity_vec(rowid, embedding) VALUES(?, ?)",
                               [(eid, to_blob(vec)) for eid, vec in zip(new_ids, vectors)])
            self.matrix.add(new_ids, vectors)
        return ids, new_ids
