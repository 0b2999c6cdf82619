"""The store: driver with extensions, WAL, busy timeout, migrations, foreign/corrupt files."""

from __future__ import annotations

import pytest

from localrag.store import Store, StoreError
from localrag.store.connection import connect, driver


def test_connection_has_vec_wal_and_busy_timeout(tmp_path):
    conn = connect(tmp_path / "x.db")
    assert conn.execute("SELECT vec_version()").fetchone()[0].startswith("v0.1")
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert conn.execute("PRAGMA busy_timeout").fetchone()[0] == 30000
    conn.close()


def test_driver_can_load_extensions():
    assert hasattr(driver().connect(":memory:"), "enable_load_extension")


def test_migrations_recorded_once(tmp_path):
    s = Store(tmp_path / "i.db", dim=8, embedder_id="e")
    assert s.schema_version() >= 1
    n = s.one("SELECT COUNT(*) FROM schema_migrations")[0]
    s.close()
    s2 = Store(tmp_path / "i.db", dim=8, embedder_id="e")
    assert s2.one("SELECT COUNT(*) FROM schema_migrations")[0] == n
    tables = {r[0] for r in s2.query("SELECT name FROM sqlite_master")}
    assert {"documents", "passages", "passages_fts", "passage_vec", "llm_calls", "queries", "skipped"} <= tables
    s2.close()


def test_foreign_database_is_refused(tmp_path):
    path = tmp_path / "foreign.db"
    conn = driver().connect(str(path))
    conn.execute("CREATE TABLE t(x)")
    conn.commit()
    conn.close()
    with pytest.raises(StoreError, match="did not create"):
        Store(path, dim=8, embedder_id="e")


def test_corrupt_database_gives_clear_error(tmp_path):
    path = tmp_path / "bad.db"
    path.write_bytes(b"this is not sqlite at all" * 100)
    with pytest.raises(StoreError, match="doctor --repair"):
        Store(path, dim=8, embedder_id="e")


def test_other_embedder_is_refused(tmp_path):
    Store(tmp_path / "i.db", dim=8, embedder_id="a").close()
    with pytest.raises(StoreError, match="embedder"):
        Store(tmp_path / "i.db", dim=8, embedder_id="b")


def test_transaction_rolls_back_on_error(tmp_path):
    s = Store(tmp_path / "i.db", dim=8, embedder_id="e")
    with pytest.raises(RuntimeError):
        with s.transaction():
            s.docs.insert("a.md", 1, 1, "h", "markdown", "A")
            raise RuntimeError("boom")
    assert s.docs.count() == 0
    s.close()
