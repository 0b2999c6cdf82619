"""Which CJK lexical index: the ways of matching Chinese words compared on one indexed layout.

Reads a copy of the index that `localrag bench notes --corpus tldr-multilingual` built (the
original is not touched) and asks the Chinese questions of one half with each variant: today's
unicode61 table alone, the bigram table (store/cjk.py) alone and with it (BM25 summed or
reciprocal rank), a trigram table of the same passages alone and with it, and the trigram table
with an instr() scan for every two-character piece (what "trigram plus a LIKE fallback" costs).
Prints note recall@2 / @5 and CPU milliseconds per question.

    PYTHONPATH=$PWD python scripts/cjk_lexical_variants.py --index ~/.cache/localrag/bench/tldr-multilingual-*/index.db \
        --split tuning
"""

from __future__ import annotations

import argparse
import json
import shutil
import tempfile
import time
from pathlib import Path
from typing import Callable

from localrag.retrieve.fusion import Ranking, rrf
from localrag.store.cjk import CJK_RUN, cjk_bigrams
from localrag.store.connection import connect
from localrag.store.db import Store
from localrag.store.lexical import cjk_query, fts_query, summed

QUESTIONS = Path(__file__).resolve().parents[1] / "bench_data" / "tldr-multilingual"
POOL = 40


def questions(split: str) -> list[dict]:
    tuning = set((QUESTIONS / "dev_ids.txt").read_text().split())
    rows = [json.loads(line) for line in (QUESTIONS / "questions.jsonl").read_text().splitlines() if line.strip()]
    return [q for q in rows if q["lang"] == "zh" and q["gold_notes"] and (q["id"] in tuning) == (split == "tuning")]


def trigram_query(text: str) -> str:
    grams = [run[i:i + 3] for run in CJK_RUN.findall(text) for i in range(len(run) - 2)]
    return " OR ".join(f'"{g}"' for g in dict.fromkeys(grams))


class Variants:
    def __init__(self, store: Store) -> None:
        self.s = store
        with store.transaction():
            store.execute("CREATE VIRTUAL TABLE passages_tri USING fts5(title, heading, text, tokenize = 'trigram')")
            store.execute("INSERT INTO passages_tri(rowid, title, heading, text) SELECT p.id, d.title, p.heading, p.text "
                          "FROM passages p JOIN documents d ON d.id = p.doc_id WHERE p.id IN (SELECT rowid FROM passages_cjk)")

    def bm25(self, table: str, query: str) -> Ranking:
        if not query:
            return []
        rows = self.s.query(f"SELECT rowid, bm25({table}, 2.0, 1.0, 1.0) AS score FROM {table} WHERE {table} MATCH ? "
                            "ORDER BY score LIMIT ?", (query, POOL))
        return [(int(r[0]), -float(r[1])) for r in rows]

    def instr_bigrams(self, text: str) -> Ranking:
        """Passages of the trigram table by how many of the question's bigrams they contain (a scan:
        FTS5 uses no index for a pattern under three characters)."""
        pieces = list(dict.fromkeys(cjk_bigrams(text)))
        if not pieces:
            return []
        contained = " + ".join("(instr(text, ?) > 0)" for _ in pieces)
        rows = self.s.query(f"SELECT rowid, {contained} AS n FROM passages_tri WHERE n > 0 ORDER BY n DESC, rowid LIMIT ?",
                            (*pieces, POOL))
        return [(int(r[0]), float(r[1])) for r in rows]

    def all(self) -> dict[str, Callable[[str], Ranking]]:
        words = lambda q: self.bm25("passages_fts", fts_query(q))  # noqa: E731
        bigrams = lambda q: self.bm25("passages_cjk", cjk_query(q))  # noqa: E731
        trigrams = lambda q: self.bm25("passages_tri", trigram_query(q))  # noqa: E731
        return {
            "unicode61 table alone": words,
            "bigram table alone": bigrams,
            "unicode61 + bigrams, BM25 summed": lambda q: summed([words(q), bigrams(q)], POOL),
            "unicode61 + bigrams, reciprocal rank": lambda q: rrf([words(q), bigrams(q)], POOL),
            "trigram table alone": trigrams,
            "unicode61 + trigrams, BM25 summed": lambda q: summed([words(q), trigrams(q)], POOL),
            "unicode61 + instr() bigrams, reciprocal rank": lambda q: rrf([words(q), self.instr_bigrams(q)], POOL),
        }


def note_recall(ranked: Ranking, path_of: dict[int, str], gold: list[str], k: int) -> float:
    notes = list(dict.fromkeys(path_of[pid] for pid, _ in ranked))[:k]
    return len(set(notes) & set(gold)) / len(gold)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--index", required=True, help="index.db of the tldr-multilingual layout (read from a copy)")
    parser.add_argument("--split", choices=("tuning", "untouched"), default="tuning")
    args = parser.parse_args()
    asked = questions(args.split)
    with tempfile.TemporaryDirectory() as tmp:
        copy = Path(tmp) / "index.db"
        shutil.copy(args.index, copy)
        probe = connect(copy, readonly=True)  # the dimension and embedder the index was built with
        meta = dict(probe.execute("SELECT key, value FROM meta").fetchall())
        probe.close()
        dim, embedder = int(meta["dim"]), meta["embedder"]
        store = Store(copy, dim=dim, embedder_id=embedder)
        try:
            path_of = {int(pid): str(path) for pid, path in store.query(
                "SELECT p.id, d.path FROM passages p JOIN documents d ON d.id = p.doc_id")}
            for name, ranked_by in Variants(store).all().items():
                cpu = at2 = at5 = 0.0
                for q in asked:
                    started = time.process_time()
                    ranked = ranked_by(q["question"])
                    cpu += time.process_time() - started
                    at2 += note_recall(ranked, path_of, q["gold_notes"], 2)
                    at5 += note_recall(ranked, path_of, q["gold_notes"], 5)
                n = len(asked)
                print(f"{name:46s} {n} questions  recall@2 {at2 / n:.3f}  recall@5 {at5 / n:.3f}  "
                      f"CPU {1000 * cpu / n:.2f} ms/question")
        finally:
            store.close()


if __name__ == "__main__":
    main()
