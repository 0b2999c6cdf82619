"""Names and phrases reduced to the keys they are compared by.

``normalise_phrase`` is the graph's: phrase normalisation as NeuroPath does it (docs/algorithms.md
"NeuroPath: indexing" step 3, pitfall N8). Lowercase, every character outside [a-z0-9 ] becomes a
space; unlike the released code, internal runs of spaces are collapsed, so "St. Maurice" and
"st  maurice" are one entity.
"""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache

_OUTSIDE = re.compile(r"[^a-z0-9 ]+")
_SPACES = re.compile(r"\s+")


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
