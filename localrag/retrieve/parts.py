"""The parts of a question that asks two things ("What are task notes for, and how do I make them
show up in the TODO Tree extension?").

One ranking of the whole question favours the notes that match its more distinctive half; the
note that answers the other half can fall out of the top 5 (docs/benchmarks.md "Retrieval: two
questions in one"). A question is split only where a new question visibly starts: a comma, then "and" and
a lower-case asking word. "Who is known for X and who's third album is Y" (a relative clause,
no comma) and a title that holds "And How" are left whole.
"""

from __future__ import annotations

import re

# ", and how …", ", and what …": the second question's own asking word after a clause boundary
_SECOND_QUESTION = re.compile(r",\s+and\s+(?=(?:how|what|which|where|when|why|who)\s)")
MIN_PART_WORDS = 3  # a shorter piece is not a question of its own ("…, and why?")


def question_parts(question: str) -> list[str]:
    """The questions within ``question``, in order; ``[]`` when it asks one thing."""
    pieces = [p.strip(" ?,;") for p in _SECOND_QUESTION.split(question.strip())]
    if len(pieces) < 2 or any(len(p.split()) < MIN_PART_WORDS for p in pieces):
        return []
    return [p[:1].upper() + p[1:] + "?" for p in pieces]
