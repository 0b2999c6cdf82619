"""Rebuilding a damaged index: move it aside, salvage the caches that still read cleanly.

Only tables keyed by content survive a rebuild: ``extractions`` (passage text hash, model,
prompt version -> the model's reply) and ``llm_cache`` (e.g. query entities by question
text). Everything else (documents, passages, vectors, the graph, memories) is rebuilt from
the notes; ids change, so nothing keyed by an id is worth keeping. A damaged table is read
up to the first unreadable page and every row is checked before it is kept.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

from localrag.store.connection import StoreError, connect, driver, is_transient_io, transient_io_message
from localrag.store.health import summarise_problems

if TYPE_CHECKING:
    from localrag.store.db import Store

BATCH_ROWS = 500
DB_FILES = ("", "-wal", "-shm")  # an index file and what SQLite writes beside it


@dataclass(frozen=True)
class SalvageTable:
    name: str
    columns: tuple[str, ...]
    valid: Callable[[tuple], bool]


def _json_row(row: tuple) -> bool:
    """Key columns are text and the last column parses as JSON."""
    if not all(isinstance(x, str) for x in row):
        return False
    try:
        json.loads(row[-1])
    except ValueError:
        return False
    return True


SALVAGE = (
    SalvageTable("extractions", ("passage_sha", "model", "prompt_version", "json"), _json_row),
    SalvageTable("llm_cache", ("kind", "key", "model", "version", "json"), _json_row),
)


@dataclass(frozen=True)
class Salvaged:
    table: str
    kept: int  # rows copied into the new index
    dropped: int  # rows read but rejected (wrong types, JSON that does not parse)
    complete: bool  # False when reading stopped at damage (or the table could not be read at all)
    error: str = ""

    def describe(self) -> str:
        text = f"{self.table}: kept {self.kept} rows"
        if self.dropped:
            text += f", dropped {self.dropped} damaged rows"
        if not self.complete:
            text += f" (stopped at damage: {self.error})" if self.kept else f" (unreadable: {self.error})"
        return text


def move_aside(db_path: Path, label: str = "broken") -> Path:
    """Rename index.db (and its -wal/-shm) to index.db.<label>-<time>[-n]; returns the new path."""
    stamp = time.strftime("%Y%m%d-%H%M%S")
    target = db_path.with_name(f"{db_path.name}.{label}-{stamp}")
    n = 1
    while any(Path(str(target) + s).exists() for s in DB_FILES):
        n += 1
        target = db_path.with_name(f"{db_path.name}.{label}-{stamp}-{n}")
    for suffix in DB_FILES:
        src = Path(str(db_path) + suffix)
        if src.exists():
            src.rename(Path(str(target) + suffix))
    return target


def _read_table(conn: Any, table: SalvageTable) -> tuple[list[tuple], int, str]:
    """(valid rows, rejected rows, error) reading in rowid order until the end or the first damage."""
    mod = driver()
    cols = ", ".join(table.columns)
    rows: list[tuple] = []
    dropped = 0
    last = -(2**63)
    while True:
        try:
            batch = conn.execute(
                f"SELECT rowid, {cols} FROM {table.name} WHERE rowid > ? ORDER BY rowid LIMIT ?", (last, BATCH_ROWS)
            ).fetchall()
        except mod.DatabaseError as exc:
            return rows, dropped, str(exc)
        if not batch:
            return rows, dropped, ""
        for row in batch:
            values = tuple(row[1:])
            if table.valid(values):
                rows.append(values)
            else:
                dropped += 1
        last = batch[-1][0]


def salvage_caches(old_db: Path, store: "Store") -> list[Salvaged]:
    """Copy the readable, valid rows of the content-keyed caches from ``old_db`` into ``store``."""
    try:
        old = connect(old_db, readonly=True)
    except StoreError as exc:
        return [Salvaged(t.name, 0, 0, False, str(exc)) for t in SALVAGE]
    out: list[Salvaged] = []
    try:
        for table in SALVAGE:
            rows, dropped, error = _read_table(old, table)
            if rows:
                marks = ",".join("?" * len(table.columns))
                with store.transaction():
                    store.executemany(
                        f"INSERT OR IGNORE INTO {table.name}({', '.join(table.columns)}) VALUES({marks})", rows
                    )
            out.append(Salvaged(table.name, len(rows), dropped, not error, error))
    finally:
        old.close()
    return out


def salvage_extractions(old_db: Path, store: "Store") -> int:
    """The number of extraction-cache rows kept (see ``salvage_caches``)."""
    return next(s.kept for s in salvage_caches(old_db, store) if s.table == "extractions")


def check_database(db_path: Path) -> str:
    """'ok', or what is wrong, without changing the file ("damaged: …" when the file itself is)."""
    mod = driver()
    try:
        conn = connect(db_path, readonly=True)
    except Exception as exc:
        return str(exc)
    try:
        rows = conn.execute("PRAGMA integrity_check(100)").fetchall()
        return summarise_problems(str(r[0]) for r in rows)
    except mod.DatabaseError as exc:
        return transient_io_message(exc) if is_transient_io(exc) else f"damaged: {exc}"
    finally:
        conn.close()

