"""NeuroPath's settings, the config's [neuropath] section (localrag/config.py reads it into
``Settings.neuropath``); docs/algorithms.md gives the paper's values beside these defaults.

Kept apart from the strategy's code: config.py imports this module, so it imports nothing heavy.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

# a mode setting takes only its words (config_values.check_choices)
NerMode = Literal["llm", "rules", "llm+rules"]  # neuropath.ner (entities.py)
MergeMode = Literal["paths-first", "fused"]  # neuropath.merge (completion.py)
CompletionMode = Literal["dense", "hybrid", "graph"]  # neuropath.completion
GraphCompletionMode = Literal["ppr", "none"]  # neuropath.graph_completion


@dataclass
class NeuroPathSettings:
    max_hop: int = 2
    filter_k: int = 30
    backfill: int = 100
    top_k: int = 100
    max_prompt_paths: int = 60
    # query entities: "llm" (the paper), "rules" (spans, no model), "llm+rules" (grounded LLM, spans if empty)
    ner: NerMode = "llm+rules"
    # final ranking: "paths-first" (the paper: path documents, then completion) or "fused"
    # (reciprocal-rank fusion of path documents with the completion list, so a weak model's
    # near-miss paths cannot push good passages out of the top ranks; docs/algorithms.md
    # "NeuroPath: completion", docs/benchmarks.md "What we tried")
    merge: MergeMode = "fused"
    fuse_k: int = 8  # the RRF constant of "fused" (8, as hybrid: one list's top ranks count)
    # completion retriever for query + chain + requirement: "dense" (the paper), "hybrid", or
    # "graph": the no-LLM `graph` fusion of the question is the base list, path documents (path_weight)
    # and hybrid hits for chain + requirement (chain_weight) are fused into it, so the model can only
    # add to what the fusion finds (docs/benchmarks.md "NeuroPath and remind")
    completion: CompletionMode = "graph"
    # a chain hit is the model's words searched again, not a walked path, the weakest signal fused:
    # the largest weight at or above `graph` in every replayed cell (docs/benchmarks.md "NeuroPath and remind: how the constants were chosen")
    chain_weight: float = 0.1
    # a third fused list: "ppr" (personalised PageRank from the query's entities and the open
    # ends of the valid paths) or "none" (the paper's two lists)
    graph_completion: GraphCompletionMode = "ppr"
    # weight of the path list in the fusion: the model's selection (path_weight), or the
    # embedding order's stand-in when its reply was unusable or too broad (fallback_weight).
    # Below 1 because completion and the graph list agreeing on a passage is stronger evidence
    # than a small model's pick (docs/benchmarks.md "NeuroPath and remind: how the constants were chosen");
    # with a strong model raise path_weight towards 1.
    path_weight: float = 0.3
    fallback_weight: float = 0.3
    # with completion "graph": the fusion's first keep_top passages keep their places, what the
    # model adds fills the places after them, so recall@keep_top is the fusion's by construction;
    # 2 is the smallest hold at or above the fusion in the replays (docs/benchmarks.md "NeuroPath and remind: how the constants were chosen")
    keep_top: int = 2
    # with completion "graph": a tracking run whose chain and requirement share no content word with
    # the question (a small model may write timestamps there) adds nothing: its paths and chain hits
    # are set aside and the fusion ranks alone, since such paths are noise that can take the fusion's
    # fifth place (docs/benchmarks.md "NeuroPath and remind: how the constants were chosen")
    grounded_only: bool = True
    max_valid: int = 8
    max_expand: int = 4
