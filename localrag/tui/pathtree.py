"""The reasoning path as a tree, built from the typed round/paths steps a strategy traced.

The builder is generic on purpose: strategies add steps over time, and the tree shows
rounds hop by hop (facts kept, paths to expand, the expansion requirement), seeds and
memory recall when they exist, and a plain "no reasoning path" otherwise.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from rich.text import Text
from textual.widgets import Tree

from localrag.records import Trace
from localrag.retrieve.neuropath.events import CandidatePath, MemoryAnswerStep, QueryEntitiesStep, RoundStep, SeedLink
from localrag.retrieve.neuropath.events import SeedsStep as NeuroPathSeeds
from localrag.retrieve.remind.events import PathsStep
from localrag.retrieve.remind.events import RemindSeedsStep as RemindSeeds
from localrag.trace import MemoryEvent, TraceEvent, event_name, to_json_value

MAX_LEAF_CHARS = 160
# the round fields the hop node shows in its own lines; the others follow as "name: value"
_ROUND_SHOWN = {"round", "g", "candidates", "selected", "expand", "chain", "continue", "requirement"}


@dataclass
class PathNode:
    label: str
    children: list["PathNode"] = field(default_factory=list)
    style: str = ""

    def add(self, label: str, style: str = "") -> "PathNode":
        node = PathNode(label, style=style)
        self.children.append(node)
        return node

    def lines(self, depth: int = 0) -> list[str]:
        """Indented text, for tests and plain output."""
        out = ["  " * depth + self.label]
        for child in self.children:
            out += child.lines(depth + 1)
        return out


def short(value: Any, limit: int = MAX_LEAF_CHARS) -> str:
    if isinstance(value, float):
        text = f"{value:.3f}"
    elif isinstance(value, (list, tuple)):
        text = ", ".join(short(v, 40) for v in value[:12]) + (f" … (+{len(value) - 12})" if len(value) > 12 else "")
    elif isinstance(value, dict):
        text = ", ".join(f"{k}={short(v, 40)}" for k, v in value.items())
    else:
        text = str(value)
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _shown(value: Any) -> bool:
    return value not in ("", None, [], {})


def _fact(candidate: CandidatePath) -> str:
    text = candidate.text.strip().rstrip(";").strip()
    label = short(text) + f"  (sim {candidate.sim:.2f})"
    return label + ("  · recalled from memory" if candidate.recalled else "")


def _seed(seed: object) -> str:
    if isinstance(seed, SeedLink):
        return f"{seed.query} → {seed.entity}  (sim {seed.sim:.2f})"
    return short(to_json_value(seed))


def _round_node(root: PathNode, step: RoundStep, index: int, last: bool) -> None:
    number = step.round if step.round is not None else index + 1
    hop = root.add(f"Hop {number}", style="bold")
    if step.g:
        hop.add(f"pruned against: {short(step.g)}", style="dim")
    candidates = {c.id: c for c in step.candidates}
    if candidates:
        hop.add(f"{len(candidates)} candidate paths shown to the model", style="dim")
    kept = hop.add(f"kept ({len(step.selected)})", style="green")
    for pid in step.selected:
        kept.add(_fact(candidates[pid]) if pid in candidates else f"path {pid}")
    if not step.selected:
        kept.add("nothing kept", style="dim")
    if step.expand:
        grow = hop.add(f"to expand ({len(step.expand)})", style="yellow")
        for pid in step.expand:
            grow.add(_fact(candidates[pid]) if pid in candidates else f"path {pid}")
    if step.chain:
        hop.add(f"chain: {short(step.chain)}")
    if step.requirement:
        hop.add(f"expansion requirement: {short(step.requirement)}", style="yellow")
    if step.cont is not None:
        if not step.cont:
            hop.add("■ stop: enough found", style="dim")
        else:
            hop.add("→ another hop wanted, but this was the last one (max_hop)" if last else "→ continue to the next hop",
                    style="dim")
    for key, value in step.fields().items():
        if key not in _ROUND_SHOWN and _shown(value):
            hop.add(f"{key}: {short(value)}", style="red" if key in ("fallback", "errors") else "dim")


def _generic(root: PathNode, step: TraceEvent) -> None:
    data = {k: v for k, v in step.fields().items() if _shown(v)}
    name = event_name(step)
    node = root.add(f"{name}: {short(data)}" if data else name)
    if isinstance(step, (PathsStep, MemoryAnswerStep)):
        for path in step.paths:
            node.add(short(path))


def build_path_tree(trace: Trace) -> PathNode:
    steps = trace.steps
    if not any(isinstance(s, (RoundStep, PathsStep)) for s in steps):
        root = PathNode(f"No reasoning path (strategy {trace.strategy})", style="bold")
        if steps:
            how = root.add("how the passages were found", style="dim")
            for s in steps:
                _generic(how, s)
        return root
    n_rounds = sum(1 for s in steps if isinstance(s, RoundStep))
    root = PathNode(f"Reasoning path — {trace.strategy}, {n_rounds} hop{'s' if n_rounds != 1 else ''}", style="bold")
    seen_rounds = 0
    for s in steps:
        if isinstance(s, RoundStep):
            _round_node(root, s, seen_rounds, last=seen_rounds == n_rounds - 1)
            seen_rounds += 1
        elif isinstance(s, (NeuroPathSeeds, RemindSeeds)):
            seeds = root.add("Seeds (question entities → graph entities)", style="bold")
            for seed in s.seeds:
                seeds.add(_seed(seed))
        elif isinstance(s, QueryEntitiesStep):
            root.add(f"Question entities: {short(s.entities) or 'none'}" + (f" ({s.source})" if s.source else ""))
        elif isinstance(s, MemoryEvent):
            recalled = s.recalled_edges
            mem = root.add(f"Memory: recalled {recalled} edge{'s' if recalled != 1 else ''}", style="magenta")
            for key, value in s.fields().items():
                if key != "recalled_edges" and _shown(value):
                    mem.add(f"{key}: {short(value)}")
        else:
            _generic(root, s)
    return root


class PathTree(Tree):
    DEFAULT_CSS = "PathTree { padding: 0 1; }"

    def __init__(self, **kw: Any) -> None:
        super().__init__("No answer yet", **kw)
        self.show_root = True
        self.guide_depth = 3

    def show_trace(self, trace: Trace) -> PathNode:
        model = build_path_tree(trace)
        self.clear()
        self.root.set_label(Text(model.label, style=model.style))
        self._add(self.root, model.children)
        self.root.expand_all()
        return model

    def _add(self, parent: Any, children: list[PathNode]) -> None:
        for child in children:
            label = Text(child.label, style=child.style)
            if child.children:
                self._add(parent.add(label), child.children)
            else:
                parent.add_leaf(label)
