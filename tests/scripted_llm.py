"""A scripted LLM for control-flow tests: each call is answered by a function of the messages."""

from __future__ import annotations

import json
from typing import Callable

from localrag.llm.base import Message, Reply, Usage


class ScriptedLLM:
    model_id = "scripted"

    def __init__(self, respond: Callable[[list[Message], dict | None, str], object]):
        self.respond = respond
        self.calls: list[tuple[str, list[Message]]] = []
        self.choices: list[list[str] | None] = []  # the constraint of each call (None = free text)

    def chat(self, messages, *, schema=None, max_tokens=512, phase="answer", on_token=None, choices=None) -> Reply:
        self.calls.append((phase, list(messages)))
        self.choices.append(list(choices) if choices is not None else None)
        out = self.respond(list(messages), schema, phase)
        text = out if isinstance(out, str) else json.dumps(out)
        if on_token:
            on_token(text)
        prompt = sum(len(m["content"].split()) for m in messages)
        return Reply(text=text, usage=Usage(prompt, len(text.split())), ms=1.0, model=self.model_id, finish_reason="stop")


def line_id(messages: list[Message], needle: str) -> int:
    """The id of the rendered path line containing ``needle``."""
    for line in messages[-1]["content"].splitlines():
        head, _, rest = line.partition(": ")
        if head.isdigit() and needle in rest:
            return int(head)
    raise AssertionError(f"no path line contains {needle!r}:\n{messages[-1]['content']}")
