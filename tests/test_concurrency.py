"""Several processes on one folder at once: no "database is locked" reaches the user, no update is lost.

Six processes share a notes folder: two run `localrag index` over and over (the fast phase
and the graph phase), three run `localrag ask --no-answer` over and over (hybrid and dense),
and one edits, creates, renames and deletes notes meanwhile. Each process drives the real
CLI entry point (`localrag.cli.main`) in a loop, so the embedder loads once per process.
Every command must exit 0 with nothing on stderr but the documented note that another
process holds the writer lock; afterwards the index must equal a fresh index of the
final folder, and be consistent (the crash-safety checks).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

from localrag.api import Index
from localrag.config import load_settings
from localrag.retrieve.neuropath.events import MemoryStep

from reliability_checks import check_store, diff, snapshot

REPO = Path(__file__).resolve().parents[1]
LOCK_NOTE = "answering from the index as it is"
# the only things allowed on stderr: the notes that another process holds a writer lock
ALLOWED = re.compile(r"(graph phase: )?another localrag process (\(pid \d+\) )?is indexing \S+; "
                     r"(answering from the index as it is|that process extracts the new passages too)")

DRIVER = r'''
import contextlib, io, json, os, random, sys, time
from pathlib import Path

role, folder, ctl, name = sys.argv[1], Path(sys.argv[2]), Path(sys.argv[3]), sys.argv[4]
done = ctl / "writer-done"
log = {"role": role, "runs": []}


def cli(args):
    from localrag.cli import main
    out, err = io.StringIO(), io.StringIO()
    started = time.perf_counter()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            rc = main(args)
        except SystemExit as exc:
            rc = exc.code
        except BaseException as exc:
            import traceback
            err.write("Traceback (uncaught): " + traceback.format_exc())
            rc = 99
    log["runs"].append({"args": args[:2], "rc": rc, "stderr": err.getvalue(), "s": round(time.perf_counter() - started, 3)})


if role == "index":
    while True:
        finished = done.exists()
        cli(["index", str(folder), "--quiet", "--extractor", "rules"])
        (ctl / f"ready-{name}").touch()
        if finished:
            break  # one full run after the writer's last change
        time.sleep(0.2)  # about a watcher's debounce
elif role == "ask":
    questions = ["Which river runs through Orlinsford?", "Who met Wendel Quist?", "What spice goes into the rye loaf?",
                 "Where is the Lanternfish build server?"]
    strategy = sys.argv[5]
    while not any(ctl.glob("ready-*")):
        time.sleep(0.1)
    i = 0
    while not done.exists() or i < 3:
        cli(["ask", questions[i % len(questions)], "-f", str(folder), "--no-answer", "--strategy", strategy])
        (ctl / f"ready-{name}").touch()
        i += 1
elif role == "write":
    rng = random.Random(int(sys.argv[5]))
    while len(list(ctl.glob("ready-ask*"))) < 3:
        time.sleep(0.1)
    places = ["Tessmark", "Orlinsford", "Saltreach", "Kallendar", "Quillhaven"]
    for step in range(int(sys.argv[6])):
        notes = sorted(p for p in folder.rglob("*.md") if ".localrag" not in p.parts)
        op = rng.choice(["append", "append", "same-size", "create", "rename", "delete", "rewrite"])
        p = rng.choice(notes)
        if op == "append":
            p.write_text(p.read_text() + f"\nStep {step}: Wendel Quist walked to {rng.choice(places)}.\n")
        elif op == "same-size":
            text = p.read_text()
            p.write_text(text.replace("e", "a", 1) if "e" in text else text + "e")
        elif op == "create":
            (folder / f"new-{step}.md").write_text(f"# New note {step}\n\nSaskia Fenwick met Wendel Quist in "
                                                   f"{rng.choice(places)} in {1900 + step}.\n")
        elif op == "rename" and len(notes) > 5:
            p.rename(p.with_name(f"moved-{step}-{p.name}"))
        elif op == "delete" and len(notes) > 5:
            p.unlink()
        elif op == "rewrite":
            p.write_text(f"# Rewritten {step}\n\nThis note now says that Imre Vasko keeps bees in {rng.choice(places)}.\n")
        log["runs"].append({"op": op, "path": p.name, "rc": 0, "stderr": "", "s": 0})
        time.sleep(rng.uniform(0.02, 0.4))
    done.touch()
(ctl / f"{name}.json").write_text(json.dumps(log))
'''

PROCESSES = [("index-1", ["index"]), ("index-2", ["index"]), ("ask-1", ["ask", "hybrid"]),
             ("ask-2", ["ask", "dense"]), ("ask-3", ["ask", "hybrid"]), ("writer", ["write", "11", "30"])]


def test_indexers_askers_and_a_writer_at_once(tmp_path, embedder):
    folder = tmp_path / "notes"
    shutil.copytree(REPO / "examples" / "notes", folder, ignore=shutil.ignore_patterns(".localrag"))
    ctl = tmp_path / "ctl"
    ctl.mkdir()
    driver = tmp_path / "driver.py"
    driver.write_text(DRIVER)
    env = {k: v for k, v in os.environ.items() if not k.startswith("LOCALRAG_")}
    procs = []
    for name, (role, *extra) in PROCESSES:
        out = (tmp_path / f"{name}.out").open("w")
        procs.append((name, out, subprocess.Popen([sys.executable, str(driver), role, str(folder), str(ctl), name, *extra],
                                                  stdout=out, stderr=subprocess.STDOUT, env=env, cwd=REPO)))
    deadline = time.monotonic() + 1200
    for name, out, proc in procs:
        try:
            proc.wait(timeout=max(1, deadline - time.monotonic()))
        finally:
            if proc.poll() is None:
                proc.kill()
            out.close()
        assert proc.returncode == 0, f"{name}: {(tmp_path / f'{name}.out').read_text()[-3000:]}"

    logs = {name: json.loads((ctl / f"{name}.json").read_text()) for name, _ in PROCESSES}
    commands = 0
    for name, log in logs.items():
        for run in log["runs"]:
            commands += 1
            stderr = run["stderr"]
            assert "locked" not in stderr.lower() and "Traceback" not in stderr, f"{name} {run['args']}: {stderr}"
            assert run["rc"] == 0, f"{name} {run.get('args')}: exit {run['rc']}: {stderr}"
            leftover = ALLOWED.sub("", " ".join(stderr.split()))
            assert not leftover.strip(), f"{name} {run['args']}: unexpected stderr: {stderr}"
    asks = [r for n, log in logs.items() if n.startswith("ask") for r in log["runs"]]
    indexes = [r for n, log in logs.items() if n.startswith("index") for r in log["runs"]]
    edits = logs["writer"]["runs"]
    assert len(asks) >= 9 and len(indexes) >= 4 and len(edits) == 30
    busy = sum(LOCK_NOTE in " ".join(r["stderr"].split()) for r in asks)
    warm = [r["s"] for n, log in logs.items() if n.startswith("ask") for r in log["runs"][1:]]
    print(f"6 processes: {len(indexes)} index runs, {len(asks)} asks ({busy} "
          f"answered while another process was indexing), {len(edits)} edits; {commands} commands; "
          f"asks after each process's first (which loads the embedder): slowest {max(warm):.2f}s, "
          f"median {sorted(warm)[len(warm) // 2]:.2f}s")

    # no lost update: the index equals a fresh index of the final folder, and it is consistent
    db = folder / ".localrag" / "index.db"
    assert check_store(db) == []
    fresh = tmp_path / "fresh"
    shutil.copytree(folder, fresh, ignore=shutil.ignore_patterns(".localrag"))
    idx = Index(load_settings(fresh, {"index.extractor": "rules"}, env={}), embedder)
    idx.sync()
    idx.extract_graph()
    idx.close()
    assert diff(snapshot(db), snapshot(fresh / ".localrag" / "index.db")) == []


def test_same_size_edit_within_one_timestamp_tick_is_not_lost(tmp_path, embedder, monkeypatch):
    """A writer saves twice within one clock tick of the indexer's read (same size, same mtime):
    the second version must still be indexed. Simulated with os.utime, which is what a coarse
    file-system clock does to the second write."""
    folder = tmp_path / "notes"
    folder.mkdir()
    note = folder / "code.md"
    note.write_text("# Code\n\nThe door code of the Saltreach shed is 1234.\n")
    first = note.stat()
    idx = Index(load_settings(folder, env={}), embedder)
    idx.sync()
    note.write_text("# Code\n\nThe door code of the Saltreach shed is 9876.\n")
    os.utime(note, ns=(first.st_atime_ns, first.st_mtime_ns))
    assert (note.stat().st_size, note.stat().st_mtime_ns) == (first.st_size, first.st_mtime_ns)
    idx.sync()
    texts = [p.text for p in idx.store.docs.passages_of("code.md")]
    assert any("9876" in t for t in texts) and not any("1234" in t for t in texts)
    idx.close()


def test_old_files_are_not_read_again(tmp_path, embedder, monkeypatch):
    """The racy-file re-read only applies to files modified moments before they were read."""
    from localrag.ingest import sync

    folder = tmp_path / "notes"
    folder.mkdir()
    for i in range(3):
        (folder / f"n{i}.md").write_text(f"# Note {i}\n\nAn old note about Tessmark number {i}.\n")
        os.utime(folder / f"n{i}.md", ns=(time.time_ns() - 3600 * 10**9,) * 2)
    (folder / "fresh.md").write_text("# Fresh\n\nA note written just now.\n")
    idx = Index(load_settings(folder, env={}), embedder)
    idx.sync()
    reads: list[str] = []
    real = sync.read_bytes
    monkeypatch.setattr(sync, "read_bytes", lambda path, limit, **kw: reads.append(path.name) or real(path, limit, **kw))
    report = idx.sync()
    assert reads == ["fresh.md"] and report.unchanged == 3 and report.touched == 1 and not report.changed
    idx.close()


def test_rename_during_extraction_is_not_lost(tmp_path, embedder, monkeypatch):
    """The graph phase runs alongside the fast phase. A note renamed (so retitled) while one of its
    passages is being extracted is re-queued by the sync; the extraction in flight must not undo that."""
    import threading

    from localrag.kg.builder import GraphBuilder

    folder = tmp_path / "notes"
    folder.mkdir()
    (folder / "plain-note.md").write_text("Wendel Quist keeps bees in Tessmark near the old mill.\n")  # title from the name
    settings = load_settings(folder, {"index.extractor": "rules"}, env={})
    fast, graph = Index(settings, embedder), Index(settings, embedder)
    fast.sync()
    inside, go_on = threading.Event(), threading.Event()
    real_extract = GraphBuilder.extract

    def paused_extract(self, p):
        if not inside.is_set():
            inside.set()
            assert go_on.wait(60)
        return real_extract(self, p)

    monkeypatch.setattr(GraphBuilder, "extract", paused_extract)
    worker = threading.Thread(target=graph.extract_graph)
    worker.start()
    assert inside.wait(60)
    (folder / "plain-note.md").rename(folder / "renamed-note.md")
    report = fast.sync()
    assert report.moved == 1
    go_on.set()
    worker.join(60)
    assert not worker.is_alive()
    entities = set(fast.store.graph.entities.all().values())
    assert "renamed note" in entities and "plain note" not in entities
    assert fast.store.graph.queue.length() == 0
    fast.close()
    graph.close()


def test_a_reader_is_not_held_up_by_a_writers_transaction(tmp_path, embedder, monkeypatch):
    """Opening the index and answering need no write lock; the query log is skipped, not fatal,
    when the writer keeps the database busy past the busy timeout."""
    from localrag.api import Assistant
    from localrag.store import connection

    folder = tmp_path / "notes"
    shutil.copytree(REPO / "examples" / "notes", folder, ignore=shutil.ignore_patterns(".localrag"))
    settings = load_settings(folder, env={})
    idx = Index(settings, embedder)
    idx.sync()
    idx.close()
    monkeypatch.setattr(connection, "BUSY_TIMEOUT_MS", 300)  # instead of 30 s, to keep the test short
    writer = connection.connect(settings.db_path)
    writer.execute("BEGIN IMMEDIATE")  # another process in the middle of a long write
    writer.execute("UPDATE documents SET title = title")
    try:
        reader = Index(settings, embedder)
        answer = Assistant(reader).ask("Which river runs through Orlinsford?", strategy="hybrid", answer=False)
        assert answer.retrieval.passages[0].passage.path == "orlinsford.md"
        assert answer.query_id is None, "the query log was skipped while the writer held the lock"
        reader.close()
    finally:
        writer.execute("ROLLBACK")
        writer.close()
    reader = Index(settings, embedder)
    answer = Assistant(reader).ask("Which river runs through Orlinsford?", strategy="hybrid", answer=False)
    assert answer.query_id is not None and reader.store.calls.recent_queries(1)[0].text.startswith("Which river")
    reader.close()


def test_a_reader_that_cannot_write_still_answers(tmp_path, embedder):
    """Query log, NER cache and memory replay are writes; on an index that cannot be written
    (opened read-only here) the question is still answered and the trace says what was not kept."""
    from localrag.api import Assistant
    from localrag.records import Triple

    from scripted_llm import ScriptedLLM

    folder = tmp_path / "notes"
    folder.mkdir()
    (folder / "mira.md").write_text("# Mira Okafor\n\nMira Okafor leads the Heron project.\n")
    (folder / "heron.md").write_text("# Heron project\n\nThe Heron project is hosted in Vessby.\n")
    settings = load_settings(folder, {"neuropath.ner": "llm", "memory.enabled": True}, env={})
    idx = Index(settings, embedder)
    idx.sync()
    for name, triple in {"mira.md": ("mira okafor", "leads", "heron project"),
                         "heron.md": ("heron project", "hosted in", "vessby")}.items():
        (p,) = idx.store.docs.passages_of(name)
        idx.store.graph.write_extraction(p.id, [Triple(*triple)], [], embedder.encode)
    idx.close()

    def respond(messages, schema, phase):
        if phase == "ner":
            return {"named_entities": ["Mira Okafor"]}
        return {"current_chain": "", "valid_ids": [0], "expansion_requirements": "", "need_expand_ids": [], "continue": 0}

    ro = Index(settings, embedder, readonly=True)
    answer = Assistant(ro, llm=ScriptedLLM(respond)).ask("Where is Mira Okafor's project hosted?",
                                                        strategy="neuropath", answer=False)
    assert answer.retrieval.passages and answer.query_id is None
    memory = next(s for s in answer.retrieval.trace.steps if isinstance(s, MemoryStep))
    assert memory.enhanced == 0 and "readonly" in memory.not_written
    ro.close()
