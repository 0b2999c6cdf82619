"""Reference points printed beside localrag's figures.

- the BM25 recall the data README reports (all questions of each full set);
- the same BM25 (k1 0.9, b 0.4 over title + text, ``[a-z0-9]+`` tokens, as in
  ``shared/data/make_subcorpus.py``) computed here on exactly the benchmarked
  corpus and questions, so a sub-corpus or an ids selection has a like-for-like row.
"""

from __future__ import annotations

import math
import re
from collections import Counter, defaultdict

from localrag_bench.data import Dataset
from localrag_bench.metrics import mean, recall_at_k
from localrag_bench.results import RECALL_KS, ReferenceRow

_TOKEN = re.compile(r"[a-z0-9]+")

# shared/data/README.md: "BM25 (k1 0.9, b 0.4) on title+text, passage recall@2 / @5"
README_BM25: dict[str, tuple[int, float, float]] = {
    "2wiki": (1000, 0.568, 0.678),
    "musique100": (100, 0.373, 0.491),
    "musique200": (200, 0.438, 0.515),
    "hotpotqa100": (100, 0.535, 0.745),
}


def _tokens(text: str) -> list[str]:
    return _TOKEN.findall(text.lower())


class BM25:
    def __init__(self, docs: list[list[str]], k1: float = 0.9, b: float = 0.4):
        self.k1, self.b = k1, b
        self.n = len(docs)
        self.lengths = [len(d) for d in docs]
        self.avg = sum(self.lengths) / max(self.n, 1)
        self.postings: dict[str, list[tuple[int, int]]] = defaultdict(list)
        for i, doc in enumerate(docs):
            for term, tf in Counter(doc).items():
                self.postings[term].append((i, tf))

    def top(self, query: list[str], k: int) -> list[int]:
        scores: dict[int, float] = defaultdict(float)
        for term in set(query):
            plist = self.postings.get(term)
            if not plist:
                continue
            df = len(plist)
            idf = math.log(1 + (self.n - df + 0.5) / (df + 0.5))
            for i, tf in plist:
                norm = self.k1 * (1 - self.b + self.b * self.lengths[i] / self.avg)
                scores[i] += idf * tf * (self.k1 + 1) / (tf + norm)
        return [i for i, _ in sorted(scores.items(), key=lambda t: (-t[1], t[0]))[:k]]


def bm25_reference(dataset: Dataset) -> ReferenceRow:
    index = BM25([_tokens(f"{p.title} {p.text}") for p in dataset.corpus])
    doc_ids = [p.doc_id for p in dataset.corpus]
    depth = max(RECALL_KS)
    per_k: dict[str, list[float | None]] = {str(k): [] for k in RECALL_KS}
    for q in dataset.questions:
        ranked = [doc_ids[i] for i in index.top(_tokens(q.question), depth)]
        for k in RECALL_KS:
            per_k[str(k)].append(recall_at_k(ranked, q.gold_doc_ids, k))
    recall = {k: round(mean(v) or 0.0, 4) for k, v in per_k.items()}
    return ReferenceRow("bm25 (reference)", "computed here: k1 0.9, b 0.4, title+text, same questions",
                        len(dataset.questions), recall)


def readme_reference(dataset: Dataset) -> ReferenceRow | None:
    base = dataset.folder.name if dataset.folder.name in README_BM25 else dataset.name.split("-")[0]
    if base not in README_BM25:
        return None
    n, r2, r5 = README_BM25[base]
    note = "shared/data/README.md, all questions of the full set"
    if dataset.name != base:
        note += f" (not the {dataset.name} sub-corpus)"
    return ReferenceRow("bm25 (data README)", note, n, {"2": r2, "5": r5})


def references(dataset: Dataset) -> list[ReferenceRow]:
    rows = [bm25_reference(dataset)]
    readme = readme_reference(dataset)
    if readme is not None:
        rows.append(readme)
    return rows
