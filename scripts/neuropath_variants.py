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
from localrag_bench.data import default_work_dir, doc_id_of, load_dataset
from localrag_bench.metrics import recall_at_k
from localrag_bench.runner import ensure_graph, prepare_index
from localrag.records import Trace
from localrag.retrieve.dense import dense_ranked
from localrag.retrieve.hybrid import hybrid_ranked
from localrag.retrieve.neuropath import TrackState, link_seeds, query_entities, track
from localrag.retrieve.neuropath.paths import path_docs

VARIANTS = [(merge, completion, qtext) for merge in ("paths-first", "fused")
            for completion in ("dense", "hybrid") for qtext in ("query+chain+g", "query")]


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
    assistant = Assistant(index)
    ctx = assistant.context()
    k = 10
    sums = {v: [0.0, 0.0] for v in VARIANTS}
    sums[("hybrid", "", "")] = [0.0, 0.0]
    rows = []
    started = time.perf_counter()
    for n, q in enumerate(dataset.questions, 1):
        trace = Trace("neuropath")
        tctx = ctx.traced(trace)
        seeds = link_seeds(tctx, query_entities(tctx, q.question, trace))
        state = track(tctx, q.question, [e for _, e, _, _ in seeds], trace) if seeds else TrackState()
        docs = path_docs(state.valid)
        row = {"id": q.id, "seeds": len(seeds), "path_docs": docs, "chain": state.chain, "g": state.requirement,
               "llm_failed": state.llm_failed, "calls": len(trace.calls), "recall": {}}
        base, _ = hybrid_ranked(ctx, q.question, k)
        for v in VARIANTS + [("hybrid", "", "")]:
            merge, completion, qtext = v
            if merge == "hybrid":
                ranked = base
            else:
                text = q.question if qtext == "query" else " ".join(x for x in (q.question, state.chain, state.requirement) if x)
                pool = max(ctx.settings.neuropath.backfill, k)
                comp = hybrid_ranked(ctx, text, pool)[0] if completion == "hybrid" else dense_ranked(ctx, text, pool)
                if not seeds:
                    ranked = dense_ranked(ctx, q.question, k)  # the strategy's no-entity fallback
                elif merge == "fused":
                    from localrag.retrieve.hybrid import rrf
                    ranked = rrf([[(d, 1.0) for d in docs], comp], k)
                else:
                    ranked = [(d, 0.0) for d in docs] + [(p, s) for p, s in comp if p not in set(docs)]
            passages = ctx.store.docs.passages([p for p, _ in ranked][:k])
            paths = {p.id: p.path for p in passages}
            distinct = list(dict.fromkeys(d for d in (doc_id_of(paths.get(p, "")) for p, _ in ranked[:k]) if d))
            r2, r5 = recall_at_k(distinct, q.gold_doc_ids, 2), recall_at_k(distinct, q.gold_doc_ids, 5)
            sums[v][0] += r2 or 0.0
            sums[v][1] += r5 or 0.0
            row["recall"]["/".join(x for x in v if x)] = [r2, r5]
        rows.append(row)
        print(f"{n}/{len(dataset.questions)} {time.perf_counter() - started:.0f}s calls {row['calls']} "
              f"failed {state.llm_failed} docs {len(docs)}", flush=True)
    n = len(rows)
    table = {"/".join(x for x in v if x): [round(a / n, 4), round(b / n, 4)] for v, (a, b) in sums.items()}
    for name, (r2, r5) in sorted(table.items(), key=lambda t: -t[1][1]):
        print(f"{name:40s} R@2 {r2:.3f} R@5 {r5:.3f}")
    Path(args.out).write_text(json.dumps({"dataset": dataset.name, "questions": n, "table": table, "rows": rows}, indent=1))


if __name__ == "__main__":
    main()
