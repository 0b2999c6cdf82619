"""The knowledge graph tables, one part per concern: entities (+ vectors), facts with sources and
mentions, the build queue, the extraction cache with recorded failures, and pseudo-coreference.

Writes for one passage happen in one transaction together with its removal from the
queue, so a killed process leaves each passage either untouched (still queued) or
complete. Deletions are garbage-collected by triggers (see schema._graph); coref rows
are kept exact by ``Coreference.added`` on insert and ``refresh_dirty`` on delete.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Sequence

from localrag.records import GraphCounts, Triple
from localrag.store.coref import Coreference
from localrag.store.entities import EmbedFn, Entities
from localrag.store.extractions import CachedExtraction, Extractions
from localrag.store.facts import Facts
from localrag.store.graph_queue import GraphQueue

if TYPE_CHECKING:
    from localrag.store.db import Store

CERTAIN_ALIAS = "is also called"  # kg.vault.ALIAS_RELATION: a front-matter alias of a note's title


@dataclass(frozen=True)
class WriteResult:
    facts_added: int
    entities_added: int
    facts: int  # facts sourced from the passage after the write
    mentions: int


class Graph:
    """The parts, and what spans them: a passage's whole write, aliases, figures."""

    def __init__(self, store: "Store") -> None:
        self.s = store
        self.entities = Entities(store)
        self.facts = Facts(store)
        self.queue = GraphQueue(store)
        self.extractions = Extractions(store)
        self.coref = Coreference(store, self.entities.matrix)

    def aliases(self, entity_id: int) -> list[tuple[int, float]]:
        """Pseudo-coreference: (alias id, similarity), self excluded, best first. A note's front-matter
        aliases (facts "is also called", kg/vault.py) are certain: similarity 1."""
        rows = self.s.query(
            "SELECT alias, MAX(sim) AS s FROM (SELECT alias, sim FROM coref WHERE entity = ? "
            "UNION ALL SELECT tail, 1.0 FROM facts WHERE head = ? AND relation = ? "
            "UNION ALL SELECT head, 1.0 FROM facts WHERE tail = ? AND relation = ?) WHERE alias <> ? "
            "GROUP BY alias ORDER BY s DESC, alias",
            (entity_id, entity_id, CERTAIN_ALIAS, entity_id, CERTAIN_ALIAS, entity_id))
        return [(int(a), float(sim)) for a, sim in rows]

    # -- figures ------------------------------------------------------------------------
    def available(self) -> bool:
        return self.s.one("SELECT name FROM sqlite_master WHERE type = 'table' AND name = 'graph_queue'") is not None

    def counts(self) -> GraphCounts:
        if not self.available():
            return GraphCounts(0, 0, 0, 0, 0, 0)
        row = self.s.one(
            "SELECT (SELECT COUNT(*) FROM entities), (SELECT COUNT(*) FROM facts), (SELECT COUNT(*) FROM coref), "
            "(SELECT COUNT(*) FROM mentions), (SELECT COUNT(*) FROM graph_queue), (SELECT COUNT(*) FROM extraction_failures)"
        )
        return GraphCounts(*(int(x) for x in row))

    def version(self) -> int:
        """Changes whenever facts, mentions or coref rows change: a cache key for derived graphs."""
        row = self.s.one("SELECT version FROM graph_state WHERE id = 1")
        return int(row[0]) if row else 0

    def orphans(self) -> dict[str, int]:
        """Rows that garbage collection should have removed (all zero in a healthy index)."""
        checks = {
            "facts without sources": "SELECT COUNT(*) FROM facts f WHERE NOT EXISTS (SELECT 1 FROM fact_sources s WHERE s.fact = f.id)",
            "entities without facts or mentions": (
                "SELECT COUNT(*) FROM entities e WHERE NOT EXISTS (SELECT 1 FROM mentions m WHERE m.entity = e.id) "
                "AND NOT EXISTS (SELECT 1 FROM facts f WHERE f.head = e.id OR f.tail = e.id)"),
            "entities without vectors": "SELECT COUNT(*) FROM entities e WHERE NOT EXISTS (SELECT 1 FROM entity_vec v WHERE v.rowid = e.id)",
            "vectors without entities": "SELECT COUNT(*) FROM entity_vec v WHERE NOT EXISTS (SELECT 1 FROM entities e WHERE e.id = v.rowid)",
            "coref rows without entities": (
                "SELECT COUNT(*) FROM coref c WHERE NOT EXISTS (SELECT 1 FROM entities e WHERE e.id = c.entity) "
                "OR NOT EXISTS (SELECT 1 FROM entities e WHERE e.id = c.alias)"),
            "fact sources without passages": (
                "SELECT COUNT(*) FROM fact_sources s WHERE NOT EXISTS (SELECT 1 FROM passages p WHERE p.id = s.passage)"),
            "mentions without passages": "SELECT COUNT(*) FROM mentions m WHERE NOT EXISTS (SELECT 1 FROM passages p WHERE p.id = m.passage)",
            "dirty coref rows": "SELECT COUNT(*) FROM coref_dirty",
        }
        return {name: int(self.s.one(sql)[0]) for name, sql in checks.items()}


    def write_extraction(
        self,
        passage_id: int,
        triples: Sequence[Triple],
        entity_names: Sequence[str],
        embed: EmbedFn,
        *,
        cache: CachedExtraction | None = None,
        failure: str = "",
        fallback: bool = False,
        model: str = "",
    ) -> WriteResult | None:
        """Replace the passage's facts and mentions with these, in one transaction that also
        removes it from the queue. ``entity_names`` are extra mentions (the document title).
        Returns None when the passage no longer exists (deleted while it was being extracted)."""
        with self.s.transaction():
            if self.s.one("SELECT 1 FROM passages WHERE id = ?", (passage_id,)) is None:
                return None
            names = list(dict.fromkeys([n for t in triples for n in (t.head, t.tail)] + [n for n in entity_names if n]))
            ids, new_ids = self.entities.ensure(names, embed)
            written = self.facts.replace_in_passage(passage_id, triples, {n: ids[n] for n in names})
            self.queue.remove(passage_id)
            self.extractions.set_failure(passage_id, failure, fallback, model)
            if cache is not None:
                self.extractions.put(cache)
            self.coref.added(new_ids)
            return WriteResult(written.facts_added, len(new_ids), written.facts, written.mentions)
