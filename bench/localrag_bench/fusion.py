"""Sweep the hybrid fusion constant, or the `graph` fusion's constants, on a benchmark index.

    localrag bench fusion --data DIR [--ids FILE] [--rrf-k 1,5,8,10,20,60] [--work DIR]
    localrag bench fusion --graph --data DIR [--ids FILE] [--json FILE]
    localrag bench fusion --graph --notes DIR --questions FILE [--ids FILE] [--json FILE]

With ``--graph`` each question's dense and lexical rankings and its PPR walk are computed
once; every (entity damping, passage damping) read-out of the walk and every weighting of
the three lists (``--grid``) is then scored without retrieving again. ``--json`` keeps every
configuration's recall, so the constants can be chosen over several sets together
(``localrag bench fusion choose FILE...``).

Each question's dense and lexical rankings (``hybrid_pool`` deep) are computed once and
fused with :func:`localrag.retrieve.hybrid.rrf` for every constant, so the sweep costs
one query embedding per question however many constants are tried. The index is the
one ``localrag bench`` built for the same data (same cache folder).
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from pathlib import Path

from localrag.commands.common import UserError
from localrag.retrieve.fusion import rrf
from localrag_bench.data import Dataset, Question, default_work_dir, doc_id_of, load_dataset
from localrag_bench.graph_sweep import Grid, choose, write_json
from localrag_bench.graph_sweep import sweep as graph_sweep
from localrag_bench.metrics import mean, recall_at_k
from localrag_bench.notes_set import load_notes_dataset
from localrag_bench.results import RECALL_KS
from localrag_bench.runner import prepare_index

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


def run(args: argparse.Namespace) -> int:
    """`localrag bench fusion` (options in bench/localrag_bench/cli_tools.py)."""
    if args.graph:
        return graph_main(args)
    if not args.data:
        raise UserError("--data DIR is required (or --graph with --notes DIR --questions FILE)")
    constants = [int(c) for c in args.rrf_k.split(",") if c.strip()]
    rows = sweep(args.data, args.ids, constants, Path(args.work) if args.work else None)
    print("| ranking | " + " | ".join(f"R@{k}" for k in RECALL_KS) + " |")
    print("|---|" + "---:|" * len(RECALL_KS))
    for name, recall in rows:
        print(f"| {name} | " + " | ".join(f"{recall[str(k)]:.3f}" for k in RECALL_KS) + " |")
    return 0


def _dataset(args: argparse.Namespace) -> Dataset:
    if args.notes:
        return load_notes_dataset(args.notes, args.questions, args.ids)
    return load_dataset(args.data, args.ids)


def graph_main(args: argparse.Namespace) -> int:
    dataset = _dataset(args)
    rows = graph_sweep(dataset, Grid(), Path(args.work) if args.work else None)
    if args.json:
        write_json(rows, dataset, Path(args.json))
    best = sorted(rows[4:], key=lambda r: -r.recall["5"])[:15]
    print(f"{dataset.name}: {len(dataset.questions)} questions, {len(rows) - 4} configurations; the baselines and the "
          "15 best by recall@5")
    print("| ranking | " + " | ".join(f"R@{k}" for k in RECALL_KS) + " |")
    print("|---|" + "---:|" * len(RECALL_KS))
    for row in rows[:4] + best:
        print(f"| {row.name} | " + " | ".join(f"{row.recall[str(k)]:.3f}" for k in RECALL_KS) + " |")
    return 0


def run_choose(args: argparse.Namespace) -> int:
    """`localrag bench fusion choose`: configurations by mean recall@5 over the sweeps given, with each set's
    figure and margin."""
    choices, singles = choose([Path(a) for a in args.sweeps])
    names = sorted(singles)
    best_single = {n: max(singles[n].values()) for n in names}
    single_means = {s: sum(singles[n][s] for n in names) / len(names) for s in next(iter(singles.values()))}
    print("best single strategy mean R@5: " + ", ".join(f"{s} {m:.3f}" for s, m in single_means.items()))
    print("| configuration | " + " | ".join(names) + " | mean | worst margin |")
    print("|---|" + "---:|" * (len(names) + 2))
    for c in choices[:25]:
        cfg = c.config
        label = (f"ed={cfg['entity_damping']:g} pd={cfg['passage_damping']:g} w_ppr={cfg['ppr']:g} "
                 f"w_lex={cfg['lexical']:g} k={cfg['rrf_k']} focus={cfg.get('focus', 0):g}")
        print(f"| {label} | " + " | ".join(f"{c.per_set[n]:.3f}" for n in names) + f" | {c.mean:.3f} | {c.margin:+.3f} |")
    print("| best single per set | " + " | ".join(f"{best_single[n]:.3f}" for n in names) + " | | |")
    return 0
