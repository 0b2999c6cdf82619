"""NeuroPath's completion replayed under other settings, for the tuning scripts (scripts/neuropath_refuse.py,
scripts/neuropath_variants.py, scripts/keep_top_replay.py): a result record's tracking read back
(``completion_input``), the library's own ``fuse`` with the ``neuropath`` settings swapped for the call,
so a variant measures the code that ships, and recall@2/@5 summed per variant."""

from __future__ import annotations

import contextlib
import dataclasses
from dataclasses import dataclass, field
from typing import Any, Iterable, Iterator, Mapping

from localrag.records import Retrieval, Trace
from localrag.retrieve.base import Context
from localrag.retrieve.dense import dense_ranked
from localrag.retrieve.graph import graph_ranked
from localrag.retrieve.neuropath import CompletionInput, fuse
from localrag_bench.data import doc_id_of
from localrag_bench.metrics import recall_at_k


@contextlib.contextmanager
def neuropath_settings(ctx: Context, **overrides: Any) -> Iterator[None]:
    """``ctx.settings.neuropath`` with ``overrides`` for the block; the settings as they were afterwards."""
    base = ctx.settings.neuropath
    ctx.settings.neuropath = dataclasses.replace(base, **overrides)
    try:
        yield
    finally:
        ctx.settings.neuropath = base


def completion_input(tracking: Mapping[str, Any]) -> CompletionInput:
    """What tracking handed to completion, from a record's ``tracking`` (runner.py ``tracking_summary``);
    missing keys (older result files) are empty."""
    return CompletionInput(tuple(tracking.get("path_docs", [])), tuple(tracking.get("path_ends", [])),
                           str(tracking.get("chain", "")), str(tracking.get("requirement", "")),
                           bool(tracking.get("fallback")), tuple(tracking.get("seeds", [])))


def fuse_with(ctx: Context, query: str, inp: CompletionInput, k: int, **overrides: Any) -> Retrieval:
    """NeuroPath's completion of one tracking run (``inp``) under the settings ``overrides``."""
    with neuropath_settings(ctx, **overrides):
        return fuse(ctx, query, inp, k, Trace("neuropath"))


def no_entity_fallback(ctx: Context, query: str, k: int, completion: str) -> list[tuple[int, float]]:
    """What NeuroPath ranks when the query links to no entity: the graph fusion with completion "graph", else dense."""
    return graph_ranked(ctx, query, k)[0] if completion == "graph" else dense_ranked(ctx, query, k)


def passage_ids(retrieval: Retrieval) -> list[int]:
    return [sp.passage.id for sp in retrieval.passages]


def ranked_doc_ids(ctx: Context, ranked: Iterable[int]) -> list[int]:
    """The corpus doc ids of ranked passage ids (bench notes ``<doc_id>.md``), each once, in rank order."""
    ranked = list(ranked)
    paths = {p.id: p.path for p in ctx.store.docs.passages(ranked)}
    return list(dict.fromkeys(d for d in (doc_id_of(paths.get(pid, "")) for pid in ranked) if d is not None))


@dataclass
class RecallSums:
    """recall@2 and @5 per variant, summed over the questions it was scored on."""

    sums: dict[str, list[float]] = field(default_factory=dict)

    def add(self, name: str, doc_ids: list[int], gold: Iterable[int]) -> tuple[float | None, float | None]:
        gold = list(gold)
        r2, r5 = recall_at_k(doc_ids, gold, 2), recall_at_k(doc_ids, gold, 5)
        s = self.sums.setdefault(name, [0.0, 0.0, 0])
        s[0] += r2 or 0.0
        s[1] += r5 or 0.0
        s[2] += 1
        return r2, r5

    def means(self) -> dict[str, tuple[float, float, int]]:
        """name -> (mean recall@2, mean recall@5, questions), best recall@5 first (recall@2 breaks ties)."""
        rows = {name: (r2 / n, r5 / n, int(n)) for name, (r2, r5, n) in self.sums.items()}
        return dict(sorted(rows.items(), key=lambda t: -(t[1][1] + t[1][0] / 10)))
