"""Small helpers the graph tables share: placeholder lists and id batches under SQLite's limit."""

from __future__ import annotations

from typing import Iterable, Sequence


def marks(n: int) -> str:
    return ",".join("?" * n)


def chunks(items: Sequence, size: int = 500) -> Iterable[Sequence]:
    for start in range(0, len(items), size):
        yield items[start:start + size]
