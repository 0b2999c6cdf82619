"""Fusing rankings, shared by hybrid, graph, NeuroPath and ReMindRAG: weighted reciprocal rank,
and the BM25 search that runs on its own thread beside the dense search it is fused with."""

from __future__ import annotations

from concurrent.futures import Future, ThreadPoolExecutor
from typing import Collection

from localrag.records import ScoredPassage
from localrag.retrieve.base import Context

Ranking = list[tuple[int, float]]  # (passage id, score), best first

RRF_K = 60  # the generic default of rrf() (other fusions, e.g. NeuroPath's path + completion merge)


def rrf(rankings: list[Ranking], k: int, weights: list[float] | None = None, rrf_k: int = RRF_K) -> Ranking:
    """The ``k`` best by weighted reciprocal rank; equal scores by passage id."""
    weights = weights or [1.0] * len(rankings)
    fused: dict[int, float] = {}
    for ranking, w in zip(rankings, weights):
        for rank, (pid, _) in enumerate(ranking):
            fused[pid] = fused.get(pid, 0.0) + w / (rrf_k + rank + 1)
    return sorted(fused.items(), key=lambda t: (-t[1], t[0]))[:k]


def rrf_onto(base: Ranking, extra: list[Ranking], weights: list[float], k: int, rrf_k: int, keep_top: int) -> Ranking:
    """``rrf([base, *extra])``, except that the base's first ``keep_top`` passages keep their places.

    What a model's walk adds can then fill the places after them but never push them down or
    out: recall@``keep_top`` is the base's whatever the model picks.
    """
    fused = rrf([base, *extra], k + keep_top, weights=[1.0, *weights], rrf_k=rrf_k)
    if keep_top <= 0:
        return fused[:k]
    score = dict(fused)
    head = [(pid, score.get(pid, 0.0)) for pid, _ in base[:keep_top]]
    held = {pid for pid, _ in head}
    ranked = (head + [t for t in fused if t[0] not in held])[:k]
    out: Ranking = []
    floor = 0.0
    for pid, s in reversed(ranked):  # scores stay non-increasing down the list
        floor = max(floor, s)
        out.append((pid, floor))
    return out[::-1]


def spread_notes(ranked: list[ScoredPassage], k: int, keep: int, decay: float) -> list[ScoredPassage]:
    """The ``k`` first of ``ranked`` (best first) once the places after the first ``keep`` go by the
    score times ``decay`` for each passage of the same note already above; the first ``keep`` (what
    the answer reads) stay as they are, and every score is kept as it was."""
    if decay >= 1 or len(ranked) <= keep:
        return ranked[:k]
    seen: dict[int, int] = {}
    for sp in ranked[:keep]:
        seen[sp.passage.doc_id] = seen.get(sp.passage.doc_id, 0) + 1
    rest = []
    for at, sp in enumerate(ranked[keep:]):
        earlier = seen.get(sp.passage.doc_id, 0)
        seen[sp.passage.doc_id] = earlier + 1
        rest.append((sp.score * decay ** earlier, at, sp))
    rest.sort(key=lambda t: (-t[0], t[1]))
    return (ranked[:keep] + [sp for _, _, sp in rest])[:k]


class LexicalBeside:
    """The BM25 search on a thread of its own while the caller embeds the query and searches
    the vectors: torch, numpy and SQLite all release the GIL, so a fusion costs about
    max(dense, lexical) instead of their sum (docs/benchmarks.md "Scale: 100,000 passages, the fast
    phase").
    Retrieval never runs inside a store transaction, so the worker can always take the store lock.
    One worker per fusion (hybrid's, graph's), so one never waits behind the other's searches."""

    def __init__(self, thread_name: str):
        self._worker = ThreadPoolExecutor(max_workers=1, thread_name_prefix=thread_name)

    def search(self, ctx: Context, query: str, pool: int, only: Collection[int] | None = None) -> Future[Ranking]:
        return self._worker.submit(ctx.store.lexical.search, query, pool, side=True, only=only)
