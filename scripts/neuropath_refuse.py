"""Re-score NeuroPath completion variants offline from a neuropath_variants.py output.

The tracked paths (path documents, chain, requirement) saved per question are replayed
through other fusions, with no model call: only embeddings and the index are used.

    .venv/bin/python scripts/neuropath_refuse.py /tmp/npv-musique.json --data ../shared/data/musique100 \
        --ids ../shared/data/musique100/dev_ids.txt --limit 25
"""

from __future__ import annotations

import argparse
import json

from localrag.api import Assistant
from localrag.bench.data import default_work_dir, doc_id_of, load_dataset
from localrag.bench.metrics import recall_at_k
from localrag.bench.runner import prepare_index
from localrag.retrieve.dense import dense_ranked
from localrag.retrieve.hybrid import hybrid_ranked, rrf


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("saved")
    ap.add_argument("--data", required=True)
    ap.add_argument("--ids")
    ap.add_argument("--limit", type=int)
    args = ap.parse_args()
    saved = {r["id"]: r for r in json.load(open(args.saved))["rows"]}
    dataset = load_dataset(args.data, args.ids, args.limit)
    index, _ = prepare_index(dataset, default_work_dir(dataset), {"memory.enabled": False})
    ctx = Assistant(index).context()
    k = 10
    variants: dict[str, list[float]] = {}

    def score(name, ranked, q):
        passages = ctx.store.docs.passages([p for p, _ in ranked][:k])
        paths = {p.id: p.path for p in passages}
        distinct = list(dict.fromkeys(d for d in (doc_id_of(paths.get(p, "")) for p, _ in ranked[:k]) if d))
        s = variants.setdefault(name, [0.0, 0.0, 0])
        s[0] += recall_at_k(distinct, q.gold_doc_ids, 2) or 0.0
        s[1] += recall_at_k(distinct, q.gold_doc_ids, 5) or 0.0
        s[2] += 1

    for q in dataset.questions:
        row = saved.get(q.id)
        if row is None:
            continue
        docs = row["path_docs"]
        text = " ".join(x for x in (q.question, row["chain"], row["g"]) if x)
        hyb_q = hybrid_ranked(ctx, q.question, 100)[0]
        dense_t = dense_ranked(ctx, text, 100)
        hyb_t = hybrid_ranked(ctx, text, 100)[0]
        score("hybrid(query)", hyb_q, q)
        if not row["seeds"]:
            for name in list(variants):
                pass
        path_list = [(d, 1.0) for d in docs]
        for rk in (8, 30, 60):
            score(f"rrf{rk}[paths, dense(q+chain+g)]", rrf([path_list, dense_t], k, rrf_k=rk), q)
            score(f"rrf{rk}[paths, hybrid(q)]", rrf([path_list, hyb_q], k, rrf_k=rk), q)
            score(f"rrf{rk}[paths, hybrid(q), dense(q+chain+g)]", rrf([path_list, hyb_q, dense_t], k, rrf_k=rk), q)
            score(f"rrf{rk}[paths, hybrid(q+chain+g)]", rrf([path_list, hyb_t], k, rrf_k=rk), q)
            score(f"rrf{rk}[paths x0.5, hybrid(q)]", rrf([path_list, hyb_q], k, weights=[0.5, 1.0], rrf_k=rk), q)
    for name, (a, b, n) in sorted(variants.items(), key=lambda t: -(t[1][1] + t[1][0] / 10)):
        print(f"{name:48s} R@2 {a / n:.3f} R@5 {b / n:.3f}  (n={n})")


if __name__ == "__main__":
    main()
