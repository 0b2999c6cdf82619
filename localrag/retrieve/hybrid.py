"""Hybrid retrieval: reciprocal-rank fusion of dense and lexical rankings.

The fusion constant is ``settings.hybrid_rrf_k`` (default 8, not the usual 60): with
two lists and k = 60 a passage ranked 10th in both outscores one ranked 1st in only
one, but a multi-hop question's gold passages are often found by just one of the
retrievers. docs/benchmarks.md has the sweep on the three dev sets.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from localrag.records import Retrieval, Trace
from localrag.retrieve.base import Context, Timer, register, scored
from localrag.retrieve.dense import dense_ranked
from localrag.trace import TraceEvent

# The BM25 search runs on this thread while the query is embedded and the vectors searched:
# torch, numpy and SQLite all release the GIL, so hybrid costs about max(dense, lexical)
# instead of their sum (41 -> see docs/benchmarks.md "Scale" at 100k passages).
# Retrieval never runs inside a store transaction, so the worker can always take the store lock.
_LEXICAL = ThreadPoolExecutor(max_workers=1, thread_name_prefix="localrag-bm25")

RRF_K = 60  # the generic default of rrf() (other fusions, e.g. NeuroPath's path + completion merge)


@dataclass(frozen=True)
class RrfStep(TraceEvent, step="rrf", strategy="hybrid"):
    dense_hits: int = 0
    lexical_hits: int = 0
    rrf_k: int = RRF_K


def rrf(rankings: list[list[tuple[int, float]]], k: int, weights: list[float] | None = None,
        rrf_k: int = RRF_K) -> list[tuple[int, float]]:
    weights = weights or [1.0] * len(rankings)
    fused: dict[int, float] = {}
    for ranking, w in zip(rankings, weights):
        for rank, (pid, _) in enumerate(ranking):
            fused[pid] = fused.get(pid, 0.0) + w / (rrf_k + rank + 1)
    return sorted(fused.items(), key=lambda t: (-t[1], t[0]))[:k]


def hybrid_ranked(ctx: Context, query: str, k: int) -> tuple[list[tuple[int, float]], RrfStep]:
    pool = max(ctx.settings.hybrid_pool, k)
    rrf_k = ctx.settings.hybrid_rrf_k
    lexical_future = _LEXICAL.submit(ctx.store.lexical.search, query, pool, side=True, only=ctx.allowed())
    dense = dense_ranked(ctx, query, pool)
    lexical = lexical_future.result()
    return rrf([dense, lexical], k, rrf_k=rrf_k), RrfStep(dense_hits=len(dense), lexical_hits=len(lexical), rrf_k=rrf_k)


class Hybrid:
    name = "hybrid"

    def retrieve(self, ctx: Context, query: str, k: int) -> Retrieval:
        trace = Trace(self.name)
        with Timer(trace):
            ranked, step = hybrid_ranked(ctx, query, k)
            trace.add(step)
            return Retrieval(query, scored(ctx, ranked, "hybrid"), trace)


register("hybrid", Hybrid)
