"""Prompts and schemas of the served backend: the schema-in-prompt fallback and the doctor probe.
Neither reply is cached (see llm/prompts.py for the prompts that are)."""

from __future__ import annotations

import json

from localrag.llm.base import Message

# For servers that accept only {"type": "json_object"} (or no response_format at all):
# the schema goes at the end of the system prompt, which stays fixed per prompt family.
SCHEMA_IN_PROMPT = "Reply with one JSON object only, no other text. It must follow this JSON schema:\n{schema}"


def schema_text(schema: dict) -> str:
    """The schema as compact JSON that cannot open or close a tag in any spelling ("</passage>",
    "</ PASSAGE >", "< passage"): every "<" is written as the JSON escape \\u003c. A schema may
    carry text from a note (the extraction grammar lists the passage's own spans), and it lands
    in the system prompt; a JSON reader still gets exactly the same schema."""
    return json.dumps(schema, separators=(",", ":")).replace("<", "\\u003c")


def with_schema_instruction(messages: list[Message], schema: dict) -> list[Message]:
    note = SCHEMA_IN_PROMPT.format(schema=schema_text(schema))
    out = [dict(m) for m in messages]
    if out and out[0]["role"] == "system":
        out[0]["content"] = f"{out[0]['content']}\n\n{note}"
    else:
        out.insert(0, {"role": "system", "content": note})
    return out  # type: ignore[return-value]


PROBE_SCHEMA: dict = {
    "title": "probe",
    "type": "object",
    "properties": {
        "city": {"type": "string", "maxLength": 40},
        "year": {"type": "integer"},
    },
    "required": ["city", "year"],
    "additionalProperties": False,
}


def probe_messages() -> list[Message]:
    return [
        {"role": "system", "content": "You extract facts as JSON."},
        {"role": "user", "content": "Paris hosted the Summer Olympics in 1900. Give the city and the year."},
    ]


def probe_error(data: object) -> str | None:
    """None when ``data`` has the probe's shape (the facts may be wrong: only the format is checked)."""
    if not isinstance(data, dict):
        return "not a JSON object"
    if not isinstance(data.get("city"), str):
        return "no string 'city'"
    if not isinstance(data.get("year"), int) or isinstance(data.get("year"), bool):
        return "no integer 'year'"
    extra = set(data) - {"city", "year"}
    return f"unexpected keys {sorted(extra)}" if extra else None
