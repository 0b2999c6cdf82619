"""Named plugins: the built-ins, and third-party ones found through entry points.

One ``Registry`` each for retrieval strategies, LLM backends and graph extractors. A
built-in is a ``"module:attribute"`` reference loaded on first use, exactly like an entry
point, so listing the names imports nothing and a strategy module never has to be imported
by the registry's own module. A third-party package adds one with an entry point in its
``pyproject.toml`` (docs/design.md "Plugins")::

    [project.entry-points."localrag.strategies"]
    mine = "my_package.retrieval:MyStrategy"
"""

from __future__ import annotations

import importlib
from importlib import metadata
from typing import Generic, TypeVar

from localrag.errors import LocalragError

T = TypeVar("T")


class UnknownPlugin(LocalragError, ValueError):
    """A name no built-in or installed plugin has; the message lists the choices on one line."""


class PluginError(LocalragError, RuntimeError):
    """An installed plugin's entry point names something that cannot be imported."""


class Registry(Generic[T]):
    """``kind`` names what it holds in messages ("strategy"); ``group`` is the entry-point group."""

    def __init__(self, kind: str, group: str, builtins: dict[str, str]):
        self.kind, self.group = kind, group
        self._refs: dict[str, str] = dict(builtins)
        self._added: dict[str, T] = {}
        self._loaded: dict[str, T] = {}  # built-ins and entry points, once imported
        self._plugins: dict[str, object] | None = None  # entry points by name, read once

    def add(self, name: str, item: T) -> None:
        """Register ``item`` under ``name`` at run time (tests, embedding applications)."""
        self._added[name] = item

    def remove(self, name: str) -> None:
        """Undo ``add`` (a no-op for a name it did not add)."""
        self._added.pop(name, None)

    def names(self) -> list[str]:
        return sorted(set(self._refs) | set(self._added) | set(self._entry_points()))

    def plugin_names(self) -> list[str]:
        """The names added at run time or by an installed package's entry point (not the built-ins)."""
        return sorted(set(self._added) | set(self._entry_points()))

    def get(self, name: str) -> T:
        if name in self._added:
            return self._added[name]
        if name in self._loaded:
            return self._loaded[name]
        if name in self._refs:
            item = _load_ref(self._refs[name])
        elif name in self._entry_points():
            item = self._load_plugin(name)
        else:
            raise UnknownPlugin(f"unknown {self.kind} {name!r}; choose one of: {', '.join(self.names())}")
        self._loaded[name] = item
        return item

    def _entry_points(self) -> dict[str, object]:
        if self._plugins is None:
            # a built-in name wins over a plugin that claims it
            self._plugins = {ep.name: ep for ep in metadata.entry_points(group=self.group) if ep.name not in self._refs}
        return self._plugins

    def _load_plugin(self, name: str) -> T:
        ep = self._entry_points()[name]
        try:
            return ep.load()  # type: ignore[attr-defined,no-any-return]
        except Exception as exc:  # a broken third-party package: say which, in one line
            raise PluginError(f"the {self.kind} {name!r} ({self.group} entry point {ep.value}) "  # type: ignore[attr-defined]
                              f"could not be loaded: {type(exc).__name__}: {exc}") from exc

    def refresh(self) -> None:
        """Forget what was read from entry points (after installing a plugin in the same process)."""
        self._plugins = None
        self._loaded = {k: v for k, v in self._loaded.items() if k in self._refs}


def _load_ref(ref: str) -> object:
    module, _, attribute = ref.partition(":")
    return getattr(importlib.import_module(module), attribute)
