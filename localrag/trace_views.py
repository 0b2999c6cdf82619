"""What a trace step looks like to the readers that show it: a progress line while the question
runs, a node of the reasoning-path tree, the path facts the answer reads. Plain data only: the
TUI turns a ``TreeNode`` into Textual's tree (tui/pathtree.py), the CLI prints a ``StepProgress``.

Each ``TraceEvent`` (localrag/trace.py) renders itself through these types, so the readers
never need to know which strategy a step came from.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping

MAX_LEAF_CHARS = 160


@dataclass(frozen=True)
class StepProgress:
    """A step as the progress line shows it: its name in the answer's JSON events, its line, its JSON fields."""

    kind: str
    label: str
    data: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class TreePlace:
    """Where a step stands in the reasoning path: ``hop`` hop steps came before it, of ``hops`` in the trace."""

    hop: int
    hops: int

    @property
    def last_hop(self) -> bool:
        return self.hop == self.hops - 1


@dataclass
class TreeNode:
    """One node of the reasoning-path tree: its line, a Rich style name ("bold", "dim", ...) and the nodes under it."""

    label: str
    children: list["TreeNode"] = field(default_factory=list)
    style: str = ""

    def add(self, label: str, style: str = "") -> "TreeNode":
        node = TreeNode(label, style=style)
        self.children.append(node)
        return node

    def add_lines(self, lines: Iterable[str]) -> "TreeNode":
        """One leaf per line; the node itself, to chain."""
        for line in lines:
            self.add(line)
        return self

    def lines(self, depth: int = 0) -> list[str]:
        """Indented text, for tests and plain output."""
        out = ["  " * depth + self.label]
        for child in self.children:
            out += child.lines(depth + 1)
        return out


def short(value: Any, limit: int = MAX_LEAF_CHARS) -> str:
    """A value on one line of at most ``limit`` characters (floats to 3 places, at most 12 list items)."""
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


def shown(value: Any) -> bool:
    """Whether a field's value says anything (empty values are left out of a node)."""
    return value not in ("", None, [], {})


def plural(n: int, word: str) -> str:
    return f"{n} {word}{'s' if n != 1 else ''}"


def seeds_node(lines: Iterable[str]) -> TreeNode:
    """The seeds of a graph walk, one line each (NeuroPath's and ReMindRAG's seeds step)."""
    return TreeNode("Seeds (question entities → graph entities)", style="bold").add_lines(lines)
