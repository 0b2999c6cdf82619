"""The reasoning path as a Textual tree, built from the nodes a strategy's trace steps render.

The builder knows no strategy: each step gives its own node (localrag/trace_views.py
``TreeNode``, plain data): NeuroPath's rounds hop by hop (facts kept, paths to expand, the
expansion requirement), seeds and memory recall when they exist, and a plain "no reasoning
path" with one line a step otherwise.
"""

from __future__ import annotations

from typing import Any

from rich.text import Text
from textual.widgets import Tree

from localrag.records import Trace
from localrag.trace_views import TreeNode, TreePlace, plural


def build_path_tree(trace: Trace) -> TreeNode:
    """The tree of a trace: each step's own node (``TraceEvent.tree_node``), or, without a reasoning path, one line each."""
    steps = trace.steps
    if not any(s.path_part for s in steps):
        root = TreeNode(f"No reasoning path (strategy {trace.strategy})", style="bold")
        if steps:
            root.add("how the passages were found", style="dim").children += [s.plain_node() for s in steps]
        return root
    hops = sum(1 for s in steps if s.path_part == "hop")
    root = TreeNode(f"Reasoning path — {trace.strategy}, {plural(hops, 'hop')}", style="bold")
    seen = 0
    for s in steps:
        root.children.append(s.tree_node(TreePlace(seen, hops)))
        if s.path_part == "hop":
            seen += 1
    return root


class PathTree(Tree):
    DEFAULT_CSS = "PathTree { padding: 0 1; }"

    def __init__(self, **kw: Any) -> None:
        super().__init__("No answer yet", **kw)
        self.show_root = True
        self.guide_depth = 3

    def show_trace(self, trace: Trace) -> TreeNode:
        model = build_path_tree(trace)
        self.clear()
        self.root.set_label(Text(model.label, style=model.style))
        self._add(self.root, model.children)
        self.root.expand_all()
        return model

    def _add(self, parent: Any, children: list[TreeNode]) -> None:
        for child in children:
            label = Text(child.label, style=child.style)
            if child.children:
                self._add(parent.add(label), child.children)
            else:
                parent.add_leaf(label)
