"""The extraction cache (model replies by passage text, model and prompt) and recorded failures."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from localrag.store.db import Store

CUT_AT = "cut_at"  # in a cached extraction: the failed reply was cut at this many tokens (a budget, not a verdict)


@dataclass(frozen=True)
class CachedExtraction:
    passage_sha: str
    model: str
    prompt_version: str
    payload: dict  # what the model returned (or why it failed), as JSON


class Extractions:
    def __init__(self, store: "Store") -> None:
        self.s = store

    def cached(self, passage_sha: str, model: str, prompt_version: str, max_tokens: int | None = None) -> dict | None:
        """The stored model reply for this passage text, model and prompt. A failure recorded with
        the token budget its reply was cut at (``CUT_AT``) is a miss under a larger ``max_tokens``:
        the larger budget may let the reply finish."""
        row = self.s.one(
            "SELECT json FROM extractions WHERE passage_sha = ? AND model = ? AND prompt_version = ?",
            (passage_sha, model, prompt_version),
        )
        if row is None:
            return None
        payload = json.loads(row[0])
        cut_at = payload.get(CUT_AT) if isinstance(payload, dict) else None
        if max_tokens is not None and isinstance(cut_at, int) and max_tokens > cut_at:
            return None
        return payload

    def put(self, cache: CachedExtraction) -> None:
        self.s.execute(
            "INSERT OR REPLACE INTO extractions(passage_sha, model, prompt_version, json) VALUES(?,?,?,?)",
            (cache.passage_sha, cache.model, cache.prompt_version, json.dumps(cache.payload)),
        )

    def failures(self, limit: int = 50) -> list[tuple[int, str, bool]]:
        """(passage, reason, fallback used) of recorded extraction failures, newest first."""
        rows = self.s.query("SELECT passage, reason, fallback FROM extraction_failures ORDER BY at DESC LIMIT ?", (limit,))
        return [(int(p), r, bool(f)) for p, r, f in rows]

    def set_failure(self, passage_id: int, failure: str, fallback: bool, model: str) -> None:
        """The passage's recorded failure becomes this one (none when ``failure`` is empty)."""
        self.s.execute("DELETE FROM extraction_failures WHERE passage = ?", (passage_id,))
        if failure:
            self.s.execute(
                "INSERT INTO extraction_failures(passage, reason, fallback, model, at) VALUES(?,?,?,?,?)",
                (passage_id, failure[:500], int(fallback), model, time.time()),
            )
