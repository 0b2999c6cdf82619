"""Grounding filters: what a model says becomes a fact only if the passage backs it.

Asked freely, SmolLM2-135M repeats one triple until the list is full, uses the subject as the
relation and invents names (docs/benchmarks_kg.md "Extractor variants": half of its free facts
are not grounded). Each such reply is rejected here with a reason, so the reasons can be counted
and shown.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from localrag.records import Triple
from localrag.text.normalise import normalise_phrase, occurs_in
from localrag.text.spans import without_owner_form

MAX_PHRASE_WORDS = 12
MAX_RELATION_WORDS = 8


@dataclass
class Grounded:
    accepted: list[Triple] = field(default_factory=list)
    rejected: list[tuple[str, str]] = field(default_factory=list)  # (reason, the triple as given)

    def reasons(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for reason, _ in self.rejected:
            out[reason] = out.get(reason, 0) + 1
        return out


def raw_triples(data: Any) -> list[tuple[str, str, str]] | None:
    """The (head, relation, tail) strings of a reply, or None when its shape is wrong.

    Accepts the schema's objects and NeuroPath's [h, r, t] lists; anything else in the
    list is dropped by ``ground`` as "malformed".
    """
    if not isinstance(data, dict) or not isinstance(data.get("triples"), list):
        return None
    out: list[tuple[str, str, str]] = []
    for item in data["triples"]:
        if isinstance(item, dict):
            parts = (item.get("head"), item.get("relation"), item.get("tail"))
        elif isinstance(item, (list, tuple)) and len(item) == 3:
            parts = tuple(item)
        else:
            parts = (None, None, None)
        out.append(tuple("" if p is None else str(p) for p in parts))  # type: ignore[arg-type]
    return out


def ground(triples: list[tuple[str, str, str]], passage_text: str, *, origin: str = "llm",
           check_text: bool = True) -> Grounded:
    """Normalise and filter triples. ``check_text=False`` skips only the occurs-in-passage test
    (the "free" benchmark variant); every other filter always applies."""
    text_norm = normalise_phrase(passage_text)
    result = Grounded()
    seen: set[tuple[str, str, str]] = set()
    for head_raw, rel_raw, tail_raw in triples:
        # a model copies a name as the passage writes it ("Python's"); the spans name it without its owner form
        head, relation = normalise_phrase(without_owner_form(head_raw)), normalise_phrase(rel_raw)
        tail = normalise_phrase(without_owner_form(tail_raw))
        shown = f"{head_raw} | {rel_raw} | {tail_raw}"
        reason = ""
        if not head or not relation or not tail:
            reason = "empty part"
        elif head == tail:
            reason = "head equals tail"
        elif relation in (head, tail):
            reason = "relation equals an entity"
        elif len(head.split()) > MAX_PHRASE_WORDS or len(tail.split()) > MAX_PHRASE_WORDS:
            reason = "entity too long"
        elif len(relation.split()) > MAX_RELATION_WORDS:
            reason = "relation too long"
        elif check_text and not occurs_in(head, text_norm):
            reason = "head not in passage"
        elif check_text and not occurs_in(tail, text_norm):
            reason = "tail not in passage"
        elif (head, relation, tail) in seen:
            reason = "duplicate"
        if reason:
            result.rejected.append((reason, shown))
            continue
        seen.add((head, relation, tail))
        result.accepted.append(Triple(head, relation, tail, origin))
    return result
