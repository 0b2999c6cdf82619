"""FTS5 BM25 search over passages (title, heading, text)."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Collection

from localrag.text.cjk import cjk_bigrams, has_cjk
from localrag.text.stopwords import LEXICAL_STOPWORDS
from localrag.text.words import WORD_RUN

if TYPE_CHECKING:
    from localrag.store.db import Store



def fts_query(text: str) -> str:
    """An FTS5 OR-query of the text's words, each quoted (so no user text is FTS syntax)."""
    words = [w.lower() for w in WORD_RUN.findall(text)]
    terms = [w for w in words if w not in LEXICAL_STOPWORDS] or words
    return " OR ".join(f'"{w}"' for w in dict.fromkeys(terms))


def cjk_query(text: str) -> str:
    """An FTS5 OR-query of the text's CJK bigrams (text/cjk.py), for passages_cjk."""
    return " OR ".join(f'"{b}"' for b in dict.fromkeys(cjk_bigrams(text)))


def summed(rankings: list[list[tuple[int, float]]], k: int) -> list[tuple[int, float]]:
    """The ``k`` best by the sum of their BM25 scores in each ranking; equal sums by passage id."""
    total: dict[int, float] = {}
    for ranking in rankings:
        for pid, score in ranking:
            total[pid] = total.get(pid, 0.0) + score
    return sorted(total.items(), key=lambda t: (-t[1], t[0]))[:k]


class LexicalIndex:
    def __init__(self, store: "Store") -> None:
        self.s = store

    def search(self, text: str, k: int, *, side: bool = False, only: Collection[int] | None = None) -> list[tuple[int, float]]:
        """(passage id, BM25 score, higher is better), best first.

        ``side``: read on the store's second connection, so a concurrent vector search on
        the main one does not wait (hybrid retrieval). ``only``: the passages a filter lets through.
        """
        if only is not None and not only:
            return []
        words = self._bm25("passages_fts", fts_query(text), k, side, only)
        if not has_cjk(text):
            return words
        return summed([words, self._bm25("passages_cjk", cjk_query(text), k, side, only)], k)

    def _bm25(self, table: str, query: str, k: int, side: bool, only: Collection[int] | None) -> list[tuple[int, float]]:
        if not query:
            return []
        read = self.s.side_query if side else self.s.query
        within = " AND rowid IN (SELECT value FROM json_each(?))" if only is not None else ""
        params: tuple = (query, json.dumps(sorted(only)), k) if only is not None else (query, k)
        rows = read(
            f"SELECT rowid, bm25({table}, 2.0, 1.0, 1.0) AS score FROM {table} "
            f"WHERE {table} MATCH ?{within} ORDER BY score LIMIT ?",
            params,
        )
        return [(int(r[0]), -float(r[1])) for r in rows]

    def words_starting(self, prefix: str, cap: int) -> set[str]:
        """The words (lower case) that begin with ``prefix`` in up to ``cap`` passages holding one."""
        start = "".join(WORD_RUN.findall(prefix.lower()))
        if len(start) < 3:
            return set()
        rows = self.s.query("SELECT title, heading, text FROM passages_fts WHERE passages_fts MATCH ? LIMIT ?",
                            (f'"{start}" *', cap))
        return {w.lower() for row in rows for part in row for w in WORD_RUN.findall(part or "")
                if w.lower().startswith(start)}

    def passages_saying(self, phrase: str, cap: int) -> int:
        """How many passages hold ``phrase`` (its words in order), counted up to ``cap``."""
        words = [w.lower() for w in WORD_RUN.findall(phrase)]
        if not words:
            return 0
        query = '"' + " ".join(words) + '"'
        rows = self.s.query(
            "SELECT count(*) FROM (SELECT rowid FROM passages_fts WHERE passages_fts MATCH ? LIMIT ?)", (query, cap))
        return int(rows[0][0])
