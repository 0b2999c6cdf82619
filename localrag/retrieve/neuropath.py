"""NeuroPath: LLM-guided semantic path tracking, pruning and post-retrieval completion.

ALGORITHMS.md b.2-b.5 with the pitfall resolutions of §f: stable ids (N3), duplicate paths
removed (N10), bounded rounds and prompt size, only the last round's valid paths count (N4),
path documents ranked before completion documents (N6). A weak model's reply is validated;
when it is unusable the pruned paths' embedding order stands in for its choice, and the
trace says so.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Sequence

import numpy as np

from localrag.kg.normalise import normalise_phrase, occurs_in
from localrag.llm.jsoncall import call_json
from localrag.memory import replay
from localrag.memory.recall import Recall, recall_paths
from localrag.llm.prompts_np import NER_VERSION, ner_messages, ner_schema, track_messages, track_schema
from localrag.records import Retrieval, Trace
from localrag.retrieve.base import Context, Timer, register, scored
from localrag.retrieve.dense import dense_ranked
from localrag.retrieve.graph import graph_ranked
from localrag.retrieve.hybrid import hybrid_ranked, rrf
from localrag.retrieve.ppr import entity_graph, ppr_ranked, query_seeds
from localrag.retrieve.paths import Path, dedupe, first_hop, next_hop, path_docs, prune, render, embed_text

FALLBACK_VALID = 3  # paths taken in embedding order when the model's choice is unusable
BROAD_SHARE = 0.4  # a selection of more than this share of the shown paths is no selection


@dataclass
class TrackState:
    kept: list[Path] = field(default_factory=list)
    valid: list[Path] = field(default_factory=list)
    need_expand: list[Path] = field(default_factory=list)
    chain: str = ""
    requirement: str = ""
    rounds: int = 0
    llm_failed: bool = False
    # the last round's valid paths are a stand-in, not the model's choice (reply unusable or too broad)
    fallback: bool = False
    unusable: bool = False  # the last round's reply was unusable: nothing learned from it yet
    feedback: replay.Feedback = field(default_factory=lambda: replay.Feedback())


@dataclass(frozen=True)
class CompletionInput:
    """What tracking hands to completion; a bench record keeps it so fusions can be replayed."""

    docs: tuple[int, ...] = ()  # documents on the valid paths, in path order
    ends: tuple[int, ...] = ()  # entity at the open end of each valid path
    chain: str = ""
    requirement: str = ""
    fallback: bool = False
    seeds: tuple[int, ...] = ()  # the query's linked entities

    @classmethod
    def from_tracking(cls, t: dict) -> "CompletionInput":
        """From a bench record's ``tracking`` (``bench.runner.tracking_summary`` of the trace)."""
        return cls(tuple(t.get("path_docs", [])), tuple(t.get("path_ends", [])), t.get("chain", ""),
                   t.get("requirement", ""), bool(t.get("fallback")), tuple(t.get("seeds", [])))

    @classmethod
    def of(cls, state: TrackState, seeds: Sequence[int] = ()) -> "CompletionInput":
        return cls(tuple(path_docs(state.valid)), tuple(sorted({p.link for p in state.valid})), state.chain,
                   state.requirement, state.fallback, tuple(seeds))


def query_entities(ctx: Context, query: str, trace: Trace) -> list[str]:
    """Entities named in the query: grounded LLM NER (cached by query text), spans as fallback."""
    mode = ctx.settings.neuropath.ner
    norm_q = normalise_phrase(query)
    found: list[str] = []
    source = "none"
    if mode in ("llm", "llm+rules"):
        llm = ctx.llm()
        cached = ctx.store.cache.get("ner", query, llm.model_id, NER_VERSION)
        error = ""
        if cached is None:
            result = call_json(llm, ner_messages(query), ner_schema(), phase="ner", max_tokens=200,
                               validate=_validate_ner)
            cached = [str(e) for e in (result.data or {}).get("named_entities", []) if isinstance(e, str)]
            if result.ok:  # a failed reply is not cached: the next ask tries the model again
                _cache_put(ctx, "ner", query, llm.model_id, NER_VERSION, cached)
            else:
                error = result.errors[-1] if result.errors else "no reply"
        grounded = [e for e in cached if normalise_phrase(e) and occurs_in(normalise_phrase(e), norm_q)]
        generic = [e for e in grounded if not is_named(e, query)]
        grounded = [e for e in grounded if e not in generic]
        trace.step("ner", model=cached, grounded=grounded, **({"generic": generic} if generic else {}),
                   **({"error": error} if error else {}))
        found, source = grounded, "llm"
    if not found and mode in ("rules", "llm+rules"):
        from localrag.kg.spans import find_spans

        found = [s.text for s in find_spans(query)]
        source = "rules"
    unique = list(dict.fromkeys(e for e in found if normalise_phrase(e)))
    trace.step("query_entities", entities=unique, source=source)
    return unique


_WORD = re.compile(r"[^\W_]+")
_FUNCTION_WORDS = frozenset("a an and at by for from in of on or the to with".split())


def is_named(entity: str, question: str) -> bool:
    """Whether ``entity`` is a name in ``question``, not a common noun a weak model called an entity.

    A name has a capitalised word or a digit where the question says it (the question's first
    word and function words do not count: their capital is grammar). A question written with
    no capitals anywhere gives no such signal, so every entity counts as named there.
    """
    words = _WORD.findall(question)
    signal = {w.lower() for i, w in enumerate(words) if i > 0 and w.lower() not in _FUNCTION_WORDS
              and (w[0].isupper() or any(ch.isdigit() for ch in w))}
    if not any(ch.isupper() for ch in question[1:]) and not any(ch.isdigit() for ch in question):
        return True
    return any(t.lower() in signal for t in _WORD.findall(entity))


def _validate_ner(data: dict) -> str | None:
    entities = data.get("named_entities")
    if not isinstance(entities, list) or not all(isinstance(e, str) for e in entities):
        return "named_entities must be a list of strings"
    return None


def _cache_put(ctx: Context, kind: str, key: str, model: str, version: str, value: object) -> None:
    try:
        ctx.store.cache.put(kind, key, model, version, value)
    except Exception:  # a cache write (the index busy, or read-only) must never fail a question
        pass


def link_seeds(ctx: Context, entities: Sequence[str]) -> list[tuple[str, int, str, float]]:
    """(query entity, nearest graph entity id, its name, cosine) for each query entity."""
    if not entities:
        return []
    vecs = ctx.embedder.encode(list(entities))
    out = []
    for text, vec in zip(entities, vecs):
        hit = ctx.store.graph.entity_knn(vec, 1)
        if hit:
            eid, sim = hit[0]
            out.append((text, eid, "", sim))
    names = ctx.store.graph.entity_names([e for _, e, _, _ in out])
    return [(t, e, names.get(e, "?"), s) for t, e, _, s in out]


class NeuroPath:
    name = "neuropath"

    def retrieve(self, ctx: Context, query: str, k: int) -> Retrieval:
        trace = Trace(self.name)
        with Timer(trace):
            return self._run(ctx.traced(trace), query, k, trace)

    # ------------------------------------------------------------------------------------
    def _run(self, ctx: Context, query: str, k: int, trace: Trace) -> Retrieval:
        entities = query_entities(ctx, query, trace)
        seeds = link_seeds(ctx, entities)
        trace.step("seeds", seeds=[{"query": t, "entity": n, "id": e, "sim": round(s, 4)} for t, e, n, s in seeds])
        if not seeds:
            if ctx.settings.neuropath.completion == "graph":
                trace.step("fallback", reason="no query entities: the graph fusion, no path tracking")
                ranked, _ = graph_ranked(ctx, query, k)
                return Retrieval(query, scored(ctx, ranked, "graph"), trace)
            trace.step("fallback", reason="no query entities: dense retrieval, no path tracking")
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
            state.feedback.kept.clear()
            for p in ordered:
                state.feedback.add_path(p.facts, p.docs)
        else:
            state = self.track(ctx, query, seed_ids, trace, recalled=recall.paths)
        if mem.enabled:
            self._memory_step(ctx, query, qvec, recall, state, skip, trace)
        retrieval = self.complete(ctx, query, state, k, trace, seeds=seed_ids, qvec=qvec)
        if mem.enabled and state.unusable and not skip:
            retrieval.on_answer = lambda cited: self._learn_from_answer(ctx, query, qvec, state, cited, trace)
        return retrieval

    def _learn_from_answer(self, ctx: Context, query: str, qvec, state: TrackState, cited: Sequence[int],
                           trace: Trace) -> None:
        """The model's tracking reply was unusable, so its stand-in paths taught nothing; the paths
        whose passages the answer then cites are enhanced now (no extra LLM call), so a repeat of
        the question can recall them instead of tracking again."""
        fb = replay.Feedback()
        used = [p for p in state.valid if set(p.docs) & set(cited)]
        for p in used:
            fb.add_path(p.facts, p.docs)
        result = replay.apply(ctx.store, query, self.name, qvec, fb, ctx.settings.memory) if used else None
        trace.step("memory_answer", cited=sorted(set(cited)), paths=[p.text.strip() for p in used],
                   enhanced=result.enhanced if result else 0,
                   **({"not_written": result.error} if result and result.error else {}))

    def _memory_step(self, ctx: Context, query: str, qvec, recall: Recall, state: TrackState, skip: bool, trace: Trace) -> None:
        cfg = ctx.settings.neuropath
        skipped = cfg.max_hop if skip else 0
        saved = 0
        if skipped:
            calls, prompt, completion = ctx.store.calls.totals_by_phase().get("track", (0, 0, 0))
            saved = int(skipped * (prompt + completion) / calls) if calls else 0
        result = replay.apply(ctx.store, query, self.name, qvec, state.feedback, ctx.settings.memory)
        trace.step(
            "memory", recalled_edges=recall.edges, recalled_paths=[p.text.strip() for p in recall.paths],
            from_knn=recall.from_knn, skipped_rounds=skipped, tokens_saved_est=saved,
            enhanced=result.enhanced, penalised=result.penalised, penalty=ctx.settings.memory.penalty,
            **({"not_written": result.error} if result.error else {}),
        )

    def track(self, ctx: Context, query: str, seeds: list[int], trace: Trace,
              recalled: Sequence[Path] = ()) -> TrackState:
        cfg = ctx.settings.neuropath
        graph = ctx.store.graph
        state = TrackState()
        g = query
        candidates = dedupe(first_hop(graph, seeds))
        expanded: set[str] = set()
        locked = list(recalled)
        while state.rounds < cfg.max_hop:
            state.rounds += 1
            new = [p for p in dedupe(candidates) if p.text not in {x.text for x in state.kept + locked}]
            pruned = self._prune(ctx, new, g or query, cfg.filter_k)
            old = locked + state.kept
            shown = (old + pruned)[: max(cfg.max_prompt_paths, len(old))]
            if not shown:
                trace.step("round", round=state.rounds, g=g, candidates=[], note="no candidate paths")
                break
            expandable = {i for i, p in enumerate(shown) if i >= len(old)}
            names = graph.entity_names(sorted({p.link for p in shown}))
            lines = render(shown, expandable, names)
            choice, errors = self._ask(ctx, query, lines, len(shown), cfg)
            fell_back = choice is None
            broad = False
            if choice is None:
                state.llm_failed = True
                valid_ids = _by_sim(shown, FALLBACK_VALID)
                expand_ids, cont, chain, req = [], 0, state.chain, ""
            else:
                valid_ids, expand_ids, cont, chain, req = choice
                if not valid_ids and not expand_ids:
                    fell_back = True
                    valid_ids, cont = _by_sim(shown, FALLBACK_VALID), 0
                elif len(valid_ids) > max(FALLBACK_VALID, int(BROAD_SHARE * len(shown))):
                    # "everything is relevant" (a tiny model counting 1, 2, 3 …) selects nothing:
                    # keep the selected paths most similar to g, and say so in the trace
                    broad = True
                    valid_ids = sorted(valid_ids, key=lambda i: (-shown[i].sim, i))[:FALLBACK_VALID]
                    expand_ids = [i for i in expand_ids if i in valid_ids]
            expand_ids = [i for i in expand_ids if i in expandable or shown[i].text not in expanded]
            trace.step(
                "round", round=state.rounds, g=g,
                candidates=[{"id": i, "text": p.text.strip(), "sim": round(p.sim, 4), "docs": list(p.docs),
                             "expandable": i in expandable, "recalled": p.recalled} for i, p in enumerate(shown)],
                selected=valid_ids, expand=expand_ids, chain=chain, requirement=req, **{"continue": cont},
                fallback="model reply unusable: paths taken in embedding order" if fell_back
                else ("selection too broad: kept the selected paths most similar to g" if broad else ""),
                errors=errors,  # why replies were rejected (a repaired reply leaves its first error here)
            )
            keep_ids = list(dict.fromkeys(valid_ids + sorted(set(expand_ids) - set(valid_ids))))
            # recalled paths are valid by construction (they come first, strongest first)
            state.valid = locked + [shown[i] for i in valid_ids if shown[i] not in locked]
            state.kept = [shown[i] for i in keep_ids if shown[i] not in locked]
            if not fell_back:
                for i in valid_ids:
                    state.feedback.add_path(shown[i].facts, shown[i].docs)
                for i in sorted(expandable - set(keep_ids)):
                    state.feedback.reject_last(shown[i].facts, shown[i].docs)
            state.need_expand = [shown[i] for i in expand_ids]
            state.chain, state.requirement = chain, req
            state.fallback, state.unusable = fell_back or broad, fell_back
            if not cont or not state.need_expand or state.rounds >= cfg.max_hop:
                break
            blocked = {p.text for p in state.kept} | {p.text for p in state.need_expand}
            candidates = []
            for p in state.need_expand:
                expanded.add(p.text)
                candidates.extend(next_hop(graph, p, blocked))
            g = req
        return state

    def complete(self, ctx: Context, query: str, state: TrackState, k: int, trace: Trace,
                 seeds: Sequence[int] = (), qvec: np.ndarray | None = None) -> Retrieval:
        """Post-retrieval completion (b.3) of a tracking run; see ``fuse``."""
        return self.fuse(ctx, query, CompletionInput.of(state, seeds), k, trace, qvec)

    def fuse(self, ctx: Context, query: str, inp: CompletionInput, k: int, trace: Trace,
             qvec: np.ndarray | None = None) -> Retrieval:
        """Rank path documents with completion hits for query + chain + requirement.

        ``merge = "paths-first"`` (the paper): path documents, then the completion hits. With
        ``merge = "fused"`` the path documents, the completion hits and (``graph_completion
        = "ppr"``) a personalised PageRank restarting at the query's entities and at the open
        ends of the valid paths are fused by reciprocal rank; the path list counts
        ``path_weight``, or ``fallback_weight`` when the model's choice was unusable (the paths
        are then only the embedding order's guess).
        """
        cfg = ctx.settings.neuropath
        docs = ctx.keep_ids(inp.docs)
        text = " ".join(x for x in (query, inp.chain, inp.requirement) if x)
        pool = max(cfg.backfill, k)
        completion: list[tuple[int, float]] = []
        if cfg.completion == "hybrid":
            completion, _ = hybrid_ranked(ctx, text, pool)
        elif cfg.completion == "dense":
            completion = dense_ranked(ctx, text, pool)
        elif cfg.merge == "paths-first":  # the paper's order, with the graph fusion as the list after the paths
            completion, _ = graph_ranked(ctx, query, pool)
        path_weight = cfg.fallback_weight if inp.fallback else cfg.path_weight
        graph_info: dict = {}
        if cfg.completion == "graph" and cfg.merge != "paths-first":
            # the no-LLM `graph` fusion of the question is the base list; the model's path documents
            # and the hits for its chain and requirement are added at lower weights, so what the
            # model adds can reorder the fusion's list but rarely push its top passages out
            base, _ = graph_ranked(ctx, query, pool)
            lists, weights = [base, [(d, 1.0) for d in docs]], [1.0, path_weight]
            extra = " ".join(x for x in (inp.chain, inp.requirement) if x)
            if extra and cfg.chain_weight > 0:
                lists.append(hybrid_ranked(ctx, text, pool)[0])
                weights.append(cfg.chain_weight)
            ranked = rrf(lists, k, weights=weights, rrf_k=cfg.fuse_k)
            graph_info = {"retriever": "graph", "chain_weight": cfg.chain_weight if extra else 0.0}
        elif cfg.merge == "fused":
            lists, weights = [[(d, 1.0) for d in docs], completion], [path_weight, 1.0]
            if cfg.graph_completion == "ppr":
                graph_list, graph_info = self._graph_list(ctx, query, qvec, inp, pool)
                if graph_list:
                    lists.append(graph_list)
                    weights.append(1.0)
            ranked = rrf(lists, k, weights=weights, rrf_k=cfg.fuse_k)
        else:
            ranked = [(d, 2.0 - i / max(len(docs), 1) / 2) for i, d in enumerate(docs)]
            ranked += [(pid, s) for pid, s in completion if pid not in set(docs)]
            ranked = ranked[:k]
        trace.step("completion", path_docs=docs, query=text[:300], merge=cfg.merge, retriever=cfg.completion,
                   path_ends=list(inp.ends), path_weight=path_weight, fallback=inp.fallback, chain=inp.chain,
                   requirement=inp.requirement, **({"graph": graph_info} if graph_info else {}))
        passages = scored(ctx, ranked, "completion")
        for sp in passages:
            if sp.passage.id in docs:
                sp.source = "path"
        return Retrieval(query, passages, trace)

    @staticmethod
    def _graph_list(ctx: Context, query: str, qvec: np.ndarray | None, inp: CompletionInput,
                    pool: int) -> tuple[list[tuple[int, float]], dict]:
        """PPR over the entity graph from the query's entities plus the valid paths' open ends."""
        eg = entity_graph(ctx.store)
        if eg.empty:
            return [], {}
        qvec = ctx.embedder.encode_one(query) if qvec is None else qvec
        restart = {s.entity: s.weight for s in query_seeds(ctx, query, qvec)}
        for e in list(inp.seeds) + list(inp.ends):
            restart[e] = max(restart.get(e, 0.0), 1.0)
        ranked, info = ppr_ranked(ctx, qvec, dense_ranked(ctx, query, pool), eg, restart, pool)
        return ranked, {"retriever": "ppr", "restart": sorted(restart), "scored_passages": info.get("scored_passages", 0)}

    # ------------------------------------------------------------------------------------
    def _prune(self, ctx: Context, paths: list[Path], g: str, k: int) -> list[Path]:
        if not paths:
            return []
        gvec = ctx.embedder.encode_one(g)
        vecs = ctx.embedder.encode([embed_text(p) for p in paths])
        return prune(paths, vecs @ gvec, k)

    def _ask(self, ctx: Context, query: str, lines: list[str], n: int, cfg):
        result = call_json(ctx.llm(), track_messages(query, lines), track_schema(n, cfg.max_valid, cfg.max_expand),
                           phase="track", max_tokens=ctx.settings.llm.json_max_tokens,
                           validate=lambda d: _validate(d, n))
        if not result.ok:
            return None, result.errors
        d = result.data
        valid = list(dict.fromkeys(int(i) for i in d["valid_ids"]))
        expand = list(dict.fromkeys(int(i) for i in d["need_expand_ids"]))
        choice = (valid, expand, int(d["continue"]), str(d["current_chain"]).strip(), str(d["expansion_requirements"]).strip())
        return choice, result.errors


def _validate(data: dict, n: int) -> str | None:
    for key in ("current_chain", "valid_ids", "expansion_requirements", "need_expand_ids", "continue"):
        if key not in data:
            return f"missing {key}"
    for key in ("valid_ids", "need_expand_ids"):
        if not isinstance(data[key], list) or not all(isinstance(i, int) and 0 <= i < n for i in data[key]):
            return f"{key} must be a list of path ids between 0 and {n - 1}"
    if data["continue"] not in (0, 1):
        return "continue must be 0 or 1"
    return None


def _by_sim(paths: Sequence[Path], n: int) -> list[int]:
    return sorted(range(len(paths)), key=lambda i: (-paths[i].sim, i))[:n]


register("neuropath", NeuroPath)
