"""Lexical retrieval: FTS5 BM25."""

from __future__ import annotations

from localrag.records import Retrieval, Trace
from localrag.retrieve.base import Context, Timer, scored
from localrag.store.lexical import fts_query


class Lexical:
    name = "lexical"
    needs_llm = False
    settings_section = None

    def retrieve(self, ctx: Context, query: str, k: int) -> Retrieval:
        trace = Trace(self.name)
        with Timer(trace):
            ranked = ctx.store.lexical.search(query, k, only=ctx.allowed())
            trace.step("bm25", fts_query=fts_query(query), hits=len(ranked))
            return Retrieval(query, scored(ctx, ranked, "lexical"), trace)
