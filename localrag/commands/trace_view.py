"""Readable rendering of a retrieval trace for `ask --trace`."""

from __future__ import annotations

import json

from rich.tree import Tree

from localrag.commands.common import console
from localrag.trace import event_name


def print_trace(answer) -> None:
    trace = answer.retrieval.trace
    root = Tree(f"[bold]trace[/] {trace.strategy} · {trace.ms:.0f} ms retrieval")
    for step in trace.steps:
        node = root.add(f"[bold]{event_name(step)}[/]")
        for key, value in step.fields().items():
            if isinstance(value, list) and value and isinstance(value[0], dict):
                sub = node.add(f"{key} ({len(value)})")
                for item in value[:40]:
                    sub.add(_one_line(item))
                if len(value) > 40:
                    sub.add(f"… {len(value) - 40} more")
            else:
                node.add(f"{key}: {_short(value)}")
    calls = root.add("[bold]LLM calls[/]")
    for c in answer.calls:
        calls.add(f"{c.phase}: {c.prompt_tokens}+{c.completion_tokens} tokens, {c.ms:.0f} ms{'' if c.ok else ' FAILED ' + c.error}")
    console.print(root)


def _one_line(item: dict) -> str:
    return ", ".join(f"{k}={_short(v, 120)}" for k, v in item.items())


def _short(value, limit: int = 300) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= limit else text[:limit] + " …"
