"""The knowledge graph tables: entities (+ vectors, coref), facts with sources, mentions,
the extraction cache, the build queue and recorded extraction failures.

Writes for one passage happen in one transaction together with its removal from the
queue, so a killed process leaves each passage either untouched (still queued) or
complete. Deletions are garbage-collected by triggers (see schema._graph); coref rows
are kept exact by ``_coref_add`` on insert and ``refresh_dirty_coref`` on delete.
"""

from __future__ import annotations

import contextlib
import json
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable, Iterable, Iterator, Sequence

import numpy as np

from localrag.records import Fact, GraphCounts, Triple
from localrag.store.connection import driver
from localrag.store.entity_matrix import EntityMatrix
from localrag.store.vectors import from_blob, to_blob

if TYPE_CHECKING:
    from localrag.store.db import Store

EmbedFn = Callable[[list[str]], np.ndarray]

CERTAIN_ALIAS = "is also called"  # kg.vault.ALIAS_RELATION: a front-matter alias of a note's title
# queue priorities are file mtimes in ns (~1.8e18) until a question asks for a passage: then this plus ms
ASKED = 1 << 62
CUT_AT = "cut_at"  # in a cached extraction: the failed reply was cut at this many tokens (a budget, not a verdict)

_FACT_COLS = "f.id, f.head, f.relation, f.tail, h.name, t.name"
_FACT_FROM = "facts f JOIN entities h ON h.id = f.head JOIN entities t ON t.id = f.tail"


@dataclass(frozen=True)
class QueueItem:
    passage: int
    priority: int
    attempts: int
    error: str


@dataclass(frozen=True)
class CachedExtraction:
    passage_sha: str
    model: str
    prompt_version: str
    payload: dict  # what the model returned (or why it failed), as JSON


@dataclass(frozen=True)
class WriteResult:
    facts_added: int
    entities_added: int
    facts: int  # facts sourced from the passage after the write
    mentions: int


def _marks(n: int) -> str:
    return ",".join("?" * n)


def _chunks(items: Sequence, size: int = 500) -> Iterable[Sequence]:
    for start in range(0, len(items), size):
        yield items[start:start + size]


class Graph:
    def __init__(self, store: "Store"):
        self.s = store
        self.coref_k = 5
        self.coref_threshold = 0.8
        self.matrix = EntityMatrix(store)
        self._deferred: list[int] | None = None  # new entities whose coref waits for the batch's end
        self.coref_seconds = 0.0  # spent in _coref_add (the graph phase reports its share)
        store.before_commit.append(self.refresh_dirty_coref)

    def configure_coref(self, k: int, threshold: float) -> None:
        self.coref_k, self.coref_threshold = int(k), float(threshold)

    # -- entities -------------------------------------------------------------------
    def entity_id(self, name: str) -> int | None:
        row = self.s.one("SELECT id FROM entities WHERE name = ?", (name,))
        return int(row[0]) if row else None

    def entity_ids(self, names: Sequence[str]) -> dict[str, int]:
        out: dict[str, int] = {}
        for chunk in _chunks(list(dict.fromkeys(names))):
            for eid, name in self.s.query(f"SELECT id, name FROM entities WHERE name IN ({_marks(len(chunk))})", list(chunk)):
                out[name] = int(eid)
        return out

    def entity_names(self, ids: Sequence[int]) -> dict[int, str]:
        out: dict[int, str] = {}
        for chunk in _chunks(list(dict.fromkeys(ids))):
            for eid, name in self.s.query(f"SELECT id, name FROM entities WHERE id IN ({_marks(len(chunk))})", list(chunk)):
                out[int(eid)] = name
        return out

    def entity_vectors(self, ids: Sequence[int]) -> dict[int, np.ndarray]:
        out: dict[int, np.ndarray] = {}
        for chunk in _chunks(list(dict.fromkeys(ids))):
            for eid, blob in self.s.query(f"SELECT rowid, embedding FROM entity_vec WHERE rowid IN ({_marks(len(chunk))})", list(chunk)):
                out[int(eid)] = from_blob(blob).copy()
        return out

    def entity_knn(self, vec: np.ndarray, k: int) -> list[tuple[int, float]]:
        """(entity id, cosine similarity), best first."""
        if k <= 0:
            return []
        rows = self.s.query(
            "SELECT rowid, distance FROM entity_vec WHERE embedding MATCH ? AND k = ? ORDER BY distance",
            (to_blob(vec), min(int(k), 4096)),
        )
        return [(int(r[0]), 1.0 - float(r[1])) for r in rows]

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

    def _stored_aliases(self, entity_id: int) -> list[tuple[int, float]]:
        """The coref rows alone (the similarity aliases that coreference maintains)."""
        rows = self.s.query("SELECT alias, sim FROM coref WHERE entity = ? ORDER BY sim DESC, alias", (entity_id,))
        return [(int(a), float(sim)) for a, sim in rows]

    # -- facts and mentions ------------------------------------------------------------
    def passages_mentioning(self, entity_id: int) -> list[int]:
        return [int(r[0]) for r in self.s.query("SELECT passage FROM mentions WHERE entity = ? ORDER BY passage", (entity_id,))]

    def passage_entities(self, passage_id: int) -> list[int]:
        return [int(r[0]) for r in self.s.query("SELECT entity FROM mentions WHERE passage = ? ORDER BY entity", (passage_id,))]

    def facts_in_passage(self, passage_id: int) -> list[Fact]:
        rows = self.s.query(
            f"SELECT {_FACT_COLS} FROM fact_sources s JOIN facts f ON f.id = s.fact JOIN entities h ON h.id = f.head JOIN entities t ON t.id = f.tail WHERE s.passage = ? ORDER BY f.id",
            (passage_id,),
        )
        return [Fact(*r) for r in rows]

    def facts_of_entity_in_passage(self, entity_id: int, passage_id: int) -> list[Fact]:
        rows = self.s.query(
            f"SELECT {_FACT_COLS} FROM fact_sources s JOIN facts f ON f.id = s.fact JOIN entities h ON h.id = f.head JOIN entities t ON t.id = f.tail "
            "WHERE s.passage = ? AND (f.head = ? OR f.tail = ?) ORDER BY f.id",
            (passage_id, entity_id, entity_id),
        )
        return [Fact(*r) for r in rows]

    def facts_of_entity(self, entity_id: int) -> list[Fact]:
        rows = self.s.query(
            f"SELECT {_FACT_COLS} FROM {_FACT_FROM} WHERE f.head = ? UNION "
            f"SELECT {_FACT_COLS} FROM {_FACT_FROM} WHERE f.tail = ? ORDER BY 1",
            (entity_id, entity_id),
        )
        return [Fact(*r) for r in rows]

    def fact_passages(self, fact_id: int) -> list[int]:
        return [int(r[0]) for r in self.s.query("SELECT passage FROM fact_sources WHERE fact = ? ORDER BY passage", (fact_id,))]

    def all_facts(self) -> list[Fact]:
        return [Fact(*r) for r in self.s.query(f"SELECT {_FACT_COLS} FROM {_FACT_FROM} ORDER BY f.id")]

    def all_fact_sources(self) -> list[tuple[int, int, str]]:
        """(fact, passage, origin) rows."""
        return [(int(f), int(p), o) for f, p, o in self.s.query("SELECT fact, passage, origin FROM fact_sources ORDER BY fact, passage")]

    def all_mentions(self) -> list[tuple[int, int]]:
        """(entity, passage) rows."""
        return [(int(e), int(p)) for e, p in self.s.query("SELECT entity, passage FROM mentions ORDER BY entity, passage")]

    def all_coref(self) -> list[tuple[int, int, float]]:
        return [(int(e), int(a), float(s)) for e, a, s in self.s.query("SELECT entity, alias, sim FROM coref ORDER BY entity, alias")]

    def all_entities(self) -> dict[int, str]:
        return {int(i): n for i, n in self.s.query("SELECT id, name FROM entities ORDER BY id")}

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

    def failures(self, limit: int = 50) -> list[tuple[int, str, bool]]:
        """(passage, reason, fallback used) of recorded extraction failures, newest first."""
        rows = self.s.query("SELECT passage, reason, fallback FROM extraction_failures ORDER BY at DESC LIMIT ?", (limit,))
        return [(int(p), r, bool(f)) for p, r, f in rows]

    # -- queue --------------------------------------------------------------------------
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
            f"SELECT passage FROM graph_queue WHERE passage IN ({_marks(len(ids))}) AND priority < ?", (*ids, ASKED))]
        if not waiting:
            return 0
        now = ASKED + (time.time_ns() // 1_000_000) * 1000
        rank = {p: i for i, p in enumerate(ids)}
        with self.s.transaction():
            self.s.executemany("UPDATE graph_queue SET priority = ? WHERE passage = ?",
                               [(now + 999 - min(rank[p], 999), p) for p in waiting])
        return len(waiting)

    def queue_length(self) -> int:
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

    # -- extraction cache ---------------------------------------------------------------
    def cached_extraction(self, passage_sha: str, model: str, prompt_version: str,
                          max_tokens: int | None = None) -> dict | None:
        """The stored model reply for this passage text, model and prompt. A failure recorded with
        the token budget its reply was cut at (``CUT_AT``) is a miss under a larger ``max_tokens``:
        the larger budget may let the reply finish."""
        row = self.s.one(
            "SELECT json FROM extractions WHERE passage_sha = ? AND model = ? AND prompt_version = ?",
            (passage_sha, model, prompt_version),
        )
        if row is None:
            return None
        payload = json.loads(row[0])
        cut_at = payload.get(CUT_AT) if isinstance(payload, dict) else None
        if max_tokens is not None and isinstance(cut_at, int) and max_tokens > cut_at:
            return None
        return payload

    # -- writing ------------------------------------------------------------------------
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
            ids, new_ids = self._ensure_entities(names, embed)
            wanted_facts: dict[int, str] = {}
            facts_added = 0
            for t in triples:
                head, tail = ids[t.head], ids[t.tail]
                cur = self.s.execute("INSERT OR IGNORE INTO facts(head, relation, tail) VALUES(?,?,?)", (head, t.relation, tail))
                facts_added += max(0, int(cur.rowcount or 0))
                fid = int(self.s.one("SELECT id FROM facts WHERE head = ? AND relation = ? AND tail = ?", (head, t.relation, tail))[0])
                wanted_facts.setdefault(fid, t.origin)
            # add what is wanted before removing what is not, so nothing wanted is collected in between
            self.s.executemany(
                "INSERT INTO fact_sources(fact, passage, origin) VALUES(?,?,?) "
                "ON CONFLICT(fact, passage) DO UPDATE SET origin = excluded.origin",
                [(fid, passage_id, origin) for fid, origin in wanted_facts.items()],
            )
            wanted_entities = {ids[n] for n in names}
            self.s.executemany("INSERT OR IGNORE INTO mentions(entity, passage) VALUES(?,?)", [(e, passage_id) for e in wanted_entities])
            stale_facts = [f for (f,) in self.s.query("SELECT fact FROM fact_sources WHERE passage = ?", (passage_id,)) if f not in wanted_facts]
            self.s.executemany("DELETE FROM fact_sources WHERE fact = ? AND passage = ?", [(f, passage_id) for f in stale_facts])
            stale_mentions = [e for (e,) in self.s.query("SELECT entity FROM mentions WHERE passage = ?", (passage_id,)) if e not in wanted_entities]
            self.s.executemany("DELETE FROM mentions WHERE entity = ? AND passage = ?", [(e, passage_id) for e in stale_mentions])
            self.s.execute("DELETE FROM graph_queue WHERE passage = ?", (passage_id,))
            self.s.execute("DELETE FROM extraction_failures WHERE passage = ?", (passage_id,))
            if failure:
                self.s.execute(
                    "INSERT INTO extraction_failures(passage, reason, fallback, model, at) VALUES(?,?,?,?,?)",
                    (passage_id, failure[:500], int(fallback), model, time.time()),
                )
            if cache is not None:
                self.s.execute(
                    "INSERT OR REPLACE INTO extractions(passage_sha, model, prompt_version, json) VALUES(?,?,?,?)",
                    (cache.passage_sha, cache.model, cache.prompt_version, json.dumps(cache.payload)),
                )
            if self._deferred is not None:
                self._deferred += new_ids
            else:
                self._coref_add(new_ids)
            return WriteResult(facts_added, len(new_ids), len(wanted_facts), len(wanted_entities))

    def _ensure_entities(self, names: list[str], embed: EmbedFn) -> tuple[dict[str, int], list[int]]:
        ids = self.entity_ids(names)
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

    @contextlib.contextmanager
    def deferred_coref(self) -> Iterator[None]:
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
            self._coref_add(self._deferred)
        except BaseException:
            self.matrix.invalidate()
            raise
        finally:
            self._deferred = None

    # -- pseudo-coreference ---------------------------------------------------------------
    def _own_aliases(self, entity_id: int, hits: list[tuple[int, float]]) -> list[tuple[int, float]]:
        """NeuroPath's rule: the top-k neighbours including the entity itself, >= threshold, self
        dropped (an exact duplicate ranked above self keeps k - 1 others)."""
        others = [(e, s) for e, s in hits if e != entity_id][: self.coref_k - 1]
        return [(e, s) for e, s in others if s >= self.coref_threshold]

    def _set_aliases(self, entity_id: int, hits: list[tuple[int, float]]) -> None:
        self.s.execute("DELETE FROM coref WHERE entity = ?", (entity_id,))
        self.s.executemany("INSERT INTO coref(entity, alias, sim) VALUES(?,?,?)",
                           [(entity_id, a, s) for a, s in self._own_aliases(entity_id, hits)])

    def _coref_add(self, new_ids: list[int]) -> None:
        """New entities get their own rows; an existing entity takes a new one as alias when it
        now ranks in its top k - 1 (by similarity, then id), dropping the ones it outranks."""
        if not new_ids:
            return
        started = time.perf_counter()
        try:
            self._coref_rows(new_ids)
        finally:
            self.coref_seconds += time.perf_counter() - started

    def _coref_rows(self, new_ids: list[int]) -> None:
        self.matrix.check()
        hits = self.matrix.neighbours(new_ids, self.coref_k, self.coref_threshold)
        fresh = set(new_ids)
        rows: list[tuple[int, int, float]] = []
        offered: dict[int, list[tuple[int, float]]] = {}
        for eid in new_ids:
            found = hits[eid].pairs() if eid in hits else []
            rows += [(eid, a, s) for a, s in self._own_aliases(eid, found)]
            for other, sim in found:
                if other not in fresh and sim >= self.coref_threshold:
                    offered.setdefault(other, []).append((eid, sim))
        self.s.executemany("INSERT INTO coref(entity, alias, sim) VALUES(?,?,?)", rows)
        for other, new in offered.items():
            current = self._stored_aliases(other)
            best = sorted(current + new, key=lambda t: (-t[1], t[0]))[: self.coref_k - 1]
            keep = {a for a, _ in best}
            self.s.executemany("DELETE FROM coref WHERE entity = ? AND alias = ?",
                               [(other, a) for a, _ in current if a not in keep])
            self.s.executemany("INSERT INTO coref(entity, alias, sim) VALUES(?,?,?)",
                               [(other, a, s) for a, s in new if a in keep])

    def refresh_dirty_coref(self) -> None:
        """Recompute entities that lost an alias to a deletion (runs just before each COMMIT)."""
        try:
            dirty = [int(r[0]) for r in self.s.query("SELECT entity FROM coref_dirty")]
        except driver().OperationalError:  # an index older than the graph migration, opened read-only
            return
        if not dirty:
            return
        self.matrix.check()
        hits = self.matrix.neighbours([e for e in dirty if e in self.matrix], self.coref_k, self.coref_threshold)
        for eid, found in hits.items():
            self._set_aliases(eid, found.pairs())
        self.s.execute("DELETE FROM coref_dirty")

    def rebuild_coref(self) -> None:
        """Recompute every coref row from scratch (a check, and a repair after changing k or threshold)."""
        with self.s.transaction():
            self.s.execute("DELETE FROM coref")
            self.matrix.load()
            ids = list(self.all_entities())
            for eid, found in self.matrix.neighbours(ids, self.coref_k, self.coref_threshold).items():
                self._set_aliases(eid, found.pairs())
