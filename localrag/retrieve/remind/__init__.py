"""ReMindRAG (NeurIPS 2025): LLM-guided graph traversal with memory replay.

graph (the passage/entity graph with edge memories) → dfs (the memory-recalled expansion)
→ walk (LLM-chosen moves, judged sufficient or not) with calls (the bounded model calls);
strategy.py assembles them and replays what the walk taught into the edge memory; settings.py
is its [remind] section, which config.py imports without the rest (``Remind`` loads on first use).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from localrag.retrieve.remind.strategy import Remind

__all__ = ["Remind"]


def __getattr__(name: str) -> Any:
    if name == "Remind":
        return importlib.import_module(f"{__name__}.strategy").Remind
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
