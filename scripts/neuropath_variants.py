"""Tune NeuroPath's post-retrieval completion on one tracking run per question.

Path tracking (the LLM part) runs once per question; every (merge, completion retriever,
completion query) variant is then scored on the same tracked paths, so the defaults in
``NeuroPathSettings`` are chosen on like-for-like numbers. Memory is off (no order effects).

    .venv/bin/python scripts/neuropath_variants.py --data ../shared/data/2wiki/dev \
        --ids ../shared/data/2wiki/dev_ids.txt --limit 40 --out /tmp/np-variants-2wiki.json
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import time
from pathlib import Path

from localrag.api import Assistant
from localrag.records import Trace
from localrag.retrieve.hybrid import RRF_K, hybrid_ranked
from localrag.retrieve.neuropath import CompletionInput, TrackState, complete, link_seeds, query_entities, track
from localrag_bench.data import default_work_dir, load_dataset
from localrag_bench.neuropath_replay import RecallSums, fuse_with, no_entity_fallback, passage_ids, ranked_doc_ids
from localrag_bench.runner import ensure_graph, prepare_index

# (merge, completion retriever, completion query): each is NeuroPath's own fuse with these settings, the
# paper's two lists only (no PPR list), equal weights and the RRF constant of hybrid
VARIANTS = [(merge, completion, qtext) for merge in ("paths-first", "fused")
            for completion in ("dense", "hybrid") for qtext in ("query+chain+g", "query")]
AS_CONFIGURED = "as configured"  # the index's own neuropath settings (NeuroPath's complete())


def variant_settings(merge: str, completion: str) -> dict:
    return {"merge": merge, "completion": completion, "graph_completion": "none", "path_weight": 1.0,
            "fallback_weight": 1.0, "fuse_k": RRF_K}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", required=True)
    ap.add_argument("--ids")
    ap.add_argument("--limit", type=int)
    ap.add_argument("--set", action="append", default=[], help="KEY=VALUE settings (e.g. llm.n_threads=1)")
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    dataset = load_dataset(args.data, args.ids, args.limit)
    overrides = {"memory.enabled": False}
    for kv in args.set:
        key, value = kv.split("=", 1)
        overrides[key] = value
    index, _ = prepare_index(dataset, default_work_dir(dataset), overrides)
    print(ensure_graph(index, ["neuropath"]), flush=True)
    ctx = Assistant(index).context()
    k = 10
    sums = RecallSums()
    rows = []
    started = time.perf_counter()
    for n, q in enumerate(dataset.questions, 1):
        trace = Trace("neuropath")
        tctx = ctx.traced(trace)
        seeds = link_seeds(tctx, query_entities(tctx, q.question, trace))
        seed_ids = [e for _, e, _, _ in seeds]
        state = track(tctx, q.question, seed_ids, trace) if seeds else TrackState()
        inp = CompletionInput.of(state, seed_ids)
        row = {"id": q.id, "seeds": len(seeds), "path_docs": list(inp.docs), "chain": state.chain,
               "g": state.requirement, "llm_failed": state.llm_failed, "calls": len(trace.calls), "recall": {}}
        ranked: dict[str, list[int]] = {"hybrid": [pid for pid, _ in hybrid_ranked(ctx, q.question, k)[0]]}
        no_entity = [pid for pid, _ in no_entity_fallback(ctx, q.question, k, "dense")]  # the variants' completion
        for merge, completion, qtext in VARIANTS:
            name = f"{merge}/{completion}/{qtext}"
            query_only = dataclasses.replace(inp, chain="", requirement="") if qtext == "query" else inp
            ranked[name] = passage_ids(fuse_with(ctx, q.question, query_only, k, **variant_settings(merge, completion))) \
                if seeds else no_entity
        ranked[AS_CONFIGURED] = passage_ids(complete(ctx, q.question, state, k, Trace("neuropath"), seeds=seed_ids)) \
            if seeds else [pid for pid, _ in no_entity_fallback(ctx, q.question, k, ctx.settings.neuropath.completion)]
        for name, pids in ranked.items():
            row["recall"][name] = list(sums.add(name, ranked_doc_ids(ctx, pids[:k]), q.gold_doc_ids))
        rows.append(row)
        print(f"{n}/{len(dataset.questions)} {time.perf_counter() - started:.0f}s calls {row['calls']} "
              f"failed {state.llm_failed} docs {len(inp.docs)}", flush=True)
    table = {name: [round(r2, 4), round(r5, 4)] for name, (r2, r5, _) in sums.means().items()}
    for name, (r2, r5) in table.items():
        print(f"{name:40s} R@2 {r2:.3f} R@5 {r5:.3f}")
    Path(args.out).write_text(json.dumps({"dataset": dataset.name, "questions": len(rows), "table": table, "rows": rows},
                                         indent=1))


if __name__ == "__main__":
    main()
