"""The stdio transport, made to answer every request.

The SDK's stdio transport drops a line it cannot parse without answering, so a client that sent
it waits forever. Two cases are handled here:

- JSON may escape a lone surrogate (``"\\udcff"``), which is no Unicode text, and the SDK's
  parser refuses it. ``clean_line`` makes such a string's surrogates U+FFFD; the request's id is
  kept in ``CleanLines.tainted`` so that the tool call is refused with a clear error.
- Any other line that is no JSON-RPC message (not JSON, a wrong field) gets a JSON-RPC error
  reply: with the line's id when it has one, with id null (as JSON-RPC asks) when it has none.

Bytes that are not UTF-8 are decoded with U+FFFD before any of this (as the SDK does itself).
"""

from __future__ import annotations

import io
import json
import os
import re
import sys
from collections import deque
from typing import Any

import anyio
import mcp.types as types
from mcp.server.stdio import stdio_server
from mcp.shared.message import SessionMessage
from pydantic import ValidationError

_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")  # JSON's escape of a surrogate half
_SURROGATE = re.compile("[\ud800-\udfff]")
BAD_TEXT = ("the request holds a lone surrogate (e.g. \\udcff: half of a UTF-16 pair, not a character), "
            "which is not text localrag can search or store: send the arguments as UTF-8 text")
RequestId = int | str | None


def _readable(value: Any) -> Any:
    """``value`` (parsed JSON) with every lone surrogate in its strings made U+FFFD."""
    if isinstance(value, str):
        return _SURROGATE.sub("\ufffd", value)
    if isinstance(value, list):
        return [_readable(v) for v in value]
    if isinstance(value, dict):
        return {_readable(k): _readable(v) for k, v in value.items()}
    return value


def clean_line(line: str) -> tuple[str, str | None]:
    """A JSON-RPC line the SDK can parse, and the id of the request when its text held a lone surrogate."""
    if not _SURROGATE_ESCAPE.search(line):
        return line, None  # the usual case: no escape of a surrogate at all
    try:
        message = json.loads(line)
    except ValueError:
        return line, None  # not JSON: answered as a parse error
    cleaned = _readable(message)
    if cleaned == message:
        return line, None  # a surrogate pair (\\ud83d\\ude00) is one character: nothing to change
    request_id = message.get("id") if isinstance(message, dict) else None
    return json.dumps(cleaned) + "\n", None if request_id is None else str(_readable(request_id))


def unreadable_reply(line: str) -> SessionMessage | None:
    """The error reply to a line that is no JSON-RPC message (None: the line is one, or blank)."""
    if not line.strip():
        return None
    try:
        types.jsonrpc_message_adapter.validate_json(line, by_name=False)
        return None
    except ValidationError as exc:
        problem = _first_problem(exc)
    try:
        message = json.loads(line)
    except ValueError:
        message = None
    if message is None:
        code, text = types.PARSE_ERROR, "the request is not JSON"
    else:
        code, text = types.INVALID_REQUEST, "the request is not a JSON-RPC 2.0 message"
    raw_id = message.get("id") if isinstance(message, dict) else None
    request_id: RequestId = raw_id if isinstance(raw_id, (str, int)) and not isinstance(raw_id, bool) else None
    error = types.ErrorData(code=code, message=f"{text} ({problem})")
    return SessionMessage(types.JSONRPCError(jsonrpc="2.0", id=request_id, error=error))


def _first_problem(exc: ValidationError) -> str:
    """The first thing pydantic found wrong, in a few words (the field, then what is wrong with it)."""
    first = exc.errors(include_url=False)[0]
    where = ".".join(str(part) for part in first.get("loc", ()))
    return f"{where}: {first['msg']}" if where else str(first["msg"])


class CleanLines:
    """The client's lines as the SDK's transport reads them (``readline``), passed through ``clean_line``;
    ``tainted``: the ids of the requests that held a lone surrogate; ``replies``: the error replies owed
    to the lines the SDK will fail to parse, in their order."""

    def __init__(self, raw: io.TextIOBase) -> None:
        self._raw = raw
        self.tainted: set[str] = set()
        self.replies: deque[SessionMessage | None] = deque()

    def readline(self) -> str:
        line, bad = clean_line(self._raw.readline())
        if bad is not None:
            self.tainted.add(bad)
        reply = unreadable_reply(line)
        if reply is not None or (line and not line.strip()):
            self.replies.append(reply)  # a blank line fails the SDK's parse too, and is owed nothing
        return line

    def close(self) -> None:
        self._raw.close()


class AnsweringReader:
    """The transport's read stream; each parse failure it yields is answered with the error reply
    ``CleanLines`` prepared for that line, and not passed on."""

    def __init__(self, inner: Any, write_stream: Any, replies: deque[SessionMessage | None]) -> None:
        self._inner = inner
        self._write = write_stream
        self._replies = replies

    @property
    def last_context(self) -> Any:
        return getattr(self._inner, "last_context", None)

    async def receive(self) -> Any:
        while True:
            item = await self._inner.receive()
            if not isinstance(item, Exception):
                return item
            reply = self._replies.popleft() if self._replies else None
            if reply is not None:
                await self._write.send(reply)

    def __aiter__(self) -> "AnsweringReader":
        return self

    async def __anext__(self) -> Any:
        try:
            return await self.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None

    async def aclose(self) -> None:
        await self._inner.aclose()

    async def __aenter__(self) -> "AnsweringReader":
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


def stdin_lines() -> CleanLines:
    """This process's stdin as ``CleanLines`` (a duplicate descriptor: the SDK diverts fd 0 only when it reads it)."""
    return CleanLines(io.TextIOWrapper(os.fdopen(os.dup(sys.stdin.fileno()), "rb"), encoding="utf-8",
                                       errors="replace"))


async def serve_lines(lowlevel: Any, lines: CleanLines) -> None:
    """``MCPServer.run("stdio")`` (mcp 2.x: its ``run_stdio_async``), reading the client's ``lines``;
    stdout is the SDK's own."""
    async with stdio_server(stdin=anyio.wrap_file(lines)) as (read_stream, write_stream):
        reader = AnsweringReader(read_stream, write_stream, lines.replies)
        await lowlevel.run(reader, write_stream, lowlevel.create_initialization_options())
