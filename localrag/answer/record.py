"""The one JSON form of an answer: what `localrag ask --json` prints and the MCP `ask` tool returns.

``answer_record`` builds it and ``ANSWER_SCHEMA`` (JSON Schema) states it. The words mean one
thing in every key: ``evidence`` is the sentences shown as evidence, ``passages`` the passages
retrieved (ranked, with their text), ``citations`` the numbered passages the answer cites and
``given`` those given to the model (or listed as closest) but not cited. The MCP leaves out the
``DETAIL_KEYS`` (the retrieval trace and the step events) unless asked for them.
"""

from __future__ import annotations

from typing import Any

from localrag.answer import Answer, Citation
from localrag.records import Passage, ScoredPassage

DETAIL_KEYS = ("events", "trace")  # heavy, for debugging how the passages were found


def answer_record(answer: Answer, filter_text: str = "", detail: bool = True) -> dict[str, Any]:
    """``answer`` as JSON; ``filter_text``: the --where filter it was asked with, as described."""
    out = {
        "question": answer.question,
        "answer": answer.text,
        "strategy": answer.strategy,
        "strategy_reason": answer.strategy_reason,
        "filter": filter_text,
        "query_id": answer.query_id,
        "short_answer": answer.span,
        "mode": answer.mode,
        "question_type": answer.shape.qtype if answer.shape else "",
        "abstained": answer.abstained,
        "abstain_reason": answer.abstain_reason,
        "answer_sentence": answer.span_sentence.to_json() if answer.span_sentence else None,
        "decided_without_model": answer.decided,
        "picked_by": answer.picked_by,
        "overridden_reply": answer.overridden,
        "evidence": [e.to_json() for e in answer.shown_evidence],
        "unsupported_sentences": answer.unsupported,
        "citations": [citation_record(c) for c in answer.citations if c.cited],
        "given": [citation_record(c) for c in answer.citations if not c.cited],
        "passages": [passage_record(i + 1, sp) for i, sp in enumerate(answer.retrieval.passages)],
        "llm_calls": [c.__dict__ | {"total_tokens": c.total_tokens} for c in answer.calls],
        "tokens": {"total": answer.tokens, "by_phase": answer.tokens_by_phase()},
        "timings_ms": {"retrieve": round(answer.retrieve_ms, 1), "answer": round(answer.answer_ms, 1),
                       "to_evidence": _ms(answer.evidence_ms), "to_first_token": _ms(answer.first_token_ms),
                       "total": round(answer.total_ms, 1)},
        "events": [e.to_json() for e in answer.events],
        "trace": answer.retrieval.trace.to_json(),
        "notes": answer.notes,
        "resolved_query": answer.resolved_query or answer.question,
        "session": answer.session,
    }
    return out if detail else {k: v for k, v in out.items() if k not in DETAIL_KEYS}


def citation_record(c: Citation) -> dict[str, Any]:
    return {"n": c.number, "cited": c.cited, "inferred": c.inferred, **_place(c.passage)}


def passage_record(rank: int, sp: ScoredPassage) -> dict[str, Any]:
    """A retrieved passage (the MCP `search` tool's too): where it is, its score, who found it, its text."""
    return {"rank": rank, "id": sp.passage.id, **_place(sp.passage), "heading": sp.passage.heading,
            "score": round(float(sp.score), 6), "source": sp.source, "text": sp.passage.text}


def _place(p: Passage) -> dict[str, Any]:
    """Where a passage is, field by field: a document's locator ("p. 12", "slide 3"; "" for a note)
    beside the text lines its citation counts, and the two as one location."""
    return {"path": p.path, "start_line": p.start_line, "end_line": p.end_line, "locator": p.locator,
            "location": p.location, "title": p.title}


def _ms(value: float | None) -> float | None:
    return None if value is None else round(value, 1)


def _object(properties: dict[str, Any], optional: tuple[str, ...] = ()) -> dict[str, Any]:
    return {"type": "object", "properties": properties, "additionalProperties": False,
            "required": [k for k in properties if k not in optional]}


_STR, _INT, _NUM, _BOOL = {"type": "string"}, {"type": "integer"}, {"type": "number"}, {"type": "boolean"}
_NUM_OR_NULL = {"type": ["number", "null"]}
_PLACE = {"path": _STR, "start_line": _INT, "end_line": _INT, "locator": _STR, "location": _STR, "title": _STR}
_CITATION = _object({"n": _INT, "cited": _BOOL, "inferred": _BOOL, **_PLACE})
_PASSAGE = _object({"rank": _INT, "id": _INT, **_PLACE, "heading": _STR, "score": _NUM, "source": _STR, "text": _STR})
_SENTENCE = _object({"text": _STR, "path": _STR, "line": _INT, "location": _STR, "passage_rank": _INT, "kind": _STR,
                     "score": _NUM, "similarity": _NUM})
_CALL = _object({"phase": _STR, "model": _STR, "prompt_tokens": _INT, "completion_tokens": _INT, "ms": _NUM,
                 "ok": _BOOL, "error": _STR, "cached_tokens": _INT, "total_tokens": _INT})
_STRINGS = {"type": "array", "items": _STR}

ANSWER_SCHEMA: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "title": "localrag answer (ask --json, MCP ask)",
    **_object({
        "question": _STR,
        "answer": _STR,
        "strategy": _STR,
        "strategy_reason": _STR,
        "filter": _STR,
        "query_id": {"type": ["integer", "null"]},
        "short_answer": _STR,
        "mode": {"enum": ["short", "open", "free", ""]},
        "question_type": _STR,
        "abstained": _BOOL,
        "abstain_reason": _STR,
        "answer_sentence": {"oneOf": [_SENTENCE, {"type": "null"}]},
        "decided_without_model": _STR,
        "picked_by": {"enum": ["dates", "ranking", "model", "quote", ""]},
        "overridden_reply": _STR,
        "evidence": {"type": "array", "items": _SENTENCE},
        "unsupported_sentences": _STRINGS,
        "citations": {"type": "array", "items": _CITATION},
        "given": {"type": "array", "items": _CITATION},
        "passages": {"type": "array", "items": _PASSAGE},
        "llm_calls": {"type": "array", "items": _CALL},
        "tokens": _object({"total": _INT, "by_phase": {"type": "object", "additionalProperties": _INT}}),
        "timings_ms": _object({"retrieve": _NUM, "answer": _NUM, "to_evidence": _NUM_OR_NULL,
                               "to_first_token": _NUM_OR_NULL, "total": _NUM}),
        "events": {"type": "array", "items": {"type": "object", "required": ["event", "elapsed_s"],
                                              "properties": {"event": _STR, "elapsed_s": _NUM}}},
        "trace": {"type": "object", "required": ["strategy", "steps"]},
        "notes": _STRINGS,
        "resolved_query": _STR,
        "session": _STR,
    }, optional=DETAIL_KEYS),
}
