"""Vault tables: each note's front matter, the names a [[wikilink]] can call it by, its tags,
and the passage filters (tag:, path:) every retrieval strategy applies."""

from __future__ import annotations

import json

import posixpath
from dataclasses import dataclass
from typing import TYPE_CHECKING, Iterable, Sequence

from localrag.records import NoteMeta

if TYPE_CHECKING:
    from localrag.store.db import Store

NOTE_SUFFIXES = (".md", ".markdown", ".txt", ".rst", ".org", ".html", ".htm",
                 ".pdf", ".docx", ".pptx", ".odt", ".odp", ".epub", ".rtf")
FILE_NAME = "file"
ALIAS = "alias"


def link_key(name: str) -> str:
    """What a wikilink and a note are matched on: the last path part, lowercased, without a note suffix."""
    last = name.strip().replace("\\", "/").rstrip("/").rsplit("/", 1)[-1].lower()
    if not last.endswith(NOTE_SUFFIXES):  # most links name no suffix: one test, not one a suffix
        return last
    for suffix in NOTE_SUFFIXES:
        if last.endswith(suffix):
            return last[: -len(suffix)]
    return last


def note_path_key(path: str) -> str:
    """A note's folder-relative path without its suffix, lowercased: what [[folder/name]] matches."""
    base, ext = posixpath.splitext(path.lower())
    return base if ext in NOTE_SUFFIXES else path.lower()


@dataclass(frozen=True)
class NamedNote:
    doc_id: int
    path: str
    title: str
    kind: str  # FILE_NAME | ALIAS


@dataclass(frozen=True)
class PassageFilter:
    """Passages whose note has every tag in ``tags`` (or a nested tag below it: tag:project
    matches #project/alpha) and lies under one of ``paths`` (folder-relative prefixes)."""

    tags: tuple[str, ...] = ()
    paths: tuple[str, ...] = ()
    exclude_paths: tuple[str, ...] = ()

    @property
    def empty(self) -> bool:
        return not (self.tags or self.paths or self.exclude_paths)

    def describe(self) -> str:
        parts = [f"tag:{t}" for t in self.tags] + [f"path:{p}" for p in self.paths]
        return " ".join(parts + [f"-path:{p}" for p in self.exclude_paths])


class VaultTables:
    def __init__(self, store: "Store") -> None:
        self.s = store

    def available(self) -> bool:
        return self.s.one("SELECT name FROM sqlite_master WHERE type = 'table' AND name = 'note_meta'") is not None

    # -- writing (inside the caller's transaction) ------------------------------------------
    def set_note(self, doc_id: int, path: str, meta: NoteMeta | None, inline_tags: Iterable[str] = ()) -> None:
        """Record a note's front matter, names and tags. Changed front matter re-queues the note's
        passages: they carry its aliases, tags and properties as facts."""
        meta = meta or NoteMeta()
        raw = meta.to_json()
        old = self.s.one("SELECT json FROM note_meta WHERE doc_id = ?", (doc_id,))
        if old is None or old[0] != raw:
            self.s.execute("INSERT OR REPLACE INTO note_meta(doc_id, json, warning) VALUES(?,?,?)",
                           (doc_id, raw, meta.warning))
            if old is not None:
                self.s.execute(
                    "INSERT OR IGNORE INTO graph_queue(passage, priority) SELECT p.id, d.mtime_ns FROM passages p "
                    "JOIN documents d ON d.id = p.doc_id WHERE p.doc_id = ?", (doc_id,))
        self.set_names(doc_id, path, meta.alias_names)
        tags = sorted(set(meta.tags) | {t for t in inline_tags if t})
        have = {r[0] for r in self.s.query("SELECT tag FROM note_tags WHERE doc_id = ?", (doc_id,))}
        if have != set(tags):
            self.s.execute("DELETE FROM note_tags WHERE doc_id = ?", (doc_id,))
            self.s.executemany("INSERT INTO note_tags(doc_id, tag) VALUES(?,?)", [(doc_id, t) for t in tags])

    def set_names(self, doc_id: int, path: str, aliases: Sequence[str] | None = None) -> None:
        """The note's wikilink names: its file name, and its aliases (None: keep the recorded aliases).
        Rows change only when the names do, so the re-queue triggers fire only then."""
        have = {(n, k) for n, k in self.s.query("SELECT name, kind FROM note_names WHERE doc_id = ?", (doc_id,))}
        if aliases is None:
            alias_rows = {(n, k) for n, k in have if k == ALIAS}
        else:
            alias_rows = {(link_key(a), ALIAS) for a in aliases if link_key(a)}
        want = {(link_key(path), FILE_NAME)} | alias_rows
        self.s.executemany("DELETE FROM note_names WHERE doc_id = ? AND name = ? AND kind = ?",
                           [(doc_id, n, k) for n, k in have - want])
        self.s.executemany("INSERT INTO note_names(doc_id, name, kind) VALUES(?,?,?)",
                           [(doc_id, n, k) for n, k in want - have])

    # -- reading -------------------------------------------------------------------------------
    def meta(self, doc_id: int) -> NoteMeta | None:
        row = self.s.one("SELECT json FROM note_meta WHERE doc_id = ?", (doc_id,))
        return NoteMeta.from_json(row[0]) if row else None

    def notes_named(self, key: str) -> list[NamedNote]:
        rows = self.s.query(
            "SELECT d.id, d.path, d.title, n.kind FROM note_names n JOIN documents d ON d.id = n.doc_id "
            "WHERE n.name = ? ORDER BY d.path", (key,))
        return [NamedNote(int(i), p, t, k) for i, p, t, k in rows]

    def notes_named_many(self, keys: list[str]) -> dict[str, list[NamedNote]]:
        """``notes_named`` for many keys in one query (a note of thousands of links)."""
        out: dict[str, list[NamedNote]] = {k: [] for k in keys}
        if not keys:
            return out
        rows = self.s.query(
            "SELECT n.name, d.id, d.path, d.title, n.kind FROM note_names n JOIN documents d ON d.id = n.doc_id "
            "WHERE n.name IN (SELECT value FROM json_each(?)) ORDER BY d.path", (json.dumps(sorted(set(keys))),))
        for name, i, path, title, kind in rows:
            out[name].append(NamedNote(int(i), path, title, kind))
        return out

    def tags(self, doc_id: int) -> list[str]:
        return [r[0] for r in self.s.query("SELECT tag FROM note_tags WHERE doc_id = ? ORDER BY tag", (doc_id,))]

    def warnings(self) -> list[tuple[str, str]]:
        """(path, warning) of indexed notes with a problem: front matter that could not be used, bytes not UTF-8."""
        if not self.available():
            return []
        return [(p, w) for p, w in self.s.query(
            "SELECT d.path, m.warning FROM note_meta m JOIN documents d ON d.id = m.doc_id WHERE m.warning <> '' "
            "ORDER BY d.path")]

    def counts(self) -> dict[str, int]:
        if not self.available():
            return {}
        row = self.s.one(
            "SELECT (SELECT COUNT(*) FROM note_names WHERE kind = 'alias'), (SELECT COUNT(DISTINCT tag) FROM note_tags), "
            "(SELECT COUNT(*) FROM note_tags), (SELECT COUNT(*) FROM note_meta WHERE warning <> '')")
        return {"aliases": int(row[0]), "tags": int(row[1]), "tagged_notes": int(row[2]), "note_warnings": int(row[3])}

    def notes_with_aliases(self) -> int:
        return int(self.s.one("SELECT COUNT(DISTINCT doc_id) FROM note_names WHERE kind = 'alias'")[0])

    # -- filters -------------------------------------------------------------------------------
    def filtered_passage_ids(self, f: PassageFilter) -> set[int]:
        """Every passage the filter lets through (one indexed query; a strategy keeps its candidates
        that are in this set)."""
        where: list[str] = []
        params: list[object] = []
        for tag in f.tags:
            where.append("EXISTS (SELECT 1 FROM note_tags t WHERE t.doc_id = d.id AND (t.tag = ? OR t.tag LIKE ? ESCAPE '\\'))")
            params += [tag, _like_prefix(tag + "/")]
        if f.paths:
            where.append("(" + " OR ".join("d.path LIKE ? ESCAPE '\\'" for _ in f.paths) + ")")
            params += [_like_prefix(p) for p in f.paths]
        for p in f.exclude_paths:
            where.append("d.path NOT LIKE ? ESCAPE '\\'")
            params.append(_like_prefix(p))
        sql = "SELECT p.id FROM passages p JOIN documents d ON d.id = p.doc_id"
        if where:
            sql += " WHERE " + " AND ".join(where)
        return {int(r[0]) for r in self.s.query(sql, params)}


def _like_prefix(prefix: str) -> str:
    escaped = prefix.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return escaped + "%"
