#!/usr/bin/env python
"""Replay NeuroPath's and remind's final ranking offline with the fusion's head held in place.

Both LLM strategies rank by fusing what the model found into the no-LLM `graph` list
(neuropath: path documents and chain hits; remind: the walked passages). ``keep_top = n``
keeps the graph list's first n passages where they are (fusion.rrf_onto). A bench result
keeps each question's model output in its records' ``tracking`` (neuropath: completion
inputs; remind: ``collected``), so every ``keep_top`` is scored on the same model output
with no model call:

    .venv/bin/python scripts/keep_top_replay.py docs/results/issue15/musique100-dev20-smollm2-np-remind.json

Prints recall@2 / @5 per strategy and keep_top beside `graph` on the same questions, and
NeuroPath with its ungrounded tracking runs kept (``neuropath.grounded_only`` off) and remind
with the walks its judge never found sufficient fused too (``remind.confirmed_only`` off).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from localrag.api import Assistant, Index
from localrag.config import load_settings
from localrag.retrieve.base import Context
from localrag.retrieve.graph import graph_ranked
from localrag.retrieve.remind.strategy import fused_passages, onto_graph
from localrag_bench.data import BenchDataError, load_dataset
from localrag_bench.neuropath_replay import (RecallSums, completion_input, fuse_with, no_entity_fallback, passage_ids,
                                            ranked_doc_ids)

KEEP_TOPS = (0, 1, 2, 3, 5)


def remind_ranking(ctx: Context, question: str, walk: dict, k: int, keep_top: int, confirmed_only: bool) -> list[int]:
    """remind's `graph` ranking (strategy._rank) of one recorded walk (``walk_of``)."""
    walked = ctx.keep_ids(dict.fromkeys(walk["collected"]))
    fused = fused_passages(walked, walk["recalled"], walk["sufficient"], confirmed_only)
    return [pid for pid, _ in onto_graph(ctx, question, fused, k, max(k, len(walked)), keep_top)]


def walk_of(record: dict, max_llm_calls: int) -> dict:
    """A remind record's walk. Files from before the judge's verdict was recorded: a walk that
    spent its whole traversal budget was not found sufficient (the judge ends the walk on "yes"),
    any other counts as sufficient, which keeps its passages (the cautious side); memory recall unknown."""
    tracking = record["tracking"]
    if "sufficient" in tracking:
        return tracking
    spent = (record.get("calls_by_phase") or {}).get("traverse", 0) >= max_llm_calls - 1
    return {"collected": tracking["collected"], "recalled": [], "sufficient": not spent}


def neuropath_ranking(ctx: Context, question: str, tracking: dict, k: int, keep_top: int, **overrides: Any) -> list[int]:
    """NeuroPath's final ranking of one recorded tracking run; ``overrides``: neuropath settings."""
    if not tracking.get("seeds"):  # no query entity: the strategy's fallback, which keep_top does not touch
        return [pid for pid, _ in no_entity_fallback(ctx, question, k, "graph")]
    return passage_ids(fuse_with(ctx, question, completion_input(tracking), k, keep_top=keep_top, **overrides))


def _weights(text: str) -> list[float]:
    try:
        return [float(w) for w in text.split(",") if w.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected numbers separated by commas, got {text!r}") from None


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("results", nargs="+", help="bench result JSONs with neuropath and/or remind records")
    ap.add_argument("--k", type=int, default=10)
    ap.add_argument("--chain-weights", default=[], type=_weights, help="also replay NeuroPath at the shipped keep_top with these "
                    "weights of the chain's hybrid hits, e.g. 0,0.1,0.2")
    args = ap.parse_args()
    chain_weights = args.chain_weights
    for path in args.results:
        try:
            with open(path, encoding="utf-8") as f:
                saved = json.load(f)
        except (OSError, ValueError) as exc:
            raise SystemExit(f"error: {path}: not a readable bench result ({exc.__class__.__name__}: {exc})") from None
        try:
            dataset = load_dataset(saved["data_dir"], saved.get("ids_file"), None)
        except BenchDataError as exc:  # a --notes run (a folder + questions file) is not replayed here
            raise SystemExit(f"error: {path}: {exc}") from None
        work = Path(saved["index"]["work_dir"])
        # opened as stored: passage ids stay those the records name
        index = Index(load_settings(work / "notes", {"memory.enabled": False, "db": str(work / "index.db")}))
        ctx = Assistant(index).context()
        by_id = {q.id: q for q in dataset.questions}
        sums = RecallSums()
        for rec in saved["records"]:
            q = by_id.get(rec["id"])
            if q is None or rec["strategy"] not in ("neuropath", "remind"):
                continue
            tracking = rec.get("tracking") or {}
            if rec["strategy"] == "remind" and "collected" not in tracking:
                continue  # a result file from before remind's walk was recorded
            sums.add(f"{rec['strategy']} as run", rec["retrieved_doc_ids"], q.gold_doc_ids)
            sums.add(f"graph ({rec['strategy']}'s questions)",
                     ranked_doc_ids(ctx, [p for p, _ in graph_ranked(ctx, q.question, args.k)[0]]), q.gold_doc_ids)
            remind = ctx.settings.remind
            walk = walk_of(rec, remind.max_llm_calls) if rec["strategy"] == "remind" else {}
            for keep in KEEP_TOPS:
                ranked = (remind_ranking(ctx, q.question, walk, args.k, keep, remind.confirmed_only)
                          if walk else neuropath_ranking(ctx, q.question, tracking, args.k, keep))
                sums.add(f"{rec['strategy']} keep_top={keep}", ranked_doc_ids(ctx, ranked), q.gold_doc_ids)
            if walk:  # every walk's passages fused, judged sufficient or not
                ranked = remind_ranking(ctx, q.question, walk, args.k, remind.keep_top, False)
                sums.add("remind confirmed_only=False", ranked_doc_ids(ctx, ranked), q.gold_doc_ids)
            shipped = ctx.settings.neuropath.keep_top
            for weight in chain_weights if rec["strategy"] == "neuropath" else ():
                ranked = neuropath_ranking(ctx, q.question, tracking, args.k, shipped, chain_weight=weight)
                sums.add(f"neuropath chain_weight={weight:g}", ranked_doc_ids(ctx, ranked), q.gold_doc_ids)
            if rec["strategy"] == "neuropath":  # the runs whose chain says none of the question's words kept
                ranked = neuropath_ranking(ctx, q.question, tracking, args.k, shipped, grounded_only=False)
                sums.add("neuropath grounded_only=False", ranked_doc_ids(ctx, ranked), q.gold_doc_ids)
        index.close()
        print(path)
        for name, (r2, r5, n) in sorted(sums.means().items()):
            print(f"  {name:34s} R@2 {r2:.3f}  R@5 {r5:.3f}  (n={n})")


if __name__ == "__main__":
    main()
