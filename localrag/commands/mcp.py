"""`localrag mcp [FOLDER]`: serve the index to other assistants over the Model Context Protocol."""

from __future__ import annotations

import argparse

from localrag.commands.common import UserError, add_folder, settings_from

DESCRIPTION = """\
Serve a notes folder's index to other assistants (editors, desktop chat apps, agents) over the
Model Context Protocol, on stdin/stdout. Tools:
  search  query, k, strategy, filters -> ranked passages with path:lines, scores and text
  ask     question, strategy, filters -> answer, citations, evidence passages, cost
  status  what is indexed, skipped files, warnings (front matter it could not use, bytes not UTF-8)
  open    path, lines -> the text of an indexed note (only notes inside the folder)
Filters: tag:NAME, path:FOLDER/, -path:FOLDER/. Progress of long calls is sent as MCP progress
notifications. Read-only by default: the index must exist (`localrag index FOLDER`) and nothing
is written; --index syncs the folder first and lets answers write the query log and edge memories
(inside the index only). Register it with a client, e.g. in its mcpServers config:
  {"localrag": {"command": "localrag", "args": ["mcp", "/path/to/notes"]}}
docs/mcp.md has snippets for several clients and the tools' replies."""


def register(sub: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser("mcp", parents=[common], help="serve the index to other assistants over MCP (stdio)",
                       description=DESCRIPTION, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_folder(p)
    p.add_argument("--index", action="store_true",
                   help="sync the folder into the index before serving, and let answers learn (writes the index only)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    # loaded on use: the MCP SDK (pydantic, anyio) takes seconds to import
    from localrag.mcp_server.server import serve
    from localrag.mcp_server.tools import NotesTools, ServerOptions, ToolRefused

    readonly = not args.index
    settings = settings_from(args, args.folder, **({"memory.enabled": False} if readonly else {}))
    if not settings.folder_path.is_dir():
        raise UserError(f"notes folder not found: {settings.folder_path}")
    try:
        tools = NotesTools(settings, ServerOptions(readonly=readonly))
    except ToolRefused as exc:
        raise UserError(str(exc)) from exc
    serve(tools)
    return 0
