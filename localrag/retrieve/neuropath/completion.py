"""NeuroPath's post-retrieval completion (docs/algorithms.md "NeuroPath: completion"): the
path documents of a tracking run fused with completion hits for query + chain + requirement
and, by default, a personalised PageRank from the query's entities and the paths' open ends."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np

from localrag.text.words import content_words, stem, stems
from localrag.records import Retrieval, Trace
from localrag.retrieve.base import Context, scored
from localrag.retrieve.dense import dense_ranked
from localrag.retrieve.graph import graph_ranked
from localrag.retrieve.fusion import rrf, rrf_onto
from localrag.retrieve.hybrid import hybrid_ranked
from localrag.retrieve.neuropath.events import CompletionGraph, CompletionStep
from localrag.retrieve.neuropath.paths import path_docs
from localrag.retrieve.neuropath.tracking import TrackState
from localrag.retrieve.ppr import entity_graph, ppr_ranked, query_seeds


@dataclass(frozen=True)
class CompletionInput:
    """What tracking hands to completion; a bench record keeps it so fusions can be replayed."""

    docs: tuple[int, ...] = ()  # documents on the valid paths, in path order
    ends: tuple[int, ...] = ()  # entity at the open end of each valid path
    chain: str = ""
    requirement: str = ""
    fallback: bool = False
    seeds: tuple[int, ...] = ()  # the query's linked entities

    @classmethod
    def of(cls, state: TrackState, seeds: Sequence[int] = ()) -> "CompletionInput":
        return cls(tuple(path_docs(state.valid)), tuple(sorted({p.link for p in state.valid})), state.chain,
                   state.requirement, state.fallback, tuple(seeds))



def grounded(query: str, inp: CompletionInput) -> bool:
    """Whether the model's chain or requirement says one of the question's content words (by stem)."""
    said = stems(f"{inp.chain} {inp.requirement}")
    return any(stem(w) in said for w in content_words(query))


def complete(ctx: Context, query: str, state: TrackState, k: int, trace: Trace,
             seeds: Sequence[int] = (), qvec: np.ndarray | None = None) -> Retrieval:
    """Post-retrieval completion (b.3) of a tracking run; see ``fuse``."""
    return fuse(ctx, query, CompletionInput.of(state, seeds), k, trace, qvec)

def fuse(ctx: Context, query: str, inp: CompletionInput, k: int, trace: Trace,
         qvec: np.ndarray | None = None) -> Retrieval:
    """Rank path documents with completion hits for query + chain + requirement.

    ``merge = "paths-first"`` (the paper): path documents, then the completion hits. With
    ``merge = "fused"`` the path documents, the completion hits and (``graph_completion
    = "ppr"``) a personalised PageRank restarting at the query's entities and at the open
    ends of the valid paths are fused by reciprocal rank; the path list counts
    ``path_weight``, or ``fallback_weight`` when the model's choice was unusable (the paths
    are then only the embedding order's guess).
    """
    cfg = ctx.settings.neuropath
    set_aside = (cfg.grounded_only and cfg.completion == "graph" and cfg.merge != "paths-first"
                 and not grounded(query, inp))
    docs = [] if set_aside else ctx.keep_ids(inp.docs)
    text = " ".join(x for x in (query, inp.chain, inp.requirement) if x)
    pool = max(cfg.backfill, k)
    completion: list[tuple[int, float]] = []
    if cfg.completion == "hybrid":
        completion, _ = hybrid_ranked(ctx, text, pool)
    elif cfg.completion == "dense":
        completion = dense_ranked(ctx, text, pool)
    elif cfg.merge == "paths-first":  # the paper's order, with the graph fusion as the list after the paths
        completion, _ = graph_ranked(ctx, query, pool)
    path_weight = cfg.fallback_weight if inp.fallback else cfg.path_weight
    graph_info: CompletionGraph | None = None
    if cfg.completion == "graph" and cfg.merge != "paths-first":
        # the no-LLM `graph` fusion of the question is the base list; the model's path documents
        # and the hits for its chain and requirement are added at lower weights, so what the
        # model adds can reorder the fusion's list but rarely push its top passages out
        base, _ = graph_ranked(ctx, query, pool)
        lists, weights = [base, [(d, 1.0) for d in docs]], [1.0, path_weight]
        extra = "" if set_aside else " ".join(x for x in (inp.chain, inp.requirement) if x)
        if extra and cfg.chain_weight > 0:
            lists.append(hybrid_ranked(ctx, text, pool)[0])
            weights.append(cfg.chain_weight)
        ranked = rrf_onto(base, lists[1:], weights[1:], k, cfg.fuse_k, cfg.keep_top)
        graph_info = CompletionGraph("graph", chain_weight=cfg.chain_weight if extra else 0.0)
    elif cfg.merge == "fused":
        lists, weights = [[(d, 1.0) for d in docs], completion], [path_weight, 1.0]
        if cfg.graph_completion == "ppr":
            graph_list, graph_info = _graph_list(ctx, query, qvec, inp, pool)
            if graph_list:
                lists.append(graph_list)
                weights.append(1.0)
        ranked = rrf(lists, k, weights=weights, rrf_k=cfg.fuse_k)
    else:
        ranked = [(d, 2.0 - i / max(len(docs), 1) / 2) for i, d in enumerate(docs)]
        ranked += [(pid, s) for pid, s in completion if pid not in set(docs)]
        ranked = ranked[:k]
    trace.add(CompletionStep(path_docs=tuple(docs), query=text[:300], merge=cfg.merge, retriever=cfg.completion,
                             path_ends=inp.ends, path_weight=path_weight, fallback=inp.fallback, chain=inp.chain,
                             requirement=inp.requirement, graph=graph_info, set_aside=set_aside or None))
    passages = scored(ctx, ranked, "completion")
    for sp in passages:
        if sp.passage.id in docs:
            sp.source = "path"
    return Retrieval(query, passages, trace)

def _graph_list(ctx: Context, query: str, qvec: np.ndarray | None, inp: CompletionInput,
                pool: int) -> tuple[list[tuple[int, float]], CompletionGraph | None]:
    """PPR over the entity graph from the query's entities plus the valid paths' open ends."""
    eg = entity_graph(ctx.store)
    if eg.empty:
        return [], None
    qvec = ctx.embedder.encode_one(query) if qvec is None else qvec
    restart = {s.entity: s.weight for s in query_seeds(ctx, query, qvec)}
    for e in list(inp.seeds) + list(inp.ends):
        restart[e] = max(restart.get(e, 0.0), 1.0)
    ranked, step = ppr_ranked(ctx, qvec, dense_ranked(ctx, query, pool), eg, restart, pool)
    return ranked, CompletionGraph("ppr", restart=tuple(sorted(restart)), scored_passages=step.scored_passages)
