"""NeuroPath's semantic path tracking and pruning (docs/algorithms.md
"NeuroPath: path tracking").

Bounded rounds and prompt size, stable ids (N3), duplicate paths removed (N10), only the
last round's valid paths count (N4). A weak model's reply is validated; when it is unusable
the pruned paths' embedding order stands in for its choice, and the trace says so.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence

from localrag.llm.jsoncall import call_json
from localrag.llm.prompts_np import track_messages, track_schema
from localrag.memory.edges import Feedback
from localrag.records import Trace
from localrag.retrieve.base import Context
from localrag.retrieve.neuropath.events import CandidatePath, RoundStep
from localrag.retrieve.neuropath.paths import Path, dedupe, embed_text, first_hop, next_hop, prune, render
from localrag.retrieve.neuropath.replay import add_path, reject_last
from localrag.retrieve.neuropath.settings import NeuroPathSettings


FALLBACK_VALID = 3  # paths taken in embedding order when the model's choice is unusable
BROAD_SHARE = 0.4  # a selection of more than this share of the shown paths is no selection


@dataclass
class TrackState:
    kept: list[Path] = field(default_factory=list)
    valid: list[Path] = field(default_factory=list)
    need_expand: list[Path] = field(default_factory=list)
    chain: str = ""
    requirement: str = ""
    rounds: int = 0
    llm_failed: bool = False
    # the last round's valid paths are a stand-in, not the model's choice (reply unusable or too broad)
    fallback: bool = False
    unusable: bool = False  # the last round's reply was unusable: nothing learned from it yet
    feedback: Feedback = field(default_factory=Feedback)


def track(ctx: Context, query: str, seeds: list[int], trace: Trace,
          recalled: Sequence[Path] = ()) -> TrackState:
    cfg = ctx.settings.neuropath
    graph = ctx.store.graph
    state = TrackState()
    g = query
    candidates = dedupe(first_hop(graph, seeds))
    expanded: set[str] = set()
    locked = list(recalled)
    while state.rounds < cfg.max_hop:
        state.rounds += 1
        new = [p for p in dedupe(candidates) if p.text not in {x.text for x in state.kept + locked}]
        pruned = _prune(ctx, new, g or query, cfg.filter_k)
        old = locked + state.kept
        shown = (old + pruned)[: max(cfg.max_prompt_paths, len(old))]
        if not shown:
            trace.add(RoundStep(round=state.rounds, g=g, note="no candidate paths"))
            break
        expandable = {i for i, p in enumerate(shown) if i >= len(old)}
        names = graph.entities.names(sorted({p.link for p in shown}))
        lines = render(shown, expandable, names)
        choice, errors = _ask(ctx, query, lines, len(shown), cfg)
        fell_back = choice is None
        broad = False
        if choice is None:
            state.llm_failed = True
            valid_ids = _by_sim(shown, FALLBACK_VALID)
            expand_ids, cont, chain, req = [], 0, state.chain, ""
        else:
            valid_ids, expand_ids, cont, chain, req = choice
            if not valid_ids and not expand_ids:
                fell_back = True
                valid_ids, cont = _by_sim(shown, FALLBACK_VALID), 0
            elif len(valid_ids) > max(FALLBACK_VALID, int(BROAD_SHARE * len(shown))):
                # "everything is relevant" (a tiny model counting 1, 2, 3 …) selects nothing:
                # keep the selected paths most similar to g, and say so in the trace
                broad = True
                valid_ids = sorted(valid_ids, key=lambda i: (-shown[i].sim, i))[:FALLBACK_VALID]
                expand_ids = [i for i in expand_ids if i in valid_ids]
        expand_ids = [i for i in expand_ids if i in expandable or shown[i].text not in expanded]
        trace.add(RoundStep(
            round=state.rounds, g=g,
            candidates=tuple(CandidatePath(i, p.text.strip(), round(p.sim, 4), tuple(p.docs), i in expandable, p.recalled)
                             for i, p in enumerate(shown)),
            selected=tuple(valid_ids), expand=tuple(expand_ids), chain=chain, requirement=req, cont=cont,
            fallback="model reply unusable: paths taken in embedding order" if fell_back
            else ("selection too broad: kept the selected paths most similar to g" if broad else ""),
            errors=tuple(errors),  # why replies were rejected (a repaired reply leaves its first error here)
        ))
        keep_ids = list(dict.fromkeys(valid_ids + sorted(set(expand_ids) - set(valid_ids))))
        # recalled paths are valid by construction (they come first, strongest first)
        state.valid = locked + [shown[i] for i in valid_ids if shown[i] not in locked]
        state.kept = [shown[i] for i in keep_ids if shown[i] not in locked]
        if not fell_back:
            for i in valid_ids:
                add_path(state.feedback, shown[i])
            for i in sorted(expandable - set(keep_ids)):
                reject_last(state.feedback, shown[i])
        state.need_expand = [shown[i] for i in expand_ids]
        state.chain, state.requirement = chain, req
        state.fallback, state.unusable = fell_back or broad, fell_back
        if not cont or not state.need_expand or state.rounds >= cfg.max_hop:
            break
        blocked = {p.text for p in state.kept} | {p.text for p in state.need_expand}
        candidates = []
        for p in state.need_expand:
            expanded.add(p.text)
            candidates.extend(next_hop(graph, p, blocked))
        g = req
    return state


def _prune(ctx: Context, paths: list[Path], g: str, k: int) -> list[Path]:
    if not paths:
        return []
    gvec = ctx.embedder.encode_one(g)
    vecs = ctx.embedder.encode([embed_text(p) for p in paths])
    return prune(paths, vecs @ gvec, k)

def _ask(ctx: Context, query: str, lines: list[str], n: int,
         cfg: NeuroPathSettings) -> tuple[tuple[list[int], list[int], int, str, str] | None, list[str]]:
    result = call_json(ctx.llm(), track_messages(query, lines), track_schema(n, cfg.max_valid, cfg.max_expand),
                       phase="track", max_tokens=ctx.settings.llm.json_max_tokens,
                       validate=lambda d: _validate(d, n))
    if not result.ok:
        return None, result.errors
    d = result.data
    valid = list(dict.fromkeys(int(i) for i in d["valid_ids"]))
    expand = list(dict.fromkeys(int(i) for i in d["need_expand_ids"]))
    choice = (valid, expand, int(d["continue"]), str(d["current_chain"]).strip(), str(d["expansion_requirements"]).strip())
    return choice, result.errors


def _validate(data: dict, n: int) -> str | None:
    for key in ("current_chain", "valid_ids", "expansion_requirements", "need_expand_ids", "continue"):
        if key not in data:
            return f"missing {key}"
    for key in ("valid_ids", "need_expand_ids"):
        if not isinstance(data[key], list) or not all(isinstance(i, int) and 0 <= i < n for i in data[key]):
            return f"{key} must be a list of path ids between 0 and {n - 1}"
    if data["continue"] not in (0, 1):
        return "continue must be 0 or 1"
    return None


def _by_sim(paths: Sequence[Path], n: int) -> list[int]:
    return sorted(range(len(paths)), key=lambda i: (-paths[i].sim, i))[:n]

