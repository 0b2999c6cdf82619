"""Schema-constrained calls that never crash on a bad reply: parse, validate, one repair retry."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any, Callable

from localrag.llm.base import LLM, Message, Reply, Usage

Validator = Callable[[Any], str | None]  # returns an error message, or None if the data is fine


@dataclass
class JSONResult:
    data: Any  # None when every attempt failed
    replies: list[Reply] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.data is not None

    @property
    def usage(self) -> Usage:
        u = Usage()
        for r in self.replies:
            u.prompt_tokens += r.usage.prompt_tokens
            u.completion_tokens += r.usage.completion_tokens
        return u


_FENCE = re.compile(r"```(?:json)?\s*(.*?)```", re.S)


def parse_json(text: str) -> Any:
    """JSON from a reply, tolerating a code fence or text around one object."""
    text = text.strip()
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        pass
    m = _FENCE.search(text)
    if m:
        try:
            return json.loads(m.group(1))
        except json.JSONDecodeError:
            pass
    start, end = text.find("{"), text.rfind("}")
    if 0 <= start < end:
        return json.loads(text[start:end + 1])
    raise json.JSONDecodeError("no JSON object in the reply", text, 0)


def call_json(llm: LLM, messages: list[Message], schema: dict, *, phase: str, max_tokens: int,
              validate: Validator | None = None, retries: int = 1) -> JSONResult:
    result = JSONResult(data=None)
    convo = list(messages)
    for attempt in range(retries + 1):
        reply = llm.chat(convo, schema=schema, max_tokens=max_tokens, phase=phase)
        result.replies.append(reply)
        error = None
        try:
            data = parse_json(reply.text)
        except (json.JSONDecodeError, ValueError) as exc:
            error = f"not JSON ({exc.__class__.__name__}: {str(exc)[:80]})"
            if reply.finish_reason == "length":
                error = "reply cut at max_tokens before the JSON ended"
            data = None
        if error is None:
            if not isinstance(data, dict):
                error = "reply is not a JSON object"
            elif validate is not None:
                error = validate(data)
        if error is None:
            result.data = data
            return result
        result.errors.append(error)
        if attempt < retries:
            convo = list(messages) + [
                {"role": "assistant", "content": reply.text[:2000]},
                {"role": "user", "content": f"That reply was invalid: {error}. Reply again with only the JSON object, following the schema."},
            ]
    return result
