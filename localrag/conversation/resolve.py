"""The no-LLM follow-up resolver: pronouns, "that one", elliptical questions.

A follow-up such as "Where was she born?" retrieves by "where", "was", "born" unless the
referring word is replaced by what it points at. The previous turn offers two kinds of
antecedent: its answer span (what the assistant found) and the main entities of its
(resolved) question. The kind of referring word picks between them: a person pronoun
after a "who" question means the answer, "there" / "that place" means a place answer, and
so on. A question with no referring word and no elliptical opening is left alone.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Sequence

from localrag.conversation.records import Resolution
from localrag.records import Turn
from localrag.text.normalise import normalise_phrase, occurs_in
from localrag.text.sentences import EARLIER_SENTENCE
from localrag.text.spans import Span, clean_markup, find_spans
from localrag.text.stopwords import TOPIC_STOPWORDS

PERSON, THING, PLACE, PLURAL, TIME = "person", "thing", "place", "plural", "time"

_NOUNS = {
    PERSON: "person|man|woman|guy|lady|artist|author|writer|director|singer|actor|actress|player|leader",
    PLACE: "place|city|town|village|country|state|region|area|location|island|river|county|province",
    TIME: "year|date|day|time|period|decade|century",
    THING: r"one|thing|film|movie|book|song|album|band|team|company|project|organisation|organization|group|"
           r"show|series|game|work|event|school|university|building|club|party|station|paper|note|document",
}
_DEMONSTRATIVE = re.compile(
    r"\b(?:that|this|said)\s+(" + "|".join(f"(?P<{k}>{v})" for k, v in _NOUNS.items()) + r")\b", re.I)
_LATTER = re.compile(r"\bthe\s+(?:latter|former)\b", re.I)
_PRONOUN = re.compile(r"\b(he|she|him|his|her|hers|they|them|their|theirs|it|its|there)\b", re.I)
_PRONOUN_KIND = {"he": PERSON, "she": PERSON, "him": PERSON, "his": PERSON, "her": PERSON, "hers": PERSON,
                 "they": PLURAL, "them": PLURAL, "their": PLURAL, "theirs": PLURAL,
                 "it": THING, "its": THING, "there": PLACE}
_POSSESSIVE = {"his", "its", "their", "hers", "theirs"}
# "her" is possessive before a noun ("her job"), an object before these or at the end ("met her in")
_NOT_NOUN = frozenset("and or but in at to for with from by on of about as than when where while after before "
                      "during if is was are were has had have do does did".split())
_EXISTENTIAL = re.compile(r"\b(?:is|are|was|were|be|been|being)\s+there\b|\bthere\s+(?:is|are|was|were|be|'s)\b",
                          re.I)
_ELLIPSIS = re.compile(r"^\s*(?:and|but|also|so|what\s+about|how\s+about|and\s+what\s+about|what\s+of|"
                       r"and\s+how\s+about)\b[\s,]*", re.I)
_WH = re.compile(r"^\s*(?:who|whom|whose|what|which|when|where|why|how|is|are|was|were|do|does|did|can|could|"
                 r"will|would|should|has|have|had|tell|list|name|give|show|find)\b", re.I)
# the previous question asked for a person (or a group of people): its answer is who "she" / "they" is
_WHO = re.compile(r"^\s*(?:who|whom|whose)\b|\bwho(?:m)?\s*\??\s*$|\bwhich\s+(?:person|man|woman|people)\b|"
                  r"\b(?:author|director|producer|composer|performer|singer|writer|founder|creator|inventor|leader|"
                  r"president|father|mother|wife|husband|spouse|son|daughter|child|brother|sister|star|player|"
                  r"manager|owner|ceo|head|chair|designer|architect|painter|actor|actress|screenwriter)\s+of\b", re.I)
_QUOTED_TEXT = re.compile(r"\"[^\"]*\"|“[^”]*”")
_CONNECTOR = re.compile(r"\s(?:and|but|or|who|which|that|where|when|while)\s|[,;:]")
_CITE = re.compile(r"\[\d{1,3}\]")
_NO_ANSWER = re.compile(r"\b(?:notes do not say|do not contain|no answer|not mentioned|cannot find|don't know)\b",
                        re.I)
_LEAD_IN = re.compile(r"^\s*(?:answer\s*:|according to[^,]*,|from the notes\s*:?|based on[^,]*,)\s*", re.I)
_YES_NO = re.compile(r"^\s*(?:yes|no|true|false)\b", re.I)
ANSWER_SPAN_MAX_WORDS = 8
# a question this long that names something before its pronoun is taken to be self-contained
# ("Who directed the film in which Jung Joon-young made his debut?"); a short one
# ("When did Bush declare it?") still points back
LONG_QUESTION_WORDS = 10
_LEADING_PREPOSITION = re.compile(r"^(?:in|on|at|from|by|around|near|during|since)\s+(?=\S)", re.I)
_JOINERS = frozenset("and or the a an in on at around about of".split())  # a reply this short is itself the answer span ("Houston Baptist University")


@dataclass(frozen=True)
class Reference:
    """A referring expression in the question: where it is, what kind of thing it points at."""

    start: int
    end: int
    text: str
    kind: str
    possessive: bool = False
    noun: str = ""  # "that loaf": a noun of the previous turn, pointed at by the phrase it heads there


@dataclass(frozen=True)
class Antecedents:
    """What the previous turn offers to point at."""

    answer: str  # the answer span, "" when the reply had none
    answer_kind: str  # "name" | "date" | "number" | "" (from the spans of the answer)
    entities: tuple[str, ...]  # main entities of the previous (resolved) question, in order
    topic: str  # the previous question's content words: the last resort
    who_question: bool
    previous_query: str
    cited_titles: tuple[str, ...] = ()  # the titles of the notes the answer cited, in citation order


def _spans(text: str) -> list[Span]:
    out = []
    for s in find_spans(clean_markup(text)):
        if s.kind not in {"name", "quoted", "date", "title", "number"}:
            continue
        words = s.text.split()
        while len(words) > 1 and words[0].lower() in TOPIC_STOPWORDS:  # "Are Ilse Varnhagen" -> "Ilse Varnhagen"
            words.pop(0)
        trimmed = re.sub(r"['’]s$", "", " ".join(words))  # "Mira Okafor's" -> "Mira Okafor"
        if trimmed == s.text:
            out.append(s)
        else:
            start = s.start + s.text.rfind(trimmed) if trimmed in s.text else s.start
            out.append(Span(trimmed, start, start + len(trimmed), s.kind))
    return out


def _fragment_spans(text: str) -> list[Span]:
    """Spans of a question fragment ("Lanternfish"), whose first word does not open a sentence."""
    lead = "and "
    return [Span(s.text, s.start - len(lead), s.end - len(lead), s.kind) for s in _spans(lead + text)]


def references(question: str) -> list[Reference]:
    """Referring expressions without an antecedent inside the question itself, in order."""
    found: list[Reference] = []
    for m in _DEMONSTRATIVE.finditer(question):
        kind = next(k for k in _NOUNS if m.group(k))
        found.append(Reference(m.start(), m.end(), m.group(0), kind))
    for m in _LATTER.finditer(question):
        found.append(Reference(m.start(), m.end(), m.group(0), THING))
    existential = [(m.start(), m.end()) for m in _EXISTENTIAL.finditer(question)]
    for m in _PRONOUN.finditer(question):
        word = m.group(1).lower()
        if m.start() > 0 and m.group(1)[0].isupper():
            continue  # "the song Changed It": part of a name
        if any(a <= m.start() < b for a, b in existential) and word == "there":
            continue
        if any(r.start <= m.start() < r.end for r in found):
            continue
        possessive = word in _POSSESSIVE or (word == "her" and _followed_by_noun(question, m.end()))
        found.append(Reference(m.start(), m.end(), m.group(0), _PRONOUN_KIND[word], possessive))
    names = [s for s in _spans(question) if s.kind in {"name", "quoted", "title"}]
    quoted = [(m.start(), m.end()) for m in _QUOTED_TEXT.finditer(question)]
    found = [r for r in found if not _inside_antecedent(question, r, names)
             and not any(a <= r.start < b for a, b in quoted) and not EARLIER_SENTENCE.search(question[:r.start])]
    return sorted(found, key=lambda r: r.start)


_ANY_DEMONSTRATIVE = re.compile(r"\b(?:that|this|these|those)\s+([a-z][a-z-]{2,})\b", re.I)
_KNOWN_NOUN = re.compile("|".join(_NOUNS.values()), re.I)
_DETERMINER = r"(?:the|a|an|its|his|her|their|this|that|these|those)"
_CLAUSE_END = re.compile(r"[,;?!.]|\s(?:and|or|but|which|who|whom|where|when|while|that)\s", re.I)
NOUN_PHRASE_MAX_WORDS = 12


def _determined(noun: str, text: str) -> re.Match[str] | None:
    """Where ``text`` says ``noun`` as a noun: after a determiner and up to three words ("the signature loaf")."""
    return re.search(rf"\b{_DETERMINER}\s+(?:[\w'-]+\s+){{0,3}}?{re.escape(noun)}s?\b", text, re.I)


def earlier_noun_references(question: str, ante: "Antecedents", taken: Sequence[Reference]) -> list[Reference]:
    """ "that loaf", "this bakery": a demonstrative before a noun that the previous turn used as one (the
    nouns of ``_NOUNS`` are references of their kind already); a noun the previous turn never said is
    left alone ("that gives" is a clause, not a reference)."""
    found = []
    for m in _ANY_DEMONSTRATIVE.finditer(question):
        noun = m.group(1).lower()
        if any(r.start <= m.start() < r.end for r in taken) or noun in TOPIC_STOPWORDS or _KNOWN_NOUN.fullmatch(noun) \
                or EARLIER_SENTENCE.search(question[:m.start()]):
            continue
        if _determined(noun, ante.previous_query) or _named_by(noun, ante):
            found.append(Reference(m.start(), m.end(), m.group(0), THING, noun=noun))
    return found


def _named_by(noun: str, ante: "Antecedents") -> str:
    """The previous answer, or else the title of a note it cited, that is a phrase headed by ``noun``."""
    for said in (ante.answer, *ante.cited_titles):
        if said and _determined(noun, f"the {said}"):
            return said
    return ""


def earlier_noun_phrase(noun: str, ante: "Antecedents") -> str:
    """What "that <noun>" points at: what the previous answer named with it ("The rye and plum loaf"),
    or the title of a note it cited ("Rye and plum loaf"), else the previous question's phrase headed by
    it, from its determiner to the end of its clause ("the signature loaf of the bakery owned by
    Rosalind Achterberg")."""
    named = _named_by(noun, ante)
    if named:
        return named if re.match(rf"{_DETERMINER}\s", named, re.I) else f"the {named}"
    m = _determined(noun, ante.previous_query)
    if m is None:
        return ""
    rest = ante.previous_query[m.end():]
    end = _CLAUSE_END.search(rest)
    phrase = ante.previous_query[m.start():m.end() + (end.start() if end else len(rest))]
    return " ".join(phrase.split()[:NOUN_PHRASE_MAX_WORDS])


def _inside_antecedent(question: str, ref: Reference, names: list[Span]) -> bool:
    """A pronoun in a later clause than a name of the same question points inside it:
    "Who directed Titanic and where was he born?". "That place" always points outside."""
    if not _PRONOUN.fullmatch(ref.text):
        return False
    long_question = len(question.split()) >= LONG_QUESTION_WORDS
    return any(n.end <= ref.start and (long_question or _CONNECTOR.search(question[n.end:ref.start])) for n in names)


def _followed_by_noun(text: str, at: int) -> bool:
    m = re.match(r"\s+([A-Za-z][\w'-]*)", text[at:])
    return bool(m) and m.group(1).lower() not in _NOT_NOUN


def is_elliptical(question: str) -> bool:
    """"And the year?", "What about Lanternfish?", "Her birthplace?": a fragment of a question."""
    if _ELLIPSIS.match(question):
        return True
    words = question.strip(" ?!.").split()
    return 0 < len(words) <= 3 and not _WH.match(question)


def needs_resolution(question: str) -> bool:
    return bool(references(question)) or is_elliptical(question)


def answer_span(answer: str, previous_query: str) -> tuple[str, str]:
    """(span, kind) of what the answer found: a short reply as a whole, else its first new entity."""
    text = _LEAD_IN.sub("", _plain(answer)).strip()
    if not text or _NO_ANSWER.search(text):
        return "", ""
    first_line = text.splitlines()[0].strip().rstrip(".").strip()
    asked = normalise_phrase(previous_query)
    query_names = [s for s in _spans(previous_query) if s.kind in {"name", "quoted", "title"}]
    named = [s.text for s in query_names if occurs_in(s.norm, normalise_phrase(text))]
    new_names = [sp for sp in _fragment_spans(first_line) if sp.kind in {"name", "quoted", "title"}
                 and not occurs_in(sp.norm, asked)]
    if len(query_names) >= 2 and len(named) == 1 and not new_names:  # "Who was born first, A or B?" -> "B was …"
        return named[0], "name"
    if _YES_NO.match(first_line):
        return "", ""
    if len(first_line.split()) <= ANSWER_SPAN_MAX_WORDS and normalise_phrase(first_line):
        first_line = _LEADING_PREPOSITION.sub("", first_line) or first_line  # "In Tolvenmark" -> "Tolvenmark"
        spans = _fragment_spans(first_line)
        rest = first_line
        for sp in spans:
            rest = rest.replace(sp.text, " ")
        only_names = not (set(normalise_phrase(rest).split()) - _JOINERS) or _all_capitalised(first_line)
        if new_names and not only_names:
            return new_names[0].text, "name"  # "Ilse Varnhagen leads the project" -> "Ilse Varnhagen"
        kind = spans[0].kind if only_names and len(spans) == 1 and spans[0].kind in {"date", "number"} else "name"
        return first_line, kind
    for span in _spans(text):
        if not occurs_in(span.norm, asked):
            return span.text, "name" if span.kind in {"quoted", "title"} else span.kind
    return "", ""


def _all_capitalised(text: str) -> bool:
    """"Carl Öst", "George R.R. Martin", "Marie d'Agoult": a name as a whole, whatever the span finder makes of it."""
    words = text.split()
    return 0 < len(words) <= 5 and words[0][:1].isupper() and all(
        w[:1].isupper() or w.lower() in _JOINERS or w.lower() in _NAME_PARTICLES or w[:2].lower() in {"d'", "l'"}
        for w in words)


_NAME_PARTICLES = frozenset("de del della di da van von der den la le du y bin ibn al el".split())
_TAG = re.compile(r"<[^>\n]{0,200}>")


def _plain(answer: str) -> str:
    """An answer's prose: citation markers, echoed tags, headings and brackets removed."""
    text = _TAG.sub(" ", _CITE.sub("", answer)).replace("[", "").replace("]", "")
    lines = [ln.strip() for ln in text.splitlines() if ln.strip() and not ln.lstrip().startswith("#")]
    return "\n".join(lines)




def antecedents(turn: Turn) -> Antecedents:
    query = turn.resolved or turn.question
    span, kind = answer_span(turn.answer, query)
    entities = []
    for s in _spans(query):
        if s.kind != "number" and s.text not in entities:
            entities.append(s.text)
    topic = " ".join(w for w in re.findall(r"[\w'-]+", query) if w.lower() not in TOPIC_STOPWORDS)
    titles = tuple(dict.fromkeys(c.title for c in turn.citations if c.title))
    return Antecedents(span, kind, tuple(entities), topic, bool(_WHO.search(query)), query, titles)


def choose(ref: Reference, ante: Antecedents) -> str:
    """The antecedent a referring expression of this kind most likely points at ("" if none)."""
    if ref.noun:
        return earlier_noun_phrase(ref.noun, ante)
    answer_is_name = bool(ante.answer) and ante.answer_kind not in {"date", "number"}
    first_entity = ante.entities[0] if ante.entities else ante.topic
    if ref.kind == TIME:
        return ante.answer if ante.answer_kind in {"date", "number"} else next(
            (e for e in ante.entities if _spans(e) and _spans(e)[0].kind == "date"), first_entity)
    if ref.kind == PERSON:
        return ante.answer if ante.answer and (ante.who_question or not ante.entities) else first_entity
    if ref.kind == PLURAL:
        if ante.answer and (ante.who_question or " and " in ante.answer or not ante.entities):
            return ante.answer
        return " and ".join(ante.entities[:2]) if len(ante.entities) >= 2 else (ante.answer or first_entity)
    if ref.kind == THING and ante.who_question and ante.entities:
        return first_entity  # "Who leads Cobblebell?" … "When did it start?": a person is not "it"
    # THING and PLACE: what the answer found, unless it was a date or nothing
    return ante.answer if answer_is_name else first_entity


def _substitute(question: str, refs: Sequence[Reference], ante: Antecedents) -> tuple[str, list[str]]:
    out, pos, notes = [], 0, []
    for ref in refs:
        target = choose(ref, ante)
        if not target:
            continue
        if notes and not ref.text.lower().startswith(("that ", "this ")):
            break  # a later pronoun refers back to the name just put in: "what did Locke base his beliefs on"
        text = f"{target}'s" if ref.possessive else target
        out.append(question[pos:ref.start])
        out.append(text)
        pos = ref.end
        notes.append(f"{ref.text!r} -> {target}")
    out.append(question[pos:])
    return "".join(out), notes


def _replace_entity(previous: str, old: str, new: str) -> str:
    at = previous.find(old)
    return previous if at < 0 else previous[:at] + new + previous[at + len(old):]


def _elliptical(question: str, ante: Antecedents) -> tuple[str, list[str]]:
    rest = _ELLIPSIS.sub("", question, count=1).strip().rstrip("?").strip()
    rest, notes = _substitute(rest, references(rest), ante) if references(rest) else (rest, [])
    previous = ante.previous_query.strip()
    if not rest:
        return previous, [f"elliptical: repeats {previous!r}"]
    new_names = [s for s in _fragment_spans(rest) if not occurs_in(s.norm, normalise_phrase(previous))]
    if new_names and ante.entities:
        new = new_names[0]
        same_kind = [e for e in ante.entities if (_spans(e)[0].kind if _spans(e) else "name") == new.kind]
        pool = same_kind or list(ante.entities)
        # the name most like the new one in length, the later one on a tie ("join Lanternfish" -> "Cobblebell")
        old = min(reversed(pool), key=lambda e: abs(len(e.split()) - len(new.text.split())))
        replaced = _replace_entity(previous, old, new.text)
        if replaced != previous and len(rest.split()) <= len(new.text.split()) + 2:
            return replaced, notes + [f"elliptical: {old} -> {new.text} in {previous!r}"]
    joined = f"{previous.rstrip(' ?.')}? And {rest}?"
    return joined, notes + [f"elliptical: joined to {previous!r}"]


def resolve_rules(question: str, history: Sequence[Turn]) -> Resolution:
    """The question made self-contained from the turns before it (most recent last)."""
    question = question.strip()
    if not history or not question:
        return Resolution(question, question, "unchanged", "no earlier turn")
    ante = antecedents(history[-1])
    refs = references(question)
    refs = sorted(refs + earlier_noun_references(question, ante, refs), key=lambda r: r.start)
    elliptical = not refs and is_elliptical(question)
    if not refs and not elliptical:
        return Resolution(question, question, "unchanged", "self-contained")
    if elliptical:
        query, notes = _elliptical(question, ante)
    else:
        query, notes = _substitute(question, refs, ante)
    if not notes:
        return Resolution(question, question, "unchanged", "nothing in the previous turn to point at")
    return Resolution(question, " ".join(query.split()), "rules", "; ".join(notes), tuple(notes))
