"""Hybrid retrieval: reciprocal-rank fusion of dense and lexical rankings."""

from __future__ import annotations

from localrag.records import Retrieval, Trace
from localrag.retrieve.base import Context, Timer, register, scored
from localrag.retrieve.dense import dense_ranked

RRF_K = 60
POOL = 50


def rrf(rankings: list[list[tuple[int, float]]], k: int, weights: list[float] | None = None) -> list[tuple[int, float]]:
    weights = weights or [1.0] * len(rankings)
    fused: dict[int, float] = {}
    for ranking, w in zip(rankings, weights):
        for rank, (pid, _) in enumerate(ranking):
            fused[pid] = fused.get(pid, 0.0) + w / (RRF_K + rank + 1)
    return sorted(fused.items(), key=lambda t: (-t[1], t[0]))[:k]


def hybrid_ranked(ctx: Context, query: str, k: int) -> tuple[list[tuple[int, float]], dict]:
    pool = max(POOL, k)
    dense = dense_ranked(ctx, query, pool)
    lexical = ctx.store.lexical.search(query, pool)
    return rrf([dense, lexical], k), {"dense_hits": len(dense), "lexical_hits": len(lexical), "rrf_k": RRF_K}


class Hybrid:
    name = "hybrid"

    def retrieve(self, ctx: Context, query: str, k: int) -> Retrieval:
        trace = Trace(self.name)
        with Timer(trace):
            ranked, info = hybrid_ranked(ctx, query, k)
            trace.step("rrf", **info)
            return Retrieval(query, scored(ctx, ranked, "hybrid"), trace)


register("hybrid", Hybrid)
