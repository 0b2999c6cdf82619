"""Lexical retrieval: FTS5 BM25 (with the CJK bigram table for a question in Chinese, Japanese or Korean:
store/lexical.py)."""

from __future__ import annotations

from dataclasses import dataclass

from localrag.records import Retrieval, Trace
from localrag.retrieve.base import Context, Timer, scored
from localrag.store.lexical import cjk_query, fts_query
from localrag.trace import TraceEvent, omit_empty


@dataclass(frozen=True)
class Bm25Step(TraceEvent, step="bm25", strategy="lexical"):
    fts_query: str = ""
    hits: int = 0
    cjk_query: str = omit_empty()  # the bigram query of passages_cjk, for a question with CJK text


class Lexical:
    name = "lexical"
    needs_llm = False
    settings_section = None
    settings_type = None

    def retrieve(self, ctx: Context, query: str, k: int) -> Retrieval:
        trace = Trace(self.name)
        with Timer(trace):
            ranked = ctx.store.lexical.search(query, k, only=ctx.allowed())
            trace.add(Bm25Step(fts_query=fts_query(query), hits=len(ranked), cjk_query=cjk_query(query)))
            return Retrieval(query, scored(ctx, ranked, "lexical"), trace)
