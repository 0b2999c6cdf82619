"""ReMindRAG's own pipeline as the `remind` strategy (docs/algorithms.md "ReMindRAG",
pitfalls R1-R15).

1. Seeds: the ``remind.seeds`` entities nearest emb(q) plus the ``remind.seed_passages``
   passages nearest it. ReMindRAG's anchors sit in the entity collection, so its top-2
   can be anchors (R3); rather than letting long-query similarity to passages crowd out
   every entity, localrag takes both kinds, and a seed passage is collected at once
   (step 3). The walk starts at the first entity seed.
2. Memory expansion (step 2, ``remind_dfs.expand``): edges with w(e, q) > λ, no LLM.
3. The walk (steps 5-7, ``remind_walk``): judge, exploitation shortcut, next-node choice
   with backtracking, judge after each collected passage; hard caps on moves, iterations
   and LLM calls (R5). One call of the budget is kept for labelling when memory is on.
4. Memory replay (step 9): the labelling call, the valid-path rule of R6, enhance valid
   steps once each, penalise the others (``memory.penalty``: intended | off, R1), one
   transaction, existing edges only. Zero-jump runs (R15): when memory expansion alone
   was judged sufficient there is no labelling call; with ``remind.zero_jump =
   "reinforce"`` (default) the recalled edges are enhanced once more (the judge just
   confirmed them, and δ keeps ‖v‖ ≤ 1), with "skip" memory is left alone as in the code.
   When every edge memory expansion recalled reads at least ``memory.skip_above`` and it
   reached a passage (``remind.trust_recall``, default on), the walk and its judge are
   skipped altogether: the remembered route is trusted as NeuroPath trusts recalled paths
   (beyond the paper: its judge would run here). Nothing is written then, since nothing
   new was checked and a memory must not confirm itself.
   With ``memory.enabled`` off (``--no-memory``) memory is neither read nor written and
   no labelling call is made.
5. Ranking (``remind.rank``): "graph" (default) fuses the collected passages into the no-LLM
   `graph` list at ``collected_weight`` with its first ``keep_top`` in place; with
   ``confirmed_only`` a walk the judge never found sufficient adds only what memory recalled.
   "collected-first" (the paper): collected passages in collection order, then dense back-fill.
The answer comes from the shared answer step, like every strategy.
"""

from __future__ import annotations

from localrag.config import Settings
from localrag.memory.edges import Feedback, apply
from localrag.retrieve.remind.calls import Budget, BudgetSpent, label
from localrag.retrieve.remind.dfs import Expansion, expand, valid_steps
from localrag.retrieve.remind.events import (ConfigStep, ExpansionStep, NodeSeed, PathsStep, RankingStep, RecalledEdge,
                                             RemindMemoryStep, RemindSeedsStep, StopStep)
from localrag.retrieve.remind.graph import ENTITY, PASSAGE, Node, RemindGraph, entity, passage
from localrag.retrieve.remind.settings import RemindSettings
from localrag.retrieve.remind.walk import RemindWalk, WalkState
from localrag.llm.prompts_remind import render_chunks
from localrag.records import Retrieval, Trace
from localrag.retrieve.base import Context, Timer, scored
from localrag.retrieve.dense import dense_ranked
from localrag.retrieve.graph import graph_ranked
from localrag.retrieve.fusion import rrf_onto
from localrag.trace import FallbackStep

DEVIATIONS = [
    "R10: each candidate's weight w is shown to the model (the released prompt omits it)",
    "a passage is anchor and chunk in one node: collecting it is visiting it, and the walk goes on from it",
    "the judge runs after moves that collect a passage, not after moves that collect nothing",
    "R6: a step is valid when it lies on a route from a seed to a useful step or passage; enhanced once",
    "R5: hard caps on moves, loop iterations and LLM calls",
]


class Remind:
    name = "remind"
    needs_llm = True
    settings_section = "remind"
    settings_type = RemindSettings

    def retrieve(self, ctx: Context, query: str, k: int) -> Retrieval:
        trace = Trace(self.name)
        with Timer(trace):
            return self._run(ctx, query, k, trace)

    def _run(self, ctx: Context, query: str, k: int, trace: Trace) -> Retrieval:
        cfg, mem = ctx.settings.remind, ctx.settings.memory
        qvec = ctx.embedder.encode_one(query)
        graph = RemindGraph(ctx.store, qvec, mem.alpha, use_memory=mem.enabled and mem.read)
        seeds = self._seeds(ctx, graph, trace)
        if not seeds:
            trace.add(FallbackStep(reason="no entity or passage to start from: dense retrieval"))
            return Retrieval(query, scored(ctx, dense_ranked(ctx, query, k), "dense"), trace)
        trace.add(_config(ctx.settings))
        visited = set(seeds)
        expansion = expand(graph, seeds, mem.lam, visited) if mem.enabled and mem.read else Expansion()
        trace.add(ExpansionStep(recalled_edges=expansion.edges, passages=tuple(expansion.passages),
                                edges=tuple(RecalledEdge(graph.step_line(s.edge), round(s.weight, 4)) for s in expansion.steps),
                                memory="on" if mem.enabled else "off"))
        reserve = 1 if mem.enabled else 0
        budget = Budget(ctx.llm(), max(0, cfg.max_llm_calls - reserve), trace)
        start = next((s for s in seeds if s.kind == ENTITY), seeds[0])
        state = WalkState(
            seeds=seeds, visited=visited, order=list(seeds) + [s.edge.dst for s in expansion.steps],
            collected=[s.id for s in seeds if s.kind == PASSAGE] + expansion.passages,
            steps=list(expansion.steps), current=start,
        )
        walk = RemindWalk(graph, budget, query, cfg, trace, state)
        if self._trusted(ctx, expansion):
            # the question's route is remembered strongly (every recalled edge at or above
            # memory.skip_above, as NeuroPath skips tracking): no judge, no walk
            state.stop, state.sufficient = f"memory recall at or above skip_above ({mem.skip_above}): walk skipped", True
            state.recall_trusted = True
        else:
            walk.run()
        trace.add(StopStep(reason=state.stop, sufficient=state.sufficient, jumps=state.jumps,
                           iterations=state.iterations, llm_calls=budget.used, collected=tuple(state.collected)))
        trace.add(PathsStep(tuple(f"{s.origin}: {graph.step_line(s.edge)} (w {s.weight:.2f})" for s in state.steps)))
        if mem.enabled:
            budget.limit = cfg.max_llm_calls
            self._replay(ctx, query, qvec, graph, walk, budget, expansion, trace)
        return self._rank(ctx, query, state, expansion, k, trace)

    @staticmethod
    def _trusted(ctx: Context, expansion: Expansion) -> bool:
        mem = ctx.settings.memory
        return (mem.enabled and mem.read and ctx.settings.remind.trust_recall and bool(expansion.passages)
                and min(s.weight for s in expansion.steps) >= mem.skip_above)

    # ------------------------------------------------------------------------------------------
    def _seeds(self, ctx: Context, graph: RemindGraph, trace: Trace) -> list[Node]:
        cfg = ctx.settings.remind
        ents = ctx.store.graph.entities.nearest(graph.q, cfg.seeds)[0] if cfg.seeds > 0 else []
        pas = ctx.store.vectors.knn(graph.q, cfg.seed_passages) if cfg.seed_passages > 0 else []
        seeds = [entity(e) for e, _ in ents] + [passage(p) for p, _ in pas]
        trace.add(RemindSeedsStep(tuple(NodeSeed(graph.label(n), n.id, n.kind, round(s, 4)) for n, (_, s) in zip(seeds, ents + pas))))
        return seeds

    def _replay(self, ctx: Context, query: str, qvec, graph: RemindGraph, walk: RemindWalk, budget: Budget,
                expansion: Expansion, trace: Trace) -> None:
        st, mem, cfg = walk.st, ctx.settings.memory, ctx.settings.remind
        steps = st.steps
        kept: list = []
        rejected: list = []
        info: dict = {}  # RemindMemoryStep's fields that say what the replay did
        if st.recall_trusted:
            # nothing new was checked (no judge): reinforcing would let a memory confirm itself
            info["mode"] = "trusted recall: walk skipped, no update (no new evidence)"
        elif st.jumps == 0:
            if st.sufficient and steps and cfg.zero_jump == "reinforce":
                kept = [s.edge.key for s in steps]
                info["mode"] = "zero-jump: memory alone was sufficient, recalled edges reinforced (R15)"
            else:
                info["mode"] = "zero-jump: no update (R15)" if steps else "nothing walked: no update"
        elif not st.path_trusted:
            info["mode"] = "no update: the walk ended on invalid choices"
        else:
            chunks = render_chunks(walk.chunk_views(), cfg.prompt_passage_chars, cfg.prompt_chars)
            try:
                labels = label(budget, query, [graph.step_line(s.edge) for s in steps], chunks,
                               list(st.collected), cfg.choice_attempts)
            except BudgetSpent as exc:
                labels = None
                info["mode"] = f"no update: {exc} before labelling"
            if labels is not None and not labels.ok:
                info["mode"] = f"no update: labelling failed ({'; '.join(labels.errors)[:200]})"
            elif labels is not None:
                valid = set(valid_steps(st.seeds, steps, set(labels.steps), set(labels.passages)))
                kept = [steps[i].edge.key for i in sorted(valid)]
                rejected = [s.edge.key for i, s in enumerate(steps) if i not in valid and s.edge.key not in kept]
                info.update(mode="labelled", labelled_steps=tuple(labels.steps), labelled_passages=tuple(labels.passages),
                            valid=len(kept), invalid=len(rejected))
        result = apply(ctx.store, query, self.name, qvec, Feedback(kept=kept, rejected=list(dict.fromkeys(rejected))), mem)
        trace.add(RemindMemoryStep(recalled_edges=expansion.edges, enhanced=result.enhanced, penalised=result.penalised,
                                   penalty=mem.penalty, **info))

    def _rank(self, ctx: Context, query: str, st: WalkState, expansion: Expansion, k: int, trace: Trace) -> Retrieval:
        cfg = ctx.settings.remind
        collected = ctx.keep_ids(dict.fromkeys(st.collected))
        n = max(k, len(collected))
        if cfg.rank == "graph":
            # the no-LLM `graph` fusion is the base; what the walk collected is fused in at a lower
            # weight, so the model's walk adds to the fusion's list instead of replacing its top
            fused = fused_passages(collected, expansion.passages, st.sufficient, cfg.confirmed_only)
            ranked = onto_graph(ctx, query, fused, k, n, cfg.keep_top)
        else:
            fused = collected
            ranked = [(pid, 2.0 - i / max(len(collected), 1) / 2) for i, pid in enumerate(collected)]
            dense = dense_ranked(ctx, query, n + len(collected))
            ranked += [(pid, s) for pid, s in dense if pid not in set(collected)][: n - len(collected)]
        passages = scored(ctx, ranked, "dense")
        seeds = {s.id for s in st.seeds if s.kind == PASSAGE}
        recalled = set(expansion.passages)
        for sp in passages:
            pid = sp.passage.id
            if pid not in fused:
                continue
            sp.source = "seed" if pid in seeds else "memory" if pid in recalled else "path"
        trace.add(RankingStep(collected=tuple(collected), backfill=len(passages) - len(fused), rank=cfg.rank,
                              sufficient=st.sufficient, recalled=tuple(expansion.passages), fused=tuple(fused)))
        return Retrieval(query, passages, trace)


def fused_passages(collected: list[int], recalled: list[int], sufficient: bool, confirmed_only: bool) -> list[int]:
    """The walk's passages that go into the ranking: all of them when the judge found them
    sufficient (or ``confirmed_only`` is off), else only those memory recalled, which an earlier
    judged walk confirmed."""
    if sufficient or not confirmed_only:
        return collected
    remembered = set(recalled)
    return [pid for pid in collected if pid in remembered]


def onto_graph(ctx: Context, query: str, fused: list[int], k: int, pool: int, keep_top: int) -> list[tuple[int, float]]:
    """``fused`` passages added to the question's `graph` list (``pool`` deep) at
    ``remind.collected_weight``, its first ``keep_top`` held in place."""
    base, _ = graph_ranked(ctx, query, max(pool, ctx.settings.hybrid_pool))
    return rrf_onto(base, [[(pid, 1.0) for pid in fused]], [ctx.settings.remind.collected_weight], k, 8, keep_top)


def _config(s: Settings) -> ConfigStep:
    r, m = s.remind, s.memory
    return ConfigStep(alpha=m.alpha, lam=m.lam, penalty=m.penalty, memory=m.enabled, max_jumps=r.max_jumps,
                      max_llm_calls=r.max_llm_calls, max_iterations=r.max_iterations or 2 * r.max_jumps,
                      zero_jump=r.zero_jump, deviations=tuple(DEVIATIONS))

