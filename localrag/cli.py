"""Command line: `localrag [FOLDER]` opens the TUI; subcommands run headless.

Each command group lives in ``localrag/commands/<name>.py`` and exposes
``register(subparsers, common)``; this module only assembles them.
"""

from __future__ import annotations

import argparse
import importlib
import sys

from localrag import __version__

COMMAND_MODULES = ["index", "ask", "status", "doctor", "bench", "watch", "graph", "memory", "feedback", "tui"]


def common_parser() -> argparse.ArgumentParser:
    """Options every command accepts (folder-level settings)."""
    p = argparse.ArgumentParser(add_help=False)
    p.add_argument("--db", help="index database (default: FOLDER/.localrag/index.db)")
    p.add_argument("--config", help="extra TOML config file")
    p.add_argument("--model", help="GGUF model file (default: largest *.gguf in models/, else the bundled SmolLM2)")
    p.add_argument("--llm-url", help="OpenAI-compatible server base URL (llama.cpp server, vLLM, Ollama)")
    p.add_argument("--llm-model", help="model name on the server given by --llm-url")
    p.add_argument("--concurrency", type=int, help="requests in flight for graph extraction with a served model")
    p.add_argument("--index-model", help="model for graph extraction only: a GGUF path (in process) or a model "
                   "name on --llm-url (default: the same model as answers)")
    return p


def build_parser() -> argparse.ArgumentParser:
    common = common_parser()
    parser = argparse.ArgumentParser(
        prog="localrag",
        description="Local-first assistant for your notes: indexes a folder into a knowledge graph and "
        "answers questions offline with citations. `localrag [FOLDER]` opens the terminal UI.",
        parents=[common],
    )
    parser.add_argument("--version", action="version", version=f"localrag {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMAND_MODULES:
        try:
            module = importlib.import_module(f"localrag.commands.{name}")
        except ModuleNotFoundError as exc:
            if exc.name == f"localrag.commands.{name}":
                continue
            raise
        module.register(sub, common)
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser()
    known = set(parser._subparsers._group_actions[0].choices) if parser._subparsers else set()
    # `localrag`, `localrag FOLDER` and `localrag --model X FOLDER` open the TUI
    first_positional = next((a for a in argv if not a.startswith("-")), None)
    if "-h" not in argv and "--help" not in argv and "--version" not in argv and (
        first_positional is None or first_positional not in known
    ):
        argv = ["tui", *argv] if "tui" in known else argv
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    from localrag.commands.common import run_command

    return run_command(args)
