"""Schema migrations. Each migration runs once, in order, in one transaction.

Vector tables depend on the embedder's dimension, so their DDL is a function of it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable


@dataclass(frozen=True)
class Migration:
    version: int
    name: str
    sql: Callable[[int], str]  # dim -> DDL


def _foundation(dim: int) -> str:
    return f"""
CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE documents(
  id INTEGER PRIMARY KEY,
  path TEXT NOT NULL UNIQUE,
  size INTEGER NOT NULL,
  mtime_ns INTEGER NOT NULL,
  sha256 TEXT NOT NULL,
  kind TEXT NOT NULL,
  title TEXT NOT NULL,
  indexed_at REAL NOT NULL
);
CREATE INDEX documents_sha ON documents(sha256);
CREATE TABLE skipped(
  path TEXT PRIMARY KEY,
  size INTEGER NOT NULL,
  mtime_ns INTEGER NOT NULL,
  reason TEXT NOT NULL,
  detail TEXT NOT NULL DEFAULT '',
  at REAL NOT NULL
);
CREATE TABLE passages(
  id INTEGER PRIMARY KEY,
  doc_id INTEGER NOT NULL REFERENCES documents(id) ON DELETE CASCADE,
  ordinal INTEGER NOT NULL,
  heading TEXT NOT NULL DEFAULT '',
  text TEXT NOT NULL,
  sha256 TEXT NOT NULL,
  start_line INTEGER NOT NULL,
  end_line INTEGER NOT NULL,
  tokens INTEGER NOT NULL
);
CREATE INDEX passages_doc ON passages(doc_id, ordinal);
CREATE INDEX passages_sha ON passages(sha256);
CREATE VIRTUAL TABLE passages_fts USING fts5(title, heading, text, tokenize = 'porter unicode61');
CREATE VIRTUAL TABLE passage_vec USING vec0(embedding float[{dim}] distance_metric=cosine);
CREATE VIRTUAL TABLE passage_bits USING vec0(embedding bit[{dim}]);
CREATE TRIGGER passages_gone AFTER DELETE ON passages BEGIN
  DELETE FROM passages_fts WHERE rowid = old.id;
  DELETE FROM passage_vec WHERE rowid = old.id;
  DELETE FROM passage_bits WHERE rowid = old.id;
END;
CREATE TABLE llm_calls(
  id INTEGER PRIMARY KEY,
  query_id INTEGER,
  phase TEXT NOT NULL,
  model TEXT NOT NULL,
  prompt_tokens INTEGER NOT NULL,
  completion_tokens INTEGER NOT NULL,
  cached_tokens INTEGER NOT NULL DEFAULT 0,
  ms REAL NOT NULL,
  ok INTEGER NOT NULL,
  error TEXT NOT NULL DEFAULT '',
  at REAL NOT NULL
);
CREATE INDEX llm_calls_query ON llm_calls(query_id);
CREATE TABLE queries(
  id INTEGER PRIMARY KEY,
  text TEXT NOT NULL,
  strategy TEXT NOT NULL,
  answer TEXT NOT NULL DEFAULT '',
  trace_json TEXT NOT NULL DEFAULT '{{}}',
  created REAL NOT NULL
);
"""


def _graph(dim: int) -> str:
    """NeuroPath's static index with provenance and exact garbage collection (docs/algorithms.md
    "NeuroPath: indexing", docs/design.md "Data model").

    Deleting a passage cascades to its fact_sources and mentions; the triggers then delete
    facts nothing supports, entities nothing mentions, their vectors and coref rows. Entities
    that had a deleted entity as alias are queued in coref_dirty and recomputed before the
    same transaction commits (Coreference.refresh_dirty). Other tables keyed by fact ids
    (edge memories) clean up with their own AFTER DELETE ON facts trigger.
    """
    return f"""
CREATE TABLE entities(id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE);
CREATE VIRTUAL TABLE entity_vec USING vec0(embedding float[{dim}] distance_metric=cosine);
CREATE TABLE coref(entity INTEGER NOT NULL, alias INTEGER NOT NULL, sim REAL NOT NULL, PRIMARY KEY(entity, alias));
CREATE INDEX coref_alias ON coref(alias);
CREATE TABLE coref_dirty(entity INTEGER PRIMARY KEY);
CREATE TABLE facts(
  id INTEGER PRIMARY KEY,
  head INTEGER NOT NULL REFERENCES entities(id),
  relation TEXT NOT NULL,
  tail INTEGER NOT NULL REFERENCES entities(id),
  UNIQUE(head, relation, tail)
);
CREATE INDEX facts_tail ON facts(tail);
CREATE TABLE fact_sources(
  fact INTEGER NOT NULL REFERENCES facts(id) ON DELETE CASCADE,
  passage INTEGER NOT NULL REFERENCES passages(id) ON DELETE CASCADE,
  origin TEXT NOT NULL DEFAULT '',
  PRIMARY KEY(fact, passage)
);
CREATE INDEX fact_sources_passage ON fact_sources(passage);
CREATE TABLE mentions(
  entity INTEGER NOT NULL REFERENCES entities(id) ON DELETE CASCADE,
  passage INTEGER NOT NULL REFERENCES passages(id) ON DELETE CASCADE,
  PRIMARY KEY(entity, passage)
);
CREATE INDEX mentions_passage ON mentions(passage);
CREATE TABLE extractions(
  passage_sha TEXT NOT NULL,
  model TEXT NOT NULL,
  prompt_version TEXT NOT NULL,
  json TEXT NOT NULL,
  PRIMARY KEY(passage_sha, model, prompt_version)
);
CREATE TABLE graph_queue(
  passage INTEGER PRIMARY KEY REFERENCES passages(id) ON DELETE CASCADE,
  priority INTEGER NOT NULL,
  attempts INTEGER NOT NULL DEFAULT 0,
  error TEXT NOT NULL DEFAULT ''
);
CREATE INDEX graph_queue_order ON graph_queue(priority DESC, passage);
CREATE TABLE extraction_failures(
  passage INTEGER PRIMARY KEY REFERENCES passages(id) ON DELETE CASCADE,
  reason TEXT NOT NULL,
  fallback INTEGER NOT NULL DEFAULT 0,
  model TEXT NOT NULL DEFAULT '',
  at REAL NOT NULL
);
CREATE TABLE graph_state(id INTEGER PRIMARY KEY CHECK (id = 1), version INTEGER NOT NULL);
INSERT INTO graph_state(id, version) VALUES(1, 0);
INSERT INTO graph_queue(passage, priority) SELECT p.id, d.mtime_ns FROM passages p JOIN documents d ON d.id = p.doc_id;
CREATE TRIGGER graph_enqueue AFTER INSERT ON passages BEGIN
  INSERT OR REPLACE INTO graph_queue(passage, priority)
    SELECT new.id, d.mtime_ns FROM documents d WHERE d.id = new.doc_id;
END;
CREATE TRIGGER graph_retitle AFTER UPDATE OF title ON documents WHEN old.title <> new.title BEGIN
  INSERT OR REPLACE INTO graph_queue(passage, priority) SELECT id, new.mtime_ns FROM passages WHERE doc_id = new.id;
END;
CREATE TRIGGER graph_fact_source_gone AFTER DELETE ON fact_sources BEGIN
  DELETE FROM facts WHERE id = old.fact AND NOT EXISTS (SELECT 1 FROM fact_sources WHERE fact = old.fact);
END;
CREATE TRIGGER graph_fact_added AFTER INSERT ON facts BEGIN
  UPDATE graph_state SET version = version + 1 WHERE id = 1;
END;
CREATE TRIGGER graph_fact_gone AFTER DELETE ON facts BEGIN
  UPDATE graph_state SET version = version + 1 WHERE id = 1;
  DELETE FROM entities WHERE id IN (old.head, old.tail)
    AND NOT EXISTS (SELECT 1 FROM facts f WHERE f.head = entities.id)
    AND NOT EXISTS (SELECT 1 FROM facts f WHERE f.tail = entities.id)
    AND NOT EXISTS (SELECT 1 FROM mentions m WHERE m.entity = entities.id);
END;
CREATE TRIGGER graph_mention_added AFTER INSERT ON mentions BEGIN
  UPDATE graph_state SET version = version + 1 WHERE id = 1;
END;
CREATE TRIGGER graph_mention_gone AFTER DELETE ON mentions BEGIN
  UPDATE graph_state SET version = version + 1 WHERE id = 1;
  DELETE FROM entities WHERE id = old.entity
    AND NOT EXISTS (SELECT 1 FROM mentions m WHERE m.entity = old.entity)
    AND NOT EXISTS (SELECT 1 FROM facts f WHERE f.head = old.entity)
    AND NOT EXISTS (SELECT 1 FROM facts f WHERE f.tail = old.entity);
END;
CREATE TRIGGER graph_entity_gone AFTER DELETE ON entities BEGIN
  DELETE FROM entity_vec WHERE rowid = old.id;
  INSERT OR IGNORE INTO coref_dirty(entity) SELECT entity FROM coref WHERE alias = old.id AND entity <> old.id;
  DELETE FROM coref WHERE entity = old.id;
  DELETE FROM coref WHERE alias = old.id;
  DELETE FROM coref_dirty WHERE entity = old.id;
END;
CREATE TRIGGER graph_coref_added AFTER INSERT ON coref BEGIN
  UPDATE graph_state SET version = version + 1 WHERE id = 1;
END;
CREATE TRIGGER graph_coref_gone AFTER DELETE ON coref BEGIN
  UPDATE graph_state SET version = version + 1 WHERE id = 1;
END;
"""


def _llm_cache(dim: int) -> str:
    return """
CREATE TABLE llm_cache(
  kind TEXT NOT NULL,
  key TEXT NOT NULL,
  model TEXT NOT NULL,
  version TEXT NOT NULL,
  json TEXT NOT NULL,
  PRIMARY KEY(kind, key, model, version)
);
"""


def _memory(dim: int) -> str:
    return f"""
CREATE TABLE edges(
  id INTEGER PRIMARY KEY,
  kind TEXT NOT NULL,
  a INTEGER NOT NULL,
  b INTEGER NOT NULL,
  updates INTEGER NOT NULL DEFAULT 0,
  norm REAL NOT NULL DEFAULT 0,
  updated REAL NOT NULL DEFAULT 0,
  UNIQUE(kind, a, b)
);
CREATE INDEX edges_b ON edges(kind, b);
CREATE VIRTUAL TABLE edge_memory USING vec0(embedding float[{dim}] distance_metric=cosine);
CREATE TABLE memory_log(
  id INTEGER PRIMARY KEY,
  query TEXT NOT NULL,
  strategy TEXT NOT NULL,
  enhanced INTEGER NOT NULL,
  penalised INTEGER NOT NULL,
  penalty TEXT NOT NULL,
  at REAL NOT NULL
);
CREATE TRIGGER memory_edge_gone AFTER DELETE ON edges BEGIN
  DELETE FROM edge_memory WHERE rowid = old.id;
END;
CREATE TRIGGER memory_fact_source_gone AFTER DELETE ON fact_sources BEGIN
  DELETE FROM edges WHERE kind = 'fact' AND a = old.fact AND b = old.passage;
END;
CREATE TRIGGER memory_mention_gone AFTER DELETE ON mentions BEGIN
  DELETE FROM edges WHERE kind = 'mention' AND a = old.entity AND b = old.passage;
END;
CREATE TRIGGER memory_passage_gone AFTER DELETE ON passages BEGIN
  DELETE FROM edges WHERE kind = 'next' AND (a = old.id OR b = old.id);
END;
CREATE TRIGGER memory_passage_moved AFTER UPDATE OF ordinal ON passages WHEN old.ordinal <> new.ordinal BEGIN
  DELETE FROM edges WHERE kind = 'next' AND (a = old.id OR b = old.id);
END;
"""


def _vector_rescoring(dim: int) -> str:
    """Plain copies of the passage vectors (fast primary-key reads for rescoring, see store/vectors.py)
    and a change counter that tells in-memory caches when to reload."""
    return """
CREATE TABLE passage_f32(id INTEGER PRIMARY KEY, emb BLOB NOT NULL);
CREATE TABLE vector_state(id INTEGER PRIMARY KEY CHECK (id = 1), version INTEGER NOT NULL, count INTEGER NOT NULL);
INSERT INTO vector_state(id, version, count) VALUES(1, 0, 0);
CREATE TRIGGER passage_f32_added AFTER INSERT ON passage_f32 BEGIN
  UPDATE vector_state SET version = version + 1, count = count + 1 WHERE id = 1;
END;
CREATE TRIGGER passage_f32_gone AFTER DELETE ON passage_f32 BEGIN
  UPDATE vector_state SET version = version + 1, count = count - 1 WHERE id = 1;
END;
CREATE TRIGGER passages_gone_f32 AFTER DELETE ON passages BEGIN
  DELETE FROM passage_f32 WHERE id = old.id;
END;
INSERT INTO passage_f32(id, emb) SELECT rowid, embedding FROM passage_vec;
"""


def _passage_links(dim: int) -> str:
    """Which passages link to which note (Markdown links, resolved to folder-relative paths),
    so the link facts (this title, links to, target's title) follow their targets exactly.

    A link's fact depends on the target's title, and on whether the target exists at all (else
    the file name stands in). So when a document appears, disappears, is retitled or moves, the
    passages whose links resolve to its old or new path are queued for the graph phase, by
    trigger, in the transaction that changed it: an index lookup, never a scan of passages.
    A moved document's own links are re-resolved by ``Documents.update``. Already queued
    passages keep their queue row (they will be extracted under the new title anyway).

    An index from before this table has no link rows: its passages that may hold a Markdown
    link are queued (their link facts may be stale already), and their documents' recorded
    size and hash are cleared so the next sync reads those files again and fills in the rows
    (unchanged passages keep their ids, vectors and graph rows; only the rows are added).
    """
    requeue = (
        "INSERT OR IGNORE INTO graph_queue(passage, priority) SELECT l.passage, d.mtime_ns FROM passage_links l "
        "JOIN passages p ON p.id = l.passage JOIN documents d ON d.id = p.doc_id WHERE l.target"
    )
    return f"""
CREATE TABLE passage_links(
  passage INTEGER NOT NULL REFERENCES passages(id) ON DELETE CASCADE,
  href TEXT NOT NULL,
  target TEXT NOT NULL,
  PRIMARY KEY(passage, href)
);
CREATE INDEX passage_links_target ON passage_links(target);
CREATE TRIGGER links_target_added AFTER INSERT ON documents BEGIN
  {requeue} = new.path;
END;
CREATE TRIGGER links_target_gone AFTER DELETE ON documents BEGIN
  {requeue} = old.path;
END;
CREATE TRIGGER links_target_changed AFTER UPDATE OF path, title ON documents
  WHEN old.path <> new.path OR old.title <> new.title BEGIN
  {requeue} IN (old.path, new.path);
END;
INSERT OR IGNORE INTO graph_queue(passage, priority)
  SELECT p.id, d.mtime_ns FROM passages p JOIN documents d ON d.id = p.doc_id WHERE p.text LIKE '%](%';
UPDATE documents SET size = -1, sha256 = '' WHERE id IN (SELECT doc_id FROM passages WHERE text LIKE '%](%');
"""


def _vault(dim: int) -> str:
    """Vault semantics: each note's front matter, the names a [[wikilink]] can call it
    by (file name, aliases), and its tags (front matter and inline) for filters.

    A wikilink names a note, not a path, so which note it resolves to (and so its link fact)
    depends on every note of that name: its passage_links row has target 'name:<key>', and
    when a note of that name appears, disappears, moves or is retitled, the linking passages
    are queued for the graph phase by trigger, in the transaction that changed it. Markdown
    notes are read again by the next sync (front matter is no longer passage text; unchanged
    passages keep their ids and vectors), and every passage is queued once for the graph phase
    (its links resolve to notes now; front matter adds facts); the extraction cache answers
    for the model, so this costs no model call for a passage whose text is unchanged.
    """
    requeue = (
        "INSERT OR IGNORE INTO graph_queue(passage, priority) SELECT l.passage, d.mtime_ns FROM passage_links l "
        "JOIN passages p ON p.id = l.passage JOIN documents d ON d.id = p.doc_id WHERE l.target"
    )
    return f"""
CREATE TABLE note_meta(
  doc_id INTEGER PRIMARY KEY REFERENCES documents(id) ON DELETE CASCADE,
  json TEXT NOT NULL,
  warning TEXT NOT NULL DEFAULT ''
);
CREATE TABLE note_names(
  doc_id INTEGER NOT NULL REFERENCES documents(id) ON DELETE CASCADE,
  name TEXT NOT NULL,
  kind TEXT NOT NULL,
  PRIMARY KEY(doc_id, name, kind)
);
CREATE INDEX note_names_name ON note_names(name);
CREATE TABLE note_tags(
  doc_id INTEGER NOT NULL REFERENCES documents(id) ON DELETE CASCADE,
  tag TEXT NOT NULL,
  PRIMARY KEY(doc_id, tag)
);
CREATE INDEX note_tags_tag ON note_tags(tag);
CREATE TRIGGER note_name_added AFTER INSERT ON note_names BEGIN
  {requeue} = 'name:' || new.name;
END;
CREATE TRIGGER note_name_gone AFTER DELETE ON note_names BEGIN
  {requeue} = 'name:' || old.name;
END;
CREATE TRIGGER note_named_changed AFTER UPDATE OF path, title ON documents
  WHEN old.path <> new.path OR old.title <> new.title BEGIN
  {requeue} IN (SELECT 'name:' || name FROM note_names WHERE doc_id = new.id);
END;
UPDATE documents SET size = -1, sha256 = '' WHERE kind = 'markdown';
INSERT OR IGNORE INTO graph_queue(passage, priority) SELECT p.id, d.mtime_ns FROM passages p JOIN documents d ON d.id = p.doc_id;
"""


def _graph_matrix(dim: int) -> str:
    """The entity graph as PPR walks it (adjacency and passage-entity mentions, as sparse
    arrays), saved with the graph_state.version it reflects, so a new process loads it
    instead of rebuilding it from every fact (kg/entity_graph.py).

    While a saved matrix exists, every change that can alter it marks what it touched in
    graph_matrix_dirty, in the same transaction: the entity (its edges or existence) or the
    passage (its mentions). Bringing the matrix up to date reads only those rows; saving it
    clears the marks.
    """
    mark = "INSERT OR IGNORE INTO graph_matrix_dirty(kind, id) SELECT {kind}, {id} WHERE EXISTS (SELECT 1 FROM graph_matrix)"
    marks = {  # trigger -> (table, event, [(kind, id)])
        "entity_added": ("entities", "INSERT", [(0, "new.id")]),
        "entity_gone": ("entities", "DELETE", [(0, "old.id")]),
        "fact_added": ("facts", "INSERT", [(0, "new.head"), (0, "new.tail")]),
        "fact_gone": ("facts", "DELETE", [(0, "old.head"), (0, "old.tail")]),
        "coref_added": ("coref", "INSERT", [(0, "new.entity"), (0, "new.alias")]),
        "coref_gone": ("coref", "DELETE", [(0, "old.entity"), (0, "old.alias")]),
        "mention_added": ("mentions", "INSERT", [(1, "new.passage")]),
        "mention_gone": ("mentions", "DELETE", [(1, "old.passage")]),
    }
    triggers = "\n".join(
        f"CREATE TRIGGER matrix_{name} AFTER {event} ON {table} BEGIN\n"
        + "".join(f"  {mark.format(kind=kind, id=ref)};\n" for kind, ref in refs) + "END;"
        for name, (table, event, refs) in marks.items())
    return f"""
CREATE TABLE graph_matrix(
  id INTEGER PRIMARY KEY CHECK (id = 1),
  version INTEGER NOT NULL,
  arrays BLOB NOT NULL
);
CREATE TABLE graph_matrix_dirty(kind INTEGER NOT NULL, id INTEGER NOT NULL, PRIMARY KEY(kind, id)) WITHOUT ROWID;
{triggers}
"""


def _sessions(dim: int) -> str:
    """Conversations: a session is a thread of turns; each turn keeps what was asked, what was
    searched for (the follow-up resolved against the turns before it), the answer and its citations."""
    return """
CREATE TABLE sessions(
  id INTEGER PRIMARY KEY,
  name TEXT UNIQUE,
  created REAL NOT NULL,
  updated REAL NOT NULL
);
CREATE INDEX sessions_updated ON sessions(updated);
CREATE TABLE turns(
  id INTEGER PRIMARY KEY,
  session INTEGER NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
  ordinal INTEGER NOT NULL,
  question TEXT NOT NULL,
  resolved TEXT NOT NULL,
  resolver TEXT NOT NULL DEFAULT '',
  answer TEXT NOT NULL DEFAULT '',
  citations_json TEXT NOT NULL DEFAULT '[]',
  strategy TEXT NOT NULL DEFAULT '',
  query_id INTEGER,
  created REAL NOT NULL,
  UNIQUE(session, ordinal)
);
"""


def _memory_feedback(dim: int) -> str:
    """Which edges each answered query wrote (with the memory before), and the user's verdicts.

    A failed answer's writes are undone from ``before``; an answer marked wrong has the edges
    it reinforced penalised, and a question whose last verdict is "wrong" is retrieved again
    without reading memory (``localrag feedback``, the TUI's key).
    """
    return f"""
CREATE TABLE memory_writes(
  id INTEGER PRIMARY KEY,
  query_id INTEGER NOT NULL,
  kind TEXT NOT NULL,
  a INTEGER NOT NULL,
  b INTEGER NOT NULL,
  before BLOB,
  at REAL NOT NULL
);
CREATE INDEX memory_writes_query ON memory_writes(query_id);
CREATE TABLE query_feedback(
  query_id INTEGER PRIMARY KEY,
  text TEXT NOT NULL,
  verdict TEXT NOT NULL CHECK (verdict IN ('right', 'wrong')),
  at REAL NOT NULL
);
CREATE INDEX query_feedback_text ON query_feedback(text);
"""


def _document_titles(dim: int) -> str:
    """Notes found by their title regardless of case: a comparison question names its notes
    ("Which film came out earlier, X or Y?") and the answer reads the dates in them."""
    return """
CREATE INDEX IF NOT EXISTS documents_title ON documents(title COLLATE NOCASE);
"""


def _passage_locators(dim: int) -> str:
    """Where a person finds a document's passage (``p. 12``, ``slide 3``, ``§ Results``): a PDF's
    passages were cited by lines of pypdf's text, which the file does not have, so every PDF is
    read again (size -1 and no hash: the next sync extracts it; a passage whose text did not change keeps its id)."""
    return """
ALTER TABLE passages ADD COLUMN locator TEXT NOT NULL DEFAULT '';
UPDATE documents SET size = -1, sha256 = '' WHERE kind = 'pdf';
"""


def _cjk_lexical(dim: int) -> str:
    """Chinese, Japanese and Korean words for lexical search: each passage's title, heading and text as
    overlapping CJK character bigrams (text/cjk.py), one row per passage that has CJK text, in step
    with passages_fts (written by Documents, deleted by trigger). ``cjk_terms`` is the Python
    function every connection defines (store/connection.py); it fills the table for an existing index."""
    return """
CREATE VIRTUAL TABLE passages_cjk USING fts5(title, heading, text, tokenize = 'unicode61');
CREATE TRIGGER passages_gone_cjk AFTER DELETE ON passages BEGIN
  DELETE FROM passages_cjk WHERE rowid = old.id;
END;
INSERT INTO passages_cjk(rowid, title, heading, text)
  SELECT id, title, heading, text FROM (SELECT p.id AS id, cjk_terms(d.title) AS title, cjk_terms(p.heading) AS heading,
    cjk_terms(p.text) AS text FROM passages p JOIN documents d ON d.id = p.doc_id)
  WHERE title <> '' OR heading <> '' OR text <> '';
"""


MIGRATIONS: list[Migration] = [
    Migration(1, "foundation", _foundation),
    Migration(2, "graph", _graph),
    Migration(3, "llm_cache", _llm_cache),
    Migration(4, "memory", _memory),
    Migration(5, "vector_rescoring", _vector_rescoring),
    Migration(6, "passage_links", _passage_links),
    Migration(7, "vault", _vault),
    Migration(8, "graph_matrix", _graph_matrix),
    Migration(9, "sessions", _sessions),
    Migration(10, "memory_feedback", _memory_feedback),
    Migration(11, "document_titles", _document_titles),
    Migration(12, "passage_locators", _passage_locators),
    Migration(13, "cjk_lexical", _cjk_lexical),
]

