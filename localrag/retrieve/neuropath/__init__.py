"""NeuroPath (NeurIPS 2025): LLM-guided semantic path tracking over the knowledge graph.

entities (query NER and seed linking) → tracking (rounds of path selection, pruning) →
completion (path documents fused with completion hits and PPR) → replay (edge memory);
recall reads the paths an earlier query taught. strategy.py assembles them; settings.py is
its [neuropath] section, which config.py imports without the rest (its names load on first use).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from localrag.retrieve.neuropath.completion import CompletionInput, complete, fuse
    from localrag.retrieve.neuropath.entities import is_named, link_seeds, query_entities
    from localrag.retrieve.neuropath.strategy import NeuroPath
    from localrag.retrieve.neuropath.tracking import TrackState, track

_HOMES = {"CompletionInput": "completion", "complete": "completion", "fuse": "completion", "is_named": "entities",
          "link_seeds": "entities", "query_entities": "entities", "NeuroPath": "strategy", "TrackState": "tracking",
          "track": "tracking"}

__all__ = sorted(_HOMES)


def __getattr__(name: str) -> Any:
    if name in _HOMES:
        return getattr(importlib.import_module(f"{__name__}.{_HOMES[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
