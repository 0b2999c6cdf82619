"""Dense retrieval: sqlite-vec KNN over passage embeddings."""

from __future__ import annotations

from dataclasses import dataclass

from localrag.records import Retrieval, Trace
from localrag.retrieve.base import Context, Timer, scored
from localrag.trace import TraceEvent


@dataclass(frozen=True)
class KnnStep(TraceEvent, step="knn", strategy="dense"):
    k: int = 0
    hits: int = 0


def dense_ranked(ctx: Context, text: str, k: int) -> list[tuple[int, float]]:
    vec = ctx.embedder.encode_one(text)
    return ctx.store.vectors.knn(vec, k, only=ctx.allowed())


class Dense:
    name = "dense"
    needs_llm = False
    settings_section = None
    settings_type = None

    def retrieve(self, ctx: Context, query: str, k: int) -> Retrieval:
        trace = Trace(self.name)
        with Timer(trace):
            ranked = dense_ranked(ctx, query, k)
            trace.add(KnnStep(k=k, hits=len(ranked)))
            return Retrieval(query, scored(ctx, ranked, "dense"), trace)
