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


MIGRATIONS: list[Migration] = [
    Migration(1, "foundation", _foundation),
]

