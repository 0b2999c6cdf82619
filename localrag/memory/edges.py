"""Edge memory, shared by NeuroPath and ReMindRAG: the update equations, the read-out, and
one replay transaction that applies a query's feedback to the stored edge vectors
(docs/algorithms.md "ReMindRAG: edge weight" and "ReMindRAG: memory update").

δ(x) = (2/π)·cos(πx/2). Enhance: v ← v + δ(‖v‖)·q̂ (0 → 2/π → 0.98 → 1).
Penalise ("intended" form of c.5, pitfall R1): s = ⟨q̂, v⟩; if s ≥ 0, v ← v − max(|δ(s)|, s)·s·q̂,
which removes the fraction max(δ(s), s) of the query-aligned component. The released
code's penalty is a no-op; mode "off" reproduces that.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from localrag.memory.settings import MemorySettings
from localrag.store import Store
from localrag.store.connection import database_error_message
from localrag.store.memory import EdgeKey


def delta(x: float) -> float:
    return (2.0 / math.pi) * math.cos(math.pi * x / 2.0)


def unit(q: np.ndarray) -> np.ndarray:
    q = np.asarray(q, dtype=np.float32)
    n = float(np.linalg.norm(q))
    return q / n if n > 0 else q


def enhance(v: np.ndarray, q: np.ndarray) -> np.ndarray:
    qh = unit(q)
    return (np.asarray(v, dtype=np.float32) + delta(float(np.linalg.norm(v))) * qh).astype(np.float32)


def penalise(v: np.ndarray, q: np.ndarray, mode: str = "intended") -> np.ndarray:
    v = np.asarray(v, dtype=np.float32)
    if mode == "off":
        return v
    qh = unit(q)
    s = float(np.dot(qh, v))
    if s < 0:
        return v
    p = s * qh
    coef = max(abs(delta(float(np.linalg.norm(p)))), float(np.linalg.norm(p)))
    return (v - coef * p).astype(np.float32)


def readout(const: float, v: np.ndarray | None, q: np.ndarray, alpha: float) -> float:
    """w(e, q) = α·sim(from, to) + (1 − α)·⟨q̂, v⟩."""
    mem = 0.0 if v is None else float(np.dot(unit(q), v))
    return alpha * const + (1.0 - alpha) * mem

@dataclass
class Feedback:
    """What one query taught: edges on chosen paths, and candidate edges shown but rejected."""

    kept: list[EdgeKey] = field(default_factory=list)
    rejected: list[EdgeKey] = field(default_factory=list)

    def keep(self, key: EdgeKey) -> None:
        if key not in self.kept:
            self.kept.append(key)

    def reject(self, key: EdgeKey) -> None:
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
