"""Candidate entity spans found without a model: names, dates, numbers, quoted titles.

Used three ways: the rules extractor builds triples from them, the LLM extractor's
grammar restricts heads and tails to them (a small model cannot invent a name it is
not offered), and the `ppr` strategy links query words to graph entities with them.
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass

from localrag.text.normalise import normalise_phrase
from localrag.text.sentences import sentences
from localrag.text.stopwords import LEADING_STOPWORDS, SINGLE_NAME_STOPWORDS

MONTHS = (
    "January|February|March|April|May|June|July|August|September|October|November|December|"
    "Jan|Feb|Mar|Apr|Jun|Jul|Aug|Sep|Sept|Oct|Nov|Dec"
)
_DATE = re.compile(
    rf"\b(?:\d{{1,2}}\s+(?:{MONTHS})\.?,?\s+\d{{3,4}}"  # 11 November 875
    rf"|(?:{MONTHS})\.?\s+\d{{1,2}}(?:st|nd|rd|th)?,?\s+\d{{3,4}}"  # February 13, 1999
    rf"|(?:{MONTHS})\s+\d{{4}}"  # November 2023
    rf"|\d{{4}}-\d{{2}}-\d{{2}})\b"  # 2023-11-05
)
_NUMBER = re.compile(r"(?<![\w.])\d{2,}(?:[.,]\d+)*(?:\s?%)?(?![\w])")
_QUOTED = re.compile(r"\"([^\"\n]{2,80})\"|“([^”\n]{2,80})”|«([^»\n]{2,80})»")
# a capitalised word: Name, O'Brien, Hip-Hop, St., II, DJ, Württemberg
_CAP = r"(?:(?:St|Mr|Mrs|Ms|Dr|Jr|Sr|Mt|Ft)\.|[A-Z]\.|[A-Z][\w'’\-]*)"
_CONNECT = r"(?:of|the|de|del|della|di|da|van|von|der|den|la|le|du|y|&|for|upon|al|el|bin|ibn)"
_NAME = re.compile(rf"(?<![\w'’]){_CAP}(?:\s+(?:{_CONNECT}\s+)*{_CAP})*")
_WIKILINK = re.compile(r"\[\[([^\]|#\n]+)(?:#[^\]|\n]*)?(?:\|([^\]\n]+))?\]\]")
_MDLINK = re.compile(r"(?<!!)\[([^\]\n]+)\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
# raised whenever these rules read the same text into other spans: an index's graph is read again once
# (localrag/kg/builder.py requeue_for_span_rules)
SPAN_RULES_VERSION = 2
POSSESSIVE_END = re.compile(r"(?<=\w)['’]s?$")  # the owner form closing a name: "Python's", "Jesus'"
_MARKUP = re.compile(r"(\*\*|__|`|^#{1,6}\s+|^\s*[-*+]\s+|^\s*\d+[.)]\s+|^>\s?)", re.M)

@dataclass(frozen=True)
class Span:
    text: str  # as written (markup removed)
    start: int  # offsets in the cleaned text
    end: int
    kind: str  # "name" | "date" | "number" | "quoted" | "title"

    @property
    def norm(self) -> str:
        return normalise_phrase(self.text)


def clean_markup(text: str) -> str:
    """Plain prose: link targets dropped (their visible text kept), emphasis and list marks removed."""
    text = _WIKILINK.sub(lambda m: (m.group(2) or m.group(1)).strip(), text)
    text = _MDLINK.sub(lambda m: m.group(1), text)
    return _MARKUP.sub("", text)


def _trim_name(text: str, start: int, at_sentence_start: bool) -> tuple[str, int] | None:
    """Drop leading function words ("After Lothair" -> "Lothair") and dangling connectors."""
    words = [(m.group(0), m.start()) for m in re.finditer(r"\S+", text)]
    while words and words[0][0].lower() in LEADING_STOPWORDS:
        words.pop(0)
    while words and words[-1][0].lower() in {"the", "of", "and", "&", "for", "on", "in", "upon", "al", "el"}:
        words.pop()
    if not words:
        return None
    if len(words) == 1:
        word = words[0][0].rstrip(".")
        if word.lower() in SINGLE_NAME_STOPWORDS or len(word) < 2 or (at_sentence_start and word == "The"):
            return None
    first, last = words[0], words[-1]
    return without_owner_form(text[first[1]:last[1] + len(last[0])]), start + first[1]


def without_owner_form(name: str) -> str:
    """``name`` without a closing owner form: "Python's built-in server" names Python, "Jesus' Son" keeps its."""
    owner = POSSESSIVE_END.search(name)
    return name[:owner.start()] if owner and owner.start() >= 2 else name


def find_spans(text: str, title: str = "") -> list[Span]:
    """Non-overlapping candidate spans of already cleaned text, in reading order.

    Quoted titles win over dates, dates over names, names over bare numbers.
    """
    # the spans taken so far, disjoint, sorted by start (so their ends are sorted too): a new span
    # is free when the last one starting before its end ends by its start (a passage of thousands
    # of links made the check against every span taken quadratic)
    starts: list[int] = []
    ends: list[int] = []
    spans: list[Span] = []

    def free(a: int, b: int) -> bool:
        before = bisect.bisect_left(starts, b)
        return before == 0 or ends[before - 1] <= a

    def add(span_text: str, a: int, b: int, kind: str) -> None:
        if span_text.strip() and free(a, b) and normalise_phrase(span_text):
            at = bisect.bisect_left(starts, a)
            starts.insert(at, a)
            ends.insert(at, b)
            spans.append(Span(span_text.strip(), a, b, kind))

    for m in _QUOTED.finditer(text):
        inner = next(g for g in m.groups() if g is not None)
        if len(inner.split()) <= 12:
            add(inner, m.start(), m.end(), "quoted")
    for m in _DATE.finditer(text):
        add(m.group(0), m.start(), m.end(), "date")
    found: list[tuple[str, int, bool]] = []  # (name, start, opens its sentence)
    for s_start, s_end in sentences(text):
        sentence = text[s_start:s_end]
        for m in _NAME.finditer(sentence):
            at_start = not sentence[: m.start()].strip("([\"“'* ")
            trimmed = _trim_name(m.group(0), s_start + m.start(), at_start)
            if trimmed is not None:
                found.append((trimmed[0], trimmed[1], at_start and trimmed[1] == s_start + m.start()))
    # a lone capitalised word that opens a sentence ("Owned by …", "Fog rolls …") is a name only
    # if the text also capitalises it mid-sentence, or it is the title
    mid_sentence = {name for name, _, opens in found if not opens}
    for name, start, opens in found:
        if opens and " " not in name and name not in mid_sentence and name != title:
            continue
        add(name, start, start + len(name), "name")
    for m in _NUMBER.finditer(text):
        add(m.group(0), m.start(), m.end(), "number")
    if title:
        at = text.find(title)
        if at >= 0:
            add(title, at, at + len(title), "title")
    spans.sort(key=lambda s: s.start)
    return spans


def wikilinks(text: str) -> list[str]:
    """Targets of [[wikilinks]] (the note names, before any | alias or # section)."""
    return [m.group(1).strip() for m in _WIKILINK.finditer(text) if m.group(1).strip()]
