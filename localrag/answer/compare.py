"""Comparison and same-attribute questions decided from the notes' own dates and nationalities, no model.

"Which film came out earlier, X or Y?", "Who was born first, X or Y?", "Which film has the
director who died later, X or Y?", "Are X and Y of the same nationality?": the answer is
one of the options (or yes / no), and a small model choosing between them is a coin toss.
Each option's note is found among the retrieved passages by its title; for "the director
of X" the note of the person X's note names ("directed by …") is read instead. The dates
(born / died / the year a work came out) or the nationality found there decide; when a
value is missing the question is left to the model.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable, Sequence

from localrag.records import Passage
from localrag.text.normalise import exact_key, title_key
from localrag.text.spans import MONTHS

_MONTH_NUMBER = {name.lower()[:3]: i for i, name in enumerate(
    "January February March April May June July August September October November December".split(), start=1)}
_DATE = re.compile(
    rf"\b(?:(?P<d1>\d{{1,2}})\s+(?P<m1>{MONTHS})\.?,?\s+(?P<y1>\d{{3,4}})"
    rf"|(?P<m2>{MONTHS})\.?\s+(?P<d2>\d{{1,2}})(?:st|nd|rd|th)?,?\s+(?P<y2>\d{{3,4}})"
    rf"|(?P<m3>{MONTHS})\s+(?P<y3>\d{{3,4}})"
    r"|(?P<y4>\d{3,4})(?!\d))(?!\s*(?:km|m|kg|%|people|inhabitants))"
)
_EARLY = re.compile(r"\b(earlier|earliest|first|older|oldest|before|sooner)\b", re.I)
_LATE = re.compile(r"\b(later|latest|last|younger|youngest|more recent(?:ly)?|most recent(?:ly)?|newer|newest|after)\b",
                   re.I)
_BIRTH = re.compile(r"\b(born|birth|older|oldest|younger|youngest)\b", re.I)
_DEATH = re.compile(r"\b(died|death|dead|die)\b", re.I)
_ROLE = re.compile(r"\b(director|producer|composer|performer|author|writer|creator|screenwriter|singer)s?\b", re.I)
_ROLE_VERB = {"director": "directed", "producer": "produced", "composer": "composed", "performer": "performed",
              "author": "written", "writer": "written", "creator": "created", "screenwriter": "written",
              "singer": "performed"}
_NAME_AFTER = r"\s+by\s+(?:the\s+)?((?:[A-Z][\w'’.\-]*)(?:\s+(?:(?:de|da|van|von|der|di|le|la)\s+)?[A-Z][\w'’.\-]*){0,4})"
_TITLES = frozenset("jr. sr. st. dr. mr. mrs. ms.".split())
_SAME = re.compile(r"\bsame (nationality|country)\b|\bboth\b.*\bfrom\b.*\bsame\b", re.I)
_DEMONYM = re.compile(
    r"\b(?:is|was|are|were)\s+(?:an?|the)\s+(?:\d{4}\s+)?(?:(?:former|retired|professional|famous|noted|silent|"
    r"[a-z]+-born)\s+)?([A-Z][a-zé]+(?:[\s\-][A-Z][a-zé]+)?)")
_LOCATED = re.compile(r"\b(?:in|of)\s+((?:the\s+)?[A-Z][\w\-]+(?:\s+[A-Z][\w\-]+)*)\s*(?:[.,;]|$)")


NoteLookup = Callable[[str], "Passage | None"]  # a title -> the first passage of the note so titled


def _no_lookup(name: str) -> Passage | None:
    return None


@dataclass(frozen=True)
class Decision:
    answer: str  # one of the options, or "yes" / "no"
    passage: Passage  # the note whose value decided it (for the citation and the shown sentence)
    detail: str  # e.g. "The Exies 1997 < Circus Diablo 2004"


def passage_named(name: str, passages: Sequence[Passage], lookup: NoteLookup = _no_lookup) -> Passage | None:
    """The passage whose title is ``name`` (case, punctuation and a "(film)" qualifier aside): among
    the retrieved ones first, else the index's note of that title."""
    found = _retrieved_named(name, passages)
    if found is not None and getattr(found, "ordinal", 0) == 0:
        return found
    return lookup(name) or found  # a later chunk of the note was retrieved: its opening holds the dates


def _retrieved_named(name: str, passages: Sequence[Passage]) -> Passage | None:
    exact, loose = exact_key(name), title_key(name)
    bare = re.sub(r"^(the|a|an) ", "", loose)  # "the Pterocarya": the option names the note with an article
    for same in (lambda p: exact_key(p.title) == exact, lambda p: bool(loose) and title_key(p.title) == loose,
                 lambda p: bool(bare) and title_key(p.title) == bare):
        named = sorted((p for p in passages if same(p) and has_body(p.text)), key=lambda p: getattr(p, "ordinal", 0))
        if named:
            return named[0]
    return None


def has_body(text: str) -> bool:
    """More than a heading: a chunk that is only "# Title" holds no dates."""
    return any(line.strip() and not line.lstrip().startswith("#") for line in text.splitlines())


def _parse(m: re.Match) -> tuple[int, int, int]:
    g = m.groupdict()
    year = int(g["y1"] or g["y2"] or g["y3"] or g["y4"])
    month_name = g["m1"] or g["m2"] or g["m3"]
    month = _MONTH_NUMBER.get(month_name.lower()[:3], 0) if month_name else 0
    day = int(g["d1"] or g["d2"] or 0)
    return year, month, day


def _dates(text: str) -> list[tuple[int, tuple[int, int, int]]]:
    return [(m.start(), _parse(m)) for m in _DATE.finditer(text) if 100 <= _parse(m)[0] <= 2100]


def _after(text: str, word: re.Pattern[str], within: int = 80) -> tuple[int, int, int] | None:
    for m in word.finditer(text):
        for at, date in _dates(text[m.end():m.end() + within]):
            return date
    return None


def life_date(text: str, which: str) -> tuple[int, int, int] | None:
    """A person's birth or death date from their note: "born …", "died …", or "(date – date)"."""
    head = text[:400]
    span = re.search(r"\(([^()]{0,120}?)(?:–|-|—| to )([^()]{0,80}?)\)", head)
    if which == "birth":
        found = _after(head, re.compile(r"\bborn\b", re.I), 120)
        if found is None and span:
            dates = _dates(span.group(1))
            found = dates[-1][1] if dates else None
        return found
    found = _after(head, re.compile(r"\b(?:[Dd]ied|d\.)(?=\s)"))
    if found is None and span:
        dates = _dates(span.group(2))
        found = dates[0][1] if dates else None
    return found


def work_date(text: str) -> tuple[int, int, int] | None:
    """When a work came out or a group was formed: the first year its note names."""
    dates = _dates(text[:400])
    return dates[0][1] if dates else None


def person_of(role: str, passage: Passage, passages: Sequence[Passage],
              lookup: NoteLookup = _no_lookup) -> Passage | None:
    """The note of the person ``passage`` names in ``role`` ("directed by Rex Ingram" → Rex Ingram's note)."""
    verb = _ROLE_VERB.get(role.lower(), "by")
    m = re.search(f"(?i:{verb})" + _NAME_AFTER, passage.text)
    if not m:
        return None
    name = _name_before_full_stop(m.group(1))
    return passage_named(name, passages, lookup) or passage_named(name.rstrip("."), passages, lookup)


def _name_before_full_stop(text: str) -> str:
    """"Phillips Smalley. It was" -> "Phillips Smalley"; initials and "Jr." do not end a name."""
    kept: list[str] = []
    for word in text.split():
        kept.append(word)
        if word.endswith(".") and len(word) > 2 and word.lower() not in _TITLES:
            kept[-1] = word.rstrip(".")
            break
    return " ".join(kept)


def _subject(option: str, role: str | None, passages: Sequence[Passage], lookup: NoteLookup) -> Passage | None:
    own = passage_named(option, passages, lookup)
    if own is None or role is None:
        return own
    return person_of(role, own, passages, lookup)


def options_absent(question: str, options: Sequence[str], passages: Sequence[Passage],
                   lookup: NoteLookup = _no_lookup) -> bool:
    """True when the notes know none of the options: no note so titled, and no retrieved passage names one.
    A comparison of things the notes never mention is not in the notes, whatever a model would pick."""
    said = " " + " ".join(title_key(f"{p.title} {p.text}") for p in passages) + " "
    for option in options:
        key = re.sub(r"^(the|a|an) ", "", title_key(option))
        if not key or f" {key} " in said or passage_named(option, passages, lookup) is not None:
            return False
    return True


def decide_choice(question: str, options: Sequence[str], passages: Sequence[Passage],
                  lookup: NoteLookup = _no_lookup) -> Decision | None:
    """The option a date comparison picks, or None when the question is no comparison or a date is missing."""
    early, late = _EARLY.search(question), _LATE.search(question)
    if len(options) != 2 or bool(early) == bool(late):
        return None
    role_match = _ROLE.search(question)
    role = role_match.group(1) if role_match else None
    which = "death" if _DEATH.search(question) else ("birth" if _BIRTH.search(question) else "work")
    values: list[tuple[tuple[int, int, int], str, Passage]] = []
    for option in options:
        subject = _subject(option, role, passages, lookup)
        if subject is None:
            return None
        value = work_date(subject.text) if which == "work" else life_date(subject.text, which)
        if value is None:
            return None
        values.append((value, option, subject))
    (a, option_a, pa), (b, option_b, pb) = values
    if a[0] == b[0] and (not a[1] or not b[1]):
        return None  # same year, months unknown: no decision
    if a == b:
        return None
    first_is_earlier = a < b
    pick_first = first_is_earlier if early else not first_is_earlier
    answer, passage = (option_a, pa) if pick_first else (option_b, pb)
    return Decision(answer, passage, f"{option_a} {_show(a)} vs {option_b} {_show(b)}")


def _show(date: tuple[int, int, int]) -> str:
    year, month, day = date
    return "-".join(str(x) for x in (year, month, day) if x) if month else str(year)


def nationality(text: str) -> str:
    """The nationality (or country) a note gives its subject in its first sentence; "" if none."""
    first = text[:300]
    m = _DEMONYM.search(first)
    if m:
        return m.group(1).lower()
    m = _LOCATED.search(first.split(". ")[0])
    return m.group(1).lower().removeprefix("the ") if m else ""


def _names_in(question: str, passages: Sequence[Passage]) -> list[Passage]:
    """Notes whose titles the question names, in the question's order."""
    low = title_key(question)
    found = [(low.find(title_key(p.title)), p) for p in passages if title_key(p.title) and f" {title_key(p.title)} " in f" {low} "]
    found.sort(key=lambda x: x[0])
    out: list[Passage] = []
    for _, p in found:
        if all(title_key(p.title) != title_key(o.title) for o in out):
            out.append(p)
    return out


def decide_same(question: str, passages: Sequence[Passage], lookup: NoteLookup = _no_lookup) -> Decision | None:
    """"Are X and Y of the same nationality / from the same country?": yes or no from their notes."""
    if not _SAME.search(question):
        return None
    named = _names_in(question, passages)
    if len(named) != 2:
        return None
    role_match = _ROLE.search(question)
    if role_match:
        people = [person_of(role_match.group(1), p, passages, lookup) for p in named]
        if any(p is None for p in people):
            return None
        named = [p for p in people if p is not None]
    values = [nationality(p.text) for p in named]
    if not all(values):
        return None
    # "Japanese American" and "American" share a nationality; the last word is the nationality
    answer = "yes" if values[0].split()[-1] == values[1].split()[-1] else "no"
    return Decision(answer, named[0], f"{named[0].title}: {values[0]} vs {named[1].title}: {values[1]}")
