"""Sweep the hybrid fusion constant on a benchmark index, with one retrieval per question.

    python -m localrag.bench.fusion --data DIR [--ids FILE] [--rrf-k 1,5,8,10,20,60] [--work DIR]

Each question's dense and lexical rankings (``hybrid_pool`` deep) are computed once and
fused with :func:`localrag.retrieve.hybrid.rrf` for every constant, so the sweep costs
one query embedding per question however many constants are tried. The index is the
one ``localrag bench`` built for the same data (same cache folder).
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from pathlib import Path

from localrag.bench.data import Question, default_work_dir, doc_id_of, load_dataset
from localrag.bench.metrics import mean, recall_at_k
from localrag.bench.results import RECALL_KS
from localrag.bench.runner import prepare_index
from localrag.retrieve.hybrid import rrf

Ranking = list[tuple[int, float]]


@dataclass
class Lists:
    question: Question
    dense: Ranking
    lexical: Ranking
    doc_of: dict[int, int | None]  # passage id -> corpus doc id


def _recall(lists: list[Lists], ranked: list[Ranking]) -> dict[str, float]:
    out: dict[str, float] = {}
    for k in RECALL_KS:
        values = [recall_at_k([item.doc_of.get(pid) for pid, _ in r], item.question.gold_doc_ids, k)
                  for item, r in zip(lists, ranked)]
        out[str(k)] = round(mean(values) or 0.0, 4)
    return out


def sweep(data: str, ids: str | None, constants: list[int], work: Path | None = None) -> list[tuple[str, dict[str, float]]]:
    dataset = load_dataset(data, ids)
    index, _ = prepare_index(dataset, (work or default_work_dir(dataset)).expanduser().resolve(), {})
    try:
        pool = index.settings.hybrid_pool
        lists: list[Lists] = []
        for q in dataset.questions:
            dense = index.store.vectors.knn(index.embedder.encode_one(q.question), pool)
            lexical = index.store.lexical.search(q.question, pool)
            ids_seen = list({pid for pid, _ in dense + lexical})
            doc_of = {p.id: doc_id_of(p.path) for p in index.store.docs.passages(ids_seen)}
            lists.append(Lists(q, dense, lexical, doc_of))
    finally:
        index.close()
    depth = 2 * max(RECALL_KS)
    rows = [("dense", _recall(lists, [x.dense for x in lists])), ("lexical", _recall(lists, [x.lexical for x in lists]))]
    for c in constants:
        rows.append((f"hybrid rrf_k={c}", _recall(lists, [rrf([x.dense, x.lexical], depth, rrf_k=c) for x in lists])))
    return rows


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m localrag.bench.fusion", description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", required=True)
    ap.add_argument("--ids")
    ap.add_argument("--rrf-k", default="1,3,5,8,10,12,15,20,30,60")
    ap.add_argument("--work")
    args = ap.parse_args(argv)
    constants = [int(c) for c in args.rrf_k.split(",") if c.strip()]
    rows = sweep(args.data, args.ids, constants, Path(args.work) if args.work else None)
    print("| ranking | " + " | ".join(f"R@{k}" for k in RECALL_KS) + " |")
    print("|---|" + "---:|" * len(RECALL_KS))
    for name, recall in rows:
        print(f"| {name} | " + " | ".join(f"{recall[str(k)]:.3f}" for k in RECALL_KS) + " |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
