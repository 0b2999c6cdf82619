"""Extraction benchmark: each extractor variant on gold supporting passages of the dev sets.

    localrag bench extraction --per-set 20 [--model PATH.gguf] [--threads 1]

Prints one table row per variant:
- facts/passage: triples that pass the filters (for "free", only the structural ones);
- grounded/passage: of those, facts whose head and tail occur in the passage;
- relation in text: share of facts whose relation's content words occur in the passage
  (a proxy for invented relations: "Paganini Horror | born on | 1989" fails it);
- title-linked: share of passages with at least one fact whose head or tail is the
  passage's title entity (what multi-hop over titles needs);
- s/passage: wall seconds per passage (model calls included);
- prompt eval/total: prompt tokens llama.cpp actually evaluated vs the prompt size,
  per passage (the difference is the fixed prefix reused from the KV cache);
- calls/passage, rejected: model calls (repairs included) and passages whose reply
  was rejected after the repair retry.

Variants that send the same first request share it (a memo replays the reply with its
measured time and tokens), so "free" and "grounded" differ only in filters and repairs,
and "llm+rules" is "llm+spans" with the rules fallback.
"""

from __future__ import annotations

import argparse
import json
import random
import time
from dataclasses import dataclass, field
from pathlib import Path

from localrag.commands.common import UserError
from localrag.config import LLMSettings
from localrag.kg.extract import ExtractorOptions, extract_passage
from localrag.text.normalise import normalise_phrase, occurs_in
from localrag.llm.base import Reply, Usage
from localrag.llm.discovery import discover
from localrag.llm.factory import make_llm
from localrag.llm.llamacpp import LlamaCppLLM
from localrag.llm.prompts_kg import kg_messages
from localrag_bench.cli_tools import SHARED_DATA as DATA

SETS = ("2wiki/dev", "musique100")


@dataclass(frozen=True)
class GoldPassage:
    dataset: str
    title: str
    text: str  # title + "\n" + text, as the papers index it


def gold_passages(per_set: int, seed: int = 7, data: Path = DATA) -> list[GoldPassage]:
    out: list[GoldPassage] = []
    for name in SETS:
        folder = data / name
        corpus = {}
        with open(folder / "corpus.jsonl", encoding="utf-8") as fh:
            for line in fh:
                row = json.loads(line)
                corpus[row["doc_id"]] = row
        ids: list[int] = []
        with open(folder / "questions.jsonl", encoding="utf-8") as fh:
            for line in fh:
                ids += [i for i in json.loads(line)["gold_doc_ids"] if i in corpus and i not in ids]
        for doc_id in random.Random(seed).sample(ids, min(per_set, len(ids))):
            row = corpus[doc_id]
            out.append(GoldPassage(name, row["title"], f"{row['title']}\n{row['text']}"))
    return out


class MemoLLM:
    """Replays identical requests (same messages and schema) with the first run's reply and time."""

    def __init__(self, inner):
        self.inner = inner
        self.model_id = inner.model_id
        self.memo: dict[str, Reply] = {}
        self.spent_s = 0.0  # model time of every reply given, as measured when it was first made
        self.fresh_s = 0.0  # wall time of the requests actually sent to the model

    def chat(self, messages, *, schema=None, max_tokens=512, phase="answer", on_token=None) -> Reply:
        key = json.dumps([messages, schema, max_tokens], sort_keys=True)
        if key not in self.memo:
            started = time.perf_counter()
            self.memo[key] = self.inner.chat(messages, schema=schema, max_tokens=max_tokens, phase=phase)
            self.fresh_s += time.perf_counter() - started
        reply = self.memo[key]
        self.spent_s += reply.ms / 1000
        return Reply(reply.text, Usage(reply.usage.prompt_tokens, reply.usage.completion_tokens, reply.usage.cached_tokens),
                     reply.ms, reply.model, reply.finish_reason)


@dataclass
class Row:
    variant: str
    passages: int = 0
    facts: int = 0
    grounded: int = 0
    relation_in_text: int = 0
    title_linked: int = 0
    seconds: float = 0.0
    prompt_tokens: int = 0
    evaluated: int = 0
    calls: int = 0
    rejected: int = 0
    reasons: dict[str, int] = field(default_factory=dict)

    def cells(self) -> list[str]:
        n = max(1, self.passages)
        evaluated = f"{self.evaluated / n:.0f} / {self.prompt_tokens / n:.0f}" if self.calls else "–"
        in_text = f"{self.relation_in_text / self.facts:.2f}" if self.facts else "–"
        return [self.variant, f"{self.facts / n:.2f}", f"{self.grounded / n:.2f}", in_text, f"{self.title_linked / n:.2f}",
                f"{self.seconds / n:.2f}", evaluated, f"{self.calls / n:.2f}", f"{self.rejected}/{self.passages}"]


_FUNCTION_WORDS = frozenset("a an the of in on at to by for with as is was are were be been and or from its his her".split())


def relation_in_text(relation: str, normalised_text: str) -> bool:
    """A proxy for a hallucinated relation: its content words do not all occur in the passage."""
    words = [w for w in relation.split() if w not in _FUNCTION_WORDS] or relation.split()
    return all(occurs_in(w, normalised_text) for w in words)


VARIANTS: dict[str, ExtractorOptions] = {
    "llm free": ExtractorOptions("llm", constrain=False, grounded=False),
    "llm + grounding": ExtractorOptions("llm", constrain=False, grounded=True),
    "llm + spans grammar": ExtractorOptions("llm", constrain=True, grounded=True),
    "rules": ExtractorOptions("rules"),
    "llm+rules (spans)": ExtractorOptions("llm+rules", constrain=True, grounded=True),
}


def run_variant(name: str, opts: ExtractorOptions, passages: list[GoldPassage], llm: MemoLLM | None,
                max_triples: int, verbose: bool) -> Row:
    opts = ExtractorOptions(opts.extractor, opts.constrain, opts.grounded, max_triples, opts.max_spans, opts.max_tokens, opts.retries)
    row = Row(name)
    for gp in passages:
        spent, fresh = (llm.spent_s, llm.fresh_s) if llm else (0.0, 0.0)
        started = time.perf_counter()
        ex = extract_passage(gp.text, gp.title, opts, llm=llm if opts.uses_llm else None)
        wall = time.perf_counter() - started
        if llm:  # a replayed reply costs what it cost when it was made
            wall += (llm.spent_s - spent) - (llm.fresh_s - fresh)
        row.seconds += wall
        title = normalise_phrase(gp.title)
        text = normalise_phrase(gp.text)
        row.passages += 1
        row.facts += len(ex.triples)
        row.grounded += sum(occurs_in(t.head, text) and occurs_in(t.tail, text) for t in ex.triples)
        row.relation_in_text += sum(relation_in_text(t.relation, text) for t in ex.triples)
        row.title_linked += any(title in (t.head, t.tail) for t in ex.triples)
        row.prompt_tokens += ex.prompt_tokens
        row.evaluated += ex.prompt_tokens - ex.cached_tokens
        row.calls += ex.calls
        row.rejected += ex.status in ("failed", "fallback")
        for reason, count in ex.rejected.items():
            row.reasons[reason] = row.reasons.get(reason, 0) + count
        if verbose:
            print(f"  [{name}] {gp.title}: {ex.status} {ex.reason}")
            for t in ex.triples[:8]:
                print(f"      {t.head} | {t.relation} | {t.tail}")
    return row


def table(rows: list[Row]) -> str:
    head = ["variant", "facts/passage", "grounded/passage", "relation in text", "title-linked", "s/passage",
            "prompt eval / total tok", "calls/passage", "rejected"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    lines += ["| " + " | ".join(r.cells()) + " |" for r in rows]
    return "\n".join(lines)


def kv_check(passages: list[GoldPassage], model: str, threads: int) -> str:
    """Prompt time with the fixed prefix already in llama.cpp's KV cache vs a fresh context."""
    settings = LLMSettings(model=model, n_threads=threads)
    path = discover(model).path
    warm = LlamaCppLLM(path, settings)
    warm.chat(kg_messages("Warm-up passage.", "Warm-up"), max_tokens=1, phase="index")
    cold_ms, warm_ms, cached, total = [], [], 0, 0
    for gp in passages:
        messages = kg_messages(gp.text, gp.title)
        cold = LlamaCppLLM(path, settings).chat(messages, max_tokens=1, phase="index")
        hot = warm.chat(messages, max_tokens=1, phase="index")
        cold_ms.append(cold.ms)
        warm_ms.append(hot.ms)
        cached += hot.usage.cached_tokens
        total += hot.usage.prompt_tokens
        warm.chat(kg_messages("Another passage in between.", "Other"), max_tokens=1, phase="index")
    n = len(passages)
    return (f"KV-cache check ({n} passages, 1 output token): fresh context {sum(cold_ms) / n:.0f} ms, "
            f"fixed prefix cached {sum(warm_ms) / n:.0f} ms; {cached / n:.0f} of {total / n:.0f} prompt tokens reused")


def run(args: argparse.Namespace) -> int:
    """`localrag bench extraction` (options in bench/localrag_bench/cli_tools.py)."""
    passages = gold_passages(args.per_set, data=Path(args.data))
    if args.kv_check:
        print(kv_check(passages[: args.kv_check], args.model, args.threads))
        return 0
    names = [v.strip() for v in args.variants.split(",") if v.strip()]
    unknown = [n for n in names if n not in VARIANTS]
    if unknown:
        raise UserError(f"unknown variant {unknown[0]!r} (choose from: {', '.join(VARIANTS)})")
    llm = None
    if any(VARIANTS[n].uses_llm for n in names):
        inner, source = make_llm(LLMSettings(model=args.model, n_threads=args.threads))
        print(f"model: {source}")
        llm = MemoLLM(inner)
    print(f"{len(passages)} gold passages ({', '.join(SETS)}), max {args.max_triples} triples")
    rows = []
    for name in names:
        rows.append(run_variant(name, VARIANTS[name], passages, llm, args.max_triples, args.verbose))
        print(table(rows[-1:]).splitlines()[-1], flush=True)
    print()
    print(table(rows))
    for r in rows:
        if r.reasons:
            print(f"{r.variant}: rejected triples by reason: {dict(sorted(r.reasons.items(), key=lambda kv: -kv[1]))}")
    return 0
