"""Documents, passages (with the note links they hold) and skipped files."""

from __future__ import annotations

import posixpath
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Iterable, Sequence

from localrag.records import Document, Passage, SkippedFile
from localrag.text.cjk import cjk_terms, has_cjk
from localrag.store.until_write import UntilWrite

if TYPE_CHECKING:
    from localrag.store.db import Store

_PASSAGE_COLS = (
    "p.id, p.doc_id, d.path, d.title, p.ordinal, p.heading, p.text, p.sha256, p.start_line, p.end_line, p.locator"
)


def link_target(doc_path: str, href: str) -> str:
    """The folder-relative path that a link written ``href`` in the document at ``doc_path`` points to;
    for a wikilink (``[[key]]``) the name it is resolved by (store/vault.py)."""
    if href.startswith("[[") and href.endswith("]]"):
        return "name:" + href[2:-2]
    return posixpath.normpath(posixpath.join(posixpath.dirname(doc_path), href))


@dataclass(frozen=True)
class NewPassage:
    ordinal: int
    heading: str
    text: str
    sha256: str
    start_line: int
    end_line: int
    tokens: int
    links: tuple[str, ...] = ()  # hrefs of its Markdown links to other notes (ingest.markdown.link_hrefs)
    locator: str = ""  # a document's page / slide / heading ("p. 12"); "" for a note (cited by lines)


class Documents:
    def __init__(self, store: "Store") -> None:
        self.s = store
        self._folders: UntilWrite[dict[str, int]] = UntilWrite(store.change_mark)  # notes per folder
        self._under: UntilWrite[frozenset[int]] = UntilWrite(store.change_mark)  # passages under folders

    # -- documents ------------------------------------------------------------
    def all(self) -> dict[str, Document]:
        rows = self.s.query("SELECT id, path, size, mtime_ns, sha256, kind, title FROM documents")
        return {r[1]: Document(*r) for r in rows}

    def at_or_under(self, paths: Iterable[str]) -> dict[str, Document]:
        """The documents at these paths, and those under any of them taken as a folder (one deleted
        or moved whole)."""
        out: dict[str, Document] = {}
        for path in dict.fromkeys(paths):
            folder = path.rstrip("/") + "/"
            # "0" follows "/" in code-point order: the range is every path that starts with the folder
            rows = self.s.query("SELECT id, path, size, mtime_ns, sha256, kind, title FROM documents "
                                "WHERE path = ? OR (path >= ? AND path < ?)", (path, folder, folder[:-1] + "0"))
            out.update((r[1], Document(*r)) for r in rows)
        return out

    def get(self, path: str) -> Document | None:
        row = self.s.one("SELECT id, path, size, mtime_ns, sha256, kind, title FROM documents WHERE path = ?", (path,))
        return Document(*row) if row else None

    def by_id(self, doc_id: int) -> Document | None:
        row = self.s.one("SELECT id, path, size, mtime_ns, sha256, kind, title FROM documents WHERE id = ?", (doc_id,))
        return Document(*row) if row else None

    def insert(self, path: str, size: int, mtime_ns: int, sha256: str, kind: str, title: str) -> int:
        cur = self.s.execute(
            "INSERT INTO documents(path, size, mtime_ns, sha256, kind, title, indexed_at) VALUES(?,?,?,?,?,?,?)",
            (path, size, mtime_ns, sha256, kind, title, time.time()),
        )
        return int(cur.lastrowid)

    def update(self, doc_id: int, *, path: str, size: int, mtime_ns: int, sha256: str, title: str) -> None:
        """A changed, retitled or moved document. Triggers re-queue its passages for the graph phase
        when the title changes, and the passages linking to its old or new path when the title or
        path changes (schema ``_passage_links``); a move also re-resolves its own passages' links."""
        old = self.s.one("SELECT path, title FROM documents WHERE id = ?", (doc_id,))
        self.s.execute(
            "UPDATE documents SET path = ?, size = ?, mtime_ns = ?, sha256 = ?, title = ?, indexed_at = ? WHERE id = ?",
            (path, size, mtime_ns, sha256, title, time.time(), doc_id),
        )
        # the title is part of each passage's lexical rows
        self.s.execute(
            "UPDATE passages_fts SET title = ? WHERE rowid IN (SELECT id FROM passages WHERE doc_id = ?)",
            (title, doc_id),
        )
        if old is not None and old[1] != title and (has_cjk(old[1]) or has_cjk(title)):
            self._retitle_cjk(doc_id, title)
        if old is not None and old[0] != path:
            self._resolve_links_again(doc_id, path, mtime_ns)

    def touch(self, doc_id: int, size: int, mtime_ns: int) -> None:
        self.s.execute("UPDATE documents SET size = ?, mtime_ns = ? WHERE id = ?", (size, mtime_ns, doc_id))

    def delete(self, doc_id: int) -> None:
        self.s.execute("DELETE FROM passages WHERE doc_id = ?", (doc_id,))
        self.s.execute("DELETE FROM documents WHERE id = ?", (doc_id,))

    def count(self) -> int:
        return int(self.s.one("SELECT COUNT(*) FROM documents")[0])

    def notes_per_folder(self) -> dict[str, int]:
        """Each folder's path ("a", "a/b") -> the notes under it, its subfolders' included (the top
        folder is not listed: ``count`` is all of them). One grouped read, again only after a write."""
        return self._folders.get(None, self._read_notes_per_folder)

    def _read_notes_per_folder(self) -> dict[str, int]:
        # rtrim by every character of the path but "/" leaves its folder and the "/" after it
        rows = self.s.query("SELECT rtrim(path, replace(path, '/', '')), COUNT(*) FROM documents GROUP BY 1")
        out: dict[str, int] = {}
        for folder, notes in rows:
            parts = str(folder).rstrip("/").split("/") if folder else []
            for depth in range(1, len(parts) + 1):
                key = "/".join(parts[:depth])
                out[key] = out.get(key, 0) + int(notes)
        return out

    def passage_ids_under(self, folders: Sequence[str]) -> frozenset[int]:
        """Every passage of the notes under these folders ("a/b", "pages.de/linux"): one range read of
        the path index per folder (paths compare byte by byte, as the file system names them), kept
        until the next write."""
        prefixes = tuple(sorted(f.rstrip("/") + "/" for f in folders))
        return self._under.get(prefixes, lambda: self._read_passage_ids_under(prefixes))

    def _read_passage_ids_under(self, prefixes: Sequence[str]) -> frozenset[int]:
        ids: set[int] = set()
        for prefix in prefixes:
            above = prefix[:-1] + chr(ord(prefix[-1]) + 1)  # the first path after every one under prefix
            ids.update(int(r[0]) for r in self.s.query(
                "SELECT p.id FROM documents d JOIN passages p ON p.doc_id = d.id WHERE d.path >= ? AND d.path < ?",
                (prefix, above)))
        return frozenset(ids)

    def count_by_kind(self) -> dict[str, int]:
        """Documents per kind (markdown, pdf, docx, ...), most first."""
        rows = self.s.query("SELECT kind, COUNT(*) FROM documents GROUP BY kind ORDER BY COUNT(*) DESC, kind")
        return {str(kind): int(n) for kind, n in rows}

    # -- passages -------------------------------------------------------------
    def passage_hashes(self, doc_id: int) -> list[tuple[int, str, int]]:
        """(id, sha256, ordinal) of a document's passages."""
        return [tuple(r) for r in self.s.query("SELECT id, sha256, ordinal FROM passages WHERE doc_id = ? ORDER BY ordinal", (doc_id,))]

    def insert_passage(self, doc_id: int, title: str, p: NewPassage) -> int:
        cur = self.s.execute(
            "INSERT INTO passages(doc_id, ordinal, heading, text, sha256, start_line, end_line, tokens, locator) "
            "VALUES(?,?,?,?,?,?,?,?,?)",
            (doc_id, p.ordinal, p.heading, p.text, p.sha256, p.start_line, p.end_line, p.tokens, p.locator),
        )
        pid = int(cur.lastrowid)
        self.s.execute("INSERT INTO passages_fts(rowid, title, heading, text) VALUES(?,?,?,?)", (pid, title, p.heading, p.text))
        self._add_cjk(pid, title, p.heading, p.text)
        self._add_links(pid, p.links)
        return pid

    def move_passage(self, passage_id: int, p: NewPassage) -> None:
        """Same text, new place in the document (ordinal, line range, locator)."""
        self.s.execute(
            "UPDATE passages SET ordinal = ?, heading = ?, start_line = ?, end_line = ?, locator = ? WHERE id = ?",
            (p.ordinal, p.heading, p.start_line, p.end_line, p.locator, passage_id),
        )
        self._add_links(passage_id, p.links)  # already there, except in an index older than the link table

    # -- CJK lexical rows (text/cjk.py) ---------------------------------------------
    def _add_cjk(self, passage_id: int, title: str, heading: str, text: str) -> None:
        """The passage's row of passages_cjk, when its title, heading or text has CJK characters."""
        terms = (cjk_terms(title), cjk_terms(heading), cjk_terms(text))
        if any(terms):
            self.s.execute("INSERT INTO passages_cjk(rowid, title, heading, text) VALUES(?,?,?,?)", (passage_id, *terms))

    def _retitle_cjk(self, doc_id: int, title: str) -> None:
        rows = self.s.query("SELECT id, heading, text FROM passages WHERE doc_id = ?", (doc_id,))
        self.s.executemany("DELETE FROM passages_cjk WHERE rowid = ?", [(pid,) for pid, _, _ in rows])
        for pid, heading, text in rows:
            self._add_cjk(pid, title, heading, text)

    # -- note links -----------------------------------------------------------------
    def _add_links(self, passage_id: int, hrefs: Sequence[str]) -> None:
        if not hrefs:
            return
        row = self.s.one("SELECT d.path FROM passages p JOIN documents d ON d.id = p.doc_id WHERE p.id = ?", (passage_id,))
        if row is None:
            return
        self.s.executemany(
            "INSERT OR IGNORE INTO passage_links(passage, href, target) VALUES(?,?,?)",
            [(passage_id, href, link_target(row[0], href)) for href in dict.fromkeys(hrefs)],
        )

    def _resolve_links_again(self, doc_id: int, path: str, mtime_ns: int) -> None:
        """A moved document's relative links point elsewhere now: new targets, and its passages
        whose targets changed go back to the graph queue."""
        rows = self.s.query(
            "SELECT l.passage, l.href, l.target FROM passage_links l JOIN passages p ON p.id = l.passage WHERE p.doc_id = ?",
            (doc_id,),
        )
        changed = [(link_target(path, href), pid, href) for pid, href, target in rows if link_target(path, href) != target]
        self.s.executemany("UPDATE passage_links SET target = ? WHERE passage = ? AND href = ?", changed)
        self.s.executemany(
            "INSERT OR IGNORE INTO graph_queue(passage, priority) VALUES(?,?)",
            [(pid, mtime_ns) for pid in dict.fromkeys(pid for _, pid, _ in changed)],
        )

    def linking_passages(self, path: str) -> list[int]:
        """Passages holding a Markdown link that resolves to ``path`` (an index lookup)."""
        rows = self.s.query("SELECT DISTINCT passage FROM passage_links WHERE target = ? ORDER BY passage", (path,))
        return [int(r[0]) for r in rows]

    def delete_passages(self, ids: Iterable[int]) -> None:
        self.s.executemany("DELETE FROM passages WHERE id = ?", [(i,) for i in ids])

    def passages(self, ids: Sequence[int]) -> list[Passage]:
        """Passages by id, in the order given (missing ids are left out)."""
        if not ids:
            return []
        found: dict[int, Passage] = {}
        for chunk_start in range(0, len(ids), 500):
            chunk = list(ids[chunk_start:chunk_start + 500])
            marks = ",".join("?" * len(chunk))
            for row in self.s.query(
                f"SELECT {_PASSAGE_COLS} FROM passages p JOIN documents d ON d.id = p.doc_id WHERE p.id IN ({marks})", chunk
            ):
                found[row[0]] = Passage(*row)
        return [found[i] for i in ids if i in found]

    def passages_of(self, path: str) -> list[Passage]:
        rows = self.s.query(
            f"SELECT {_PASSAGE_COLS} FROM passages p JOIN documents d ON d.id = p.doc_id WHERE d.path = ? ORDER BY p.ordinal",
            (path,),
        )
        return [Passage(*r) for r in rows]

    def titled(self, name: str, limit: int = 5) -> list[str]:
        """Paths of notes titled ``name`` (any case), then of those titled "``name`` (…)"."""
        exact = [r[0] for r in self.s.query(
            "SELECT path FROM documents WHERE title = ? COLLATE NOCASE ORDER BY path LIMIT ?", (name, limit))]
        qualified = [r[0] for r in self.s.query(
            "SELECT path FROM documents WHERE title >= ? COLLATE NOCASE AND title < ? COLLATE NOCASE "
            "ORDER BY path LIMIT ?", (f"{name} (", f"{name} )", limit))]
        return list(dict.fromkeys(exact + qualified))[:limit]

    def all_passage_ids(self) -> list[int]:
        return [r[0] for r in self.s.query("SELECT id FROM passages ORDER BY id")]

    def passage_count(self) -> int:
        return int(self.s.one("SELECT COUNT(*) FROM passages")[0])

    # -- skipped files ----------------------------------------------------------
    def record_skip(self, path: str, size: int, mtime_ns: int, reason: str, detail: str) -> None:
        self.s.execute(
            "INSERT INTO skipped(path, size, mtime_ns, reason, detail, at) VALUES(?,?,?,?,?,?) "
            "ON CONFLICT(path) DO UPDATE SET size = excluded.size, mtime_ns = excluded.mtime_ns, "
            "reason = excluded.reason, detail = excluded.detail, at = excluded.at",
            (path, size, mtime_ns, reason, detail, time.time()),
        )

    def skip_state(self) -> dict[str, tuple[int, int]]:
        return {r[0]: (r[1], r[2]) for r in self.s.query("SELECT path, size, mtime_ns FROM skipped")}

    def clear_skip(self, path: str) -> None:
        self.s.execute("DELETE FROM skipped WHERE path = ?", (path,))

    def skipped(self) -> list[SkippedFile]:
        return [SkippedFile(*r) for r in self.s.query("SELECT path, reason, detail FROM skipped ORDER BY path")]
