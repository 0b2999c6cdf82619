"""The served backend against a real OpenAI-compatible server (llama-cpp-python's, bundled SmolLM2,
on 127.0.0.1), plus a tiny in-test HTTP stub for the retry, fallback and secret-handling paths."""

from __future__ import annotations

import ast
import json
import logging
import socket
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from served_helpers import llm_settings

from localrag.answer import strip_invalid_citations
from localrag.answer.flow import compose
from localrag.config import AnswerSettings, ConfigError, LLMSettings, load_settings
from localrag.llm.base import LLMError, RecordingLLM
from localrag.llm.concurrent import in_flight
from localrag.llm.factory import make_llm
from localrag.llm.openai_compat import OpenAICompatLLM
from localrag.llm.prompts_served import PROBE_SCHEMA, probe_messages
from localrag.llm.served_http import ServerURL
from localrag.llm.server_check import check_server
from localrag.records import Passage, Retrieval, ScoredPassage, Trace
from localrag_bench.served import ServerProcess, free_port

pytestmark = pytest.mark.timeout(300)
PACKAGE = Path(__file__).resolve().parents[1] / "localrag"
SECRET = "sk-localrag-test-7f3a9c1e5b"


@pytest.fixture(scope="session")
def served(bundled_model: Path, tmp_path_factory: pytest.TempPathFactory):
    server = ServerProcess(bundled_model, tmp_path_factory.mktemp("server") / "server.log")
    server.start()
    try:
        yield server
    finally:
        server.stop()


# -- a scripted stub server (for retry / fallback / secret paths only) ---------------------------

OK_BODY = {"model": "stub-model", "choices": [{"index": 0, "message": {"role": "assistant", "content": '{"city": "Paris", "year": 1900}'},
                                              "finish_reason": "stop"}],
           "usage": {"prompt_tokens": 11, "completion_tokens": 7, "total_tokens": 18,
                     "prompt_tokens_details": {"cached_tokens": 5}}}


@dataclass
class StubReply:
    status: int
    body: dict | str
    headers: dict = field(default_factory=dict)


@dataclass
class Seen:
    method: str
    path: str
    headers: dict
    body: dict | None


class Stub:
    """Answers each request with the next scripted reply (the last one repeats)."""

    def __init__(self, replies: list[StubReply], echo_auth: bool = False):
        self.replies, self.seen, self.echo_auth = list(replies), [], echo_auth
        stub = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args) -> None:
                pass

            def _answer(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b""
                stub.seen.append(Seen(self.command, self.path, dict(self.headers), json.loads(raw) if raw else None))
                if self.path.endswith("/models"):
                    reply = StubReply(200, {"object": "list", "data": [{"id": "stub-model"}]})
                else:
                    reply = stub.replies.pop(0) if len(stub.replies) > 1 else stub.replies[0]
                body = reply.body if isinstance(reply.body, str) else json.dumps(reply.body)
                if stub.echo_auth:  # a careless server that quotes the request back
                    body = json.dumps({"error": {"message": f"bad key in header {self.headers.get('Authorization')}"}})
                data = body.encode()
                self.send_response(reply.status)
                for k, v in reply.headers.items():
                    self.send_header(k, v)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            do_GET = do_POST = _answer

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def chats(self) -> list[Seen]:
        return [s for s in self.seen if s.path.endswith("/chat/completions")]

    def __enter__(self) -> "Stub":
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def passage(i: int, title: str, text: str) -> Passage:
    return Passage(id=i, doc_id=i, path=f"{title.lower()}.md", title=title, ordinal=0, heading="", text=text,
                   sha256=f"h{i}", start_line=1, end_line=3)


# -- against the real server --------------------------------------------------------------------

def test_plain_chat_reports_usage_and_first_listed_model(served: ServerProcess, bundled_model: Path):
    llm = OpenAICompatLLM(llm_settings(served.url))
    reply = llm.chat([{"role": "user", "content": "Name one colour."}], max_tokens=12)
    assert reply.text.strip()
    assert reply.usage.prompt_tokens > 5 and 1 <= reply.usage.completion_tokens <= 12
    assert reply.finish_reason in {"stop", "length"}
    assert reply.ms > 0
    assert llm.model_id == str(bundled_model)  # no --llm-model: the first model GET /v1/models lists


def test_base_url_with_or_without_v1(served: ServerProcess):
    bare = served.url.removesuffix("/v1")
    assert ServerURL.parse(bare).display == served.url
    assert ServerURL.parse(bare + "/").display == served.url
    assert OpenAICompatLLM(llm_settings(bare)).list_models() == OpenAICompatLLM(llm_settings(served.url)).list_models()


def test_schema_constrained_reply_parses_and_form_is_remembered(served: ServerProcess):
    llm = OpenAICompatLLM(llm_settings(served.url))
    assert llm.response_format_form == "json_schema"
    reply = llm.chat(probe_messages(), schema=PROBE_SCHEMA, max_tokens=64, phase="doctor")
    assert isinstance(reply.data, dict), reply.text
    assert set(reply.data) == {"city", "year"} and isinstance(reply.data["year"], int)
    # llama-cpp-python's server refuses type=json_schema (HTTP 500, validation error) and takes
    # {"type": "json_object", "schema": ...}, which it turns into a grammar
    assert llm.response_format_form == "json_object+schema"


def test_graph_extraction_through_the_server(served: ServerProcess):
    from localrag.kg.extract import ExtractorOptions, extract_passage

    llm = RecordingLLM(OpenAICompatLLM(llm_settings(served.url)))
    calls = []
    llm.sinks.append(calls.append)
    text = "Lothair I married Ermengarde of Tours in 821. Their son Louis II became emperor in Pavia."
    result = extract_passage(text, "Lothair I", ExtractorOptions(extractor="llm", max_tokens=400), llm)
    assert result.calls == len(calls) >= 1 and all(c.phase == "index" and c.prompt_tokens > 50 for c in calls)
    assert result.status in {"llm", "failed"}, result.reason
    assert "not JSON" not in result.reason  # the server enforced the schema (json_object + schema grammar)
    assert result.status != "llm" or result.triples
    # whatever the tiny model chose, the candidate-span schema held: every accepted triple is grounded
    for t in result.triples:
        assert t.head != t.tail and t.origin == "llm"


def test_streaming_yields_the_same_text(served: ServerProcess):
    llm = OpenAICompatLLM(llm_settings(served.url))
    pieces: list[str] = []
    reply = llm.chat([{"role": "user", "content": "Count from one to five in words."}], max_tokens=24,
                     on_token=pieces.append)
    assert len(pieces) >= 2
    assert "".join(pieces) == reply.text
    assert reply.usage.completion_tokens == len(pieces)  # this server sends no usage in streams
    assert reply.finish_reason in {"stop", "length"}


def test_a_stream_cut_short_by_the_server_is_an_error_not_a_short_answer(served: ServerProcess):
    """llama-cpp-python's server (default --interrupt_requests) ends a stream with [DONE] as soon as
    another request queues; the reply has no finish_reason then and must not pass as complete."""
    llm = OpenAICompatLLM(llm_settings(served.url))
    first = threading.Event()
    other: list[object] = []

    def competing_request() -> None:
        first.wait(60)
        other.append(llm.chat([{"role": "user", "content": "Hi"}], max_tokens=4))

    worker = threading.Thread(target=competing_request)
    worker.start()
    pieces: list[str] = []
    with pytest.raises(LLMError, match="ended the stream before the reply was finished"):
        llm.chat([{"role": "user", "content": "Write a long story about a lighthouse keeper."}], max_tokens=400,
                 on_token=lambda t: (pieces.append(t), first.set()))
    worker.join(60)
    assert pieces and other and other[0].text is not None  # the other request was served normally


def test_answer_path_through_the_server(served: ServerProcess, embedder):
    llm = RecordingLLM(OpenAICompatLLM(llm_settings(served.url)))
    calls = []
    llm.sinks.append(calls.append)
    passages = [passage(1, "Harbour", "The harbour office opens at 7 am and closes at 5 pm on weekdays."),
                passage(2, "Ferry", "The ferry to the island leaves from pier 4 every hour.")]
    retrieval = Retrieval("When does the harbour office open?",
                          [ScoredPassage(p, 1.0 / (i + 1), "dense") for i, p in enumerate(passages)], Trace("dense"))
    streamed: list[str] = []
    answer = compose(lambda: llm, embedder, retrieval.query, retrieval, AnswerSettings(mode="free"), n_passages=2,
                     max_tokens=48, since=time.perf_counter(), emit=lambda event: None,
                     on_token=streamed.append)
    text, citations = answer.text, answer.citations
    assert text.strip() and answer.answer_ms > 0
    assert streamed and strip_invalid_citations("".join(streamed).strip(), 2) == text
    assert sorted(c.number for c in citations) == [1, 2]
    assert [c.phase for c in calls] == ["answer"] and calls[0].completion_tokens > 0


@pytest.mark.slow
def test_neuropath_tracking_and_answer_through_the_server(served: ServerProcess, tmp_path: Path, settings_for, embedder):
    """NER, path tracking and the answer all go to the server; the calls land in the index's log."""
    from localrag.api import Assistant, Index
    from localrag.records import Triple

    notes = {"mira.md": "# Mira Okafor\n\nMira Okafor leads the Heron project at the institute.\n",
             "heron.md": "# Heron project\n\nThe Heron project is hosted in Vessby, in the old mill.\n",
             "vessby.md": "# Vessby\n\nVessby lies on the river Orle, north of the hills.\n"}
    triples = {"mira.md": ("mira okafor", "leads", "heron project"), "heron.md": ("heron project", "hosted in", "vessby"),
               "vessby.md": ("vessby", "lies on", "river orle")}
    folder = tmp_path / "kb"
    folder.mkdir()
    for name, text in notes.items():
        (folder / name).write_text(text)
    overrides = {"neuropath.ner": "llm", "llm.url": served.url, "llm.retries": 1, "llm.json_max_tokens": 300,
                 "answer.writer": "model",
                 "llm.answer_max_tokens": 64, "answer.mode": "shape"}
    index = Index(settings_for(folder, **overrides), embedder)
    try:
        index.sync()
        for name, triple in triples.items():
            (p,) = index.store.docs.passages_of(name)
            index.store.graph.write_extraction(p.id, [Triple(*triple)], [], embedder.encode)
        assistant = Assistant(index)  # the backend comes from settings: llm.url -> the served model
        answer = assistant.ask("On which river is the town where Mira Okafor's project is hosted?",
                               strategy="neuropath", k=5)
        assert "server http://127.0.0.1" in assistant.model_source
        phases = [c.phase for c in answer.calls]
        assert phases[0] == "ner" and "track" in phases and phases[-1] == "answer", phases
        assert answer.text.strip() and answer.citations
        logged = index.store.calls.totals_by_phase()
        assert {"ner", "track", "answer"} <= set(logged) and all(v[1] > 0 for v in logged.values())
    finally:
        index.close()


def test_concurrent_schema_calls_against_the_server(served: ServerProcess):
    llm = OpenAICompatLLM(llm_settings(served.url))
    facts = [("Paris", 1900), ("London", 1908), ("Stockholm", 1912), ("Antwerp", 1920)]

    def ask(fact: tuple[str, int]):
        msgs = [{"role": "user", "content": f"{fact[0]} hosted the Summer Olympics in {fact[1]}. Give the city and the year."}]
        return llm.chat(msgs, schema=PROBE_SCHEMA, max_tokens=48, phase="index")

    results = list(in_flight(ask, facts, 2))
    assert sorted(item for item, _ in results) == sorted(facts)
    assert all(not isinstance(r, Exception) and isinstance(r.data, dict) for _, r in results), results


def test_check_server_reports_each_step(served: ServerProcess, bundled_model: Path):
    settings = load_settings(".", {"llm.url": served.url, "llm.url_model": str(bundled_model)}, env={})
    checks = {c.name: c for c in check_server(settings)}
    assert list(checks) == ["model server reachable", "server model listed", "server JSON mode"]
    assert all(c.ok for c in checks.values()), checks
    assert "json_object+schema" in checks["server JSON mode"].detail

    wrong = load_settings(".", {"llm.url": served.url, "llm.url_model": "no-such-model"}, env={})
    named = {c.name: c for c in check_server(wrong)}
    assert not named["server model listed"].ok and "no-such-model is not among" in named["server model listed"].detail


def test_server_killed_mid_run_fails_cleanly_and_recovers(bundled_model: Path, tmp_path: Path):
    server = ServerProcess(bundled_model, tmp_path / "server.log")
    server.start()
    try:
        llm = OpenAICompatLLM(llm_settings(server.url, retries=2, retry_backoff_s=0.1))
        assert llm.chat([{"role": "user", "content": "Hi"}], max_tokens=4).text

        # a long streamed reply; kill -9 the server once the first token has arrived
        first = threading.Event()
        outcome: list[BaseException | object] = []

        def long_call() -> None:
            try:
                outcome.append(llm.chat([{"role": "user", "content": "Write a long story about a lighthouse."}],
                                        max_tokens=600, on_token=lambda _t: first.set()))
            except BaseException as exc:  # noqa: BLE001  (the assertion below names it)
                outcome.append(exc)

        worker = threading.Thread(target=long_call)
        worker.start()
        assert first.wait(60)
        server.stop()
        worker.join(30)
        assert not worker.is_alive(), "the call hung after the server died"
        assert isinstance(outcome[0], LLMError), outcome
        assert server.url.removesuffix("/v1") in str(outcome[0])

        started = time.perf_counter()
        with pytest.raises(LLMError, match="connection refused"):
            llm.chat([{"role": "user", "content": "Hi"}], max_tokens=4)
        assert time.perf_counter() - started < 10  # retried with backoff, then a clear error

        # queued work while the server dies: every item comes back once, as a result or an error
        server.start()
        killed = threading.Event()
        items = list(range(6))
        seen: dict[int, object] = {}
        for item, result in in_flight(lambda i: llm.chat([{"role": "user", "content": f"Say {i}."}], max_tokens=4),
                                      items, 2):
            seen[item] = result
            if not killed.is_set():
                server.stop()
                killed.set()
        assert sorted(seen) == items
        failed = [i for i, r in seen.items() if isinstance(r, Exception)]
        assert len(failed) >= 3 and all(isinstance(seen[i], LLMError) for i in failed)

        # after a restart the same backend works again, and the failed items go through
        server.start()
        redo = dict(in_flight(lambda i: llm.chat([{"role": "user", "content": f"Say {i}."}], max_tokens=4), failed, 2))
        assert sorted(redo) == sorted(failed)
        assert all(not isinstance(r, Exception) and r.usage.completion_tokens > 0 for r in redo.values()), redo
    finally:
        server.stop()


# -- failures, retries and fallbacks (stub) ----------------------------------------------------------

def test_unreachable_url_is_a_clear_error_quickly():
    port = free_port()  # bound then closed: nothing listens there
    llm = OpenAICompatLLM(llm_settings(f"http://127.0.0.1:{port}", retries=3, retry_backoff_s=1.0))
    started = time.perf_counter()
    with pytest.raises(LLMError) as info:
        llm.chat([{"role": "user", "content": "Hi"}], max_tokens=4)
    assert time.perf_counter() - started < 2.0
    assert str(info.value) == (f"cannot reach the model server at http://127.0.0.1:{port}/v1: connection refused "
                               "— is it running? check --llm-url")


@pytest.mark.parametrize("url", ["ftp://127.0.0.1/v1", "file:///etc/passwd", "ws://127.0.0.1:8000"])
def test_non_http_schemes_are_refused(url: str):
    with pytest.raises(LLMError, match="http:// or https://"):
        OpenAICompatLLM(llm_settings(url))


def test_credentials_in_the_url_are_refused_without_echoing_them():
    with pytest.raises(LLMError) as info:
        OpenAICompatLLM(llm_settings("http://user:hunter2@127.0.0.1:9/v1"))
    assert "hunter2" not in str(info.value) and "LOCALRAG_API_KEY" in str(info.value)


def test_retries_429_then_503_then_succeeds_honouring_retry_after():
    script = [StubReply(429, {"error": {"message": "slow down"}}, {"Retry-After": "0.4"}),
              StubReply(503, {"error": {"message": "loading model"}}), StubReply(200, OK_BODY)]
    with Stub(script) as stub:
        llm = OpenAICompatLLM(llm_settings(stub.url, retries=3, retry_backoff_s=0.01))
        started = time.perf_counter()
        reply = llm.chat([{"role": "user", "content": "Hi"}], max_tokens=8)
        elapsed = time.perf_counter() - started
    assert len(stub.chats()) == 3
    assert elapsed >= 0.4  # the server's Retry-After, not the tiny backoff
    assert reply.usage.prompt_tokens == 11 and reply.usage.completion_tokens == 7 and reply.usage.cached_tokens == 5
    assert reply.model == "stub-model" and reply.finish_reason == "stop"


def test_retries_are_bounded_and_client_errors_are_not_retried():
    with Stub([StubReply(503, {"error": {"message": "overloaded"}})]) as stub:
        llm = OpenAICompatLLM(llm_settings(stub.url, url_model="m", retries=2, retry_backoff_s=0.01))
        with pytest.raises(LLMError, match="HTTP 503: overloaded"):
            llm.chat([{"role": "user", "content": "Hi"}], max_tokens=8)
        assert len(stub.chats()) == 3  # first try + 2 retries
    with Stub([StubReply(404, {"error": {"message": "model 'm' not found"}})]) as stub:
        llm = OpenAICompatLLM(llm_settings(stub.url, url_model="m", retries=3, retry_backoff_s=0.01))
        with pytest.raises(LLMError, match="HTTP 404.*check --llm-url"):
            llm.chat([{"role": "user", "content": "Hi"}], max_tokens=8)
        assert len(stub.chats()) == 1


def test_schema_falls_back_to_json_object_with_the_schema_in_the_prompt():
    script = [StubReply(400, {"error": {"message": "response_format json_schema unsupported"}}),
              StubReply(422, {"detail": "schema not permitted"}), StubReply(200, OK_BODY)]
    with Stub(script) as stub:
        llm = OpenAICompatLLM(llm_settings(stub.url, url_model="m"))
        messages = [{"role": "system", "content": "You extract facts."}, {"role": "user", "content": "Paris, 1900."}]
        reply = llm.chat(messages, schema=PROBE_SCHEMA, max_tokens=32)
        assert reply.data == {"city": "Paris", "year": 1900}
        sent = [c.body for c in stub.chats()]
        assert [b["response_format"]["type"] for b in sent] == ["json_schema", "json_object", "json_object"]
        assert sent[0]["response_format"]["json_schema"] == {"name": "localrag_probe", "schema": PROBE_SCHEMA, "strict": True}
        assert sent[1]["response_format"]["schema"] == PROBE_SCHEMA
        assert "schema" not in sent[2]["response_format"]
        assert sent[2]["messages"][0]["content"].startswith("You extract facts.")
        assert json.dumps(PROBE_SCHEMA, separators=(",", ":")) in sent[2]["messages"][0]["content"]
        assert llm.response_format_form == "json_object"
        llm.chat(messages, schema=PROBE_SCHEMA, max_tokens=32)  # remembered: straight to the form that worked
        assert len(stub.chats()) == 4 and stub.chats()[3].body["response_format"] == {"type": "json_object"}


def test_api_key_is_sent_but_never_logged_shown_or_stored(monkeypatch, caplog, tmp_path: Path):
    from localrag.store import Store

    monkeypatch.setenv("LOCALRAG_API_KEY", SECRET)
    caplog.set_level(logging.DEBUG)
    store = Store(tmp_path / "index.db", dim=4, embedder_id="test")
    with Stub([StubReply(503, {}), StubReply(401, {})], echo_auth=True) as stub:
        inner = OpenAICompatLLM(llm_settings(stub.url, url_model="m", retries=2, retry_backoff_s=0.01))
        llm = RecordingLLM(inner, [store.calls.log_call])
        with pytest.raises(LLMError) as info:
            llm.chat([{"role": "user", "content": "Hi"}], max_tokens=8)
        assert stub.chats(), info.value
        assert stub.chats()[0].headers.get("Authorization") == f"Bearer {SECRET}"  # the key is used ...
    message = str(info.value)
    assert "HTTP 401" in message and "$LOCALRAG_API_KEY" in message and "***" in message
    texts = [message, repr(inner), repr(inner.http), caplog.text, repr(info.value.__dict__)]
    assert caplog.records, "the retry was not logged"
    assert all(SECRET not in t for t in texts)  # ... and appears nowhere else
    rows = store.query("SELECT phase, model, error FROM llm_calls")
    assert rows and "HTTP 401" in rows[0][2]
    store.close()
    for path in tmp_path.rglob("*"):  # the index, its journal, health record and session locks
        if path.is_file():
            assert SECRET.encode() not in path.read_bytes(), path


# -- concurrency (control flow; a scripted function, no model) -------------------------------------

def test_in_flight_bounds_calls_and_yields_in_completion_order():
    lock, active, peak, pulled = threading.Lock(), [0], [0], []

    def items():
        for i in range(8):
            pulled.append(i)
            yield i

    def work(i: int) -> int:
        with lock:
            active[0] += 1
            peak[0] = max(peak[0], active[0])
        time.sleep(0.6 if i == 0 else 0.02)
        with lock:
            active[0] -= 1
        if i == 5:
            raise ValueError("bad passage")
        return i * 10

    out = []
    for item, result in in_flight(work, items(), 3):
        assert len(pulled) <= len(out) + 1 + 3  # items are taken only as slots free up
        out.append((item, result))
    assert peak[0] == 3
    assert [i for i, _ in out][-1] == 0  # the slow first item completes last
    assert sorted(i for i, _ in out) == list(range(8))
    assert isinstance(dict(out)[5], ValueError) and dict(out)[7] == 70


def test_in_flight_stops_cleanly_and_keeps_the_running_results():
    started: list[int] = []
    stop = threading.Event()

    def work(i: int) -> int:
        started.append(i)
        time.sleep(0.05)
        return i

    out = []
    for item, _ in in_flight(work, range(100), 4, should_stop=stop.is_set):
        out.append(item)
        if len(out) == 5:
            stop.set()
    assert len(started) <= 5 + 4 and sorted(out) == sorted(started)  # nothing started is lost

    with pytest.raises(ValueError, match="at least 1"):
        next(in_flight(work, [1], 0))


# -- configuration, roles, offline guarantee ------------------------------------------------------------

def test_roles_pick_the_right_backend_and_model(bundled_model: Path):
    served = llm_settings("http://127.0.0.1:9/v1", url_model="big-answer-model", index_model="small-extractor")
    main, where = make_llm(served)
    index, _ = make_llm(served, role="index")
    assert isinstance(main, OpenAICompatLLM) and main.model_id == "big-answer-model"
    assert isinstance(index, OpenAICompatLLM) and index.model_id == "small-extractor"
    assert "http://127.0.0.1:9/v1" in where

    local_extract = llm_settings("http://127.0.0.1:9/v1", index_model=str(bundled_model))
    from localrag.llm.llamacpp import LlamaCppLLM

    local, _ = make_llm(local_extract, role="index")  # a GGUF path: extraction in process, answers served
    assert isinstance(local, LlamaCppLLM) and local.path == bundled_model
    assert isinstance(make_llm(local_extract)[0], OpenAICompatLLM)


def test_cli_flags_map_to_settings():
    from localrag.cli import build_parser
    from localrag.commands.common import settings_from

    args = build_parser().parse_args(["status", "--llm-url", "http://127.0.0.1:9", "--llm-model", "big",
                                      "--index-model", "small", "--concurrency", "8"])
    llm = settings_from(args).llm
    assert (llm.url, llm.url_model, llm.index_model, llm.concurrency) == ("http://127.0.0.1:9", "big", "small", 8)
    with pytest.raises(ConfigError, match="concurrency"):
        load_settings(".", {"llm.concurrency": 0}, env={})


def test_no_url_means_no_network(monkeypatch, bundled_model: Path):
    connects: list[object] = []
    real_connect = socket.socket.connect

    def spy(self, address):
        if self.family in (socket.AF_INET, socket.AF_INET6):
            connects.append(address)
        return real_connect(self, address)

    monkeypatch.setattr(socket.socket, "connect", spy)
    llm, where = make_llm(LLMSettings(model=str(bundled_model), n_ctx=512, n_threads=1))
    assert llm.chat([{"role": "user", "content": "Hi"}], max_tokens=4).text is not None
    assert connects == [] and "config" in where


def test_tests_use_loopback_only(monkeypatch, served: ServerProcess):
    connects: list[tuple] = []
    real_connect = socket.socket.connect

    def spy(self, address):
        if self.family in (socket.AF_INET, socket.AF_INET6):
            connects.append(address)
        return real_connect(self, address)

    monkeypatch.setattr(socket.socket, "connect", spy)
    OpenAICompatLLM(llm_settings(served.url)).chat([{"role": "user", "content": "Hi"}], max_tokens=4)
    assert connects and all(addr[0] == "127.0.0.1" for addr in connects)


def test_only_the_served_backend_imports_network_modules():
    network = {"socket", "http.client", "urllib.request", "requests", "httpx", "aiohttp", "ssl", "openai"}
    offenders = []
    for path in PACKAGE.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                [node.module or ""] if isinstance(node, ast.ImportFrom) else []
            for name in names:
                if name in network or name.split(".")[0] in {"requests", "httpx", "aiohttp", "openai"}:
                    offenders.append(f"{path.relative_to(PACKAGE)}: {name}")
    assert offenders and all(o.startswith("llm/served_http.py") for o in offenders), offenders


def _sent_bodies(llm: OpenAICompatLLM) -> list[dict]:
    """The request bodies ``llm`` posts from now on (it still posts them)."""
    sent: list[dict] = []
    real = llm.http.post_json

    def spy(endpoint, body, **kw):
        sent.append(body)
        return real(endpoint, body, **kw)

    llm.http.post_json = spy
    return sent


def test_short_answer_constraint_reaches_the_server(served: ServerProcess):
    """The grammar's served equivalent: a JSON schema whose one field is an enum of the allowed spans."""
    llm = OpenAICompatLLM(llm_settings(served.url))
    sent = _sent_bodies(llm)
    choices = ["zqx plumbus 7", "vorpal teacup", "not in your notes"]  # never what the model would say unprompted
    reply = RecordingLLM(llm).chat([{"role": "user", "content": "What is the capital of France? One word."}],
                                   choices=choices, max_tokens=16)
    assert reply.text in choices
    form = sent[-1]["response_format"]  # json_schema, or json_object + schema after the server refused that form
    schema = form["json_schema"]["schema"] if "json_schema" in form else form["schema"]
    assert schema["properties"]["answer"]["enum"] == choices


def _many_choices() -> list[str]:
    """Copy's allowed answers: runs of a passage's words, some with inner quotes (what broke the enum)."""
    words = 'The "kui" bridge of Orlinsford spans the river Velkra near the old mill and the market square'.split()
    runs = [" ".join(words[i:j]) for i in range(len(words)) for j in range(i + 1, min(len(words), i + 8) + 1)]
    return list(dict.fromkeys(runs)) + ["not in your notes"]


def test_many_allowed_answers_go_to_a_llama_cpp_server_as_a_grammar(served: ServerProcess):
    llm = OpenAICompatLLM(llm_settings(served.url))
    sent = _sent_bodies(llm)
    choices = _many_choices()
    assert len(choices) >= 64
    reply = RecordingLLM(llm).chat([{"role": "user", "content": "Which river does the bridge span? A few words."}],
                                   choices=choices, max_tokens=24)
    assert reply.text in choices, reply.text
    assert "grammar" in sent[-1] and "response_format" not in sent[-1] and '\\"kui\\"' in sent[-1]["grammar"]


def test_a_server_that_refuses_a_grammar_gets_the_enum_from_then_on():
    answer = json.dumps({"answer": "the river Velkra"})
    enum_reply = {"choices": [{"message": {"content": answer}, "finish_reason": "stop"}], "model": "m"}
    script = [StubReply(400, {"error": {"message": "Unrecognized request argument supplied: grammar"}}),
              StubReply(200, enum_reply), StubReply(200, enum_reply)]
    with Stub(script) as stub:
        llm = OpenAICompatLLM(llm_settings(stub.url, url_model="m"))
        choices = _many_choices()
        for _ in range(2):
            assert llm.chat([{"role": "user", "content": "Which river?"}], choices=choices, max_tokens=24).text == \
                "the river Velkra"
        sent = [c.body for c in stub.chats()]
        assert ["grammar" in b for b in sent] == [True, False, False], "refused once, not sent again"
        assert sent[1]["response_format"]["json_schema"]["schema"]["properties"]["answer"]["enum"] == choices
