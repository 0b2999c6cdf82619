"""Command line: `localrag [FOLDER]` opens the TUI; subcommands run headless.

Each command group lives in ``localrag/commands/<name>.py`` and exposes
``register(subparsers, common)``; this module only assembles them.
"""

from __future__ import annotations

import argparse
import importlib
import sys

from localrag import __version__

COMMAND_MODULES = ["index", "ask", "sessions", "status", "models", "doctor", "bench", "watch", "graph", "memory", "feedback", "mcp", "tui"]


class Parser(argparse.ArgumentParser):
    """An argparse parser whose usage errors are one line (exit 2), pointing at --help."""

    def error(self, message: str):  # type: ignore[override]
        self.exit(2, f"{self.prog}: error: {message} (see `{self.prog} --help`)\n")


def common_parser(*, for_command: bool = False) -> argparse.ArgumentParser:
    """Options every command accepts (folder-level settings).

    They are accepted before the command name as well as after it: the copy given to each
    command leaves an option it was not given unset (SUPPRESS) instead of resetting to None
    what the top-level parser already read.
    """
    p = argparse.ArgumentParser(add_help=False, argument_default=argparse.SUPPRESS if for_command else None)
    p.add_argument("--db", help="index database (default: FOLDER/.localrag/index.db)")
    p.add_argument("--config", help="extra TOML config file")
    p.add_argument("--model", help="GGUF model file, or a name `localrag models` lists (qwen2.5:14b); default: the "
                   "largest *.gguf in models/, else the bundled SmolLM2")
    p.add_argument("--llm-url", help="OpenAI-compatible server base URL (llama.cpp server, vLLM, Ollama)")
    p.add_argument("--llm-model", help="model name on the server given by --llm-url")
    p.add_argument("--concurrency", type=int, help="requests in flight for graph extraction with a served model")
    p.add_argument("--index-model", help="model for graph extraction only: a GGUF path (in process) or a model "
                   "name on --llm-url (default: the same model as answers)")
    p.add_argument("--debug", action="store_true", default=argparse.SUPPRESS if for_command else False,
                   help="show the traceback of an error (also LOCALRAG_DEBUG=1)")
    p.add_argument("--verbose", action="store_true", default=argparse.SUPPRESS if for_command else False,
                   help="log what localrag recovers from (errors it works around) on stderr, or in "
                   "FOLDER/.localrag/localrag.log under the terminal UI (also LOCALRAG_LOG=debug|info|warning)")
    return p


def build_parser() -> argparse.ArgumentParser:
    common = common_parser(for_command=True)
    parser = Parser(
        prog="localrag",
        description="Local-first assistant for your notes: indexes a folder into a knowledge graph and "
        "answers questions offline with citations. `localrag [FOLDER]` opens the terminal UI.",
        parents=[common_parser()],
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
    first_positional = _first_positional(argv, _options_with_values(parser))
    if "-h" not in argv and "--help" not in argv and "--version" not in argv and (
        first_positional is None or first_positional not in known
    ):
        argv = ["tui", *argv] if "tui" in known else argv
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    # loaded once a command runs: rich's consoles stay out of argument errors
    from localrag.commands.common import run_command

    return run_command(args)


def _options_with_values(parser: argparse.ArgumentParser) -> set[str]:
    """The top-level option strings that take a value (``--db X``)."""
    return {o for a in parser._actions if a.nargs != 0 for o in a.option_strings}


def _first_positional(argv: list[str], takes_value: set[str]) -> str | None:
    """The first word that is neither an option nor an option's value: the command name, if any."""
    skip = False
    for word in argv:
        if skip:
            skip = False
        elif word == "--":
            return None
        elif word.startswith("-") and word != "-":
            skip = "=" not in word and word in takes_value
        else:
            return word
    return None
