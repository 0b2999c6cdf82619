"""Question shape, by rules: short answers (a name, a date, a number, one of two options, yes/no)
versus open ones (how / why / explain / summarise). Measured per type in the bench (`--answer`)."""

from __future__ import annotations

import re
from dataclasses import dataclass

OPEN = "open"
YESNO = "yesno"
CHOICE = "choice"
# short question types: the first word decides, "which/what" stay generic
TYPES = ("who", "when", "where", "how many", "which", "what", CHOICE, YESNO, OPEN)

_AUX = ("is", "are", "was", "were", "do", "does", "did", "can", "could", "has", "have", "had", "will", "would",
        "should", "shall", "may", "might", "must")
_MEASURE = r"(many|much|old|long|far|tall|big|high|deep|wide|large|heavy|often)"
_OPEN_START = re.compile(rf"^(how(?! {_MEASURE}\b)|why|explain|describe|summari[sz]e|"
                         r"tell me about|what (is|are) the (difference|reason|process)|compare|list|outline)\b", re.I)
_WH = re.compile(r"\b(who|whom|whose|when|where|which|what|how many|how much|how old|how long|in what year)\b", re.I)
_CONNECT = frozenset("of the de van von and & a an la le du di da del der".split())


@dataclass(frozen=True)
class Shape:
    kind: str  # "short" | "open"
    qtype: str  # one of TYPES
    options: tuple[str, ...] = ()  # the alternatives a choice question names
    focus: str = ""  # the question from its asking wh-word on ("what state?"), lower case

    @property
    def short(self) -> bool:
        return self.kind == "short"


def _capitalised_run(words: list[str], from_end: bool) -> str:
    """The name at the start (or end) of ``words``: capitalised words and the connectors inside them."""
    seq = list(reversed(words)) if from_end else list(words)
    kept: list[str] = []
    for w in seq:
        if w.lower() in _AUX or _WH.fullmatch(w):
            break
        if w[:1].isupper() or w[:1].isdigit() or (kept and w.lower() in _CONNECT):
            kept.append(w)
        else:
            break
    while kept and kept[-1].lower() in _CONNECT:
        kept.pop()
    return " ".join(reversed(kept) if from_end else kept)


def _options(question: str) -> tuple[str, ...]:
    """The alternatives of "..., X or Y?" (or "X, Y, or Z"; or "Did X or Y ...?"); () if none."""
    body = question.strip().rstrip("?. ").strip()
    low = body.lower()
    at = low.rfind(" or ")
    if at < 0:
        return ()
    head, tail = body[:at], body[at + 4:]
    # a colon cuts only where no comma does: "released earlier, Powerful: Energy For Everyone or …"
    cut = head.rfind(",") if "," in head else head.rfind(":")
    if cut >= 0:
        lead = head[:cut]
        items = [head[cut + 1:]]
        # "X, Y, or Z": earlier list items sit between commas after the wh-clause
        while True:
            prev = lead.rfind(",")
            piece = lead[prev + 1:]
            if prev < 0 or _WH.search(piece) or len(piece.split()) > 8:
                break
            items.insert(0, piece)
            lead = lead[:prev]
        if not items[-1].strip() and len(items) > 1:
            items.pop()
        options = [*items, tail]
    else:
        left = _capitalised_run(head.split(), from_end=True)
        right = _capitalised_run(tail.split(), from_end=False)
        options = [left, right]
    options = [o.strip(" \"'“”,") for o in options]
    if len(options) < 2 or any(not o or len(o.split()) > 12 for o in options):
        return ()
    return tuple(dict.fromkeys(options))


def classify(question: str) -> Shape:
    q = " ".join(question.strip().split())
    low = q.lower()
    first = low.split(" ", 1)[0] if low else ""
    options = _options(q)
    if first in _AUX:
        return Shape("short", CHOICE, options) if options else Shape("short", YESNO)
    if _OPEN_START.match(low):
        return Shape("open", OPEN)
    if options and _WH.search(low):
        return Shape("short", CHOICE, options)
    asking = _asking(low)
    if asking is not None:
        return Shape("short", _wh_type(low[asking:]), focus=low[asking:])
    for qtype, pattern in _TYPE_PHRASES:  # no asking word left: the first kind found anywhere decides
        found = re.search(rf"\b{pattern}\b", low)
        if found:
            return Shape("short", qtype, focus=low[found.start():])
    if re.search(rf"\bhow {_MEASURE}\b", low):
        return Shape("short", "how many")
    return Shape("open", OPEN)


# the wh-phrase of each short type, first match wins: at the asking word ("what year" is *when*, "which
# city" *where*), or anywhere in a question with neither an opening wh-word nor a "what" / "how many"
# inside ("Name the mother of X, who was the daughter of Y?")
_TYPE_PHRASES = (("how many", r"how (many|much)"), ("who", r"(who|whom|whose)"),
                 ("when", r"(when|what year|which year|what date|in what year)"),
                 ("where", r"(where|which (city|country|town|river|lake|place|state))"),
                 ("which", r"which"), ("what", r"what"))
_OPENING_WH = re.compile(r"^(?:(?:in|on|at|by|for|from|to|under|with|of|during|after|before|into|since|through|as|"
                         r"and|so|then|but)\s+)?(?P<wh>who|whom|whose|when|where|which|what|how (?:many|much))\b")
_MID_WH = re.compile(r"\bhow (?:many|much)\b|\bwhat\b")  # never relative pronouns: where they are, the question is


def _asking(low: str) -> int | None:
    """Where the wh-word that asks starts: the opening one, else a "what" / "how many" inside
    ("… an actress who starred in what for seven years?"); None when only relative-looking ones are left."""
    opening = _OPENING_WH.match(low)
    if opening:
        return opening.start("wh")
    inside = _MID_WH.search(low)
    return inside.start() if inside else None


def _wh_type(focus: str) -> str:
    """The type a question asks from its asking wh-phrase on."""
    return next((qtype for qtype, pattern in _TYPE_PHRASES if re.match(rf"{pattern}\b", focus)), "what")
