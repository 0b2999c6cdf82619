"""A small cache of LLM results keyed by (kind, key, model, prompt version), e.g. query entities."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from localrag.store.db import Store


class LLMCache:
    def __init__(self, store: "Store") -> None:
        self.s = store

    def get(self, kind: str, key: str, model: str, version: str) -> Any | None:
        row = self.s.one("SELECT json FROM llm_cache WHERE kind = ? AND key = ? AND model = ? AND version = ?",
                         (kind, key, model, version))
        return json.loads(row[0]) if row else None

    def put(self, kind: str, key: str, model: str, version: str, value: Any) -> None:
        self.s.execute(
            "INSERT OR REPLACE INTO llm_cache(kind, key, model, version, json) VALUES(?,?,?,?,?)",
            (kind, key, model, version, json.dumps(value)),
        )

    def clear(self, kind: str | None = None) -> None:
        if kind is None:
            self.s.execute("DELETE FROM llm_cache")
        else:
            self.s.execute("DELETE FROM llm_cache WHERE kind = ?", (kind,))
