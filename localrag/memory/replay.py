"""Memory replay after a NeuroPath query: enhance the edges of kept paths, penalise rejected ones."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from localrag.config import MemorySettings
from localrag.memory.core import enhance, penalise
from localrag.store import Store
from localrag.store.memory import EdgeKey


@dataclass
class Feedback:
    """What one query taught: edges on chosen paths, and candidate edges shown but rejected."""

    kept: list[EdgeKey] = field(default_factory=list)
    rejected: list[EdgeKey] = field(default_factory=list)

    def add_path(self, facts: tuple[int, ...], docs: tuple[int, ...]) -> None:
        for f, d in zip(facts, docs):
            key = ("fact", f, d)
            if key not in self.kept:
                self.kept.append(key)

    def reject_last(self, facts: tuple[int, ...], docs: tuple[int, ...]) -> None:
        key = ("fact", facts[-1], docs[-1])
        if key not in self.rejected:
            self.rejected.append(key)


@dataclass
class ReplayResult:
    enhanced: int
    penalised: int
    skipped_missing: int
    error: str = ""  # why nothing was written (the index busy past the timeout, or read-only)


def apply(store: Store, query: str, strategy: str, qvec: np.ndarray, fb: Feedback, cfg: MemorySettings) -> ReplayResult:
    """One transaction: enhance kept edges, penalise rejected ones (never an edge that was also kept).
    Learning is never worth failing a question for: a write that cannot happen is reported, not raised."""
    try:
        return _apply(store, query, strategy, qvec, fb, cfg)
    except Exception as exc:
        from localrag.store.connection import database_error_message

        if database_error_message(exc) is None:
            raise
        return ReplayResult(0, 0, 0, error=str(exc))


def _apply(store: Store, query: str, strategy: str, qvec: np.ndarray, fb: Feedback, cfg: MemorySettings) -> ReplayResult:
    kept = [k for k in fb.kept]
    rejected = [k for k in fb.rejected if k not in set(kept)]
    enhanced = penalised = missing = 0
    with store.transaction():
        current = store.memory.get(kept + rejected)
        for key in kept:
            if not store.memory.exists(key):
                missing += 1
                continue
            v = current.get(key, np.zeros_like(qvec))
            store.memory.put(key, enhance(v, qvec))
            enhanced += 1
        if cfg.penalty != "off":
            for key in rejected:
                v = current.get(key)
                if v is None or not store.memory.exists(key):
                    continue  # a zero memory has nothing to lose
                store.memory.put(key, penalise(v, qvec, cfg.penalty))
                penalised += 1
        if enhanced or penalised:
            store.memory.log(query, strategy, enhanced, penalised, cfg.penalty)
    return ReplayResult(enhanced, penalised, missing)
