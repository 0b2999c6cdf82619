"""The rules extractor: triples with no model at all.

Per sentence, the first name span is the subject (a sentence that opens with a
pronoun is about the note's title: in notes and encyclopaedic text that is nearly
always right). Every other span in the sentence becomes a tail, with the words just
before it as the relation ("was a queen of", "by marriage to"); a span joined to the
previous one only by "and" or a comma inherits its relation (lists). Deterministic,
grounded by construction, and a floor for every model.
"""

from __future__ import annotations

import re

from localrag.records import Triple
from localrag.text.normalise import normalise_phrase
from localrag.text.sentences import sentences
from localrag.text.spans import Span, clean_markup, find_spans
from localrag.text.stopwords import PRONOUNS, RELATION_WEAK_WORDS

MAX_RELATION_WORDS = 6
_LIST_GLUE = frozenset({"", "and", "or", "as well as", "along with", "together with", "the"})
_LEADING_NOISE = PRONOUNS | frozenset("and or but which who that while whereas also".split())
_DETERMINERS = frozenset("the this that these those".split())


def _relation(gap: str) -> str:
    """The connecting words, normalised; long gaps keep their last words (nearest the tail)."""
    words = normalise_phrase(re.sub(r"\([^)]*\)", " ", gap)).split()
    while words and words[0] in _LEADING_NOISE:
        words.pop(0)
    if len(words) > MAX_RELATION_WORDS:
        words = words[-MAX_RELATION_WORDS:]
    return " ".join(words)


def _meaningful(relation: str) -> bool:
    return any(w not in RELATION_WEAK_WORDS for w in relation.split())


def _about_title(sentence: str, inside: list[Span], s_start: int) -> bool:
    """A sentence opening with a pronoun ("She was…") or a bare noun phrase ("The song was…")."""
    words = sentence.split()
    if not words:
        return False
    first = words[0].lower().strip(",")
    if first in PRONOUNS:
        return True
    opens_with_span = bool(inside) and not sentence[: inside[0].start - s_start].strip()
    return first in _DETERMINERS and len(words) > 1 and words[1][:1].islower() and not opens_with_span


def _strip_article(phrase: str) -> str:
    return phrase[4:] if phrase.startswith("the ") else phrase


def _title_alias(phrase: str, title_norm: str, is_subject: bool) -> str:
    """A span that names the note's subject is the title entity: "The Vienna Walzer Orchestra" in a
    note titled "Vienna Walzer Orchestra"; a sentence subject may also be a shortened title
    ("Walden" in "Walden, Nova Scotia")."""
    if not title_norm:
        return phrase
    bare, title_bare = _strip_article(phrase), _strip_article(title_norm)
    if bare == title_bare:
        return title_norm
    words = set(bare.split())
    if is_subject and words and words <= set(title_bare.split()) and not bare.isdigit():
        return title_norm
    return phrase


def rules_triples(text: str, title: str = "", max_triples: int = 24) -> list[Triple]:
    clean = clean_markup(text)
    spans = find_spans(clean, title)
    out: list[Triple] = []
    seen: set[tuple[str, str, str]] = set()
    title_norm = normalise_phrase(title)

    def emit(head: str, relation: str, tail: str) -> None:
        key = (head, relation, tail)
        if head and tail and relation and head != tail and key not in seen and relation not in (head, tail):
            seen.add(key)
            out.append(Triple(head, relation, tail, "rules"))

    for s_start, s_end in sentences(clean):
        inside = [s for s in spans if s_start <= s.start and s.end <= s_end]
        about_title = _about_title(clean[s_start:s_end], inside, s_start)
        subject: Span | None = None
        if about_title and title_norm:
            subject = Span(title, s_start, s_start, "title")
        else:
            subject = next((s for s in inside if s.kind in ("name", "quoted", "title")), None)
        if subject is None:
            continue
        previous_end = s_start if subject.start > s_start or about_title else subject.end
        head = _title_alias(subject.norm, title_norm, True)
        relation = ""
        for span in inside:
            if span is subject:
                previous_end = span.end
                continue
            gap = clean[previous_end:span.start] if span.start >= previous_end else ""
            rel = _relation(gap)
            if rel in _LIST_GLUE or not _meaningful(rel):
                rel = relation if rel in _LIST_GLUE else rel  # "A, B and C": the list shares a relation
            if rel and _meaningful(rel):
                relation = rel
                emit(head, rel, _title_alias(span.norm, title_norm, False))
            previous_end = span.end
        if len(out) >= max_triples:
            break
    return out[:max_triples]
