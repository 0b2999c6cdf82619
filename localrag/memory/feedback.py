"""The user's verdict on an answer: "wrong" unlearns what it reinforced, "right" reinforces it.

Every edge memory an answer wrote is recorded against its query id
(``EdgeMemory.attributed``). Marking it wrong removes, from each of those edges, the
component aligned with the question (the memory of other questions on the same edge is
kept), and the question's next ask reads no memory, so it runs the full retrieval again;
marking it right enhances the same edges once more (the ReMindRAG update,
docs/algorithms.md "ReMindRAG: memory update").
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from localrag.errors import LocalragError
from localrag.memory.edges import enhance, unit

VERDICTS = ("right", "wrong")


class FeedbackError(LocalragError, ValueError):
    """No such query, or nothing to give feedback on."""

    internal = True


@dataclass(frozen=True)
class FeedbackResult:
    query_id: int
    question: str
    verdict: str
    edges: int  # edges whose memory changed
    note: str


def unlearn(v: np.ndarray, q: np.ndarray) -> np.ndarray:
    """``v`` without its component along the question (nothing changes where they point apart)."""
    qh = unit(q)
    s = float(np.dot(qh, v))
    return (v - s * qh).astype(np.float32) if s > 0 else np.asarray(v, dtype=np.float32)


def mark(index, verdict: str, query_id: int | None = None) -> FeedbackResult:
    """Apply ``verdict`` to query ``query_id`` (default: the last answered one) of ``index``."""
    if verdict not in VERDICTS:
        raise FeedbackError(f"verdict must be one of {', '.join(VERDICTS)}, got {verdict!r}")
    store = index.store
    row = store.calls.query_row(query_id) if query_id is not None else store.calls.last_answered()
    if row is None:
        raise FeedbackError(f"no query {query_id} in the query log" if query_id is not None
                            else "no answered question yet: ask one first")
    keys = store.memory.written_by(row.id)
    qvec = index.embedder.encode_one(row.text)
    changed = 0
    with store.transaction():
        current = store.memory.get(keys)
        for key in keys:
            v = current.get(key)
            if v is None:
                continue  # the edge (or its note) is gone
            store.memory.put(key, unlearn(v, qvec) if verdict == "wrong" else enhance(v, qvec))
            changed += 1
        store.memory.set_verdict(row.id, row.text, verdict)
        if changed:
            store.memory.log(row.text, "feedback", changed if verdict == "right" else 0,
                             changed if verdict == "wrong" else 0, "unlearn" if verdict == "wrong" else "enhance")
    if verdict == "wrong":
        note = (f"unlearned {changed} edge memories of this answer; " if changed else
                f"this answer ({row.strategy}) wrote no edge memory; ") + "asking it again runs full retrieval"
    else:
        note = (f"reinforced {changed} edge memories of this answer" if changed else
                f"this answer ({row.strategy}) wrote no edge memory to reinforce; the verdict is recorded")
    return FeedbackResult(row.id, row.text, verdict, changed, note)
