"""Words of a question and of evidence, compared loosely: lower case, function words out, a short stem."""

from __future__ import annotations

import re

from localrag.text.stopwords import CONTENT_STOPWORDS

WORD = re.compile(r"[\w][\w'’\-]*")  # a word with its apostrophes and hyphens ("O'Brien", "Al-Aziz's")
# nationality and group adjectives ("American", "South Korean"): the usual first words about a
# subject, rarely the answer, and never a thing a note is about
DEMONYM = re.compile(r"^(?:[A-Z][a-z]+[\s\-])?[A-Z][a-z]+(?:an|ian|ese|ish|i|ch|ic|ss)$")
STEM_CHARS = 5  # "selected" / "selection", "founded" / "founder": one stem


def words(text: str) -> list[str]:
    return [w.lower() for w in WORD.findall(text)]


POSSESSIVE_END = re.compile(r"['’]s?$")  # "Monch's", "Lakers'": the owner form of a name


def word_forms(text: str) -> set[str]:
    """Its words, each also without a possessive and, if hyphenated, by parts ("Al-Aziz's": al-aziz's,
    al-aziz, al, aziz): a span that repeats any of them repeats the text."""
    out: set[str] = set()
    for w in words(text):
        bare = POSSESSIVE_END.sub("", w)
        out |= {w, bare, *(p for p in bare.split("-") if p)}
    return out


def content_words(text: str) -> set[str]:
    return {w for w in words(text) if w not in CONTENT_STOPWORDS and len(w) > 1}


def stem(word: str) -> str:
    return word[:STEM_CHARS]


def stems(text: str) -> set[str]:
    return {stem(w) for w in words(text)}


def coverage(text: str, wanted: set[str]) -> float:
    """The share of ``wanted`` words whose stem ``text`` says (0 when nothing is wanted)."""
    if not wanted:
        return 0.0
    said = stems(text)
    return sum(1 for w in wanted if stem(w) in said) / len(wanted)
