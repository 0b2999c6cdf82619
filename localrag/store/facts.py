"""Facts with their sources (which passage said it) and mentions (which passage names an entity)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Sequence

from localrag.records import Fact, Triple

if TYPE_CHECKING:
    from localrag.store.db import Store

_FACT_COLS = "f.id, f.head, f.relation, f.tail, h.name, t.name"
_FACT_FROM = "facts f JOIN entities h ON h.id = f.head JOIN entities t ON t.id = f.tail"
_SOURCED = "fact_sources s JOIN facts f ON f.id = s.fact JOIN entities h ON h.id = f.head JOIN entities t ON t.id = f.tail"


@dataclass(frozen=True)
class PassageFacts:
    facts_added: int
    facts: int  # facts sourced from the passage after the write
    mentions: int


class Facts:
    def __init__(self, store: "Store") -> None:
        self.s = store

    def passages_mentioning(self, entity_id: int) -> list[int]:
        return [int(r[0]) for r in self.s.query("SELECT passage FROM mentions WHERE entity = ? ORDER BY passage", (entity_id,))]

    def passage_entities(self, passage_id: int) -> list[int]:
        return [int(r[0]) for r in self.s.query("SELECT entity FROM mentions WHERE passage = ? ORDER BY entity", (passage_id,))]

    def in_passage(self, passage_id: int) -> list[Fact]:
        rows = self.s.query(f"SELECT {_FACT_COLS} FROM {_SOURCED} WHERE s.passage = ? ORDER BY f.id", (passage_id,))
        return [Fact(*r) for r in rows]

    def of_entity_in_passage(self, entity_id: int, passage_id: int) -> list[Fact]:
        rows = self.s.query(
            f"SELECT {_FACT_COLS} FROM {_SOURCED} WHERE s.passage = ? AND (f.head = ? OR f.tail = ?) ORDER BY f.id",
            (passage_id, entity_id, entity_id),
        )
        return [Fact(*r) for r in rows]

    def of_entity(self, entity_id: int) -> list[Fact]:
        rows = self.s.query(
            f"SELECT {_FACT_COLS} FROM {_FACT_FROM} WHERE f.head = ? UNION "
            f"SELECT {_FACT_COLS} FROM {_FACT_FROM} WHERE f.tail = ? ORDER BY 1",
            (entity_id, entity_id),
        )
        return [Fact(*r) for r in rows]

    def passages(self, fact_id: int) -> list[int]:
        return [int(r[0]) for r in self.s.query("SELECT passage FROM fact_sources WHERE fact = ? ORDER BY passage", (fact_id,))]

    def all(self) -> list[Fact]:
        return [Fact(*r) for r in self.s.query(f"SELECT {_FACT_COLS} FROM {_FACT_FROM} ORDER BY f.id")]

    def all_sources(self) -> list[tuple[int, int, str]]:
        """(fact, passage, origin) rows."""
        return [(int(f), int(p), o) for f, p, o in self.s.query("SELECT fact, passage, origin FROM fact_sources ORDER BY fact, passage")]

    def all_mentions(self) -> list[tuple[int, int]]:
        """(entity, passage) rows."""
        return [(int(e), int(p)) for e, p in self.s.query("SELECT entity, passage FROM mentions ORDER BY entity, passage")]

    def _ids_of(self, keys: Sequence[tuple[int, str, int]]) -> dict[tuple[int, str, int], int]:
        """The ids of these (head, relation, tail) facts, in one query a chunk."""
        out: dict[tuple[int, str, int], int] = {}
        unique = list(dict.fromkeys(keys))
        for start in range(0, len(unique), 5000):
            rows = self.s.query(
                "SELECT f.id, f.head, f.relation, f.tail FROM json_each(?) j JOIN facts f "
                "ON f.head = json_extract(j.value, '$[0]') AND f.relation = json_extract(j.value, '$[1]') "
                "AND f.tail = json_extract(j.value, '$[2]')", (json.dumps(unique[start:start + 5000]),))
            out.update({(int(h), r, int(t)): int(fid) for fid, h, r, t in rows})
        return out

    def replace_in_passage(self, passage_id: int, triples: Sequence[Triple], ids: dict[str, int]) -> PassageFacts:
        """The passage's fact sources and mentions become exactly these (inside the caller's
        transaction); ``ids`` maps every name to mention, triple ends included, to its entity."""
        keys = [(ids[t.head], t.relation, ids[t.tail]) for t in triples]
        facts_added = 0
        if keys:
            cur = self.s.executemany("INSERT OR IGNORE INTO facts(head, relation, tail) VALUES(?,?,?)", keys)
            facts_added = max(0, int(cur.rowcount or 0))
        fact_ids = self._ids_of(keys)
        wanted_facts: dict[int, str] = {}
        for key, t in zip(keys, triples):
            wanted_facts.setdefault(fact_ids[key], t.origin)
        # add what is wanted before removing what is not, so nothing wanted is collected in between
        self.s.executemany(
            "INSERT INTO fact_sources(fact, passage, origin) VALUES(?,?,?) "
            "ON CONFLICT(fact, passage) DO UPDATE SET origin = excluded.origin",
            [(fid, passage_id, origin) for fid, origin in wanted_facts.items()],
        )
        wanted_entities = set(ids.values())
        self.s.executemany("INSERT OR IGNORE INTO mentions(entity, passage) VALUES(?,?)", [(e, passage_id) for e in wanted_entities])
        stale_facts = [f for (f,) in self.s.query("SELECT fact FROM fact_sources WHERE passage = ?", (passage_id,)) if f not in wanted_facts]
        if stale_facts:  # none on a first extraction: an empty statement still costs its preparation
            self.s.executemany("DELETE FROM fact_sources WHERE fact = ? AND passage = ?", [(f, passage_id) for f in stale_facts])
        stale_mentions = [e for (e,) in self.s.query("SELECT entity FROM mentions WHERE passage = ?", (passage_id,)) if e not in wanted_entities]
        if stale_mentions:
            self.s.executemany("DELETE FROM mentions WHERE entity = ? AND passage = ?", [(e, passage_id) for e in stale_mentions])
        return PassageFacts(facts_added, len(wanted_facts), len(wanted_entities))
