"""Rates and ETAs for the progress rows (pure Python, so it is easy to test)."""

from __future__ import annotations

import time
from collections import deque
from dataclasses import dataclass, field
from typing import Callable

WINDOW_S = 20.0  # rate over the last 20 s: follows a slow-down without jumping on every tick


@dataclass
class RateMeter:
    """Items per second over a sliding window, and the time left at that rate."""

    clock: Callable[[], float] = time.monotonic
    window_s: float = WINDOW_S
    _samples: deque = field(default_factory=deque)  # (time, done)

    def reset(self) -> None:
        self._samples.clear()

    def add(self, done: int) -> None:
        now = self.clock()
        if self._samples and done < self._samples[-1][1]:
            self._samples.clear()  # a new run started counting from zero
        self._samples.append((now, done))
        while len(self._samples) > 2 and now - self._samples[0][0] > self.window_s:
            self._samples.popleft()

    def rate(self) -> float | None:
        if len(self._samples) < 2:
            return None
        (t0, d0), (t1, d1) = self._samples[0], self._samples[-1]
        if t1 <= t0 or d1 <= d0:
            return None
        return (d1 - d0) / (t1 - t0)

    def eta_s(self, total: int) -> float | None:
        rate = self.rate()
        if rate is None or not self._samples:
            return None
        left = max(0, total - self._samples[-1][1])
        return left / rate


def format_eta(seconds: float | None) -> str:
    if seconds is None:
        return "ETA —"
    seconds = int(round(seconds))
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    return f"ETA {hours}:{minutes:02d}:{secs:02d}" if hours else f"ETA {minutes}:{secs:02d}"


def format_rate(rate: float | None, unit: str) -> str:
    if rate is None:
        return f"— {unit}/s"
    return f"{rate:.1f} {unit}/s" if rate < 10 else f"{rate:.0f} {unit}/s"
