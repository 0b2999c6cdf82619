"""Replay NeuroPath's completion offline under other fusion settings, with no model call.

A `localrag bench --strategy neuropath` result keeps, per question, what path tracking
handed to completion (``tracking``: seeds, path documents, open path ends, chain,
requirement, fallback). This script feeds the same inputs through NeuroPath's own ``fuse``
(localrag.retrieve.neuropath.completion, via localrag_bench.neuropath_replay) under each
variant's settings and prints recall@2/@5, so completion defaults are chosen on
like-for-like numbers (the tracking calls are the expensive part and run once).

    .venv/bin/python scripts/neuropath_refuse.py docs/results/musique100-dev-neuropath.json

``--from-log DATA_DIR`` reads the same inputs from the query log of the data set's bench
index instead (the traces of a run still in progress, or of one that was stopped).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from localrag.api import Assistant, Index
from localrag.config import load_settings
from localrag.records import Trace
from localrag.retrieve.graph import graph_ranked
from localrag.retrieve.hybrid import hybrid_ranked
from localrag_bench.data import default_work_dir, load_dataset
from localrag_bench.neuropath_replay import (RecallSums, completion_input, fuse_with, no_entity_fallback, passage_ids,
                                            ranked_doc_ids)
from localrag_bench.runner import prepare_index, tracking_summary

# name -> NeuroPathSettings overrides
def _v(completion: str, graph: str, paths: float, fallback: float, **more) -> dict:
    return {"completion": completion, "graph_completion": graph, "path_weight": paths, "fallback_weight": fallback,
            **more}


VARIANTS: dict[str, dict] = {
    "paths-first (paper)": _v("dense", "none", 1.0, 1.0, merge="paths-first"),
    "rrf8[paths, dense]": _v("dense", "none", 1.0, 1.0),
    "rrf8[paths(fb x0.5), dense]": _v("dense", "none", 1.0, 0.5),
    "rrf8[paths(fb x0.5), hybrid]": _v("hybrid", "none", 1.0, 0.5),
    "rrf8[paths, dense, ppr]": _v("dense", "ppr", 1.0, 1.0),
    "rrf8[paths(fb x0.5), dense, ppr]": _v("dense", "ppr", 1.0, 0.5),
    "rrf8[paths, hybrid, ppr]": _v("hybrid", "ppr", 1.0, 1.0),
    "rrf8[paths(fb x0.5), hybrid, ppr]": _v("hybrid", "ppr", 1.0, 0.5),
    "rrf8[paths x0.5, hybrid, ppr]": _v("hybrid", "ppr", 0.5, 0.5),
    "rrf8[paths x0.5 (fb x0.3), hybrid, ppr]": _v("hybrid", "ppr", 0.5, 0.3),
    "rrf8[paths x0.3, hybrid, ppr]": _v("hybrid", "ppr", 0.3, 0.3),
    "rrf30[paths x0.5 (fb x0.3), hybrid, ppr]": _v("hybrid", "ppr", 0.5, 0.3, fuse_k=30),
}
# completion starting from the no-LLM `graph` fusion: graph list + paths x w + chain hits x c
for _w in (0.1, 0.3, 0.5):
    for _c in (0.0, 0.3):
        VARIANTS[f"graph + paths x{_w} + chain x{_c}"] = _v("graph", "none", _w, _w, chain_weight=_c)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("result", nargs="?", help="a bench result JSON with neuropath records")
    ap.add_argument("--from-log", metavar="DATA_DIR", help="read tracking from this data set's bench query log")
    ap.add_argument("--ids", help="question ids file (with --from-log)")
    ap.add_argument("--work", help="the bench work dir (default: the result's, else the data set's default)")
    ap.add_argument("--as-stored", action="store_true",
                    help="open the index as it is, without syncing its notes (passage ids stay those of the run)")
    ap.add_argument("--k", type=int, default=10)
    ap.add_argument("--variants", default="", help="only the variants whose name contains this text")
    args = ap.parse_args()
    variants = {n: v for n, v in VARIANTS.items() if args.variants in n}
    if args.from_log:
        dataset = load_dataset(args.from_log, args.ids, None)
    else:
        saved = json.load(open(args.result))
        dataset = load_dataset(saved["data_dir"], saved.get("ids_file"), None)
    # passage ids are only meaningful in the index the run used
    work = args.work or (None if args.from_log else saved.get("index", {}).get("work_dir"))
    work_dir = Path(work) if work else default_work_dir(dataset)
    if args.as_stored:  # a later chunker would re-chunk the notes and renumber the passages the records name
        index = Index(load_settings(work_dir / "notes", {"memory.enabled": False, "db": str(work_dir / "index.db")}))
    else:
        index, _ = prepare_index(dataset, work_dir, {"memory.enabled": False})
    if args.from_log:
        by_text = {q.question: q.id for q in dataset.questions}
        records = {}
        for row in reversed(index.store.calls.recent_queries(100_000)):  # oldest first: the latest run wins
            if row.strategy == "neuropath" and row.text in by_text and row.trace.get("steps"):
                records[by_text[row.text]] = {"tracking": tracking_summary(Trace.from_json(row.trace))}
    else:
        records = {r["id"]: r for r in saved["records"] if r["strategy"] == "neuropath"}
    ctx = Assistant(index).context()
    sums = RecallSums()
    add = sums.add

    def distinct(ranked: list[tuple[int, float]]) -> list[int]:
        return ranked_doc_ids(ctx, [pid for pid, _ in ranked])

    for q in dataset.questions:
        rec = records.get(q.id)
        if rec is None:
            continue
        gold = q.gold_doc_ids
        if "retrieved_doc_ids" in rec:
            add("as run", rec["retrieved_doc_ids"], gold)
        add("hybrid(query)", distinct(hybrid_ranked(ctx, q.question, args.k)[0]), gold)
        add("graph(query), no LLM", distinct(graph_ranked(ctx, q.question, args.k)[0]), gold)
        t = rec.get("tracking") or {}
        for name, overrides in variants.items():
            if not t.get("seeds"):  # no query entity: the strategy's fallback
                add(name, distinct(no_entity_fallback(ctx, q.question, args.k, overrides["completion"])), gold)
                continue
            retrieval = fuse_with(ctx, q.question, completion_input(t), args.k,
                                  **({"merge": "fused", "fuse_k": 8} | overrides))
            add(name, ranked_doc_ids(ctx, passage_ids(retrieval)), gold)
    for name, (r2, r5, n) in sums.means().items():
        print(f"{name:40s} R@2 {r2:.3f} R@5 {r5:.3f}  (n={n})")


if __name__ == "__main__":
    main()
