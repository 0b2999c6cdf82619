"""The reasoning path as a tree, built from whatever round/paths steps a strategy traced.

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

MAX_LEAF_CHARS = 160
_PATH_STEPS = {"round", "paths", "path"}
_REQUIREMENT_KEYS = ("requirement", "expansion_requirements", "expansion_requirement", "next_g")
_ROUND_SHOWN = {"step", "round", "g", "candidates", "selected", "expand", "chain", "continue", *_REQUIREMENT_KEYS}


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


def _fact(candidate: dict) -> str:
    text = str(candidate.get("text", "")).strip().rstrip(";").strip()
    sim = candidate.get("sim")
    label = short(text) + (f"  (sim {sim:.2f})" if isinstance(sim, (int, float)) else "")
    return label + ("  · recalled from memory" if candidate.get("recalled") else "")


def _seed(seed: object) -> str:
    if isinstance(seed, dict) and "entity" in seed:
        sim = seed.get("sim")
        return f"{seed.get('query', '?')} → {seed['entity']}" + (f"  (sim {sim:.2f})" if isinstance(sim, (int, float)) else "")
    return short(seed)


def _round_node(root: PathNode, step: dict, index: int, last: bool) -> None:
    number = step.get("round", index + 1)
    hop = root.add(f"Hop {number}", style="bold")
    if step.get("g"):
        hop.add(f"pruned against: {short(step['g'])}", style="dim")
    candidates = {c.get("id"): c for c in step.get("candidates", []) if isinstance(c, dict)}
    if candidates:
        hop.add(f"{len(candidates)} candidate paths shown to the model", style="dim")
    selected = step.get("selected") or []
    kept = hop.add(f"kept ({len(selected)})", style="green")
    for pid in selected:
        kept.add(_fact(candidates[pid]) if pid in candidates else f"path {pid}")
    if not selected:
        kept.add("nothing kept", style="dim")
    expand = step.get("expand") or []
    if expand:
        grow = hop.add(f"to expand ({len(expand)})", style="yellow")
        for pid in expand:
            grow.add(_fact(candidates[pid]) if pid in candidates else f"path {pid}")
    if step.get("chain"):
        hop.add(f"chain: {short(step['chain'])}")
    requirement = next((step[k] for k in _REQUIREMENT_KEYS if step.get(k)), None)
    if requirement:
        hop.add(f"expansion requirement: {short(requirement)}", style="yellow")
    if "continue" in step:
        if not step["continue"]:
            hop.add("■ stop: enough found", style="dim")
        else:
            hop.add("→ another hop wanted, but this was the last one (max_hop)" if last else "→ continue to the next hop",
                    style="dim")
    for key, value in step.items():
        if key not in _ROUND_SHOWN and value not in ("", None, [], {}):
            hop.add(f"{key}: {short(value)}", style="red" if key in ("fallback", "errors") else "dim")


def _generic(root: PathNode, step: dict) -> None:
    name = str(step.get("step", "step"))
    data = {k: v for k, v in step.items() if k != "step" and v not in ("", None, [], {})}
    node = root.add(f"{name}: {short(data)}" if data else name)
    for key in ("paths",):
        for path in step.get(key, []) if isinstance(step.get(key), list) else []:
            node.add(short(path.get("text", path) if isinstance(path, dict) else path))


def build_path_tree(trace: Trace) -> PathNode:
    steps = [s for s in trace.steps if isinstance(s, dict)]
    has_path = any(s.get("step") in _PATH_STEPS for s in steps)
    if not has_path:
        root = PathNode(f"No reasoning path (strategy {trace.strategy})", style="bold")
        if steps:
            how = root.add("how the passages were found", style="dim")
            for s in steps:
                _generic(how, s)
        return root
    n_rounds = sum(1 for s in steps if s.get("step") == "round")
    root = PathNode(f"Reasoning path — {trace.strategy}, {n_rounds} hop{'s' if n_rounds != 1 else ''}", style="bold")
    seen_rounds = 0
    for s in steps:
        name = s.get("step")
        if name == "round":
            _round_node(root, s, seen_rounds, last=seen_rounds == n_rounds - 1)
            seen_rounds += 1
        elif name == "seeds":
            seeds = root.add("Seeds (question entities → graph entities)", style="bold")
            for seed in s.get("seeds", []) if isinstance(s.get("seeds"), list) else []:
                seeds.add(_seed(seed))
            for key, value in s.items():
                if key not in ("step", "seeds"):
                    seeds.add(f"{key}: {short(value)}")
        elif name == "query_entities":
            entities = s.get("entities") or []
            root.add(f"Question entities: {short(entities) or 'none'}" + (f" ({s['source']})" if s.get("source") else ""))
        elif name == "memory":
            recalled = s.get("recalled_edges", 0)
            mem = root.add(f"Memory: recalled {recalled} edge{'s' if recalled != 1 else ''}", style="magenta")
            for key, value in s.items():
                if key not in ("step", "recalled_edges") and value not in ("", None, [], {}):
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
