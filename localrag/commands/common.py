"""Shared helpers for commands: settings from flags, error reporting, output."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from rich.console import Console

from localrag.config import ConfigError, Settings, load_settings

console = Console(highlight=False)
err_console = Console(stderr=True, highlight=False)


class UserError(Exception):
    """An error with a message meant for the user (no traceback)."""


def settings_from(args: argparse.Namespace, folder: str | None = None, **extra: Any) -> Settings:
    overrides: dict[str, Any] = {
        "db": getattr(args, "db", None),
        "llm.model": getattr(args, "model", None),
        "llm.url": getattr(args, "llm_url", None),
        "llm.url_model": getattr(args, "llm_model", None),
        "llm.concurrency": getattr(args, "concurrency", None),
        "llm.index_model": getattr(args, "index_model", None),
    }
    overrides.update(extra)
    return load_settings(folder if folder is not None else getattr(args, "folder", None) or ".",
                         overrides, config_file=getattr(args, "config", None))


def add_folder(p: argparse.ArgumentParser, required: bool = False) -> None:
    p.add_argument("folder", nargs=None if required else "?", default=None if required else ".",
                   help="notes folder" + ("" if required else " (default: current folder)"))


def run_command(args: argparse.Namespace) -> int:
    from localrag.api import EmptyIndexError
    from localrag.embed import EmbedderError
    from localrag.llm.base import LLMError
    from localrag.store import StoreError
    from localrag.store.lock import LockBusy

    try:
        return int(args.func(args) or 0)
    except (UserError, ConfigError, StoreError, LLMError, EmbedderError, EmptyIndexError, LockBusy,
            FileNotFoundError) as exc:
        err_console.print(f"[bold red]error:[/] {exc}")
        return 1
    except Exception as exc:
        from localrag.store.connection import database_error_message

        message = database_error_message(exc)
        if message is None:
            raise
        err_console.print(f"[bold red]error:[/] {message}")
        return 1
    except KeyboardInterrupt:
        err_console.print("interrupted")
        return 130


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
