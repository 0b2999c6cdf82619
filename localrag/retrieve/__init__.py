"""Retrieval strategies: each takes a query and returns a Retrieval (ranked passages + trace).

Its names are loaded on first use: config.py imports the strategies' settings modules under this
package (neuropath/settings.py, ...), and the registry (base.py) imports config.py.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from localrag.retrieve.base import Context, Strategy, get_strategy, strategy_names

__all__ = ["Context", "Strategy", "get_strategy", "strategy_names"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        return getattr(importlib.import_module("localrag.retrieve.base"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
