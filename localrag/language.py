"""Which language a question is written in: the answer layer's rules are English ones.

The question shapes (answer/shape.py), the candidate spans and date comparisons (answer/spans.py,
answer/compare.py) and the abstention rules that read names (answer/abstain.py, which reads
capitalised words as names: every German noun is one) are regular expressions over English.
A question in another language gets the evidence unit that answers it, quoted, instead, and of
the name rules only the one on names its script tells (acronyms, keys of code, Latin words in
Chinese or Japanese text).

py3langid (a bundled naive Bayes model over byte n-grams, no download) tells the language. Names
mislead it on short English questions ("Who is older, Madeleine Robinson or Dušan Poliačik?" reads
as Croatian), so the capitalised words after the first are left out before it reads the question:
what remains is the function words, which carry the language. Measured on this project’s 1,637
questions (the notes suite, the multilingual tldr set, 2Wiki, MuSiQue, HotpotQA): 1 English
question read as another language, no question in another language read as English
(docs/benchmarks.md "Multilingual").
"""

from __future__ import annotations

import re
import threading
from functools import lru_cache

from localrag.text.cjk import CJK_RUN, has_cjk

ENGLISH = "en"
# a passage's language is read from its prose: code, placeholders, links and headings (command and
# note names) are left out, and under 4 words or below 0.9 confidence it is not told (None). Of the
# 22,234 passages of the English notes corpora, the sample notes and the three Wikipedia sets one was
# read as another language (a 2Wiki article on a French name); of the five-language tldr folder's
# 3,366, 2,751 were told (docs/benchmarks.md "Multilingual: answers in a folder of translations")
_NOT_PROSE = re.compile(r"```.*?```|`[^`\n]*`|\{\{[^}]*\}\}|<?https?://\S+|^#+ [^\n]*$", re.S | re.M)
_PROSE_WORD = re.compile(r"[^\W\d_]{2,}")
MIN_PROSE_WORDS = 4
MIN_CONFIDENCE = 0.9
CJK_SHARE = 0.3  # of a passage's letters in CJK runs: it is written in Chinese, Japanese or Korean
_KANA = re.compile(r"[\u3040-\u30ff\uff66-\uff9f]")
_HANGUL = re.compile(r"[\uac00-\ud7af]")
_LOCK = threading.Lock()


@lru_cache(maxsize=1)
def _identifier():
    # loaded on first use: a folder of English notes asked in English still pays ~0.1 s once
    from py3langid.langid import MODEL_DIR, MODEL_FILE, LanguageIdentifier

    return LanguageIdentifier.from_modelpath(MODEL_DIR / MODEL_FILE, norm_probs=True)


@lru_cache(maxsize=4096)
def question_language(question: str) -> str:
    """The ISO 639-1 code of the language ``question`` is written in ("en", "de", "zh", ...)."""
    if has_cjk(question):
        return _cjk_language(question)
    kept = _without_names(question)
    text = kept if len(kept.split()) >= 2 else question
    if not any(c.isalpha() for c in text):
        return ENGLISH  # nothing to tell by ("42?", a bare path): the rules do no harm
    with _LOCK:
        code, _ = _identifier().classify(text)
    return str(code)


@lru_cache(maxsize=4096)  # a question reads about ten passages: a few MB of texts at most
def text_language(text: str) -> str | None:
    """The language a passage's prose is written in, None where it is too short or unsure to tell."""
    prose = _NOT_PROSE.sub(" ", text)
    cjk = "".join(CJK_RUN.findall(prose))
    words = _PROSE_WORD.findall(prose)
    letters = sum(len(w) for w in words)
    if cjk and len(cjk) >= CJK_SHARE * letters:
        return _cjk_language(cjk)
    if len(words) < MIN_PROSE_WORDS:
        return None
    with _LOCK:
        code, confidence = _identifier().classify(" ".join(words))
    return str(code) if confidence >= MIN_CONFIDENCE else None


def _cjk_language(text: str) -> str:
    return "ja" if _KANA.search(text) else "ko" if _HANGUL.search(text) else "zh"


def _without_names(question: str) -> str:
    """The question without its capitalised words after the first: names, whose spelling says
    nothing of the question's language."""
    words = question.split()
    return " ".join(words[:1] + [w for w in words[1:] if not w.lstrip("(“\"'‘")[:1].isupper()])


def is_english(question: str) -> bool:
    return question_language(question) == ENGLISH
