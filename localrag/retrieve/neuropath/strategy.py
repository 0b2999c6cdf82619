"""NeuroPath: LLM-guided semantic path tracking, pruning and post-retrieval completion.

docs/algorithms.md "NeuroPath", with its pitfall resolutions: stable ids (N3), duplicate
paths removed (N10), bounded rounds and prompt size, only the last round's valid paths count
(N4), path documents before completion documents with ``merge = paths-first`` (N6), fused onto
the `graph` list by default. A weak model's reply is validated;
when it is unusable the pruned paths' embedding order stands in for its choice, and the
trace says so.
"""

from __future__ import annotations

from localrag.records import Retrieval, Trace
from localrag.retrieve.base import Context, Timer, scored
from localrag.retrieve.dense import dense_ranked
from localrag.retrieve.graph import graph_ranked
from localrag.retrieve.neuropath.completion import complete
from localrag.retrieve.neuropath.entities import link_seeds, query_entities
from localrag.retrieve.neuropath.events import SeedLink, SeedsStep
from localrag.retrieve.neuropath.recall import Recall, recall_paths
from localrag.retrieve.neuropath.replay import add_path, learn_from_answer, replay_tracking
from localrag.retrieve.neuropath.settings import NeuroPathSettings
from localrag.retrieve.neuropath.tracking import TrackState, track
from localrag.trace import FallbackStep


class NeuroPath:
    name = "neuropath"
    needs_llm = True
    settings_section = "neuropath"
    settings_type = NeuroPathSettings

    def retrieve(self, ctx: Context, query: str, k: int) -> Retrieval:
        trace = Trace(self.name)
        with Timer(trace):
            return self._run(ctx.traced(trace), query, k, trace)

    # ------------------------------------------------------------------------------------
    def _run(self, ctx: Context, query: str, k: int, trace: Trace) -> Retrieval:
        entities = query_entities(ctx, query, trace)
        seeds = link_seeds(ctx, entities)
        trace.add(SeedsStep(tuple(SeedLink(t, n, e, round(s, 4)) for t, e, n, s in seeds)))
        if not seeds:
            if ctx.settings.neuropath.completion == "graph":
                trace.add(FallbackStep(reason="no query entities: the graph fusion, no path tracking"))
                ranked, _ = graph_ranked(ctx, query, k)
                return Retrieval(query, scored(ctx, ranked, "graph"), trace)
            trace.add(FallbackStep(reason="no query entities: dense retrieval, no path tracking"))
            ranked = dense_ranked(ctx, query, k)
            return Retrieval(query, scored(ctx, ranked, "dense"), trace)
        seed_ids = [e for _, e, _, _ in seeds]
        mem = ctx.settings.memory
        qvec = ctx.embedder.encode_one(query)
        recall = recall_paths(ctx.store, qvec, seed_ids, mem) if mem.enabled and mem.read else Recall()
        skip = bool(recall.paths) and min(recall.weights[p.text] for p in recall.paths) >= mem.skip_above
        if skip:
            ordered = sorted(recall.paths, key=lambda p: -recall.weights[p.text])
            state = TrackState(valid=ordered, kept=ordered)
            for p in ordered:
                add_path(state.feedback, p)
        else:
            state = track(ctx, query, seed_ids, trace, recalled=recall.paths)
        if mem.enabled:
            replay_tracking(ctx, query, qvec, recall, state.feedback, skip, trace)
        retrieval = complete(ctx, query, state, k, trace, seeds=seed_ids, qvec=qvec)
        if mem.enabled and state.unusable and not skip:
            retrieval.on_answer = lambda cited: learn_from_answer(ctx, query, qvec, state.valid, cited, trace)
        return retrieval
