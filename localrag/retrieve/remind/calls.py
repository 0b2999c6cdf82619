"""The LLM calls of a ReMindRAG walk, behind a hard call budget (pitfall R5).

``Budget`` wraps the query's LLM: every call, repair retries included, is counted and
recorded in the trace with its phase and tokens; once the limit is reached the next call
raises ``BudgetSpent`` instead of reaching the model, so no loop and no retry can spin.
Each helper returns a typed result and never raises on a bad reply.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from localrag.errors import LocalragError
from localrag.llm.jsoncall import call_json
from localrag.llm.prompts_remind import (STOP, ChunkView, OptionView, judge_messages, judge_schema, label_messages,
                                         label_schema, next_messages, next_schema, summary_messages)
from localrag.records import LLMCallRecord, Trace

TRAVERSE = "traverse"
MEMORY = "memory"
JUDGE_MAX_TOKENS = 160  # reason (≤200 chars) + verdict
NEXT_MAX_TOKENS = 160
LABEL_MAX_TOKENS = 512


class BudgetSpent(LocalragError, RuntimeError):
    """The query has made remind.max_llm_calls calls."""

    internal = True


class Budget:
    """Counts and records every call; refuses calls past ``limit``."""

    def __init__(self, llm, limit: int, trace: Trace):
        self.llm = llm
        self.limit = limit
        self.used = 0
        self.trace = trace

    @property
    def model_id(self) -> str:
        return self.llm.model_id

    @property
    def left(self) -> int:
        return max(0, self.limit - self.used)

    def chat(self, messages, *, schema=None, max_tokens=512, phase="answer", on_token=None):
        if self.used >= self.limit:
            raise BudgetSpent(f"LLM call budget spent after {self.used} calls (remind.max_llm_calls)")
        self.used += 1
        reply = self.llm.chat(messages, schema=schema, max_tokens=max_tokens, phase=phase, on_token=on_token)
        self.trace.calls.append(LLMCallRecord(phase, reply.model or self.model_id, reply.usage.prompt_tokens,
                                              reply.usage.completion_tokens, reply.ms,
                                              cached_tokens=reply.usage.cached_tokens))
        return reply


@dataclass
class Choice:
    option: str = ""  # "c3", "b1", STOP, or "" when every attempt was invalid
    reason: str = ""
    attempts: int = 0
    errors: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return bool(self.option)


@dataclass
class Verdict:
    sufficient: bool
    reason: str = ""
    ok: bool = True  # False: the reply was unusable and counts as "no"


@dataclass
class Labels:
    steps: list[int] = field(default_factory=list)
    passages: list[int] = field(default_factory=list)
    ok: bool = False
    attempts: int = 0
    errors: list[str] = field(default_factory=list)


def choose_next(budget: Budget, question: str, here: str, path: list[str], chunks: str,
                candidates: list[OptionView], back: list[OptionView], collected: list[int], attempts: int) -> Choice:
    """The next-node call: an offered id or stop, with a corrective retry after each invalid one."""
    allowed = [o.id for o in candidates] + [o.id for o in back] + [STOP]

    def check(data: dict) -> str | None:
        choice = str(data.get("choice", "")).strip()
        if choice in allowed:
            return None
        if choice.lstrip("p").isdigit() and int(choice.lstrip("p")) in collected:
            return (f"passage {choice} is already collected (collected: {', '.join(map(str, collected))}); "
                    f"choose one of {', '.join(allowed)}")
        return f"{choice or 'an empty choice'} is not offered; choose one of {', '.join(allowed)}"

    result = call_json(budget, next_messages(question, here, path, chunks, candidates, back), next_schema(allowed),
                       phase=TRAVERSE, max_tokens=NEXT_MAX_TOKENS, validate=check, retries=max(0, attempts - 1))
    out = Choice(attempts=len(result.replies), errors=list(result.errors))
    if result.ok:
        out.option = str(result.data["choice"]).strip()
        out.reason = str(result.data.get("reason", ""))[:200]
    return out


def judge(budget: Budget, question: str, entities: list[str], chunks: str) -> Verdict:
    """The sufficiency judge; an unusable reply after one repair counts as "not yet"."""

    def check(data: dict) -> str | None:
        return None if data.get("sufficient") in ("yes", "no") else 'sufficient must be "yes" or "no"'

    result = call_json(budget, judge_messages(question, entities, chunks), judge_schema(), phase=TRAVERSE,
                       max_tokens=JUDGE_MAX_TOKENS, validate=check, retries=1)
    if not result.ok:
        return Verdict(False, "; ".join(result.errors)[:200], ok=False)
    return Verdict(result.data["sufficient"] == "yes", str(result.data.get("reason", ""))[:200])


def summarise(budget: Budget, question: str, chunk: ChunkView, earlier: str, max_tokens: int) -> str:
    """A query-aware summary of a long passage; the raw text when the reply is empty."""
    reply = budget.chat(summary_messages(question, chunk, earlier), max_tokens=max_tokens, phase=TRAVERSE)
    return reply.text.strip() or chunk.text


def label(budget: Budget, question: str, steps: list[str], chunks: str, chunk_ids: list[int], attempts: int) -> Labels:
    """The labelling call: which recorded steps and collected passages were useful (c.4 step 9.1)."""

    def check(data: dict) -> str | None:
        for key in ("edges", "chunks"):
            if not isinstance(data.get(key), list):
                return f"{key} must be a list"
        bad_steps = [i for i in data["edges"] if not (isinstance(i, int) and 0 <= i < len(steps))]
        bad_chunks = [c for c in data["chunks"] if _as_int(c) not in chunk_ids]
        if bad_steps:
            return f"edges {bad_steps} are not step numbers 0..{len(steps) - 1}"
        if bad_chunks:
            return f"chunks {bad_chunks} are not collected passages ({', '.join(map(str, chunk_ids))})"
        return None

    result = call_json(budget, label_messages(question, steps, chunks), label_schema(len(steps), chunk_ids),
                       phase=MEMORY, max_tokens=LABEL_MAX_TOKENS, validate=check, retries=max(0, attempts - 1))
    out = Labels(attempts=len(result.replies), errors=list(result.errors))
    if result.ok:
        out.ok = True
        out.steps = list(dict.fromkeys(int(i) for i in result.data["edges"]))
        out.passages = list(dict.fromkeys(_as_int(c) for c in result.data["chunks"]))
    return out


def _as_int(value: object) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    text = str(value).strip()
    return int(text) if text.isdigit() else None
