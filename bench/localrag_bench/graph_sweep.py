"""The `graph` fusion's constants swept on a benchmark index (``localrag bench fusion --graph``).

Per question: the dense and lexical rankings (``hybrid_pool`` deep) and one PPR walk are
computed once; each read-out damping and each weighting is then a re-ranking of lists in
memory. The baselines (dense, lexical, hybrid, ppr) are run through the real strategies
on the same index, so the rows compare like with like.
"""

from __future__ import annotations

import dataclasses
import itertools
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

import numpy as np

from localrag.api import Assistant
from localrag_bench.data import Dataset, default_work_dir
from localrag_bench.metrics import mean, recall_at_k
from localrag_bench.results import RECALL_KS
from localrag_bench.runner import ensure_graph, prepare_index
from localrag.retrieve.graph import FusionWeights, fuse, passage_scores, ppr_list, seed_focus, walk

Ranking = list[tuple[int, float]]
DEPTH = 2 * max(RECALL_KS)  # passages per question, as `localrag bench` asks (2 · k)
BASELINES = ("dense", "lexical", "hybrid", "ppr")


@dataclass(frozen=True)
class Grid:
    entity_damping: tuple[float, ...] = (0.0, 0.5, 1.0)
    passage_damping: tuple[float, ...] = (0.0, 0.5, 1.0)
    ppr: tuple[float, ...] = (0.5, 1.0, 1.5, 2.0, 3.0, 4.0)
    lexical: tuple[float, ...] = (0.5, 1.0, 1.5)
    rrf_k: tuple[int, ...] = (2, 5, 8, 15)
    focus: tuple[float, ...] = (0.0, 0.02, 0.05, 0.1, 0.2)


@dataclass(frozen=True)
class Config:
    entity_damping: float
    passage_damping: float
    ppr: float
    lexical: float
    rrf_k: int
    focus: float = 0.0

    @property
    def name(self) -> str:
        return (f"graph ed={self.entity_damping:g} pd={self.passage_damping:g} w_ppr={self.ppr:g} "
                f"w_lex={self.lexical:g} k={self.rrf_k} focus={self.focus:g}")


@dataclass
class Row:
    name: str
    recall: dict[str, float]
    config: Config | None = None


def _recall(dataset: Dataset, paths: dict[int, str], golds: list[tuple[int, ...]], ranked: list[Ranking]) -> dict[str, float]:
    out = {}
    for k in RECALL_KS:
        values = [recall_at_k([dataset.doc_of(paths.get(pid, "")) for pid, _ in r], gold, k)
                  for gold, r in zip(golds, ranked)]
        out[str(k)] = round(mean(values) or 0.0, 4)
    return out


def sweep(dataset: Dataset, grid: Grid, work: Path | None = None) -> list[Row]:
    index, _ = prepare_index(dataset, (work or default_work_dir(dataset)).expanduser().resolve(), {})
    try:
        ensure_graph(index, ["graph"])
        assistant = Assistant(index)
        ctx = assistant.context()
        pool = index.settings.hybrid_pool
        baseline: dict[str, list[Ranking]] = {name: [] for name in BASELINES}
        items = []
        for q in dataset.questions:
            for name in BASELINES:
                got = assistant.retrieve(q.question, name, DEPTH)
                baseline[name].append([(sp.passage.id, sp.score) for sp in got.passages])
            qvec = index.embedder.encode_one(q.question)
            dense = index.store.vectors.knn(qvec, pool)
            lexical = index.store.lexical.search(q.question, pool)
            w = walk(ctx, q.question, qvec)
            ppr_lists = {}
            for ed, pd in itertools.product(grid.entity_damping, grid.passage_damping):
                if w.mass is None:
                    ppr_lists[(ed, pd)] = []
                else:
                    ppr_lists[(ed, pd)] = ppr_list(ctx, qvec, dense, w.graph, passage_scores(w.graph, w.mass, ed, pd), pool)
            items.append((dense, lexical, ppr_lists, seed_focus(w)))
        seen = {pid for lists in baseline.values() for r in lists for pid, _ in r}
        for dense, lexical, ppr_lists, _ in items:
            seen |= {pid for pid, _ in dense + lexical}
            seen |= {pid for r in ppr_lists.values() for pid, _ in r}
        paths = {p.id: p.path for p in index.store.docs.passages(sorted(seen))}
    finally:
        index.close()
    golds = [q.gold_doc_ids for q in dataset.questions]
    rows = [Row(name, _recall(dataset, paths, golds, baseline[name])) for name in BASELINES]
    for ed, pd, wp, wl, k, fo in itertools.product(grid.entity_damping, grid.passage_damping, grid.ppr, grid.lexical,
                                                   grid.rrf_k, grid.focus):
        config = Config(ed, pd, wp, wl, k, fo)
        weights = FusionWeights(1.0, wl, wp, k, fo)
        ranked = [fuse(dense, lexical, lists[(ed, pd)], weights, DEPTH, focus) for dense, lexical, lists, focus in items]
        rows.append(Row(config.name, _recall(dataset, paths, golds, ranked), config))
    return rows


def write_json(rows: Sequence[Row], dataset: Dataset, out: Path) -> None:
    out.parent.mkdir(parents=True, exist_ok=True)
    fields = [f.name for f in dataclasses.fields(Config)]
    payload = {"dataset": dataset.name, "ids_file": dataset.ids_file, "questions": len(dataset.questions),
               "config_fields": fields,  # a configuration row's "config" is its values in this order
               "rows": [{"name": r.name, "recall": r.recall} if r.config is None else
                        {"recall": r.recall, "config": [getattr(r.config, f) for f in fields]} for r in rows]}
    out.write_text(json.dumps(payload, separators=(",", ":")), encoding="utf-8")  # thousands of rows: compact


@dataclass
class Choice:
    config: dict
    per_set: dict[str, float]  # recall@5 per data set
    mean: float
    margin: float  # worst (fusion - best single strategy) over the sets, recall@5


def choose(files: Sequence[Path], k: str = "5") -> tuple[list[Choice], dict[str, dict[str, float]]]:
    """Configurations ranked by mean recall@k over the sets, with the worst margin to the best single retriever."""
    sets = [json.loads(Path(f).read_text(encoding="utf-8")) for f in files]
    for s in sets:
        for r in s["rows"]:
            r["config"] = dict(zip(s["config_fields"], r["config"])) if r.get("config") is not None else None
    singles = {s["dataset"]: {r["name"]: r["recall"][k] for r in s["rows"] if r["config"] is None} for s in sets}
    by_config: dict[str, dict[str, float]] = {}
    configs: dict[str, dict] = {}
    for s in sets:
        for r in s["rows"]:
            if r["config"] is not None:
                key = json.dumps(r["config"], sort_keys=True)
                configs[key] = r["config"]
                by_config.setdefault(key, {})[s["dataset"]] = r["recall"][k]
    choices = []
    for key, per_set in by_config.items():
        if len(per_set) != len(sets):
            continue
        margin = min(per_set[name] - max(singles[name].values()) for name in per_set)
        choices.append(Choice(configs[key], per_set, float(np.mean(list(per_set.values()))), margin))
    choices.sort(key=lambda c: (-c.mean, -c.margin))
    return choices, singles
