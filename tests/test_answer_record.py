"""One JSON form of an answer: `localrag ask --json` and the MCP `ask` tool give the same keys with the
same meaning, both valid against ANSWER_SCHEMA (real index of examples/notes, the quoting writer: no model)."""

from __future__ import annotations

import json
import os

import pytest
from jsonschema import Draft202012Validator
from scripted_llm import ScriptedLLM

from localrag.answer.record import ANSWER_SCHEMA, DETAIL_KEYS
from localrag.api import Index
from localrag.config import load_settings
from localrag.mcp_server.tools import NotesTools, ServerOptions

QUESTION = "What spice goes into the rye and plum loaf?"


@pytest.fixture
def quoting(notes_dir, embedder, monkeypatch):
    """examples/notes indexed, the environment holding only the quoting writer (no model load)."""
    import localrag.embed  # the CLI's default embedder: the session's, loaded once

    monkeypatch.setattr(localrag.embed, "_DEFAULT", embedder)
    for name in [k for k in os.environ if k.startswith("LOCALRAG_")]:
        monkeypatch.delenv(name)
    monkeypatch.setenv("LOCALRAG_ANSWER_WRITER", "quote")
    index = Index(load_settings(notes_dir), embedder)
    index.sync()
    index.close()
    return notes_dir


def _mcp_ask(folder, embedder, **kw) -> dict:
    no_model = ScriptedLLM(lambda m, s, p: AssertionError("the quoting writer calls no model"))
    tools = NotesTools(load_settings(folder), ServerOptions(readonly=True), embedder=embedder, llm=no_model)
    try:
        return json.loads(json.dumps(tools.ask(QUESTION, strategy="hybrid", **kw)))  # as the MCP client reads it
    finally:
        tools.close()


def _cli_ask(folder, capsys) -> dict:
    from localrag.cli import main  # the command line, in process

    assert main(["ask", QUESTION, "-f", str(folder), "--json", "--strategy", "hybrid", "--no-sync"]) == 0
    return json.loads(capsys.readouterr().out)


def _nested_keys(record: dict) -> dict[str, set[str]]:
    return {key: set().union(*(set(item) for item in record[key]))
            for key in ("citations", "given", "passages", "evidence", "llm_calls")}


def test_ask_json_and_the_mcp_ask_tool_share_one_schema(quoting, embedder, capsys):
    mcp = _mcp_ask(quoting, embedder)  # read-only first: it writes nothing the CLI's answer could read
    mcp_full = _mcp_ask(quoting, embedder, trace=True)
    cli = _cli_ask(quoting, capsys)
    validator = Draft202012Validator(ANSWER_SCHEMA)
    for name, record in (("ask --json", cli), ("MCP ask", mcp), ("MCP ask, trace", mcp_full)):
        errors = [f"{'/'.join(map(str, e.path))}: {e.message}" for e in validator.iter_errors(record)]
        assert errors == [], name

    assert set(cli) == set(mcp_full) == set(ANSWER_SCHEMA["properties"])
    assert set(mcp) == set(cli) - set(DETAIL_KEYS) and set(DETAIL_KEYS) <= set(cli)
    assert _nested_keys(cli) == _nested_keys(mcp)
    # the same meaning: evidence is sentences, passages are what was retrieved, citations what the answer cites
    assert cli["evidence"] and cli["evidence"] == mcp["evidence"] and "line" in cli["evidence"][0]
    assert [p["location"] for p in cli["passages"]] == [p["location"] for p in mcp["passages"]]
    assert [p["text"] for p in cli["passages"]] == [p["text"] for p in mcp["passages"]]
    assert cli["citations"] == mcp["citations"] and all(c["cited"] for c in cli["citations"])
    assert cli["given"] == mcp["given"] and not any(c["cited"] for c in cli["given"])
    for key in ("answer", "short_answer", "answer_sentence", "abstained", "picked_by", "mode", "strategy", "filter"):
        assert cli[key] == mcp[key], key
    assert cli["citations"] and cli["given"] and cli["answer_sentence"] and not cli["abstained"]


def test_the_schema_refuses_a_record_of_another_shape(quoting, embedder):
    record = _mcp_ask(quoting, embedder)
    validator = Draft202012Validator(ANSWER_SCHEMA)
    for broken in ({**record, "cost": {}}, {k: v for k, v in record.items() if k != "passages"},
                   {**record, "evidence": record["passages"]}):
        assert not validator.is_valid(broken)
