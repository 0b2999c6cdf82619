"""NeuroPath's query entities (docs/algorithms.md "NeuroPath: query entities and seeds"):
grounded LLM NER, cached by query text, with spans as the fallback; and the entity linking
that gives path tracking its seeds."""

from __future__ import annotations

import logging
from typing import Sequence

from localrag.text.normalise import normalise_phrase, occurs_in
from localrag.text.spans import find_spans, without_owner_form
from localrag.text.stopwords import NER_FUNCTION_WORDS
from localrag.text.words import LETTER_RUN
from localrag.llm.jsoncall import call_json
from localrag.llm.prompts_np import NER_VERSION, ner_messages, ner_schema
from localrag.records import Trace
from localrag.retrieve.base import Context
from localrag.retrieve.neuropath.events import NerStep, QueryEntitiesStep

logger = logging.getLogger(__name__)


def query_entities(ctx: Context, query: str, trace: Trace) -> list[str]:
    """Entities named in the query: grounded LLM NER (cached by query text), spans as fallback."""
    mode = ctx.settings.neuropath.ner
    norm_q = normalise_phrase(query)
    found: list[str] = []
    source = "none"
    if mode in ("llm", "llm+rules"):
        llm = ctx.llm()
        cached = ctx.store.cache.get("ner", query, llm.model_id, NER_VERSION)
        error = ""
        if cached is None:
            result = call_json(llm, ner_messages(query), ner_schema(), phase="ner", max_tokens=200,
                               validate=_validate_ner)
            cached = [str(e) for e in (result.data or {}).get("named_entities", []) if isinstance(e, str)]
            if result.ok:  # a failed reply is not cached: the next ask tries the model again
                _cache_put(ctx, "ner", query, llm.model_id, NER_VERSION, cached)
            else:
                error = result.errors[-1] if result.errors else "no reply"
        grounded = [e for e in cached if normalise_phrase(e) and occurs_in(normalise_phrase(e), norm_q)]
        generic = [e for e in grounded if not is_named(e, query)]
        grounded = [e for e in grounded if e not in generic]
        trace.add(NerStep(model=tuple(cached), grounded=tuple(grounded), generic=tuple(generic), error=error))
        found, source = grounded, "llm"
    if not found and mode in ("rules", "llm+rules"):
        found = [s.text for s in find_spans(query)]
        source = "rules"
    # a model names "Python's" as the question writes it; the graph's entity is "Python"
    unique = list(dict.fromkeys(without_owner_form(e) for e in found if normalise_phrase(e)))
    trace.add(QueryEntitiesStep(entities=tuple(unique), source=source))
    return unique




def is_named(entity: str, question: str) -> bool:
    """Whether ``entity`` is a name in ``question``, not a common noun a weak model called an entity.

    A name has a capitalised word or a digit where the question says it (the question's first
    word and function words do not count: their capital is grammar). A question written with
    no capitals anywhere gives no such signal, so every entity counts as named there.
    """
    words = LETTER_RUN.findall(question)
    signal = {w.lower() for i, w in enumerate(words) if i > 0 and w.lower() not in NER_FUNCTION_WORDS
              and (w[0].isupper() or any(ch.isdigit() for ch in w))}
    if not any(ch.isupper() for ch in question[1:]) and not any(ch.isdigit() for ch in question):
        return True
    return any(t.lower() in signal for t in LETTER_RUN.findall(entity))


def _validate_ner(data: dict) -> str | None:
    entities = data.get("named_entities")
    if not isinstance(entities, list) or not all(isinstance(e, str) for e in entities):
        return "named_entities must be a list of strings"
    return None


def _cache_put(ctx: Context, kind: str, key: str, model: str, version: str, value: object) -> None:
    try:
        ctx.store.cache.put(kind, key, model, version, value)
    except Exception:  # a cache write (the index busy, or read-only) must never fail a question
        logger.warning("could not cache the %s reply for %r", kind, key, exc_info=True)


def link_seeds(ctx: Context, entities: Sequence[str]) -> list[tuple[str, int, str, float]]:
    """(query entity, nearest graph entity id, its name, cosine) for each query entity. A query
    entity that is a graph entity's name is that entity (cosine 1): names that share their
    family's vector (kg/name_families.py) are told apart by name, not by vector."""
    if not entities:
        return []
    exact = ctx.store.graph.entities.ids([normalise_phrase(t) for t in entities])
    unmatched = [t for t in entities if normalise_phrase(t) not in exact]
    nearest = ctx.store.graph.entities.nearest(ctx.embedder.encode(unmatched), 1) if unmatched else []
    hits = dict(zip(unmatched, nearest))
    out = []
    for text in entities:
        name = normalise_phrase(text)
        if name in exact:
            out.append((text, exact[name], "", 1.0))
        elif hits.get(text):
            eid, sim = hits[text][0]
            out.append((text, eid, "", sim))
    names = ctx.store.graph.entities.names([e for _, e, _, _ in out])
    return [(t, e, names.get(e, "?"), s) for t, e, _, s in out]

