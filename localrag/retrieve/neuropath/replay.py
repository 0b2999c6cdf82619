"""NeuroPath's memory replay: which edges a tracking run teaches (the facts of the chosen
paths are kept, the last fact of a shown-but-rejected expandable path is rejected), written
through the shared edge memory (memory/edges.py)."""

from __future__ import annotations

from typing import Sequence

import numpy as np

from localrag.memory.edges import Feedback, apply
from localrag.records import Trace
from localrag.retrieve.base import Context
from localrag.retrieve.neuropath.events import MemoryAnswerStep, MemoryStep
from localrag.retrieve.neuropath.paths import Path
from localrag.retrieve.neuropath.recall import Recall

STRATEGY = "neuropath"


def add_path(fb: Feedback, path: Path) -> None:
    for fact, doc in zip(path.facts, path.docs):
        fb.keep(("fact", fact, doc))


def reject_last(fb: Feedback, path: Path) -> None:
    fb.reject(("fact", path.facts[-1], path.docs[-1]))


def learn_from_answer(ctx: Context, query: str, qvec: np.ndarray, valid: Sequence[Path], cited: Sequence[int],
                      trace: Trace) -> None:
    """The model's tracking reply was unusable, so its stand-in paths taught nothing; the paths
    whose passages the answer then cites are enhanced now (no extra LLM call), so a repeat of
    the question can recall them instead of tracking again."""
    fb = Feedback()
    used = [p for p in valid if set(p.docs) & set(cited)]
    for p in used:
        add_path(fb, p)
    result = apply(ctx.store, query, STRATEGY, qvec, fb, ctx.settings.memory) if used else None
    trace.add(MemoryAnswerStep(cited=tuple(sorted(set(cited))), paths=tuple(p.text.strip() for p in used),
                               enhanced=result.enhanced if result else 0,
                               not_written=result.error if result and result.error else ""))


def replay_tracking(ctx: Context, query: str, qvec: np.ndarray, recall: Recall, feedback: Feedback, skip: bool,
                    trace: Trace) -> None:
    """Write what this query's tracking taught; say what the recalled memory saved."""
    skipped = ctx.settings.neuropath.max_hop if skip else 0
    saved = 0
    if skipped:
        calls, prompt, completion = ctx.store.calls.totals_by_phase().get("track", (0, 0, 0))
        saved = int(skipped * (prompt + completion) / calls) if calls else 0
    result = apply(ctx.store, query, STRATEGY, qvec, feedback, ctx.settings.memory)
    trace.add(MemoryStep(
        recalled_edges=recall.edges, recalled_paths=tuple(p.text.strip() for p in recall.paths),
        from_knn=recall.from_knn, skipped_rounds=skipped, tokens_saved_est=saved,
        enhanced=result.enhanced, penalised=result.penalised, penalty=ctx.settings.memory.penalty,
        not_written=result.error or "",
    ))
