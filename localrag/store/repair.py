"""Rebuilding a damaged index: move it aside, salvage the LLM extraction cache if it reads cleanly."""

from __future__ import annotations

import time
from pathlib import Path

from localrag.store.connection import connect, driver


def move_aside(db_path: Path) -> Path:
    """Rename index.db (and its -wal/-shm) to index.db.broken-<time>; returns the new path."""
    stamp = time.strftime("%Y%m%d-%H%M%S")
    target = db_path.with_name(f"{db_path.name}.broken-{stamp}")
    for suffix in ("", "-wal", "-shm"):
        src = Path(str(db_path) + suffix)
        if src.exists():
            src.rename(Path(str(target) + suffix))
    return target


def salvage_extractions(old_db: Path, new_conn) -> int:
    """Copy the extraction cache rows that can still be read; 0 if the table is gone or unreadable."""
    mod = driver()
    try:
        old = connect(old_db, readonly=True)
    except Exception:
        return 0
    try:
        ok = old.execute("PRAGMA quick_check").fetchone()[0]
        rows = old.execute("SELECT passage_sha, model, prompt_version, json FROM extractions").fetchall()
    except mod.DatabaseError:
        return 0
    finally:
        old.close()
    if ok != "ok" and not rows:
        return 0
    has_table = new_conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'extractions'").fetchone()
    if not has_table:
        return 0
    new_conn.execute("BEGIN IMMEDIATE")
    new_conn.executemany(
        "INSERT OR IGNORE INTO extractions(passage_sha, model, prompt_version, json) VALUES(?,?,?,?)", rows
    )
    new_conn.execute("COMMIT")
    return len(rows)


def check_database(db_path: Path) -> str:
    """'ok', or what is wrong, without changing the file."""
    mod = driver()
    try:
        conn = connect(db_path, readonly=True)
    except Exception as exc:
        return str(exc)
    try:
        return str(conn.execute("PRAGMA integrity_check").fetchone()[0])
    except mod.DatabaseError as exc:
        return f"{exc}"
    finally:
        conn.close()
