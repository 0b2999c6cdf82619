"""Reads kept until the next write: keyed by the store's change mark, so any commit (this
connection's or another process's) drops them all."""

from __future__ import annotations

from typing import Callable, Generic, Hashable, TypeVar

V = TypeVar("V")


class UntilWrite(Generic[V]):
    """Values computed from the index by key, each computed once between two writes."""

    def __init__(self, change_mark: Callable[[], tuple[int, int]]) -> None:
        self._change_mark = change_mark
        self._mark: tuple[int, int] | None = None
        self._values: dict[Hashable, V] = {}

    def get(self, key: Hashable, compute: Callable[[], V]) -> V:
        mark = self._change_mark()
        if mark != self._mark:
            self._mark, self._values = mark, {}
        if key not in self._values:
            self._values[key] = compute()
        return self._values[key]
