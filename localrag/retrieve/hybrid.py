"""Hybrid retrieval: reciprocal-rank fusion of dense and lexical rankings.

The fusion constant is ``settings.hybrid_rrf_k`` (default 8, not the usual 60): with
two lists and k = 60 a passage ranked 10th in both outscores one ranked 1st in only
one, but a multi-hop question's gold passages are often found by just one of the
retrievers. docs/benchmarks.md "Retrieval: hybrid" has the sweep on the three dev sets.
"""

from __future__ import annotations

from dataclasses import dataclass

from localrag.records import Retrieval, Trace
from localrag.retrieve.base import Context, Timer, scored
from localrag.retrieve.dense import dense_ranked
from localrag.retrieve.fusion import RRF_K, LexicalBeside, Ranking, rrf
from localrag.trace import TraceEvent

_LEXICAL = LexicalBeside("localrag-bm25")


@dataclass(frozen=True)
class RrfStep(TraceEvent, step="rrf", strategy="hybrid"):
    dense_hits: int = 0
    lexical_hits: int = 0
    rrf_k: int = RRF_K


def hybrid_ranked(ctx: Context, query: str, k: int) -> tuple[Ranking, RrfStep]:
    pool = max(ctx.settings.hybrid_pool, k)
    rrf_k = ctx.settings.hybrid_rrf_k
    lexical_future = _LEXICAL.search(ctx, query, pool, only=ctx.allowed())
    dense = dense_ranked(ctx, query, pool)
    lexical = lexical_future.result()
    return rrf([dense, lexical], k, rrf_k=rrf_k), RrfStep(dense_hits=len(dense), lexical_hits=len(lexical), rrf_k=rrf_k)


class Hybrid:
    name = "hybrid"
    needs_llm = False
    settings_section = None
    settings_type = None

    def retrieve(self, ctx: Context, query: str, k: int) -> Retrieval:
        trace = Trace(self.name)
        with Timer(trace):
            ranked, step = hybrid_ranked(ctx, query, k)
            trace.add(step)
            return Retrieval(query, scored(ctx, ranked, "hybrid"), trace)
