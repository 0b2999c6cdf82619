"""How the screen shows the figures that change from run to run: times, durations, rates, sizes, paths.

The app takes one ``Presentation`` (the real one by default) and every widget formats those
figures through it. A method that returns None means "leave the figure out"; tests inject a
presentation that does so (or one with a fixed clock), which is what makes snapshots repeatable.
"""

from __future__ import annotations

import datetime as _dt
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from localrag.commands.common import human_bytes
from localrag.tui.rates import format_eta, format_rate


@dataclass(frozen=True)
class Presentation:
    """The real presentation: the wall clock, every figure shown, absolute paths, a blinking cursor."""

    clock: Callable[[], float] = time.time
    cursor_blink: bool = True

    def time_of_day(self) -> str:
        """"14:03:12 " (with its trailing space) before a watcher event; "" leaves it out."""
        return _dt.datetime.fromtimestamp(self.clock()).strftime("%H:%M:%S ")

    def date(self, timestamp: float) -> str | None:
        return _dt.datetime.fromtimestamp(timestamp).strftime("%Y-%m-%d %H:%M")

    def seconds(self, seconds: float, digits: int = 2) -> str | None:
        return f"{seconds:.{digits}f} s"

    def rate(self, rate: float | None, eta_s: float | None, unit: str) -> str | None:
        return f"{format_rate(rate, unit)}  {format_eta(eta_s)}"

    def size(self, n_bytes: int) -> str | None:
        return human_bytes(n_bytes)

    def folder(self, folder: str | Path) -> str:
        return str(folder)

    def database(self, db_path: str) -> str:
        return db_path

    def ocr(self, summary: str) -> str | None:
        """Which OCR engine this machine has for scanned PDFs (the same index shows another elsewhere)."""
        return summary
