"""What the reliability tests compare and check in an index database (shared by the crash-safety
and concurrency tests): a snapshot of every row by natural keys, and consistency checks that
must hold in any state a crash or a concurrent writer can leave behind."""

from __future__ import annotations

from pathlib import Path


def snapshot(db: Path) -> dict:
    """Every row that matters, by natural keys (ids differ between runs)."""
    from localrag.store.connection import connect

    conn = connect(db)
    try:
        q = lambda sql: [tuple(r) for r in conn.execute(sql).fetchall()]  # noqa: E731
        pkey = {r[0]: (r[1], r[2]) for r in q("SELECT p.id, d.path, p.ordinal FROM passages p JOIN documents d ON d.id = p.doc_id")}
        ename = dict(q("SELECT id, name FROM entities"))
        facts = {r[0]: (ename[r[1]], r[2], ename[r[3]]) for r in q("SELECT id, head, relation, tail FROM facts")}
        return {
            "documents": sorted(q("SELECT path, sha256, kind, title FROM documents")),
            "passages": sorted(q("SELECT d.path, p.ordinal, p.sha256, p.start_line, p.end_line, p.heading, p.text "
                                 "FROM passages p JOIN documents d ON d.id = p.doc_id")),
            "skipped": sorted(q("SELECT path, reason FROM skipped")),
            "entities": sorted(ename.values()),
            "facts": sorted(facts.values()),
            "fact_sources": sorted((facts[f], pkey[p], o) for f, p, o in q("SELECT fact, passage, origin FROM fact_sources")),
            "mentions": sorted((ename[e], pkey[p]) for e, p in q("SELECT entity, passage FROM mentions")),
            "coref": sorted((ename[e], ename[a]) for e, a in q("SELECT entity, alias FROM coref")),
            "failures": sorted((pkey[p], r) for p, r in q("SELECT passage, reason FROM extraction_failures")),
            "queued": q("SELECT COUNT(*) FROM graph_queue")[0][0],
            "counts": {t: q(f"SELECT COUNT(*) FROM {t}")[0][0] for t in
                       ("passages", "passage_vec", "passage_bits", "passages_fts", "entities", "entity_vec")},
        }
    finally:
        conn.close()


CONSISTENCY = {
    "documents without passages": "SELECT COUNT(*) FROM documents d WHERE NOT EXISTS (SELECT 1 FROM passages p WHERE p.doc_id = d.id)",
    "passages without a document": "SELECT COUNT(*) FROM passages p WHERE NOT EXISTS (SELECT 1 FROM documents d WHERE d.id = p.doc_id)",
    "passages without a vector": "SELECT COUNT(*) FROM passages p WHERE NOT EXISTS (SELECT 1 FROM passage_vec v WHERE v.rowid = p.id)",
    "vectors without a passage": "SELECT COUNT(*) FROM passage_vec v WHERE NOT EXISTS (SELECT 1 FROM passages p WHERE p.id = v.rowid)",
    "bit vectors != passages": "SELECT (SELECT COUNT(*) FROM passage_bits) - (SELECT COUNT(*) FROM passages)",
    "FTS rows != passages": "SELECT (SELECT COUNT(*) FROM passages_fts) - (SELECT COUNT(*) FROM passages)",
    "FTS rows without a passage": "SELECT COUNT(*) FROM passages_fts f WHERE NOT EXISTS (SELECT 1 FROM passages p WHERE p.id = f.rowid)",
    "CJK rows without a passage": "SELECT COUNT(*) FROM passages_cjk c WHERE NOT EXISTS (SELECT 1 FROM passages p WHERE p.id = c.rowid)",
    "fact sources of missing passages": "SELECT COUNT(*) FROM fact_sources s WHERE NOT EXISTS (SELECT 1 FROM passages p WHERE p.id = s.passage)",
    "fact sources of missing facts": "SELECT COUNT(*) FROM fact_sources s WHERE NOT EXISTS (SELECT 1 FROM facts f WHERE f.id = s.fact)",
    "facts with no source": "SELECT COUNT(*) FROM facts f WHERE NOT EXISTS (SELECT 1 FROM fact_sources s WHERE s.fact = f.id)",
    "facts with a missing entity": "SELECT COUNT(*) FROM facts f WHERE f.head NOT IN (SELECT id FROM entities) OR f.tail NOT IN (SELECT id FROM entities)",
    "mentions of missing passages": "SELECT COUNT(*) FROM mentions m WHERE NOT EXISTS (SELECT 1 FROM passages p WHERE p.id = m.passage)",
    "mentions of missing entities": "SELECT COUNT(*) FROM mentions m WHERE NOT EXISTS (SELECT 1 FROM entities e WHERE e.id = m.entity)",
    "entities with nothing": "SELECT COUNT(*) FROM entities e WHERE NOT EXISTS (SELECT 1 FROM mentions m WHERE m.entity = e.id) "
                             "AND NOT EXISTS (SELECT 1 FROM facts f WHERE f.head = e.id OR f.tail = e.id)",
    "entity vectors != entities": "SELECT (SELECT COUNT(*) FROM entity_vec) - (SELECT COUNT(*) FROM entities)",
    "coref with a missing entity": "SELECT COUNT(*) FROM coref c WHERE c.entity NOT IN (SELECT id FROM entities) OR c.alias NOT IN (SELECT id FROM entities)",
    "queue rows of missing passages": "SELECT COUNT(*) FROM graph_queue g WHERE NOT EXISTS (SELECT 1 FROM passages p WHERE p.id = g.passage)",
    # a passage is either still queued or its extraction was written (at least its title mention, or a recorded failure)
    "passages lost between queue and graph": "SELECT COUNT(*) FROM passages p WHERE p.id NOT IN (SELECT passage FROM graph_queue) "
                                             "AND p.id NOT IN (SELECT passage FROM mentions) AND p.id NOT IN (SELECT passage FROM fact_sources) "
                                             "AND p.id NOT IN (SELECT passage FROM extraction_failures)",
    "memory edges without their graph edge": "SELECT COUNT(*) FROM edges e WHERE (e.kind = 'fact' AND NOT EXISTS (SELECT 1 FROM fact_sources s "
                                             "WHERE s.fact = e.a AND s.passage = e.b)) OR (e.kind = 'mention' AND NOT EXISTS "
                                             "(SELECT 1 FROM mentions m WHERE m.entity = e.a AND m.passage = e.b))",
}


def check_store(db: Path) -> list[str]:
    """What is wrong with the index as a crash left it ([] = nothing)."""
    from localrag.store.connection import connect

    if not db.exists():
        return []
    conn = connect(db)
    try:
        problems = []
        integrity = [r[0] for r in conn.execute("PRAGMA integrity_check").fetchall()]
        if integrity != ["ok"]:
            problems.append(f"integrity_check: {integrity[:5]}")
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        if "documents" not in tables:
            return problems  # killed before the first migration committed: an empty file, nothing else to check
        for name, sql in CONSISTENCY.items():
            if "edges" in sql and "edges" not in tables:
                continue
            if "graph_queue" in sql and "graph_queue" not in tables:
                continue
            n = conn.execute(sql).fetchone()[0]
            if n:
                problems.append(f"{name}: {n}")
        return problems
    finally:
        conn.close()


def diff(a: dict, b: dict) -> list[str]:
    out = []
    for key in a:
        if a[key] != b[key]:
            if isinstance(a[key], list):
                only_a = [x for x in a[key] if x not in b[key]][:3]
                only_b = [x for x in b[key] if x not in a[key]][:3]
                out.append(f"{key}: {len(a[key])} vs {len(b[key])} rows; only in killed run {only_a}; only in reference {only_b}")
            else:
                out.append(f"{key}: {a[key]} vs {b[key]}")
    return out
