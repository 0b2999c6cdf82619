"""The LLM call log and the query log."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

from localrag.records import LLMCallRecord

if TYPE_CHECKING:
    from localrag.store.db import Store


@dataclass(frozen=True)
class QueryRow:
    id: int
    text: str
    strategy: str
    answer: str
    trace: dict
    created: float


class CallLog:
    def __init__(self, store: "Store") -> None:
        self.s = store

    def log_call(self, call: LLMCallRecord, query_id: int | None = None) -> None:
        self.s.execute(
            "INSERT INTO llm_calls(query_id, phase, model, prompt_tokens, completion_tokens, cached_tokens, ms, ok, error, at) "
            "VALUES(?,?,?,?,?,?,?,?,?,?)",
            (query_id, call.phase, call.model, call.prompt_tokens, call.completion_tokens, call.cached_tokens,
             call.ms, int(call.ok), call.error, time.time()),
        )

    def start_query(self, text: str, strategy: str) -> int:
        cur = self.s.execute("INSERT INTO queries(text, strategy, created) VALUES(?,?,?)", (text, strategy, time.time()))
        return int(cur.lastrowid)

    def finish_query(self, query_id: int, answer: str, trace: dict) -> None:
        self.s.execute("UPDATE queries SET answer = ?, trace_json = ? WHERE id = ?", (answer, json.dumps(trace), query_id))

    def query_row(self, query_id: int) -> QueryRow | None:
        r = self.s.one("SELECT id, text, strategy, answer, trace_json, created FROM queries WHERE id = ?", (query_id,))
        return QueryRow(r[0], r[1], r[2], r[3], json.loads(r[4] or "{}"), r[5]) if r else None

    def last_answered(self) -> QueryRow | None:
        """The latest query that got an answer (feedback's default)."""
        r = self.s.one("SELECT id, text, strategy, answer, trace_json, created FROM queries "
                       "WHERE answer IS NOT NULL AND answer <> '' ORDER BY id DESC LIMIT 1")
        return QueryRow(r[0], r[1], r[2], r[3], json.loads(r[4] or "{}"), r[5]) if r else None

    def recent_queries(self, limit: int = 20) -> list[QueryRow]:
        rows = self.s.query("SELECT id, text, strategy, answer, trace_json, created FROM queries ORDER BY id DESC LIMIT ?", (limit,))
        return [QueryRow(r[0], r[1], r[2], r[3], json.loads(r[4] or "{}"), r[5]) for r in rows]

    def tokens_of_phase(self, phase: str) -> list[int]:
        """Prompt + completion tokens of each logged call of this phase, in call order."""
        rows = self.s.query("SELECT prompt_tokens + completion_tokens FROM llm_calls WHERE phase = ? ORDER BY id", (phase,))
        return [int(r[0]) for r in rows]

    def totals_by_phase(self) -> dict[str, tuple[int, int, int]]:
        """phase -> (calls, prompt tokens, completion tokens)."""
        rows = self.s.query("SELECT phase, COUNT(*), SUM(prompt_tokens), SUM(completion_tokens) FROM llm_calls GROUP BY phase")
        return {r[0]: (int(r[1]), int(r[2] or 0), int(r[3] or 0)) for r in rows}
