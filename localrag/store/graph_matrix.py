"""The saved entity graph (graph_matrix) and the marks of what changed since (graph_matrix_dirty).

The reads here return plain numpy arrays keyed by entity and passage ids; kg/entity_graph.py
turns them into the walk matrix. See schema._graph_matrix for the marking triggers.
"""

from __future__ import annotations

import io
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from localrag.store.db import Store

_DIRTY_ENTITIES = "SELECT id FROM graph_matrix_dirty WHERE kind = 0"
_DIRTY_PASSAGES = "SELECT id FROM graph_matrix_dirty WHERE kind = 1"


def _ints(rows: list[tuple], col: int = 0) -> np.ndarray:
    return np.fromiter((r[col] for r in rows), dtype=np.int64, count=len(rows))


class GraphMatrixStore:
    def __init__(self, store: "Store") -> None:
        self.s = store

    def available(self) -> bool:
        return self.s.one("SELECT name FROM sqlite_master WHERE type = 'table' AND name = 'graph_matrix'") is not None

    def saved_version(self) -> int | None:
        row = self.s.one("SELECT version FROM graph_matrix WHERE id = 1")
        return int(row[0]) if row else None

    def load(self) -> tuple[int, dict[str, np.ndarray]] | None:
        row = self.s.one("SELECT version, arrays FROM graph_matrix WHERE id = 1")
        if row is None:
            return None
        with np.load(io.BytesIO(row[1]), allow_pickle=False) as data:
            return int(row[0]), {name: data[name] for name in data.files}

    def save(self, version: int, arrays: dict[str, np.ndarray]) -> None:
        """Inside the caller's transaction: the matrix at ``version``; the marks are cleared."""
        buf = io.BytesIO()
        np.savez(buf, **arrays)
        self.s.execute("INSERT OR REPLACE INTO graph_matrix(id, version, arrays) VALUES(1, ?, ?)",
                       (version, buf.getvalue()))
        self.s.execute("DELETE FROM graph_matrix_dirty")

    # -- what changed -----------------------------------------------------------------
    def dirty(self) -> tuple[np.ndarray, np.ndarray]:
        """(entities whose edges or existence changed, passages whose mentions changed)."""
        return _ints(self.s.query(_DIRTY_ENTITIES)), _ints(self.s.query(_DIRTY_PASSAGES))

    # -- rows -------------------------------------------------------------------------
    def entity_ids(self, dirty_only: bool) -> np.ndarray:
        """Every entity id, or the marked ones that still exist; ascending."""
        where = f"WHERE id IN ({_DIRTY_ENTITIES})" if dirty_only else ""
        return _ints(self.s.query(f"SELECT id FROM entities {where} ORDER BY id"))

    def fact_pairs(self, dirty_only: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(heads, tails, facts joining them in that direction) of every fact, or of those touching a
        marked entity; a fact is counted once."""
        source = "facts"
        if dirty_only:
            source = (f"(SELECT head, tail FROM facts WHERE head IN ({_DIRTY_ENTITIES}) UNION ALL "
                      f"SELECT head, tail FROM facts WHERE tail IN ({_DIRTY_ENTITIES}) AND head NOT IN ({_DIRTY_ENTITIES}))")
        rows = self.s.query(f"SELECT head, tail, COUNT(*) FROM {source} GROUP BY head, tail")
        return _ints(rows, 0), _ints(rows, 1), _ints(rows, 2)

    def coref_rows(self, dirty_only: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(entities, aliases, similarities) of every coref row, or of those touching a marked entity,
        ordered by (entity, alias)."""
        if dirty_only:
            rows = self.s.query(
                f"SELECT entity, alias, sim FROM coref WHERE entity IN ({_DIRTY_ENTITIES}) UNION "
                f"SELECT entity, alias, sim FROM coref WHERE alias IN ({_DIRTY_ENTITIES}) ORDER BY 1, 2")
        else:
            rows = self.s.query("SELECT entity, alias, sim FROM coref ORDER BY entity, alias")
        sims = np.fromiter((r[2] for r in rows), dtype=np.float64, count=len(rows))
        return _ints(rows, 0), _ints(rows, 1), sims

    def mention_rows(self, dirty_only: bool) -> tuple[np.ndarray, np.ndarray]:
        """(passage ids, entity ids) of every mention, or of the marked passages' mentions."""
        where = f"WHERE passage IN ({_DIRTY_PASSAGES})" if dirty_only else ""
        rows = self.s.query(f"SELECT passage, entity FROM mentions {where}")
        return _ints(rows, 0), _ints(rows, 1)
