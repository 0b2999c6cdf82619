"""The LLM follow-up rewrite: one bounded JSON call, cached, grounded, with the rules resolver as fallback.

A rewrite is accepted only when it keeps the question's own words and adds nothing the
conversation does not contain: a small model that invents a name cannot send retrieval
somewhere the user never pointed.
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
from typing import TYPE_CHECKING, Any, Sequence

from localrag.conversation.records import Resolution
from localrag.records import Turn
from localrag.conversation.resolve import needs_resolution, references, resolve_rules
from localrag.text.normalise import normalise_phrase
from localrag.llm.base import LLM, LLMError
from localrag.llm.jsoncall import call_json
from localrag.llm.prompts_chat import REWRITE_VERSION, ChatTurn, rewrite_messages, rewrite_schema
from localrag.text.sentences import SENTENCE_BREAK
from localrag.text.words import normalised_content_words

if TYPE_CHECKING:
    from localrag.store.cache import LLMCache

logger = logging.getLogger(__name__)

REWRITE_TURNS = 2  # earlier turns shown to the rewrite call
REWRITE_MAX_TOKENS = 160
MAX_ADDED_WORDS = 10  # a rewrite replaces a pronoun by a name or completes a fragment: it stays short
MIN_KEPT_SHARE = 0.6  # of the question's own content words (pronouns aside)
MAX_NEW_WORDS = 1  # lower-case content words found neither in the question nor in the turns shown (no new names)





def check_rewrite(question: str, rewrite: str, turns: Sequence[Turn]) -> str | None:
    """Why a rewrite cannot be used (None when it can)."""
    if not rewrite.strip():
        return "empty rewrite"
    if normalise_phrase(rewrite) == normalise_phrase(question):
        return "the question came back unchanged, its reference unresolved"
    if len(rewrite.split()) > len(question.split()) + MAX_ADDED_WORDS:
        return "much longer than the question (an answer or a repeat, not a rewrite)"
    if SENTENCE_BREAK.search(rewrite.strip()):
        return "more than one sentence (an answer or a repeat, not a rewrite)"
    own = normalised_content_words(question)
    kept = own & normalised_content_words(rewrite)
    if own and len(kept) / len(own) < MIN_KEPT_SHARE:
        return f"drops the question's words ({len(kept)} of {len(own)} kept)"
    refs = references(question)
    if refs and re.search(rf"\b{re.escape(refs[0].text)}\b", rewrite, re.I):
        return f"leaves {refs[0].text!r} unresolved"
    history = set().union(*(normalised_content_words(f"{t.resolved} {t.question} {t.answer}") for t in turns))
    if not (normalised_content_words(rewrite) - own) & history:
        return "adds nothing from the conversation"
    new = sorted(normalised_content_words(rewrite) - own - history)
    names = sorted({normalise_phrase(w) for w in re.findall(r"\b(?:[A-Z][\w'-]*|\d[\d,.]*)", rewrite)[1:]} & set(new))
    if names or len(new) > MAX_NEW_WORDS:
        return f"adds words the conversation does not contain: {', '.join((names or new)[:5])}"
    return None


def _cache_key(question: str, turns: Sequence[Turn]) -> str:
    body = json.dumps([[t.resolved, t.answer] for t in turns] + [question], ensure_ascii=False)
    return hashlib.sha256(body.encode("utf-8")).hexdigest()


def resolve_llm(question: str, history: Sequence[Turn], llm: LLM, cache: "LLMCache | None" = None) -> Resolution:
    """The LLM's rewrite when it is grounded, else the rules resolver's (with the reason recorded)."""
    question = question.strip()
    if not history or not needs_resolution(question):
        return resolve_rules(question, history)  # self-contained questions never reach the model
    shown = list(history[-REWRITE_TURNS:])
    key = _cache_key(question, shown)
    cached: Any = _cache_get(cache, key, llm.model_id)
    if isinstance(cached, str):
        rewrite, error = cached, check_rewrite(question, cached, shown)
    else:
        turns = [ChatTurn(t.resolved or t.question, t.answer) for t in shown]
        try:
            result = call_json(llm, rewrite_messages(question, turns), rewrite_schema(question), phase="rewrite",
                               max_tokens=REWRITE_MAX_TOKENS,
                               validate=lambda d: _validate(question, d, shown))
        except LLMError as exc:
            return _fallback(question, history, f"rewrite call failed ({exc})")
        if not result.ok:
            return _fallback(question, history, f"rewrite rejected: {'; '.join(result.errors)[:200]}")
        rewrite, error = " ".join(str(result.data["query"]).split()), None
        _cache_put(cache, key, llm.model_id, rewrite)
    if error is not None:
        return _fallback(question, history, f"rewrite rejected: {error}")
    return Resolution(question, rewrite, "llm" if rewrite != question else "unchanged", "rewritten by the model")


def _validate(question: str, data: Any, turns: Sequence[Turn]) -> str | None:
    query = data.get("query") if isinstance(data, dict) else None
    if not isinstance(query, str):
        return "no 'query' string"
    return check_rewrite(question, re.sub(r"\s+", " ", query), turns)


def _fallback(question: str, history: Sequence[Turn], why: str) -> Resolution:
    rules = resolve_rules(question, history)
    return Resolution(rules.question, rules.query, rules.method, f"{why}; {rules.reason}", rules.notes + (why,))


def _cache_get(cache: "LLMCache | None", key: str, model: str) -> Any:
    if cache is None:
        return None
    try:
        return cache.get("rewrite", key, model, REWRITE_VERSION)
    except Exception:  # a read-only or old index: no cache, the call still works
        logger.warning("could not read the rewrite cache", exc_info=True)
        return None


def _cache_put(cache: "LLMCache | None", key: str, model: str, rewrite: str) -> None:
    if cache is None:
        return
    try:
        cache.put("rewrite", key, model, REWRITE_VERSION, rewrite)
    except Exception:  # as above: the rewrite is used, only not kept
        logger.warning("could not cache the rewrite", exc_info=True)
