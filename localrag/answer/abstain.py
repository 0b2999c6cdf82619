"""When the notes found cannot answer: the no-model signals behind "not in your notes".

Two rules, both measured on answerable questions and on the same questions with their gold
passages dropped (``scripts/answer_sweeps.py abstain``, docs/benchmarks.md "Abstention"):

1. the best evidence sentence is far from the question (cosine < ``answer.abstain_below``);
2. the question names things (people, works, places: the spans the graph extractor finds) and,
   for more than half of them, none of the notes found is about it (no note title is the name,
   holds it or is held by it), while the best sentence is only moderately close (cosine <
   ``answer.abstain_unnamed_below``). A question about a thing is answered by the note about it
   or by one that names it in passing and says the asked fact closely; when the note about it
   is missing, what is retrieved are notes that merely mention it, and their closest sentence
   says something else about it.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from functools import lru_cache
from typing import Sequence

from localrag.answer.evidence import title_key
from localrag.words import DEMONYM, STOP, WORD
from localrag.config import AnswerSettings
from localrag.kg.spans import find_spans
from localrag.records import Passage

NAME_KINDS = ("name", "quoted", "title")
MIN_HELD_CHARS = 4  # a name held in a longer title counts from this length ("Hayek" in "Friedrich Hayek")
MIN_SHARE_ABOUT = 0.5  # below this share of the question's names with a note among those found, rule 2 applies
_LEADING_STOP = re.compile(r"^(?:(?:is|are|was|were|does|do|did|can|the|a|an|what|which|who|how|when|where|why)\s+)+",
                           re.I)
_POSSESSIVE = re.compile(r"(?<=\w)['’]s\b")


def name_key(text: str) -> str:
    """A name as compared with note titles: ``title_key`` without accents and possessives
    ("Aschenbrödel" = "Aschenbrodel", "Gisvi's city" names "Gisvi")."""
    folded = unicodedata.normalize("NFKD", title_key(_POSSESSIVE.sub("", text)))
    return "".join(c for c in folded if not unicodedata.combining(c))


def question_names(question: str) -> list[str]:
    """The things a question names, as written, first occurrence kept; nationality words left out."""
    seen: dict[str, str] = {}
    for span in find_spans(question):
        text = _LEADING_STOP.sub("", _POSSESSIVE.sub("", span.text))  # "Is KaTeX rendering on …" names KaTeX
        if span.kind in NAME_KINDS and len(name_key(text)) > 2 and not _adjective(text, question[span.end:]):
            seen.setdefault(name_key(text), text)
    return list(seen.values())


def _adjective(name: str, after: str) -> bool:
    """ "Canadian actress", "British comedy": a nationality word before the noun it describes."""
    following = WORD.match(after.lstrip())
    return bool(DEMONYM.match(name) and following and following.group(0).islower()
                and following.group(0) not in STOP)


@lru_cache(maxsize=4096)
def _title_keys(title: str) -> frozenset[str]:
    """A title and, for "McRae, Arkansas", the name before its first comma (each title keyed once,
    however many names are compared with it)."""
    return frozenset(f" {name_key(t)} " for t in (title, title.split(",")[0]) if name_key(t))


def is_about(name: str, titles: Sequence[str]) -> bool:
    """Whether one of ``titles`` is a note about ``name``: equal, or one holds the other as whole words."""
    key = f" {name_key(name)} "
    for title in titles:
        for t in _title_keys(title):
            if t == key or (len(key) >= MIN_HELD_CHARS + 2 and key in t) or (len(t) >= MIN_HELD_CHARS + 2 and t in key):
                return True
    return False


def names_without_note(question: str, passages: Sequence[Passage]) -> tuple[list[str], int]:
    """The question's names that no passage's note is about, and how many names it gives."""
    names = question_names(question)
    titles = [p.title for p in passages]
    return [n for n in names if not is_about(n, titles)], len(names)


@dataclass(frozen=True)
class EvidenceCheck:
    """Whether the evidence is too weak to answer from, and why (empty when it is not)."""

    reason: str = ""

    @property
    def weak(self) -> bool:
        return bool(self.reason)


def check_evidence(question: str, passages: Sequence[Passage], best: float | None,
                   settings: AnswerSettings, min_share_about: float = MIN_SHARE_ABOUT) -> EvidenceCheck:
    """The two rules of the module docstring; ``best``: the best evidence sentence's cosine, None if none."""
    if best is None:
        return EvidenceCheck("no evidence sentences") if settings.abstain_below > 0 else EvidenceCheck()
    if settings.abstain_below > 0 and best < settings.abstain_below:
        return EvidenceCheck(f"the best evidence sentence scores {best:.2f} < answer.abstain_below "
                             f"{settings.abstain_below:g}")
    if settings.abstain_unnamed_below > 0 and best < settings.abstain_unnamed_below:
        missing, named = names_without_note(question, passages)
        if named and (named - len(missing)) < min_share_about * named:
            shown = ", ".join(f"“{n}”" for n in missing[:3])
            return EvidenceCheck(f"no note found is about {shown}, and the best evidence sentence scores "
                                 f"{best:.2f} < answer.abstain_unnamed_below {settings.abstain_unnamed_below:g}")
    return EvidenceCheck()
