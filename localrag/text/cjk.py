"""Chinese, Japanese and Korean text as FTS5 terms: overlapping character bigrams.

FTS5's unicode61 tokenizer splits on spaces and punctuation, and Chinese and Japanese write
none between words: a whole clause is one token, so a question never matches a word inside
a sentence. Each run of CJK characters is therefore indexed as its overlapping two-character
pieces ("使用解压缩" -> 使用 用解 解压 压缩) in a second FTS5 table (schema ``_cjk_lexical``),
and a question's CJK runs are cut the same way: the usual answer without a dictionary
(Lucene's CJKBigramFilter does the same). Two characters is the commonest Chinese word
length, which FTS5's trigram tokenizer cannot match (it needs three per term); bigrams also
find every longer word, as a run of its pieces. A lone CJK character stays one term.
Measured on the Chinese questions of the multilingual tldr set (tuning half): lexical recall@5
1.000 with bigrams, 0.917 with a trigram table, 1.000 with trigrams plus an instr() scan for the
two-character words at about 15 times the CPU per question (docs/benchmarks.md "Multilingual:
lexical search in Chinese and Japanese").
"""

from __future__ import annotations

import re

# Han (with extension A, the compatibility block and the supplementary planes), the ideographic
# iteration and zero marks, hiragana, katakana (not its middle dot, which is punctuation),
# half-width katakana and Hangul syllables.
CJK_RUN = re.compile(
    "[\u3005-\u3007\u3040-\u309f\u30a0-\u30fa\u30fc-\u30ff\u31f0-\u31ff\u3400-\u4dbf\u4e00-\u9fff"
    "\uac00-\ud7af\uf900-\ufaff\uff66-\uff9f\U00020000-\U0003134f]+"
)


def has_cjk(text: str) -> bool:
    return CJK_RUN.search(text) is not None


def cjk_bigrams(text: str) -> list[str]:
    """The overlapping character bigrams of each CJK run of ``text``, in order (a one-character run
    as itself); everything else is left out."""
    out: list[str] = []
    for run in CJK_RUN.findall(text):
        out.extend([run] if len(run) == 1 else [run[i:i + 2] for i in range(len(run) - 1)])
    return out


def cjk_terms(text: str | None) -> str:
    """``text``'s CJK bigrams, space-separated: what the CJK table holds for it ("" when it has none).
    Also an SQL function of every connection (store/connection.py), for the migration that fills the table."""
    return " ".join(cjk_bigrams(text or ""))
