"""Shared helpers for commands: settings from flags, argument checks, error reporting, output."""

from __future__ import annotations

import argparse
import os
import sys
import traceback
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.text import Text

from localrag.config import Settings, load_settings
from localrag.errors import FAILURE_EXIT, USAGE_EXIT, LocalragError
from localrag.logs import LogSettingError, configure, tui_log_file, wanted_level

console = Console(highlight=False)
# messages on stderr are never wrapped: one error is one line, whatever the terminal width
err_console = Console(stderr=True, highlight=False, soft_wrap=True)


class UserError(LocalragError):
    """An error with a message meant for the user (no traceback); exit 1."""


class UsageError(UserError):
    """A mistake in the command line (a missing folder, an unknown strategy, an empty question); exit 2."""

    exit_code = USAGE_EXIT


def check_folder(folder: str | os.PathLike[str]) -> Path:
    """The notes folder, if it exists and is a directory; a UsageError otherwise (before any work)."""
    path = Path(folder).expanduser()
    try:
        if path.is_dir():
            if not os.access(path, os.R_OK | os.X_OK):
                raise UsageError(f"cannot read the notes folder {path}: permission denied")
            return path
        exists = path.exists() or path.is_symlink()
    except OSError as exc:
        raise UsageError(f"cannot use the notes folder {path}: {exc.strerror or exc}") from exc
    if exists:
        raise UsageError(f"{path} is a file, not a folder: give the folder that holds your notes")
    raise UsageError(f"notes folder not found: {path}")


def check_strategy(name: str | None) -> None:
    """An unknown strategy name is a usage error, found before the folder is synced."""
    if name is None or name == "auto":
        return
    # loaded on use: the pipeline (numpy, SQLite, the embedder) stays out of `localrag --help`
    from localrag.retrieve import strategy_names

    names = strategy_names()
    if name not in names:
        raise UsageError(f"unknown strategy {name!r}; choose one of: auto, {', '.join(names)}")


def check_model_name(value: str) -> None:
    """``--model NAME`` that no model store lists is a usage error, found before any work (a path is checked on load)."""
    # loaded on use: the model stores' walk stays out of `localrag --help`
    from localrag.llm.discovery import UnknownModel, by_name, is_path

    if is_path(value):
        return
    try:
        by_name(value)
    except UnknownModel as exc:
        raise UsageError(str(exc)) from exc


def settings_from(args: argparse.Namespace, folder: str | None = None, *, check: bool = True, **extra: Any) -> Settings:
    """Settings for ``folder`` (checked to be an existing directory unless ``check`` is False)."""
    overrides: dict[str, Any] = {
        "db": getattr(args, "db", None),
        "llm.model": getattr(args, "model", None),
        "llm.url": getattr(args, "llm_url", None),
        "llm.url_model": getattr(args, "llm_model", None),
        "llm.concurrency": getattr(args, "concurrency", None),
        "llm.index_model": getattr(args, "index_model", None),
    }
    overrides.update(extra)
    if getattr(args, "model", None):
        check_model_name(args.model)
    folder = folder if folder is not None else getattr(args, "folder", None) or "."
    if check:
        check_folder(folder)
    config = getattr(args, "config", None)
    if config and not Path(config).expanduser().is_file():
        raise UsageError(f"config file not found: {config}" if not Path(config).expanduser().exists()
                         else f"--config {config} is not a file: give a TOML file")
    settings = load_settings(folder, overrides, config_file=config)
    check_db_path(settings.db_path)
    return settings


def check_db_path(db: Path) -> None:
    """An index path that is a folder is a usage error, found before anything is created beside it."""
    if db.is_dir():
        raise UsageError(f"the index path {db} is a folder: give the index file (e.g. --db {db / 'index.db'})")


def readable_text(text: str) -> str:
    """Text from the command line as valid Unicode: bytes that are not UTF-8 (Python hands them over
    as lone surrogates, which SQLite and the JSON output refuse) become U+FFFD, as an editor shows them."""
    try:
        return text.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
    except UnicodeEncodeError:  # a surrogate that no byte gave (\ud800-\udbff)
        return "".join("\ufffd" if 0xD800 <= ord(c) <= 0xDFFF else c for c in text)


def indexed_settings(args: argparse.Namespace, folder: str) -> Settings:
    """``settings_from`` for a command that reads an existing index: a clear error when there is none."""
    settings = settings_from(args, folder)
    if not settings.db_path.exists():
        raise UserError(f"{settings.folder_path} is not indexed yet: run `localrag index {folder}`")
    return settings

def add_folder(p: argparse.ArgumentParser, required: bool = False) -> None:
    p.add_argument("folder", nargs=None if required else "?", default=None if required else ".",
                   help="notes folder" + ("" if required else " (default: current folder)"))


def debug_enabled(args: argparse.Namespace | None = None) -> bool:
    env = os.environ.get("LOCALRAG_DEBUG", "").strip().lower()
    return bool(getattr(args, "debug", False)) or env not in ("", "0", "false", "no", "off")


def print_error(message: str) -> None:
    """``error: …`` on stderr as exactly one line."""
    line = " ".join(message.splitlines()).strip() or "unknown error"
    err_console.print(Text.assemble(("error:", "bold red"), " ", line))


def describe_error(exc: BaseException) -> tuple[int, str]:
    """(exit code, one-line message) for an exception that reached the command line."""
    # loaded when an error is described: the store (SQLite, its extensions) stays out of `localrag --help`
    from localrag.store.connection import database_error_message

    if isinstance(exc, LocalragError) and not exc.internal:
        return exc.exit_code, str(exc)
    message = database_error_message(exc)
    if message is not None:
        return FAILURE_EXIT, message
    if isinstance(exc, FileExistsError) and exc.filename and not Path(exc.filename).is_dir():
        return FAILURE_EXIT, f"{exc.filename} is a file where localrag needs a folder: move it away"
    if isinstance(exc, OSError):
        where = f": {exc.filename}" if exc.filename else ""
        return FAILURE_EXIT, f"{exc.strerror or exc}{where}"
    return FAILURE_EXIT, (f"unexpected {type(exc).__name__}: {exc} (a bug: run again with --debug for the "
                          "traceback and report it)")


def start_logging(args: argparse.Namespace) -> None:
    """--verbose / LOCALRAG_LOG: stderr for commands, a file in the folder's .localrag/ for the TUI."""
    try:
        level = wanted_level(bool(getattr(args, "verbose", False)))
    except LogSettingError as exc:
        raise UsageError(str(exc)) from exc
    if level is not None and getattr(args, "command", None) == "tui":
        file = tui_log_file(getattr(args, "folder", None) or ".")
        configure(level if file is not None else None, file=file)
    else:
        configure(level)


def run_command(args: argparse.Namespace) -> int:
    try:
        start_logging(args)
        return int(args.func(args) or 0)
    except KeyboardInterrupt:
        err_console.print("interrupted")
        return 130
    except Exception as exc:
        if debug_enabled(args):
            traceback.print_exc(file=sys.stderr)
        code, message = describe_error(exc)
        print_error(message)
        return code
    finally:
        configure(None)


def human_bytes(n: int) -> str:
    size = float(n)
    for unit in ("B", "KB", "MB", "GB"):
        if size < 1024 or unit == "GB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{n} B"


def write_out(text: str) -> None:
    sys.stdout.write(text)
    sys.stdout.flush()
