"""Names and phrases reduced to the keys they are compared by.

``normalise_phrase`` is the graph's: phrase normalisation as NeuroPath does it (docs/algorithms.md
"NeuroPath: indexing" step 3, pitfall N8). Lowercase, every character outside [a-z0-9 ] becomes a
space; unlike the released code, internal runs of spaces are collapsed, so "St. Maurice" and
"st  maurice" are one entity. ``title_key``, ``name_key`` and ``exact_key`` are the answer layer's
looser and stricter ways to match a name with a note title.
"""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache

_OUTSIDE = re.compile(r"[^a-z0-9 ]+")
_SPACES = re.compile(r"\s+")
_QUALIFIER_OR_PUNCTUATION = re.compile(r"\([^)]*\)|[^\w\s]")
_NOT_WORD = re.compile(r"[^\w]+")
POSSESSIVE_S = re.compile(r"(?<=\w)['’]s\b")  # "Gisvi's city": the owner form, anywhere in a text


@lru_cache(maxsize=65_536)  # the graph phase normalises each name several times (links, spans, titles)
def normalise_phrase(text: str) -> str:
    # fold accents first so "Leszczyński" keeps its letters ("leszczynski") instead of losing them
    folded = unicodedata.normalize("NFKD", str(text)).encode("ascii", "ignore").decode("ascii")
    return _SPACES.sub(" ", _OUTSIDE.sub(" ", folded.lower())).strip()


def occurs_in(phrase: str, normalised_text: str) -> bool:
    """Whole-word occurrence of a normalised phrase in normalised text."""
    if not phrase:
        return False
    return f" {phrase} " in f" {normalised_text} "


def title_key(text: str) -> str:
    """A name as compared with note titles: lower case, no punctuation, no "(film)" qualifier."""
    return " ".join(_QUALIFIER_OR_PUNCTUATION.sub(" ", text.lower()).split())


def name_key(text: str) -> str:
    """A name as compared with note titles: ``title_key`` without accents and possessives
    ("Aschenbrödel" = "Aschenbrodel", "Gisvi's city" names "Gisvi")."""
    folded = unicodedata.normalize("NFKD", title_key(POSSESSIVE_S.sub("", text)))
    return "".join(c for c in folded if not unicodedata.combining(c))


def exact_key(text: str) -> str:
    """A title as written but for case and punctuation: "(2005 film)" kept, unlike ``title_key``."""
    return " ".join(_NOT_WORD.sub(" ", text.lower()).split())
