"""The update equations and the read-out, as pure functions (ALGORITHMS.md c.3, c.5).

δ(x) = (2/π)·cos(πx/2). Enhance: v ← v + δ(‖v‖)·q̂ (0 → 2/π → 0.98 → 1).
Penalise ("intended" form of c.5, pitfall R1): s = ⟨q̂, v⟩; if s ≥ 0, v ← v − max(|δ(s)|, s)·s·q̂,
which removes the fraction max(δ(s), s) of the query-aligned component. The released
code's penalty is a no-op; mode "off" reproduces that.
"""

from __future__ import annotations

import math

import numpy as np


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
