"""Graph extraction with N model calls in flight (a served model): the builder's concurrent driver.

Control flow with a scripted, thread-safe stand-in for a served model (it says so with
``parallel_calls = True``, as a backend may); then end to end against llama-cpp-python's real
server on 127.0.0.1 with the bundled GGUF, killed mid-extraction and restarted.
"""

from __future__ import annotations

import re
import threading
import time
from collections import Counter
from pathlib import Path

import pytest
from kg_helpers import assert_healthy, kg_settings, snapshot, write_notes

from localrag.kg.builder import GraphBuilder
from localrag.kg.run import ServerUnreachable
from localrag.llm.base import LLMError, Reply, Usage
from localrag.llm.served_http import TransportError
from localrag.store.repair import salvage_extractions
from localrag_bench.served import ServerProcess, free_port

pytest_plugins = ["conftest_kg"]
pytestmark = pytest.mark.timeout(600)

PEOPLE = ["Ada Quill", "Bram Otter", "Cora Vance", "Dov Mercer", "Elin Strand", "Fenna Holt", "Gus Tamber", "Hedda Lorn"]
PLACES = ["Vessby", "Orlinsford", "Quillhaven", "Marrowgate", "Tidewick", "Kallendar", "Greybarrow", "Fernmoor"]
WORKS = ["Heron Engine", "Lantern Atlas", "Salt Ledger", "Copper Loom", "Glass Orchard", "Iron Psalter", "Tide Almanac", "Reed Compass"]


def people_notes(n: int = 8) -> dict[str, str]:
    """One short passage per note; every note names a person, a town and a work (grammar candidates)."""
    return {
        f"{PEOPLE[i].lower().replace(' ', '-')}.md":
            f"# {PEOPLE[i]}\n\n{PEOPLE[i]} was born in {PLACES[i]} in {1840 + i}. "
            f"{PEOPLE[i]} built the {WORKS[i]} with {PEOPLE[(i + 1) % n]}.\n"
        for i in range(n)
    }


def file_of(location: str) -> str:
    return location.split(":")[0]


class FakeServed:
    """Answers the extraction prompt with one triple from the passage's own candidate spans.

    Thread-safe; records the calls started, the replies returned (completion order), the
    calls in flight at once. ``finish_in_windows`` scripts the completion order: the calls
    started in each window of ``window`` finish in reverse (possible only if the window's
    calls really run at the same time; a call whose turn does not come within 2 s returns anyway).
    ``fail(title, attempt)`` may return an exception to raise instead of replying.
    """

    parallel_calls = True
    model_id = "fake-served"

    def __init__(self, *, delay: float = 0.0, finish_in_windows: tuple[int, int] | None = None, fail=None):
        self.delay, self.script, self.fail = delay, finish_in_windows, fail
        self.cond = threading.Condition()
        self.active = self.peak = 0
        self.started: list[str] = []
        self.completed: list[str] = []  # titles, in the order their replies were returned
        self.ended = 0  # calls returned or raised
        self.attempts: Counter[str] = Counter()

    def _turn(self, k: int) -> int:
        window, total = self.script
        first = k - k % window
        size = min(window, total - first)
        return first + (size - 1 - (k - first))

    def chat(self, messages, *, schema=None, max_tokens=512, phase="answer", on_token=None) -> Reply:
        user = messages[-1]["content"]
        title = re.search(r'<passage title="([^"]*)"', user).group(1)
        found = re.search(r"Entities in this passage: (.*)\n", user)
        candidates = found.group(1).split("; ") if found else [title]
        with self.cond:
            k = len(self.started)
            self.started.append(title)
            self.attempts[title] += 1
            attempt = self.attempts[title]
            self.active += 1
            self.peak = max(self.peak, self.active)
        ok = False
        try:
            if self.script:
                with self.cond:
                    self.cond.wait_for(lambda: self.ended == self._turn(k), timeout=2.0)
                time.sleep(0.1)  # replies return well apart: completion order is unambiguous
            elif self.delay:
                time.sleep(self.delay)
            error = self.fail(title, attempt) if self.fail else None
            if error is not None:
                raise error
            tail = next((c for c in candidates if c != title and c not in PEOPLE), candidates[-1])
            text = '{"triples": [{"head": "%s", "relation": "is linked to", "tail": "%s"}]}' % (title, tail)
            ok = True
            return Reply(text=text, usage=Usage(len(user.split()), 20), ms=1.0, model=self.model_id, finish_reason="stop")
        finally:
            with self.cond:
                self.active -= 1
                self.ended += 1
                if ok:
                    self.completed.append(title)
                self.cond.notify_all()


def extract(index, llm, **kw):
    return index.extract_graph(llm=llm, **kw)


def served_index(kg_index, folder: Path, concurrency: int, extractor: str = "llm"):
    return kg_index(folder, **{"index.extractor": extractor, "llm.concurrency": concurrency})


def reference(kg_index, tmp_path: Path, notes: dict[str, str], extractor: str = "llm"):
    """The same notes built sequentially by the same fake model, uninterrupted."""
    index = served_index(kg_index, write_notes(tmp_path / "reference", notes), 1, extractor)
    index.sync()
    llm = FakeServed()
    report = extract(index, llm)
    assert report.concurrency == 1 and llm.peak == 1 and report.remaining == 0
    return snapshot(index)


def consistent_queue(index) -> None:
    """Each passage is either written (title mention present, dequeued) or untouched (queued, no rows)."""
    g = index.store.graph
    queued = {item.passage for item in g.queue.next_batch(10_000)}
    for p in index.store.docs.passages(index.store.docs.all_passage_ids()):
        mentioned = set(g.entities.names(g.facts.passage_entities(p.id)).values())
        if p.id in queued:
            assert not mentioned and not g.facts.in_passage(p.id), p.location
        else:
            assert p.title.lower() in mentioned, p.location
    assert_healthy(index)


# -- control flow (scripted model) ---------------------------------------------------------------------

def test_calls_overlap_up_to_n_and_each_result_is_written_alone_in_completion_order(kg_index, tmp_path):
    notes = people_notes(8)
    index = served_index(kg_index, write_notes(tmp_path / "notes", notes), 3)
    index.sync()
    total = index.store.graph.queue.length()
    assert total == 8
    statements: list[tuple[int, str]] = []
    index.store.conn.set_trace_callback(lambda sql: statements.append((threading.get_ident(), sql)))
    llm = FakeServed(finish_in_windows=(3, total))
    written: list[str] = []
    events = []

    def on_progress(ev) -> None:
        written.append(file_of(ev.path))
        events.append(ev)

    report = extract(index, llm, progress=on_progress)
    index.store.conn.set_trace_callback(None)
    assert [(e.done, e.total) for e in events] == [(i, total) for i in range(1, total + 1)]
    assert events[0].eta_s is not None and events[-1].eta_s == 0 and all(e.rate > 0 for e in events)

    assert report.concurrency == 3 and report.passages == total and report.llm_calls == total and report.remaining == 0
    assert llm.peak == 3  # the calls really overlapped, and never more than 3
    assert llm.completed != llm.started  # the script made them finish out of order ...
    title_file = {p.title: p.path for p in index.store.docs.passages(index.store.docs.all_passage_ids())}
    assert written == [title_file[t] for t in llm.completed]  # ... and they were written as they finished

    # one transaction per passage, on the calling thread, holding its rows and its removal from the queue
    me = threading.get_ident()
    transactions: list[list[str]] = []
    current: list[str] | None = None
    for thread, sql in statements:
        if sql.startswith("BEGIN"):
            assert thread == me and current is None
            current = []
        elif sql in ("COMMIT", "ROLLBACK"):
            assert thread == me and current is not None and sql == "COMMIT"
            transactions.append(current)
            current = None
        elif current is not None:
            assert thread == me, f"another thread wrote inside a passage's transaction: {sql}"
            current.append(sql)
        else:
            assert not re.match(r"(INSERT|UPDATE|DELETE)", sql) or "INTO llm_calls" in sql, sql  # the call log only
    dequeues = [[s for s in t if s.startswith("DELETE FROM graph_queue WHERE passage")] for t in transactions]
    per_passage = [(t, d) for t, d in zip(transactions, dequeues) if d]
    assert len(per_passage) == total and all(len(d) == 1 for _, d in per_passage)
    assert all(any(s.startswith("INSERT OR IGNORE INTO mentions") for s in t) for t, _ in per_passage)
    order = [int(d[0].rsplit("=", 1)[1]) for _, d in per_passage]
    by_id = {p.id: p.path for p in index.store.docs.passages(order)}
    assert [by_id[i] for i in order] == written

    assert snapshot(index) == reference(kg_index, tmp_path, notes)
    assert_healthy(index)


def test_a_backend_that_is_not_served_stays_sequential(kg_index, tmp_path, bundled_model):
    index = served_index(kg_index, write_notes(tmp_path / "notes", people_notes(4)), 4)
    index.sync()
    local = FakeServed(delay=0.02)
    local.parallel_calls = False  # as llama.cpp in process: one context, not thread-safe
    report = extract(index, local)
    assert report.concurrency == 1 and local.peak == 1 and report.passages == 4

    # from settings: a server URL means the served backend; a GGUF index model runs in process
    served = {"index.extractor": "llm", "llm.concurrency": 4, "llm.url": f"http://127.0.0.1:{free_port()}/v1"}
    builder = GraphBuilder(index.store, index.embedder, kg_settings(tmp_path, **served))
    assert builder.concurrency() == 4 and type(builder.llm().inner).__name__ == "OpenAICompatLLM"  # no request sent
    local_extract = kg_settings(tmp_path, **served, **{"llm.index_model": str(bundled_model), "llm.n_ctx": 512,
                                                      "llm.n_threads": 1})
    builder = GraphBuilder(index.store, index.embedder, local_extract)
    assert builder.concurrency() == 1 and type(builder.llm().inner).__name__ == "LlamaCppLLM"
    no_url = kg_settings(tmp_path, **{"index.extractor": "llm", "llm.concurrency": 4})
    assert GraphBuilder(index.store, index.embedder, no_url).concurrency() == 1  # in process: decided without loading


def test_stop_lets_running_calls_finish_and_leaves_a_consistent_queue(kg_index, tmp_path):
    notes = people_notes(8)
    index = served_index(kg_index, write_notes(tmp_path / "notes", notes), 3)
    index.sync()
    total = index.store.graph.queue.length()
    llm = FakeServed(delay=0.1)
    written: list[str] = []
    report = extract(index, llm, progress=lambda ev: written.append(file_of(ev.path)),
                     should_stop=lambda: len(written) >= 2)
    assert report.stopped and 2 <= report.passages < total
    assert len(llm.started) == report.passages  # every call that started was written, none after the stop
    assert report.remaining == index.store.graph.queue.length() == total - report.passages
    consistent_queue(index)

    rest = extract(index, llm, progress=lambda ev: written.append(file_of(ev.path)))
    assert rest.remaining == 0 and report.passages + rest.passages == total
    assert sorted(written) == sorted(notes) and set(llm.attempts.values()) == {1}  # each passage once
    assert snapshot(index) == reference(kg_index, tmp_path, notes)


def test_a_raising_call_is_retried_then_recorded_as_in_the_sequential_loop(kg_index, tmp_path):
    notes = people_notes(6)
    flaky, broken = PEOPLE[1], PEOPLE[4]

    def fail(title: str, attempt: int):
        if title == flaky and attempt == 1:
            return LLMError("the model server answered HTTP 503: loading")
        if title == broken:
            return ValueError("reply is not usable")
        return None

    index = served_index(kg_index, write_notes(tmp_path / "notes", notes), 2, extractor="llm+rules")
    index.sync()
    llm = FakeServed(delay=0.02, fail=fail)
    written: list[str] = []
    report = extract(index, llm, progress=lambda ev: written.append(file_of(ev.path)))
    assert report.remaining == 0 and report.passages == 6 and report.fallback == 1
    assert llm.attempts[flaky] == 2 and llm.attempts[broken] == 3  # extract_max_attempts
    assert sorted(written) == sorted(notes)  # each passage written exactly once
    failures = index.store.graph.extractions.failures()
    assert len(failures) == 1 and "raised 3 times: reply is not usable" in failures[0][1] and failures[0][2]
    facts = {(f.head_name, f.relation) for f in index.store.graph.facts.all()}
    assert (flaky.lower(), "is linked to") in facts and (broken.lower(), "is linked to") not in facts
    assert_healthy(index)


@pytest.mark.parametrize("concurrency", [1, 3])
def test_an_unreachable_server_stops_the_run_and_the_next_run_resumes(kg_index, tmp_path, concurrency):
    notes = people_notes(8)
    index = served_index(kg_index, write_notes(tmp_path / "notes", notes), concurrency)
    index.sync()
    total = index.store.graph.queue.length()
    restarted = threading.Event()

    def fail(title: str, attempt: int):  # the server dies after serving three replies
        if len(llm.completed) >= 3 and not restarted.is_set():
            return TransportError("cannot reach the model server at http://127.0.0.1:9/v1: connection refused "
                                  "— is it running? check --llm-url", "refused")
        return None

    llm = FakeServed(delay=0.05, fail=fail)
    written: list[str] = []
    on_progress = lambda ev: written.append(file_of(ev.path))  # noqa: E731

    with pytest.raises(ServerUnreachable, match="connection refused.*still queued") as info:
        extract(index, llm, progress=on_progress)
    report = info.value.report
    assert report.stopped and report.passages == len(written) == len(llm.completed) >= 3
    assert report.remaining == index.store.graph.queue.length() == total - report.passages > 0
    failed_calls = len(llm.started) - len(llm.completed)
    assert 1 <= failed_calls <= 2 * concurrency  # no new call once the outage was seen
    queued = index.store.graph.queue.next_batch(100)
    assert sum(item.attempts for item in queued) == failed_calls and all(item.attempts <= 1 for item in queued)
    assert all("TransportError" in item.error for item in queued if item.attempts)
    assert index.store.graph.extractions.failures() == []  # nothing given up or written as a fallback
    consistent_queue(index)

    restarted.set()
    rest = extract(index, llm, progress=lambda ev: written.append(file_of(ev.path)))
    assert rest.remaining == 0 and rest.passages == total - report.passages
    assert sorted(written) == sorted(notes)  # each passage written exactly once over both runs
    assert sorted(llm.completed) == sorted(PEOPLE[:8])  # and each reply came back exactly once
    assert snapshot(index) == reference(kg_index, tmp_path, notes)
    assert_healthy(index)


def test_cache_hits_are_written_without_calls(kg_index, tmp_path):
    notes = people_notes(6)
    index = served_index(kg_index, write_notes(tmp_path / "notes", notes), 3)
    index.sync()
    llm = FakeServed(delay=0.02)
    first = extract(index, llm)
    before = snapshot(index)
    assert first.llm_calls == 6
    assert index.store.graph.queue.enqueue_all() == 6
    again = extract(index, llm)
    assert (again.passages, again.cached, again.llm_calls, len(llm.started)) == (6, 6, 0, 6)
    assert snapshot(index) == before


# -- end to end: a real server, killed mid-extraction -------------------------------------------------

E2E_NOTES = {
    "mira.md": "# Mira Okafor\n\nMira Okafor leads the Heron project at the Vessby institute.\n",
    "heron.md": "# Heron project\n\nThe Heron project is hosted in Vessby, in the old mill by the river Orle.\n",
    "vessby.md": "# Vessby\n\nVessby lies on the river Orle, north of the Kallen hills.\n",
    "orle.md": "# River Orle\n\nThe river Orle flows from Lake Amsel to the port of Tidewick.\n",
    "tidewick.md": "# Tidewick\n\nTidewick is a port town where Jonas Brell runs the ferry to Quillhaven.\n",
    "jonas.md": "# Jonas Brell\n\nJonas Brell was born in Quillhaven in 1979 and studied at Marrowgate College.\n",
    "quillhaven.md": "# Quillhaven\n\nQuillhaven is an island town known for the Greybarrow lighthouse.\n",
    "greybarrow.md": "# Greybarrow lighthouse\n\nThe Greybarrow lighthouse was designed by Ada Quill in 1871.\n",
}


def test_server_killed_mid_extraction_then_restarted_resumes_to_the_same_graph(kg_index, tmp_path, bundled_model):
    """kill -9 the server after some passages are written: a clear error, the rest still queued and
    untouched; restart it on the same port and run again: the queue empties, each passage was
    extracted exactly once, and the graph is the one an uninterrupted run makes from the same
    replies (rebuilt from the extraction cache: the tiny model's replies can change with the
    server's prompt-cache state, so a second model run is not a fixed reference)."""
    server = ServerProcess(bundled_model, tmp_path / "server.log")
    overrides = {"index.extractor": "llm", "index.extract_max_triples": 2, "index.extract_max_tokens": 96,
                 "index.extract_retries": 0, "llm.url": server.url, "llm.url_model": str(bundled_model),
                 "llm.concurrency": 2, "llm.retries": 1, "llm.retry_backoff_s": 0.05, "llm.timeout_s": 120.0}
    index = kg_index(write_notes(tmp_path / "notes", E2E_NOTES), **overrides)
    index.sync()
    total = index.store.graph.queue.length()
    assert total == len(E2E_NOTES)
    written: list[str] = []

    def kill_after_two(ev) -> None:
        written.append(file_of(ev.path))
        if len(written) == 2:
            server.stop()  # SIGKILL while the next calls are in flight

    server.start()
    try:
        with pytest.raises(ServerUnreachable) as info:
            index.extract_graph(progress=kill_after_two)
        message = str(info.value)
        assert server.url in message and "still queued" in message, message
        report = info.value.report
        assert report.concurrency == 2 and report.stopped and report.passages == len(written) >= 2
        left = index.store.graph.queue.length()
        assert left == report.remaining == total - report.passages > 0
        queued = index.store.graph.queue.next_batch(100)
        assert any(item.attempts == 1 and "model server" in item.error for item in queued)  # recorded, not given up
        assert not any("raised" in reason for _, reason, _ in index.store.graph.extractions.failures())
        consistent_queue(index)  # no half-written passage

        server.start()  # same port: same --llm-url
        rest = index.extract_graph(progress=lambda ev: written.append(file_of(ev.path)))
        assert rest.remaining == 0 and rest.passages == left and rest.concurrency == 2
    finally:
        server.stop()

    assert sorted(written) == sorted(E2E_NOTES)  # every passage written exactly once over the two runs
    store = index.store
    ok_calls = store.query("SELECT COUNT(*) FROM llm_calls WHERE phase = 'index' AND ok = 1")[0][0]
    assert ok_calls == total  # one successful model call per passage: nothing extracted twice
    shas = {p.sha256 for p in store.docs.passages(store.docs.all_passage_ids())}
    cached = store.query("SELECT passage_sha, COUNT(*) FROM extractions GROUP BY passage_sha")
    assert {sha for sha, _ in cached} == shas and all(n == 1 for _, n in cached)
    assert_healthy(index)

    # an uninterrupted run over the same replies (served from the copied cache: no server, no call)
    fresh = kg_index(write_notes(tmp_path / "uninterrupted", E2E_NOTES), **overrides)
    fresh.sync()
    assert salvage_extractions(index.settings.db_path, fresh.store) == total
    again = fresh.extract_graph()
    assert (again.passages, again.cached, again.llm_calls, again.remaining) == (total, total, 0, 0)
    assert snapshot(index) == snapshot(fresh)
