"""The index database: one SQLite file, migrations, transactions, table groups."""

from __future__ import annotations

import contextlib
import threading
import time
from pathlib import Path
from typing import Any, Iterator

from localrag.store.cache import LLMCache
from localrag.store.calls import CallLog
from localrag.store.connection import (APP_ID, StoreError, connect, driver, is_transient_io, retry_busy,
                                      transient_io_message)
from localrag.store.documents import Documents
from localrag.store.graph import Graph
from localrag.store.health import HealthCheck, IndexClaim, summarise_problems
from localrag.store.lexical import LexicalIndex
from localrag.store.memory import EdgeMemory
from localrag.store.schema import MIGRATIONS
from localrag.store.sessions import Sessions
from localrag.store.vault import VaultTables
from localrag.store.vectors import PassageVectors
from localrag.text.spans import SPAN_RULES_VERSION

SPAN_RULES_KEY = "span_rules"  # the span rules an index's graph is read by (localrag/kg/builder.py)
TRANSIENT_TRIES = 3  # a quick_check that meets a disk I/O error is tried this often, this far apart
TRANSIENT_PAUSE_S = 0.5


class Store:
    """Owns the connection; feature tables are reached through small accessors."""

    def __init__(self, path: str | Path, *, dim: int, embedder_id: str, readonly: bool = False) -> None:
        self.path = Path(path) if str(path) != ":memory:" else Path(":memory:")
        self.dim = dim
        self.embedder_id = embedder_id
        self._lock = threading.RLock()
        self._depth = 0
        self.before_commit: list = []  # callables run inside each outermost transaction, just before COMMIT
        file_backed = str(path) != ":memory:"
        self.session: IndexClaim | None = IndexClaim(self.path) if file_backed and not readonly else None
        try:
            self.conn = connect(path, readonly=readonly)
        except BaseException:
            if self.session is not None:
                self.session.close(record=False)
            raise
        self._side: Any = None  # a second, read-only connection (see side_query)
        self._side_lock = threading.Lock()
        try:
            if not readonly:
                self._check_foreign()
                self._migrate()
            self._check_embedder()
        except BaseException:
            self.conn.close()
            if self.session is not None:
                self.session.close(record=False)
            raise
        self.docs = Documents(self)
        self.vectors = PassageVectors(self)
        self.lexical = LexicalIndex(self)
        self.calls = CallLog(self)
        self.cache = LLMCache(self)
        self.graph = Graph(self)
        self.memory = EdgeMemory(self)
        self.vault = VaultTables(self)
        self.sessions = Sessions(self)

    # -- plumbing -----------------------------------------------------------------
    def execute(self, sql: str, params: Any = ()) -> Any:
        with self._lock:
            return self.conn.execute(sql, params)

    def executemany(self, sql: str, rows: Any) -> Any:
        with self._lock:
            return self.conn.executemany(sql, rows)

    def query(self, sql: str, params: Any = ()) -> list[tuple]:
        with self._lock:
            return self.conn.execute(sql, params).fetchall()

    def one(self, sql: str, params: Any = ()) -> tuple | None:
        with self._lock:
            return self.conn.execute(sql, params).fetchone()

    def side_query(self, sql: str, params: Any = ()) -> list[tuple]:
        """A read on a second, read-only connection that never waits for the main one.

        Hybrid retrieval runs BM25 here while the main connection rescores vectors (WAL lets
        both read at once). It sees committed rows only, so it is for retrieval, which never
        runs inside a transaction. An in-memory database has one connection: plain query().
        """
        if str(self.path) == ":memory:":
            return self.query(sql, params)
        with self._side_lock:
            if self._side is None:
                self._side = connect(self.path, readonly=True)
            return self._side.execute(sql, params).fetchall()

    @contextlib.contextmanager
    def transaction(self) -> Iterator[None]:
        """BEGIN IMMEDIATE ... COMMIT; nested uses join the outer transaction."""
        with self._lock:
            if self._depth:
                self._depth += 1
                try:
                    yield
                finally:
                    self._depth -= 1
                return
            self._begin()
            self._depth = 1
            try:
                yield
                for hook in self.before_commit:
                    hook()
            except BaseException:
                self._depth = 0
                self.conn.execute("ROLLBACK")
                raise
            self._depth = 0
            self.conn.execute("COMMIT")

    def _begin(self) -> None:
        # busy_timeout covers most waits; retry for the rare immediate-lock upgrade miss.
        retry_busy(lambda: self.conn.execute("BEGIN IMMEDIATE"), timeout_s=60)

    @classmethod
    def open_for_reading(cls, path: str | Path) -> "Store":
        """An existing index, read-only, with the embedder that built it: for tools that read its
        rows (documents, passages, skips) and embed nothing."""
        conn = connect(path, readonly=True)
        try:
            meta = dict(conn.execute("SELECT key, value FROM meta WHERE key IN ('embedder', 'dim')").fetchall())
        finally:
            conn.close()
        return cls(path, dim=int(meta.get("dim", 0)), embedder_id=meta.get("embedder", ""), readonly=True)

    def copy_to(self, target: str | Path) -> None:
        """A consistent copy of the whole index at ``target`` (a new file): every committed write,
        those still in the WAL too, by SQLite's online backup while this store stays open."""
        dest = driver().connect(str(target))
        try:
            with self._lock:
                self.conn.backup(dest)
        finally:
            dest.close()

    def close(self) -> None:
        with self._side_lock:
            if self._side is not None:
                self._side.close()
                self._side = None
        with self._lock:
            self.conn.close()
        if self.session is not None:
            self.session.close()
            self.session = None

    # -- meta ---------------------------------------------------------------------
    def get_meta(self, key: str, default: str = "") -> str:
        row = self.one("SELECT value FROM meta WHERE key = ?", (key,))
        return row[0] if row else default

    def set_meta(self, key: str, value: str) -> None:
        with self.transaction():
            self.execute("INSERT INTO meta(key, value) VALUES(?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value",
                         (key, value))

    def data_version(self) -> int:
        """Changes whenever another connection (another process) commits; this one's own commits leave it."""
        return int(self.one("PRAGMA data_version")[0])

    def change_mark(self) -> tuple[int, int]:
        """Differs after any commit, this connection's (its total changes) or another's (data_version):
        what a cache of a read is keyed by."""
        with self._lock:
            return self.data_version(), self.conn.total_changes

    def schema_version(self) -> int:
        row = self.one("SELECT MAX(version) FROM schema_migrations")
        return int(row[0] or 0) if row else 0

    def size_bytes(self) -> int:
        if str(self.path) == ":memory:":
            return 0
        total = 0
        for suffix in ("", "-wal", "-shm"):
            p = Path(str(self.path) + suffix)
            if p.exists():
                total += p.stat().st_size
        return total

    def integrity_check(self) -> str:
        return str(self.one("PRAGMA integrity_check")[0])

    def quick_check(self) -> str:
        """'ok' or what is wrong: SQLite's quick_check (every page and record, not index-vs-table agreement).
        A disk I/O error is tried again, then raised as passing: it is not damage (see is_transient_io)."""
        failed: BaseException | None = None
        for _ in range(TRANSIENT_TRIES):
            try:
                return summarise_problems(str(r[0]) for r in self.query("PRAGMA quick_check(20)"))
            except driver().DatabaseError as exc:
                if not is_transient_io(exc):
                    return str(exc)
                failed = exc
                time.sleep(TRANSIENT_PAUSE_S)
        raise StoreError(transient_io_message(failed)) from failed

    def check_if_due(self, force: bool = False) -> HealthCheck:
        """Run quick_check when there is a reason to (see ``store/health.py``) or when ``force``d."""
        due = "asked for" if force else (self.session.due if self.session is not None else "")
        if not due:
            return HealthCheck("", "")
        started = time.perf_counter()
        result = self.quick_check()
        if self.session is not None:
            self.session.checked(result)
        return HealthCheck(due, result, time.perf_counter() - started)

    # -- set-up -------------------------------------------------------------------
    def _check_foreign(self) -> None:
        mod = driver()
        try:
            app_id = self.conn.execute("PRAGMA application_id").fetchone()[0]
            tables = {r[0] for r in self.conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        except mod.DatabaseError as exc:
            if is_transient_io(exc):
                raise StoreError(transient_io_message(exc)) from exc
            raise StoreError(
                f"{self.path} is damaged or not an SQLite database ({exc}); "
                "run `localrag doctor --repair` to rebuild the index from your documents"
            ) from exc
        if tables and app_id != APP_ID:
            raise StoreError(
                f"{self.path} is an SQLite database that localrag did not create; "
                "point --db elsewhere or move it away"
            )

    def _up_to_date(self) -> bool:
        """All migrations applied: opening the index then needs no write lock (a reader is never
        held up by a writer's transaction just to open the file)."""
        try:
            done = {r[0] for r in self.conn.execute("SELECT version FROM schema_migrations")}
            app_id = self.conn.execute("PRAGMA application_id").fetchone()[0]
        except driver().OperationalError:
            return False
        return app_id == APP_ID and {m.version for m in MIGRATIONS} <= done

    def _migrate(self) -> None:
        if self._up_to_date():
            return
        with self.transaction():
            self.conn.execute(
                "CREATE TABLE IF NOT EXISTS schema_migrations(version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied REAL NOT NULL)"
            )
            self.conn.execute(f"PRAGMA application_id = {APP_ID}")
            done = {r[0] for r in self.conn.execute("SELECT version FROM schema_migrations")}
            for migration in MIGRATIONS:
                if migration.version in done:
                    continue
                for statement in _split_sql(migration.sql(self.dim)):
                    self.conn.execute(statement)
                self.conn.execute(
                    "INSERT INTO schema_migrations(version, name, applied) VALUES(?, ?, ?)",
                    (migration.version, migration.name, time.time()),
                )
                if migration.version == 1:
                    self.conn.execute("INSERT INTO meta(key, value) VALUES('embedder', ?)", (self.embedder_id,))
                    self.conn.execute("INSERT INTO meta(key, value) VALUES('dim', ?)", (str(self.dim),))
                    self.conn.execute("INSERT INTO meta(key, value) VALUES(?, ?)", (SPAN_RULES_KEY, str(SPAN_RULES_VERSION)))

    def _check_embedder(self) -> None:
        stored = self.get_meta("embedder")
        if stored and stored != self.embedder_id:
            raise EmbedderMismatch(self.path, stored, self.embedder_id)


class EmbedderMismatch(StoreError):
    """The index holds another embedder's vectors: they are never mixed with this one's."""

    def __init__(self, path: Path, stored: str, wanted: str) -> None:
        super().__init__(
            f"{path} was built with embedder {stored!r}, not {wanted!r} (index.embedder); run `localrag index "
            f"FOLDER --reembed` to embed the notes again with {wanted!r}, or set index.embedder back"
        )
        self.stored, self.wanted = stored, wanted


def _split_sql(script: str) -> list[str]:
    """Split a DDL script into statements, keeping trigger bodies whole."""
    out: list[str] = []
    buf: list[str] = []
    in_trigger = False
    for line in script.strip().splitlines():
        if not line.strip():
            continue
        buf.append(line)
        upper = line.strip().upper()
        if upper.startswith("CREATE TRIGGER"):
            in_trigger = True
        if in_trigger:
            if upper == "END;":
                out.append("\n".join(buf))
                buf, in_trigger = [], False
        elif line.rstrip().endswith(";"):
            out.append("\n".join(buf))
            buf = []
    if buf:
        out.append("\n".join(buf))
    return out
