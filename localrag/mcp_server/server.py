"""`localrag mcp FOLDER`: the index as a Model Context Protocol server over stdio (the official
``mcp`` SDK). Tools: search, ask, status, open (docs/mcp.md says what each returns).

Tool work runs on a worker thread (embedding, SQLite and llama.cpp all block), so the event
loop keeps answering and sends MCP progress notifications while a long call runs.

Every request gets a reply (``transport.py``: a line the SDK cannot parse, a lone surrogate); a
tool call whose text held a lone surrogate is refused with a clear error, and any other failure
of a tool is a one-line error text (``describe_error``, as on the command line).
"""

from __future__ import annotations

import logging
from typing import Annotated, Any, Callable

import anyio
import anyio.from_thread
import anyio.to_thread
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from pydantic import Field

from localrag import __version__
from localrag.commands.common import describe_error
from localrag.mcp_server.tools import NotesTools, ToolRefused
from localrag.mcp_server.transport import BAD_TEXT, serve_lines, stdin_lines

logger = logging.getLogger(__name__)

INSTRUCTIONS = (
    "Search and question the user's notes folder, indexed by localrag (offline, with a knowledge graph). "
    "`search` returns ranked passages with path:lines and scores; `ask` answers from the notes with numbered "
    "citations; `open` shows a note's lines (cite what you use as path:lines, or a document's path and page "
    "as its citation gives it: report.pdf p. 12); `status` tells what is indexed. "
    "Filters: tag:NAME (nested tags included), path:FOLDER/, -path:FOLDER/."
)


async def _run(ctx: Context | None, work: Callable[..., dict], *args: Any, tainted: set[str] | None = None) -> dict:
    """``work(*args, progress)`` on a worker thread; its progress goes out as MCP notifications."""
    if ctx is not None and tainted and str(ctx.request_id) in tainted:
        tainted.discard(str(ctx.request_id))  # a client may use the id again once this is answered
        raise ToolError(BAD_TEXT)

    def progress(done: float, total: float, message: str) -> None:
        if ctx is None:
            return
        try:
            anyio.from_thread.run(ctx.report_progress, done, total, message)
        except Exception:  # a client that went away must not fail the call
            logger.debug("progress not sent to the client", exc_info=True)

    try:
        return await anyio.to_thread.run_sync(lambda: work(*args, progress))
    except ToolRefused as exc:
        raise ToolError(str(exc)) from exc
    except Exception as exc:  # the calling assistant gets the reason, the server log the traceback
        logger.debug("tool call failed", exc_info=True)
        raise ToolError(describe_error(exc)[1]) from exc


def build_server(tools: NotesTools, tainted: set[str] | None = None) -> MCPServer:
    """The four tools; ``tainted``: ids of requests whose text held a lone surrogate (refused)."""
    server = MCPServer(name="localrag", title="localrag notes", version=__version__, instructions=INSTRUCTIONS)

    @server.tool(description="Ranked passages of the notes for a query, each with its path:lines location, "
                 "score and text. No language model is used by the default strategy (hybrid).")
    async def search(
        query: Annotated[str, Field(description="what to look for, in words")],
        k: Annotated[int, Field(description="passages to return (1-50)")] = 5,
        strategy: Annotated[str, Field(description="auto, dense, lexical, hybrid, ppr, neuropath or remind")] = "hybrid",
        filters: Annotated[list[str], Field(description="e.g. ['tag:project', 'path:work/', '-path:archive/']")] = [],  # noqa: B006
        ctx: Context | None = None,
    ) -> dict:
        return await _run(ctx, lambda q, kk, s, f, progress: tools.search(q, kk, s, f, progress),
                          query, k, strategy, list(filters), tainted=tainted)

    @server.tool(description="An answer from the notes by the local model, with numbered citations "
                 "(path:lines), the evidence sentences, the retrieved passages and the cost (LLM calls, tokens, "
                 "timings): the JSON of `localrag ask --json`.")
    async def ask(
        question: Annotated[str, Field(description="the question")],
        strategy: Annotated[str, Field(description="auto (default), dense, lexical, hybrid, ppr, neuropath, remind")] = "auto",
        filters: Annotated[list[str], Field(description="e.g. ['tag:project', 'path:work/']")] = [],  # noqa: B006
        trace: Annotated[bool, Field(description="also how the passages were found (the trace and the step events)")] = False,
        ctx: Context | None = None,
    ) -> dict:
        return await _run(ctx, lambda q, s, f, t, progress: tools.ask(q, s, f, None, progress, trace=t),
                          question, strategy, list(filters), trace, tainted=tainted)

    @server.tool(description="What is indexed: documents, passages, graph size, tags and aliases, skipped "
                 "files and warnings (front matter it could not use, bytes that are not UTF-8).")
    async def status(ctx: Context | None = None) -> dict:
        return await _run(ctx, lambda progress: tools.status(), tainted=tainted)

    @server.tool(name="open", description="The text of an indexed note, or of a line range of it (e.g. lines "
                 "'12-20', as in a citation's path:lines). A document (PDF, Word, slides, EPUB, RTF) gives its "
                 "indexed text; 'p. 12' or 'slide 3', as in its citation, picks that page or slide. Only notes "
                 "inside the folder can be opened.")
    async def open_note(
        path: Annotated[str, Field(description="the note's path relative to the notes folder")],
        lines: Annotated[str, Field(description="'START-END' or 'LINE' (or a document's 'p. 12' / 'slide 3'); "
                                                "empty for the start of the note")] = "",
        ctx: Context | None = None,
    ) -> dict:
        return await _run(ctx, lambda p, ln, progress: tools.open(p, ln), path, lines, tainted=tainted)

    return server


def serve(tools: NotesTools) -> None:
    """Sync first unless read-only, then serve on stdin/stdout until the client closes it."""
    tools.sync()
    try:
        anyio.run(_serve_stdio, tools)
    finally:
        tools.close()


async def _serve_stdio(tools: NotesTools) -> None:
    lines = stdin_lines()
    server = build_server(tools, lines.tainted)
    try:
        await serve_lines(server._lowlevel_server, lines)  # what MCPServer.run_stdio_async runs (mcp 2.x)
    finally:
        lines.close()
