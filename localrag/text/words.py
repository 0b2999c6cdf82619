"""Words of a question and of evidence, compared loosely: lower case, function words out, a short stem;
and the other tokenisers, one per use (what counts as a word differs: apostrophes and hyphens kept
or split, punctuation counted or not)."""

from __future__ import annotations

import re

from localrag.text.normalise import normalise_phrase
from localrag.text.stopwords import ATTRIBUTION_STOPWORDS, CONTENT_STOPWORDS, REWRITE_FUNCTION_WORDS

WORD = re.compile(r"[\w][\w'’\-]*")  # a word with its apostrophes and hyphens ("O'Brien", "Al-Aziz's")
WORD_RUN = re.compile(r"\w+")  # split at every other character: full-text terms, injection payloads, bench overlap
LETTER_RUN = re.compile(r"[^\W_]+")  # letters and digits only, "_" a separator too (retrieve/neuropath/entities.py)
WORDISH = re.compile(r"\w+|[^\w\s]", re.UNICODE)  # words and punctuation marks: the chunker's token estimate
# a key of code or configuration rather than a word: `code`, lower camelCase, snake_case, a::path or
# dotted.name, a --flag ("McCandless" and "MacArthur" are names, so upper camelCase is not one)
IDENTIFIER = re.compile(r"`[^`]+`|[a-z][a-z0-9]*[A-Z][\w-]*|\w*[a-z0-9]_\w+|[A-Za-z_]\w*(?:(?:::|\.)\w+)+|--?\w[\w-]*")
# a word as an answer n-gram takes it: inner dots, commas and slashes kept ("2,140", "1/2"; answer/prior.py)
NGRAM_TOKEN = re.compile(r"[\w][\w'’.,\-/]*[\w]|[\w]")
_ATTRIBUTION_WORD = re.compile(r"[A-Za-z0-9]{3,}")
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


def content_word_forms(text: str) -> set[str]:
    """``word_forms`` that are content words: what a question already says of a candidate answer."""
    return {w for w in word_forms(text) if w not in CONTENT_STOPWORDS and len(w) > 1}


def split_content_words(text: str) -> set[str]:
    """Content words split at apostrophes and hyphens too ("don't" -> don): an instruction's payload
    compared with an answer's words (answer/injection.py)."""
    return {w for w in (m.lower() for m in WORD_RUN.findall(text)) if w not in CONTENT_STOPWORDS and len(w) > 1}


def attribution_words(text: str) -> set[str]:
    """ASCII words of three or more characters, the commonest left out: an uncited answer's words,
    matched with each passage's (answer/__init__.py)."""
    return {w.lower() for w in _ATTRIBUTION_WORD.findall(text)} - ATTRIBUTION_STOPWORDS


def normalised_content_words(text: str) -> set[str]:
    """The words of ``normalise_phrase(text)`` but function words: what a rewritten question keeps,
    adds or drops (conversation/rewrite.py)."""
    return {w for w in normalise_phrase(text).split() if w not in REWRITE_FUNCTION_WORDS}


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
