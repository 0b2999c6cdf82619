"""Triples for one passage: a constrained, grounded LLM call, the rules extractor, or both.

Pure of the store: the builder adds the cache and the writes, the benchmark calls this
directly. ``cached`` replays a stored model reply through the same grounding, so a
passage seen before (same text, model and prompt version) costs no LLM call. A failure
whose reply was cut at ``max_tokens`` is cached with that budget, and a larger budget
asks the model again.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

from localrag.config import ConfigError, IndexSettings
from localrag.kg.extractors import EXTRACTORS
from localrag.kg.grounding import Grounded, ground, raw_triples
from localrag.text.normalise import normalise_phrase
from localrag.kg.rules import rules_triples
from localrag.text.spans import clean_markup, find_spans
from localrag.llm.base import LLM
from localrag.llm.jsoncall import call_json
from localrag.llm.prompts_kg import kg_messages, kg_schema, prompt_version
from localrag.records import Triple
from localrag.store.extractions import CUT_AT

MIN_SPANS_FOR_GRAMMAR = 2  # with fewer candidates an enum grammar can only produce head == tail


@dataclass(frozen=True)
class ExtractorOptions:
    extractor: str = "llm+rules"
    constrain: bool = True  # heads and tails restricted to the passage's candidate spans
    grounded: bool = True  # reject heads/tails not in the passage (off only to measure the free model)
    max_triples: int = 8
    max_spans: int = 40
    max_tokens: int = 1024
    retries: int = 1  # repair retries after an invalid reply

    def __post_init__(self) -> None:
        if self.extractor not in EXTRACTORS.names():  # "auto" is resolved by the builder
            raise ConfigError(f"index.extractor must be one of {', '.join(EXTRACTORS.names())}, got {self.extractor!r}")

    @classmethod
    def from_settings(cls, s: IndexSettings, extractor: str | None = None) -> "ExtractorOptions":
        return cls(extractor or s.extractor, s.extract_constrain, True, s.extract_max_triples, s.extract_max_spans,
                   s.extract_max_tokens, s.extract_retries)

    @property
    def uses_llm(self) -> bool:
        return EXTRACTORS.get(self.extractor).needs_llm

    def prompt_version(self) -> str:
        return prompt_version("spans" if self.constrain else "free", self.max_triples) + ("" if self.grounded else ":ungrounded")


@dataclass
class Extraction:
    triples: list[Triple]
    status: str  # "llm" | "rules" | "fallback" (model rejected, rules used) | "failed" | "empty"
    reason: str = ""  # why the model's reply was rejected
    calls: int = 0
    prompt_tokens: int = 0
    cached_tokens: int = 0
    completion_tokens: int = 0
    payload: dict | None = None  # the model's reply to cache (None when nothing new came from the model)
    from_cache: bool = False
    rejected: dict[str, int] = field(default_factory=dict)


def candidate_spans(text: str, title: str, limit: int) -> list[str]:
    """Distinct spans as written (title first): the grammar's choices for heads and tails."""
    out: list[str] = []
    seen: set[str] = set()
    for surface in [title] + [s.text for s in find_spans(clean_markup(text), title)]:
        surface = " ".join(surface.split()).replace("\\", "")
        norm = normalise_phrase(surface)
        if norm and norm not in seen and len(surface) <= 80:
            seen.add(norm)
            out.append(surface)
    return out[:limit]


def _grounded(data: Any, text: str, opts: ExtractorOptions) -> tuple[Grounded | None, str]:
    raw = raw_triples(data)
    if raw is None:
        return None, 'the reply has no "triples" list'
    g = ground(raw, text, origin="llm", check_text=opts.grounded)
    if not g.accepted:
        worst = max(g.reasons().items(), key=lambda kv: kv[1])[0] if g.rejected else "no triples"
        return g, f"no usable triple ({worst}); heads and tails must be copied from the passage"
    return g, ""


class Extractor(Protocol):
    """A graph extractor of the registry (kg/extractors.py): triples of one non-empty passage."""

    name: str
    needs_llm: bool  # False: the builder never loads a model for it

    def extract(self, text: str, title: str, opts: ExtractorOptions, llm: LLM | None,
                cached: dict | None) -> Extraction: ...


def extract_passage(text: str, title: str, opts: ExtractorOptions, llm: LLM | None = None,
                    cached: dict | None = None) -> Extraction:
    """Triples of one passage. ``llm`` is needed unless the extractor needs none or ``cached`` is given."""
    if not normalise_phrase(text):
        return Extraction([], "empty")
    return EXTRACTORS.get(opts.extractor)().extract(text, title, opts, llm, cached)


class RulesExtractor:
    name = "rules"
    needs_llm = False

    def extract(self, text: str, title: str, opts: ExtractorOptions, llm: LLM | None,
                cached: dict | None) -> Extraction:
        return Extraction(rules_triples(text, title, opts.max_triples * 3), "rules")


class LLMExtractor:
    """A constrained, grounded model call (or its cached reply); an unusable reply is a failure."""

    name = "llm"
    needs_llm = True

    def extract(self, text: str, title: str, opts: ExtractorOptions, llm: LLM | None,
                cached: dict | None) -> Extraction:
        out = Extraction([], "llm")
        if cached is not None:
            data, reason = cached.get("data"), cached.get("error", "")
            out.from_cache = True
        else:
            data, reason, cut = _call(text, title, opts, llm, out)
            out.payload = {"data": data, "error": reason}
            if cut:  # the budget's fault, not a verdict: cached for this budget only (Extractions.cached)
                out.payload[CUT_AT] = opts.max_tokens
        if data is not None:
            g, why = _grounded(data, text, opts)
            if g is not None:
                out.rejected = g.reasons()
            if not why and g is not None:
                out.triples = g.accepted
                return out
            reason = reason or why
        out.reason = reason or "the model gave no usable reply"
        self.fallback(text, title, opts, out)
        return out

    def fallback(self, text: str, title: str, opts: ExtractorOptions, out: Extraction) -> None:
        out.status = "failed"


class LLMWithRulesExtractor(LLMExtractor):
    """The model's triples, and the rules' when its reply is unusable."""

    name = "llm+rules"

    def fallback(self, text: str, title: str, opts: ExtractorOptions, out: Extraction) -> None:
        out.triples, out.status = rules_triples(text, title, opts.max_triples * 3), "fallback"


def _call(text: str, title: str, opts: ExtractorOptions, llm: LLM | None, out: Extraction) -> tuple[Any, str, bool]:
    """(data, why it failed, whether a failed call had a reply cut at max_tokens)."""
    if llm is None:
        raise ValueError("the LLM extractor needs a model")
    candidates = candidate_spans(text, title, opts.max_spans) if opts.constrain else []
    if len(candidates) < MIN_SPANS_FOR_GRAMMAR:
        candidates = []
    result = call_json(
        llm, kg_messages(text, title, candidates or None), kg_schema(opts.max_triples, candidates or None),
        phase="index", max_tokens=opts.max_tokens, retries=opts.retries,
        validate=lambda data: _grounded(data, text, opts)[1] or None,
    )
    for reply in result.replies:
        out.calls += 1
        out.prompt_tokens += reply.usage.prompt_tokens
        out.cached_tokens += reply.usage.cached_tokens
        out.completion_tokens += reply.usage.completion_tokens
    if result.ok:
        return result.data, "", False
    cut = any(reply.finish_reason == "length" for reply in result.replies)
    return None, result.errors[-1] if result.errors else "no reply", cut
