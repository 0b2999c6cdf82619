"""`localrag mcp` end to end: the official MCP SDK's own client talks to the server over stdio,
against a real index of examples/notes and the real bundled model."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import anyio
import pytest
from kg_helpers import kg_settings
from mcp import Client, StdioServerParameters

from localrag.api import Index

REPO = Path(__file__).resolve().parents[1]


def _text(result) -> str:
    return "".join(getattr(c, "text", "") for c in result.content)


def _data(result) -> dict:
    assert not result.is_error, _text(result)
    if result.structured_content:
        data = result.structured_content
        return data.get("result", data) if isinstance(data, dict) else data
    return json.loads(_text(result))


@pytest.fixture
def indexed_notes(notes_dir, embedder) -> Path:
    index = Index(kg_settings(notes_dir), embedder=embedder)
    index.sync()
    index.extract_graph()
    index.close()
    (notes_dir.parent / "outside.txt").write_text("a file beside the notes folder\n", encoding="utf-8")
    return notes_dir


def _server(folder: Path, model: Path, *extra: str) -> StdioServerParameters:
    env = {**os.environ, "PYTHONPATH": str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""),
           "LOCALRAG_INDEX_EXTRACTOR": "rules"}
    return StdioServerParameters(command=sys.executable, args=["-m", "localrag", "mcp", str(folder), "--model", str(model),
                                                               *extra], env=env, cwd=str(folder.parent))


def test_mcp_server_over_stdio_with_the_sdk_client(indexed_notes, bundled_model):
    folder = indexed_notes
    seen_progress: list[tuple[float, float | None, str | None]] = []

    async def on_progress(done: float, total: float | None, message: str | None) -> None:
        seen_progress.append((done, total, message))

    async def session() -> dict:
        out: dict = {}
        async with Client(_server(folder, bundled_model), read_timeout_seconds=600) as client:
            out["tools"] = {t.name: t for t in (await client.list_tools()).tools}
            out["search"] = _data(await client.call_tool(
                "search", {"query": "Who leads the Lanternfish project?", "k": 4}))
            out["filtered"] = _data(await client.call_tool(
                "search", {"query": "Who leads the Lanternfish project?", "k": 4, "filters": ["-path:projects/"]}))
            out["ask"] = _data(await client.call_tool(
                "ask", {"question": "What spice goes into the rye and plum loaf?", "strategy": "hybrid"},
                progress_callback=on_progress))
            out["status"] = _data(await client.call_tool("status", {}))
            first = out["ask"]["citations"][0]
            out["opened"] = _data(await client.call_tool(
                "open", {"path": first["path"], "lines": f"{first['start_line']}-{first['end_line']}"}))
            out["outside"] = await client.call_tool("open", {"path": "../outside.txt"})
            out["absolute"] = await client.call_tool("open", {"path": str(folder.parent / "outside.txt")})
            out["index_file"] = await client.call_tool("open", {"path": ".localrag/index.db"})
            out["bad_type"] = await client.call_tool("search", {"query": "x", "k": "many"})
            out["missing"] = await client.call_tool("ask", {})
            out["bad_filter"] = await client.call_tool("search", {"query": "x", "filters": ["colour:red"]})
            out["unknown"] = await client.call_tool("delete_everything", {})
            out["nul"] = await client.call_tool("open", {"path": "projects/lanternfish.md\x00.txt"})
            out["after"] = _data(await client.call_tool("status", {}))  # the server survived all of it
        return out

    got = anyio.run(session)
    assert set(got["tools"]) == {"search", "ask", "status", "open"}
    assert "query" in got["tools"]["search"].input_schema["properties"]

    hits = got["search"]["passages"]
    assert hits[0]["path"] == "projects/lanternfish.md"
    assert hits[0]["location"] == f"{hits[0]['path']}:{hits[0]['start_line']}-{hits[0]['end_line']}"
    assert [h["score"] for h in hits] == sorted((h["score"] for h in hits), reverse=True)
    assert got["filtered"]["passages"] and not any(h["path"].startswith("projects/") for h in got["filtered"]["passages"])

    answer = got["ask"]
    assert answer["answer"] and answer["citations"] and answer["evidence"] and answer["passages"]
    assert answer["citations"][0]["path"] == "rye-and-plum-loaf.md"
    # the bundled model is below answer.write_min_params: the answer is quoted from the evidence, no call
    assert answer["picked_by"] == "quote" and not answer["abstained"]
    assert answer["short_answer"] == "cardamom" and answer["short_answer"] in answer["answer_sentence"]["text"]
    assert answer["llm_calls"] == [] and answer["tokens"]["total"] == 0
    assert "trace" not in answer and "trace" in got["tools"]["ask"].input_schema["properties"]
    assert seen_progress and seen_progress[-1][0] == seen_progress[-1][1]  # progress notifications, ending done
    # the cited lines, opened through the server, are the retrieved passage's text
    opened, first = got["opened"], answer["citations"][0]
    cited = next(p for p in answer["passages"] if p["location"] == first["location"])
    assert opened["location"] == first["location"] and opened["text"].strip() == cited["text"].strip()
    file_lines = (folder / first["path"]).read_text().split("\n")
    assert opened["text"] == "\n".join(file_lines[first["start_line"] - 1:first["end_line"]])

    assert got["status"]["documents"] == len(list(folder.rglob("*.md"))) and got["status"]["readonly"] is True
    for key in ("outside", "absolute"):
        assert got[key].is_error and "outside the notes folder" in _text(got[key])
    assert got["index_file"].is_error and "the index itself" in _text(got["index_file"])
    assert got["bad_type"].is_error and "k" in _text(got["bad_type"])
    assert got["missing"].is_error and "question" in _text(got["missing"])
    assert got["bad_filter"].is_error and "cannot read the filter" in _text(got["bad_filter"])
    assert got["unknown"].is_error and "Unknown tool" in _text(got["unknown"])
    assert got["nul"].is_error and "the path holds a NUL byte, which no file name can" in _text(got["nul"])
    assert got["after"]["documents"] == got["status"]["documents"]


def test_mcp_refuses_a_folder_that_is_not_indexed(tmp_path, bundled_model):
    import subprocess

    folder = tmp_path / "empty"
    folder.mkdir()
    (folder / "a.md").write_text("# A\n\nText.\n", encoding="utf-8")
    r = subprocess.run([sys.executable, "-m", "localrag", "mcp", str(folder)], capture_output=True, text=True,
                       timeout=300, stdin=subprocess.DEVNULL,
                       env={**os.environ, "PYTHONPATH": str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", "")})
    assert r.returncode == 1 and "not indexed yet" in r.stderr and "Traceback" not in r.stderr
    assert not (folder / ".localrag").exists()  # read-only: nothing written


class RawClient:
    """JSON-RPC lines written to the server as bytes, as a client the SDK could not be (it refuses to
    send a lone surrogate); each reply read with a deadline, so a dropped request fails instead of hanging."""

    def __init__(self, params: StdioServerParameters) -> None:
        import subprocess

        self.proc = subprocess.Popen([params.command, *params.args], env=params.env, cwd=params.cwd,
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)

    def send(self, line: bytes) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(line + b"\n")
        self.proc.stdin.flush()

    def reply(self, timeout_s: float = 120) -> dict:
        import select

        assert self.proc.stdout is not None
        ready, _, _ = select.select([self.proc.stdout], [], [], timeout_s)
        assert ready, f"no reply within {timeout_s} s"
        return json.loads(self.proc.stdout.readline())

    def call(self, request_id: int | str, tool: str, arguments: str) -> bytes:
        return (f'{{"jsonrpc":"2.0","id":{json.dumps(request_id)},"method":"tools/call",'
                f'"params":{{"name":"{tool}","arguments":{arguments}}}}}').encode()

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        self.proc.wait(60)


def test_mcp_answers_every_request_bad_bytes_included(indexed_notes, bundled_model):
    client = RawClient(_server(indexed_notes, bundled_model))
    try:
        client.send(json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}}}).encode())
        assert client.reply(300)["id"] == 1
        client.send(b'{"jsonrpc":"2.0","method":"notifications/initialized"}')
        replies: dict[str, dict] = {}
        lines = {
            "surrogate": client.call(2, "open", '{"path":"a\\udcffb.md"}'),  # a JSON escape of half a pair
            "nul": client.call(3, "open", '{"path":"people/\\u0000x.md"}'),
            # bytes that are not UTF-8
            "bytes": client.call(4, "search", '{"query":"lanternfish @@ project","k":1}').replace(b"@@", b"\xff\xfe"),
            "pair": client.call(5, "search", '{"query":"lanternfish \\ud83d\\ude00","k":1}'),  # one character
            "not_json": b'{"jsonrpc":"2.0","id":6,"method"',
            "not_rpc": b'{"jsonrpc":"2.0","id":7,"method":5}',
            "reused_id": client.call(2, "open", '{"path":"projects/lanternfish.md","lines":"1"}'),
        }
        for name, line in lines.items():
            client.send(line)
            replies[name] = client.reply()
        client.send(b"")  # a blank line is no request: nothing owed, the next one is still answered
        client.send(client.call(8, "status", "{}"))
        replies["after"] = client.reply()
    finally:
        client.close()

    def error_text(reply: dict) -> str:
        result = reply["result"]
        assert result["isError"], reply
        return result["content"][0]["text"]

    assert replies["surrogate"]["id"] == 2 and "lone surrogate" in error_text(replies["surrogate"])
    assert replies["nul"]["id"] == 3 and "holds a NUL byte" in error_text(replies["nul"])
    for name in ("bytes", "pair"):
        found = json.loads(replies[name]["result"]["content"][0]["text"])
        assert found["passages"][0]["path"] == "projects/lanternfish.md", name
    assert json.loads(replies["bytes"]["result"]["content"][0]["text"])["query"] == "lanternfish \ufffd\ufffd project"
    assert replies["not_json"]["id"] is None and replies["not_json"]["error"]["code"] == -32700
    assert "not JSON" in replies["not_json"]["error"]["message"]
    assert replies["not_rpc"]["id"] == 7 and replies["not_rpc"]["error"]["code"] == -32600
    assert "method" in replies["not_rpc"]["error"]["message"]
    assert replies["reused_id"]["id"] == 2 and not replies["reused_id"]["result"].get("isError")
    assert replies["after"]["id"] == 8 and json.loads(replies["after"]["result"]["content"][0]["text"])["documents"] > 0
