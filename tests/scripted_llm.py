"""Scripted LLMs for control-flow tests: each call is answered by a function of the messages."""

from __future__ import annotations

import json
from typing import Callable, Mapping

from localrag.llm.base import LLMError, Message, Reply, Usage


class Cut(str):
    """A scripted reply that stopped at max_tokens (finish_reason "length")."""


class ScriptedLLM:
    """``respond(messages, schema, phase)`` gives each reply: text, an object (sent as JSON), ``Cut(text)``
    for a reply cut at max_tokens, or an exception, which the call raises. Records every call's phase and
    messages, its choices constraint and its max_tokens."""

    model_id = "scripted"

    def __init__(self, respond: Callable[[list[Message], dict | None, str], object]):
        self.respond = respond
        self.calls: list[tuple[str, list[Message]]] = []
        self.choices: list[list[str] | None] = []  # the constraint of each call (None = free text)
        self.budgets: list[int] = []  # the max_tokens of each call

    def chat(self, messages, *, schema=None, max_tokens=512, phase="answer", on_token=None, choices=None) -> Reply:
        self.calls.append((phase, list(messages)))
        self.choices.append(list(choices) if choices is not None else None)
        self.budgets.append(max_tokens)
        out = self.respond(list(messages), schema, phase)
        if isinstance(out, BaseException):
            raise out
        text = out if isinstance(out, str) else json.dumps(out)
        if on_token and text:
            on_token(text)
        prompt = sum(len(m["content"].split()) for m in messages)
        return Reply(text=str(text), usage=Usage(prompt, len(text.split())), ms=1.0, model=self.model_id,
                     finish_reason="length" if isinstance(out, Cut) else "stop")


def answers_by_question(script: Mapping[str, str]) -> ScriptedLLM:
    """Answers from ``script`` (question text -> answer); a constrained call gets the scripted answer's core
    when it is one of the choices, else "not in your notes"; a question not in the script is an LLMError."""

    def respond(messages: list[Message], schema: dict | None, phase: str) -> object:
        user = messages[-1]["content"]
        for question, text in script.items():
            if f"Question: {question}" in user:
                choices = llm.choices[-1]
                if choices is not None:
                    core = text.removeprefix("Answer: ").split(" [")[0]
                    return core if core in choices else "not in your notes"
                return text
        return LLMError("the scripted model has no answer for this question")

    llm = ScriptedLLM(respond)
    return llm


def cut_below(needs: int, reply: object, cut: str) -> ScriptedLLM:
    """Replies ``reply``, or ``Cut(cut)`` when the call's max_tokens is under ``needs``."""
    llm = ScriptedLLM(lambda messages, schema, phase: reply if llm.budgets[-1] >= needs else Cut(cut))
    return llm


def line_id(messages: list[Message], needle: str) -> int:
    """The id of the rendered path line containing ``needle``."""
    for line in messages[-1]["content"].splitlines():
        head, _, rest = line.partition(": ")
        if head.isdigit() and needle in rest:
            return int(head)
    raise AssertionError(f"no path line contains {needle!r}:\n{messages[-1]['content']}")
