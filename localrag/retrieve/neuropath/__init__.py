"""NeuroPath (NeurIPS 2025): LLM-guided semantic path tracking over the knowledge graph.

entities (query NER and seed linking) → tracking (rounds of path selection, pruning) →
completion (path documents fused with completion hits and PPR) → replay (edge memory);
recall reads the paths an earlier query taught. strategy.py assembles them.
"""

from localrag.retrieve.neuropath.completion import CompletionInput, complete, fuse
from localrag.retrieve.neuropath.entities import is_named, link_seeds, query_entities
from localrag.retrieve.neuropath.strategy import NeuroPath
from localrag.retrieve.neuropath.tracking import TrackState, track

__all__ = ["CompletionInput", "NeuroPath", "TrackState", "complete", "fuse", "is_named", "link_seeds",
           "query_entities", "track"]
