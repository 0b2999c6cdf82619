"""Where localrag's log records go: nowhere unless asked for, then stderr, or a file under the TUI.

Modules log what they recover from (a cache write that failed, a consumer that raised) with
``logging.getLogger(__name__)``. By default nothing is shown: the "localrag" logger has a
NullHandler, so Python's last-resort handler never prints warnings into a command's output.
``--verbose`` (level info) or ``LOCALRAG_LOG=debug|info|warning`` turns them on: on stderr for
commands, and in ``FOLDER/.localrag/localrag.log`` for the terminal UI, where stderr would draw
over the screen.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import IO, Mapping

from localrag.errors import LocalragError

ENV = "LOCALRAG_LOG"
LEVELS = {"debug": logging.DEBUG, "info": logging.INFO, "warning": logging.WARNING}
LOG_FILE = "localrag.log"  # in the folder's .localrag/ directory, next to the index

_root = logging.getLogger("localrag")  # its NullHandler is added in localrag/__init__.py
_handler: logging.Handler | None = None  # the one configure() installed last


class LogSettingError(LocalragError, ValueError):
    """LOCALRAG_LOG names no level."""

    internal = True


def wanted_level(verbose: bool, env: Mapping[str, str] | None = None) -> int | None:
    """The level asked for (LOCALRAG_LOG wins over --verbose), or None: no logging."""
    name = (os.environ if env is None else env).get(ENV, "").strip().lower()
    if name:
        if name not in LEVELS:
            raise LogSettingError(f"{ENV}={name!r}: choose one of {', '.join(LEVELS)}")
        return LEVELS[name]
    return logging.INFO if verbose else None


class _FolderFileHandler(logging.FileHandler):
    """A log file opened at the first record, its .localrag/ directory created then (the folder exists)."""

    def _open(self) -> IO[str]:
        Path(self.baseFilename).parent.mkdir(exist_ok=True)
        return super()._open()


def configure(level: int | None, *, file: Path | None = None) -> logging.Handler | None:
    """Send localrag's records at ``level`` and above to stderr (or to ``file``); None turns it off."""
    global _handler
    if _handler is not None:
        _root.removeHandler(_handler)
        _handler.close()
        _handler = None
    if level is None:
        _root.setLevel(logging.NOTSET)
        return None
    if file is not None:
        handler: logging.Handler = _FolderFileHandler(file, encoding="utf-8", delay=True)
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    else:
        handler = logging.StreamHandler()
        handler.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))
    _root.addHandler(handler)
    _root.setLevel(level)
    _handler = handler
    return handler


def tui_log_file(folder: str | os.PathLike[str]) -> Path | None:
    """The TUI's log file for this notes folder (None when the folder does not exist: nothing to log into)."""
    path = Path(folder).expanduser()
    return path / ".localrag" / LOG_FILE if path.is_dir() else None
