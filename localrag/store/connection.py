"""SQLite connections with sqlite-vec loaded, WAL mode and a busy timeout.

The stdlib driver is used when it can load extensions; many Python builds (this
project's CI among them) cannot, so a DB-API drop-in that can is used instead:
pysqlite3 (Linux x86_64 wheels) or sqlean.py (all platforms).
"""

from __future__ import annotations

import importlib
import logging
import sqlite3 as _stdlib_sqlite3
import time
from pathlib import Path
from types import ModuleType
from typing import Any, Callable

from localrag.errors import LocalragError
from localrag.text.cjk import cjk_terms

logger = logging.getLogger(__name__)

APP_ID = 0x4C524147  # "LRAG", PRAGMA application_id: tells our files from foreign ones
BUSY_TIMEOUT_MS = 30_000


class StoreError(LocalragError, RuntimeError):
    """The index database cannot be opened or used."""


def _can_load_extensions(module: ModuleType) -> bool:
    try:
        conn = module.connect(":memory:")
    except Exception:  # this SQLite build is unusable here: the next one is tried
        logger.debug("%s cannot open a database", module.__name__, exc_info=True)
        return False
    try:
        return hasattr(conn, "enable_load_extension")
    finally:
        conn.close()


_DRIVER: ModuleType | None = None


def driver() -> ModuleType:
    """The DB-API module used for every connection (chosen once per process)."""
    global _DRIVER
    if _DRIVER is not None:
        return _DRIVER
    candidates: list[ModuleType] = [_stdlib_sqlite3]
    for name in ("pysqlite3.dbapi2", "sqlean"):
        try:
            candidates.append(importlib.import_module(name))
        except ImportError:
            continue
    for module in candidates:
        if _can_load_extensions(module):
            _DRIVER = module
            return module
    raise StoreError(
        "no SQLite driver here can load extensions (needed for sqlite-vec): "
        "install pysqlite3-binary (Linux x86_64) or sqlean-py"
    )


def driver_name() -> str:
    mod = driver()
    return f"{mod.__name__} (SQLite {mod.sqlite_version})"


def _load_vec(conn: Any) -> None:
    # the extension loads with the first connection (the driver is chosen first)
    import sqlite_vec

    conn.enable_load_extension(True)
    try:
        sqlite_vec.load(conn)
    finally:
        conn.enable_load_extension(False)


def _ours_or_new(conn: Any) -> bool:
    if conn.execute("PRAGMA application_id").fetchone()[0] == APP_ID:
        return True
    return conn.execute("SELECT COUNT(*) FROM sqlite_master").fetchone()[0] == 0


def _setup(conn: Any, readonly: bool, target: str) -> None:
    if not readonly and target != ":memory:" and _ours_or_new(conn):
        conn.execute("PRAGMA journal_mode = WAL")  # never on a foreign file: that would change it
    conn.execute("PRAGMA synchronous = NORMAL")
    conn.execute("PRAGMA foreign_keys = ON")


def retry_busy(action: Callable[[], Any], *, timeout_s: float = BUSY_TIMEOUT_MS / 1000) -> Any:
    """Run ``action``, waiting out "database is locked"/"busy" for up to ``timeout_s``.

    For the locks SQLite takes without calling the busy handler: switching a brand-new file
    to WAL while another process creates it (two indexers started at once), and the rare
    BEGIN IMMEDIATE that loses the race for the write lock.
    """
    mod = driver()
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            return action()
        except mod.OperationalError as exc:
            text = str(exc).lower()
            if ("locked" not in text and "busy" not in text) or time.monotonic() > deadline:
                raise
            time.sleep(0.05)


def connect(path: str | Path, *, readonly: bool = False) -> Any:
    """Open ``path`` with sqlite-vec loaded, WAL journal, foreign keys and busy timeout."""
    mod = driver()
    target = str(path)
    if target != ":memory:":
        Path(target).parent.mkdir(parents=True, exist_ok=True)
    uri = f"file:{target}?mode=ro" if readonly else None
    try:
        conn = mod.connect(
            uri or target,
            uri=readonly,
            timeout=BUSY_TIMEOUT_MS / 1000,
            isolation_level=None,  # explicit BEGIN/COMMIT: one transaction per file
            check_same_thread=False,
        )
    except mod.Error as exc:
        raise StoreError(f"cannot open index database {target}: {exc}") from exc
    try:
        _load_vec(conn)
        conn.create_function("cjk_terms", 1, cjk_terms, deterministic=True)
        conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        retry_busy(lambda: _setup(conn, readonly, target))
    except mod.DatabaseError as exc:
        conn.close()
        if _is_not_writable(exc):
            raise StoreError(not_writable_message(target, exc)) from exc
        if is_transient_io(exc):
            raise StoreError(transient_io_message(exc)) from exc
        raise StoreError(
            f"{target} is not a usable localrag index ({exc}); "
            "run `localrag doctor --repair` to rebuild it from your documents"
        ) from exc
    return conn


def _is_not_writable(exc: BaseException) -> bool:
    text = str(exc).lower()
    return "readonly" in text or "read-only" in text or "unable to open" in text


def not_writable_message(target: str, exc: BaseException) -> str:
    return (f"cannot write the index database {target} ({exc}); make {Path(target).parent} writable for this user "
            "(the index itself is not damaged)")


_DAMAGED = ("malformed", "not a database", "database corrupt", "file is encrypted")


def is_transient_io(exc: BaseException) -> bool:
    """SQLite's "disk I/O error": met when another program removed or changed the index's files (its
    -wal) while a localrag process had it open; the file itself is not damaged (a truncated or
    overwritten file reads as "malformed")."""
    return _DRIVER is not None and isinstance(exc, _DRIVER.DatabaseError) and "disk i/o error" in str(exc).lower()


def transient_io_message(exc: BaseException) -> str:
    return (f"the index database could not be read just now ({exc}): this passes; it happens when another "
            "program removes or changes the index's files (index.db-wal) while localrag has it open; run the "
            "command again once other localrag processes have finished (if it persists, run `localrag doctor`)")


def database_error_message(exc: BaseException) -> str | None:
    """What to tell the user about an SQLite error met while using the index (None: not an SQLite error)."""
    if _DRIVER is None or not isinstance(exc, _DRIVER.DatabaseError):
        return None
    text = str(exc)
    if "full" in text.lower():
        return (f"the disk is full ({text}); free some space and run the command again: what was indexed "
                "so far is kept, and the next run continues from there")
    if _is_not_writable(exc):
        return f"the index database cannot be written ({text}); check the permissions of its folder"
    if is_transient_io(exc):
        return transient_io_message(exc)
    if _names_damage(text):
        return (f"the index database is damaged ({text}); run `localrag doctor --repair` to rebuild it "
                "from your documents (cached model extractions are kept)")
    return f"the index database could not be used ({text}); if this persists, run `localrag doctor`"


def _names_damage(text: str) -> bool:
    return any(word in text.lower() for word in _DAMAGED)


def is_unexplained(exc: BaseException) -> bool:
    """An SQLite error whose text names no cause (e.g. sqlite-vec's "vectors blob read error"): only a
    check of the file tells damage from a passing failure."""
    if _DRIVER is None or not isinstance(exc, _DRIVER.DatabaseError):
        return False
    text = str(exc)
    return not ("full" in text.lower() or _is_not_writable(exc) or is_transient_io(exc) or _names_damage(text))


def is_database_failure(exc: BaseException) -> bool:
    """An error of the index itself (damage, disk full, locked, read-only) rather than of one file's data:
    such an error stops a sync instead of being recorded against the file being indexed."""
    if isinstance(exc, StoreError):
        return True
    if _DRIVER is None or not isinstance(exc, _DRIVER.DatabaseError):
        return False
    return not isinstance(exc, (_DRIVER.IntegrityError, _DRIVER.DataError, _DRIVER.ProgrammingError))


def vec_version(conn: Any) -> str:
    return str(conn.execute("SELECT vec_version()").fetchone()[0])


def self_test() -> str:
    """Create an FTS5 and a vec0 table in a throwaway database (raises when either is missing);
    returns the sqlite-vec version."""
    conn = connect(":memory:")
    try:
        vec = vec_version(conn)
        conn.execute("CREATE VIRTUAL TABLE t USING fts5(x)")
        conn.execute("CREATE VIRTUAL TABLE v USING vec0(e float[4])")
    finally:
        conn.close()
    return vec
