"""A damaged or foreign index.db is detected with a clear message; `doctor --repair` rebuilds it
from the notes and keeps the LLM extraction cache when that cache still reads cleanly."""

from __future__ import annotations

import os
import random
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from localrag.api import Index
from localrag.commands import doctor
from localrag.config import load_settings
from localrag.store import StoreError
from localrag.store.connection import connect
from localrag.store.repair import check_database

from scripted_llm import ScriptedLLM

REPO = Path(__file__).resolve().parents[1]
NOTE_FILES = ["orlinsford.md", "saltreach.md", "people/ilse-varnhagen.md", "projects/lanternfish.md",
              "rye-and-plum-loaf.md", "trip-brannoch-vale-2023.md"]


def _extraction_reply(messages, schema, phase):
    """A grounded reply: the first candidate span of the passage related to the next ones."""
    user = messages[-1]["content"]
    if "Entities in this passage: " not in user:
        return {"triples": []}
    spans = user.split("Entities in this passage: ", 1)[1].split("\nFacts as JSON:")[0].split("; ")
    return {"triples": [{"head": spans[0], "relation": "mentions", "tail": s} for s in spans[1:4]]}


def _settings(folder: Path, bundled_model: Path, **extra):
    return load_settings(folder, {"llm.model": str(bundled_model), "index.extractor": "llm", **extra}, env={})


@pytest.fixture(scope="module")
def built(tmp_path_factory, embedder, bundled_model) -> Path:
    """A folder indexed with the graph phase (a scripted model named like the bundled one), index closed."""
    d = tmp_path_factory.mktemp("corruption") / "notes"
    for rel in NOTE_FILES:
        (d / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(REPO / "examples" / "notes" / rel, d / rel)
    idx = Index(_settings(d, bundled_model), embedder)
    idx.sync()
    llm = ScriptedLLM(_extraction_reply)
    llm.model_id = bundled_model.stem  # the cache key a real run with the bundled model would use
    report = idx.extract_graph(llm=llm)
    assert report.llm_calls >= idx.store.docs.passage_count() > 0 and report.facts_added > 0
    idx.close()
    assert not Path(str(idx.settings.db_path) + "-wal").exists(), "the WAL was checkpointed on close"
    return d


@pytest.fixture
def folder(built, tmp_path) -> Path:
    d = tmp_path / "notes"
    shutil.copytree(built, d)
    return d


def _db(folder: Path) -> Path:
    return folder / ".localrag" / "index.db"


def _root_page(db: Path, table: str) -> tuple[int, int]:
    conn = connect(db, readonly=True)
    try:
        page_size = conn.execute("PRAGMA page_size").fetchone()[0]
        root = conn.execute("SELECT rootpage FROM sqlite_master WHERE name = ?", (table,)).fetchone()[0]
    finally:
        conn.close()
    return int(root), int(page_size)


def _damage_page(db: Path, page: int, page_size: int, seed: int = 0) -> None:
    garbage = random.Random(seed).randbytes(page_size)
    with db.open("r+b") as fh:
        fh.seek((page - 1) * page_size)
        fh.write(garbage)


def _snapshot(idx: Index) -> dict:
    g = idx.store.graph
    names = g.entities.all()
    passages = {p: (path, o) for path in idx.store.docs.all() for p, o in
                [(x.id, x.ordinal) for x in idx.store.docs.passages_of(path)]}
    return {
        "passages": sorted((x.path, x.ordinal, x.sha256, x.start_line, x.end_line)
                           for path in idx.store.docs.all() for x in idx.store.docs.passages_of(path)),
        "facts": sorted((f.head_name, f.relation, f.tail_name) for f in g.facts.all()),
        "mentions": sorted((names[e], passages[p]) for e, p in g.facts.all_mentions()),
        "extractions": idx.store.one("SELECT COUNT(*) FROM extractions")[0],
    }


def _cli(*args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("LOCALRAG_")}
    return subprocess.run([sys.executable, "-m", "localrag", *args], capture_output=True, text=True, env=env,
                          timeout=600)


# -- detection ---------------------------------------------------------------------------------------------

def test_damaged_page_is_reported_with_the_repair_hint(folder):
    db = _db(folder)
    page, size = _root_page(db, "passages")
    _damage_page(db, page, size)
    assert check_database(db) != "ok"
    r = _cli("ask", "Which river runs through Orlinsford?", "-f", str(folder), "--no-answer", "--strategy", "lexical")
    assert r.returncode == 1
    assert "damaged" in r.stderr and "localrag doctor --repair" in r.stderr, r.stderr
    assert "Traceback" not in r.stderr


def test_truncated_file_is_reported(folder):
    db = _db(folder)
    with db.open("r+b") as fh:
        fh.truncate(db.stat().st_size * 2 // 5)
    assert check_database(db) != "ok"
    r = _cli("ask", "Which river runs through Orlinsford?", "-f", str(folder), "--no-answer", "--strategy", "lexical")
    assert r.returncode == 1 and "localrag doctor --repair" in r.stderr, r.stderr
    assert "Traceback" not in r.stderr


@pytest.mark.parametrize("seed", range(6))
def test_any_damaged_page_is_found_by_the_check(folder, seed):
    """Garbage over a random page (header page excluded): `localrag doctor`'s check never says ok."""
    db = _db(folder)
    _, size = _root_page(db, "passages")
    pages = db.stat().st_size // size
    page = random.Random(seed).randrange(2, pages + 1)
    _damage_page(db, page, size, seed)
    assert check_database(db) != "ok", page


def test_foreign_sqlite_file_is_refused(tmp_path, embedder):
    notes = tmp_path / "notes"
    (notes / ".localrag").mkdir(parents=True)
    (notes / "a.md").write_text("# A\n\nsome text\n")
    import sqlite3

    foreign = sqlite3.connect(notes / ".localrag" / "index.db")
    foreign.execute("CREATE TABLE invoices(id INTEGER PRIMARY KEY, total REAL)")
    foreign.execute("INSERT INTO invoices(total) VALUES (12.5)")
    foreign.commit()
    foreign.close()
    before = (notes / ".localrag" / "index.db").read_bytes()
    with pytest.raises(StoreError, match="did not create"):
        Index(load_settings(notes, env={}), embedder)
    assert (notes / ".localrag" / "index.db").read_bytes() == before, "a foreign file is never changed"
    r = _cli("status", str(notes))
    assert r.returncode == 1 and "did not create" in r.stderr and "Traceback" not in r.stderr


def test_file_that_is_not_sqlite_is_refused(tmp_path, embedder):
    notes = tmp_path / "notes"
    (notes / ".localrag").mkdir(parents=True)
    (notes / ".localrag" / "index.db").write_bytes(b"<html>not a database</html>" * 200)
    with pytest.raises(StoreError, match="doctor --repair"):
        Index(load_settings(notes, env={}), embedder)


# -- repair ------------------------------------------------------------------------------------------------

@pytest.fixture
def no_model(monkeypatch, embedder):
    """Any model load during repair is recorded (and answered by a scripted model); the session embedder is reused."""
    loads: list[str] = []
    llm = ScriptedLLM(_extraction_reply)

    def make_llm(settings, role="main"):
        loads.append(role)
        llm.model_id = Path(settings.model).stem
        return llm, "scripted"

    monkeypatch.setattr("localrag.llm.factory.make_llm", make_llm)
    monkeypatch.setattr("localrag.api.default_embedder", lambda: embedder)
    return loads, llm


def test_repair_rebuilds_and_keeps_the_extraction_cache(folder, embedder, bundled_model, no_model, capsys):
    settings = _settings(folder, bundled_model)
    idx = Index(settings, embedder)
    before = _snapshot(idx)
    idx.close()
    db = _db(folder)
    page, size = _root_page(db, "passages")
    _damage_page(db, page, size)
    page, size = _root_page(db, "passages_fts_data")
    _damage_page(db, page, size, seed=1)

    assert doctor._repair(settings) == 0
    out = capsys.readouterr().out
    loads, llm = no_model
    assert loads == [] and llm.calls == [], "every extraction came from the kept cache: no model loaded"
    assert f"extractions: kept {before['extractions']} rows" in out
    broken = [p for p in (folder / ".localrag").glob("index.db.broken-*") if not p.name.endswith(("-wal", "-shm"))]
    assert len(broken) == 1, "the damaged file is kept aside"
    idx = Index(settings, embedder)
    after = _snapshot(idx)
    assert after == before
    assert idx.store.integrity_check() == "ok"
    assert idx.store.calls.totals_by_phase().get("index") is None
    idx.close()


def test_repair_with_a_damaged_extraction_cache_re_extracts(folder, embedder, bundled_model, no_model, capsys):
    settings = _settings(folder, bundled_model)
    idx = Index(settings, embedder)
    before = _snapshot(idx)
    n_passages = idx.store.docs.passage_count()
    idx.close()
    db = _db(folder)
    page, size = _root_page(db, "extractions")
    _damage_page(db, page, size)

    assert doctor._repair(settings) == 0
    out = capsys.readouterr().out
    assert "extractions: kept" in out
    loads, llm = no_model
    kept = int(out.split("extractions: kept ")[1].split()[0])
    assert kept == 0 and len(llm.calls) >= n_passages, "passages whose cached reply was lost are extracted again"
    idx = Index(settings, embedder)
    assert _snapshot(idx) == before, "the same scripted model rebuilds the same graph"
    idx.close()


def test_doctor_repair_cli_on_a_file_that_is_not_a_database(folder):
    db = _db(folder)
    db.write_bytes(b"\x00garbage" * 4096)
    env_extra = {"LOCALRAG_INDEX_EXTRACTOR": "rules"}
    env = {k: v for k, v in os.environ.items() if not k.startswith("LOCALRAG_")} | env_extra
    r = subprocess.run([sys.executable, "-m", "localrag", "doctor", "--repair", str(folder)], capture_output=True,
                       text=True, env=env, timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "extractions: kept 0 rows (unreadable" in r.stdout
    assert "index database: ok" in r.stdout
    r = _cli("status", str(folder), "--json")
    assert r.returncode == 0, r.stderr
    assert '"documents": 6' in r.stdout


# -- noticing damage where it is cheap ---------------------------------------------------------------------

def _random_bytes_in_the_middle(db: Path, seed: int = 19) -> None:
    """The damage of docs/reliability.md: 4 KB of random bytes written into the middle of index.db."""
    size = db.stat().st_size
    with db.open("r+b") as fh:
        fh.seek(size // 2)
        fh.write(random.Random(seed).randbytes(4096))


def test_random_bytes_in_the_middle_are_noticed_by_status_and_index(folder):
    r = _cli("status", str(folder))
    assert r.returncode == 0, r.stderr
    _random_bytes_in_the_middle(_db(folder))
    for argv in (["status", str(folder)], ["index", str(folder), "--no-graph", "--quiet"], ["status", str(folder)]):
        r = _cli(*argv)
        assert r.returncode == 1, (argv, r.stdout, r.stderr)
        lines = r.stderr.strip().splitlines()
        assert len(lines) == 1 and "damaged" in lines[0] and "localrag doctor --repair" in lines[0], (argv, r.stderr)
    r = _cli("doctor", str(folder), "--repair", "--skip-model")
    assert r.returncode == 0, r.stdout + r.stderr
    r = _cli("status", str(folder), "--json")
    assert r.returncode == 0, r.stderr
    import json

    check = json.loads(r.stdout)["check"]
    assert check["ran"] and check["result"] == "ok", check  # the repaired index is checked once, and passes


def _open_store(db: Path):
    from localrag.store import Store

    return Store(db, dim=384, embedder_id="check-test")


def test_a_check_is_due_after_an_unclean_exit_and_only_then(tmp_path):
    from localrag.store.health import CHECK_INTERVAL_S, state_path

    db = tmp_path / "idx" / "index.db"
    s = _open_store(db)
    assert s.session.due == ""  # a new index
    s.close()
    s = _open_store(db)
    assert s.session.due == "" and not s.check_if_due().ran  # closed cleanly, nothing changed
    s.close()
    # a process that opens the index and dies without closing it
    code = (f"import os, sys; sys.path.insert(0, {str(REPO)!r}); from localrag.store import Store; "
            f"s = Store({str(db)!r}, dim=384, embedder_id='check-test'); "
            "s.calls.start_query('q', 'dense'); os.kill(os.getpid(), 9)")
    assert subprocess.run([sys.executable, "-c", code]).returncode == -9
    s = _open_store(db)
    assert "did not close it cleanly" in s.session.due
    check = s.check_if_due()
    assert check.ran and check.ok and "did not close" in check.due
    s.close()
    s = _open_store(db)
    assert s.session.due == "", "a passing check clears the dead process's claim"
    s.close()
    # the file changed behind localrag's back (same bytes, new mtime is enough to suspect it)
    os.utime(db, ns=(db.stat().st_atime_ns, db.stat().st_mtime_ns + 10**9))
    s = _open_store(db)
    assert s.session.due == "the index file changed since localrag last closed it"
    s.close()  # closed without the check: the reason survives
    s = _open_store(db)
    assert s.session.due == "the index file changed since localrag last closed it"
    s.check_if_due()
    s.close()
    import json

    state = json.loads(state_path(db).read_text())
    state["checked_at"] -= CHECK_INTERVAL_S + 60  # the periodic check
    state_path(db).write_text(json.dumps(state))
    s = _open_store(db)
    assert s.session.due.startswith("periodic check")
    s.check_if_due()
    s.close()
    state = json.loads(state_path(db).read_text())
    state["checked_at"] += 10 * 24 * 3600  # the clock went back past the last check
    state_path(db).write_text(json.dumps(state))
    s = _open_store(db)
    assert s.session.due == "the clock is earlier than the last check"
    s.close()


def test_a_live_process_is_not_taken_for_a_dead_one(tmp_path):
    db = tmp_path / "idx" / "index.db"
    _open_store(db).close()
    first = _open_store(db)
    first.calls.start_query("q", "dense")
    second = _open_store(db)  # another process's view: the first is open, not dead
    assert second.session.due == "" and second.session.others_live == 1
    second.close()
    first.close()


# -- damage named with the repair, a passing failure not taken for damage ---------------------------------

def test_doctor_names_the_repair_when_it_finds_damage(folder):
    _random_bytes_in_the_middle(_db(folder))
    r = _cli("doctor", str(folder), "--skip-model")
    assert r.returncode == 1, r.stdout + r.stderr
    found = " ".join(r.stdout.split())  # rich wraps the line at the terminal's width
    assert "FAIL index database" in found and "damaged:" in found
    assert f"run `localrag doctor {folder} --repair`" in found
    assert "never used" not in found or found.count("never used") == 1, "free pages are counted, not listed"
    assert "Traceback" not in r.stderr


def test_an_error_that_names_no_cause_is_checked_before_it_is_reported(folder, embedder, bundled_model):
    """sqlite-vec's "vectors blob read error" says nothing of damage: quick_check decides what the user is told."""
    from localrag.store.connection import driver

    unexplained = driver().OperationalError("vectors blob read error for 1")
    idx = Index(_settings(folder, bundled_model), embedder)
    assert idx.diagnosed(unexplained) is unexplained, "a healthy file: the error is shown as it is"
    idx.close()
    _random_bytes_in_the_middle(_db(folder))
    idx = Index(_settings(folder, bundled_model), embedder)
    try:
        found = idx.diagnosed(unexplained)
    finally:
        idx.close()
    assert isinstance(found, StoreError)
    assert "is damaged (quick_check:" in str(found) and "reading it failed (vectors blob read error for 1)" in str(found)
    assert "run `localrag doctor --repair`" in str(found)
    r = _cli("ask", "Which river runs through Orlinsford?", "-f", str(folder), "--no-answer", "--no-sync",
             "--strategy", "dense")
    lines = r.stderr.strip().splitlines()
    assert r.returncode == 1 and len(lines) == 1, r.stderr
    assert "damaged" in lines[0] and "localrag doctor --repair" in lines[0], lines[0]


def test_a_deleted_wal_is_reported_as_passing_not_as_damage(folder):
    """Another program deletes index.db-wal while a localrag process has the index open: the next
    command is told to run again, not to repair; nothing was damaged."""
    db = _db(folder)
    holder = connect(db)
    holder.execute("CREATE TABLE IF NOT EXISTS held(x)")
    holder.execute("INSERT INTO held VALUES (1)")
    holder.commit()
    wal = Path(str(db) + "-wal")
    assert wal.exists()
    wal.unlink()
    try:
        for argv in (["ask", "Which river runs through Orlinsford?", "-f", str(folder), "--no-answer", "--no-sync",
                      "--strategy", "lexical"], ["status", str(folder)]):
            r = _cli(*argv)
            lines = r.stderr.strip().splitlines()
            assert r.returncode == 1 and len(lines) == 1, (argv, r.stderr)
            assert "could not be read just now" in lines[0] and "run the command again" in lines[0], lines[0]
            assert "damaged" not in lines[0] and "--repair" not in lines[0], lines[0]
    finally:
        holder.close()
    assert check_database(db) == "ok"
    r = _cli("ask", "Which river runs through Orlinsford?", "-f", str(folder), "--no-answer", "--no-sync",
             "--strategy", "lexical")
    assert r.returncode == 0, r.stderr


def test_the_check_lines_are_summed_up_in_one():
    from localrag.store.health import summarise_problems

    assert summarise_problems(["ok"]) == "ok"
    rows = ["*** in database main ***\nTree 23 page 23 cell 0: invalid page number 3173954128"] + [
        f"Page {n}: never used" for n in range(285, 298)]
    assert summarise_problems(rows) == ("damaged: Tree 23 page 23 cell 0: invalid page number 3173954128; "
                                        "13 pages never used (page 285-297)")
    many = [f"row {n} missing from index i{n}" for n in range(5)]
    assert summarise_problems(many) == "damaged: row 0 missing from index i0; row 1 missing from index i1; " \
                                       "row 2 missing from index i2; and 2 more"
