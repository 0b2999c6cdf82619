"""Graph entities: names, their vectors (vec0 ``entity_vec``) and the in-memory matrix of them."""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable, Sequence

import numpy as np

from localrag.store.entity_matrix import EntityMatrix
from localrag.store.sqlparts import chunks, marks
from localrag.store.vectors import from_blob, to_blob

if TYPE_CHECKING:
    from localrag.store.db import Store

EmbedFn = Callable[[list[str]], np.ndarray]


class Entities:
    def __init__(self, store: "Store") -> None:
        self.s = store
        self.matrix = EntityMatrix(store)

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

    def all(self) -> dict[int, str]:
        return {int(i): n for i, n in self.s.query("SELECT id, name FROM entities ORDER BY id")}

    def ensure(self, names: list[str], embed: EmbedFn) -> tuple[dict[str, int], list[int]]:
        """Ids of these names, inserting (and embedding) the missing ones: (every id, the new ids)."""
        ids = self.ids(names)
        missing = [n for n in names if n not in ids]
        new_ids: list[int] = []
        if missing:
            vectors = np.asarray(embed(missing), dtype=np.float32)
            for name, vec in zip(missing, vectors):
                cur = self.s.execute("INSERT INTO entities(name) VALUES(?)", (name,))
                eid = int(cur.lastrowid)
                self.s.execute("INSERT INTO entity_vec(rowid, embedding) VALUES(?, ?)", (eid, to_blob(vec)))
                ids[name] = eid
                new_ids.append(eid)
            self.matrix.add(new_ids, vectors)
        return ids, new_ids
