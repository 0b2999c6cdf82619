"""YAML front matter of a note: title, aliases, tags and scalar properties (PyYAML).

Front matter is never passage text. A note whose YAML does not parse still indexes (its
body, its file name as title); the problem is kept as a warning that `localrag status` shows.
"""

from __future__ import annotations

import datetime as _dt
import re
from dataclasses import dataclass

import yaml

from localrag.records import NoteMeta

# the front matter the markdown-it plugin recognises: --- on the first line, up to the next ---
_FENCE = re.compile(r"\A---[ \t]*\n(.*?)(?:^|\n)---[ \t]*(?:\n|\Z)", re.S)
_TITLE_KEYS = ("title",)
_ALIAS_KEYS = ("aliases", "alias")
_TAG_KEYS = ("tags", "tag")


@dataclass(frozen=True)
class FrontMatterText:
    yaml: str
    lines: int  # lines from the opening fence through the closing one


def find_front_matter(text: str) -> FrontMatterText | None:
    m = _FENCE.match(text)
    if m is None:
        return None
    return FrontMatterText(m.group(1), m.group(0).rstrip("\n").count("\n") + 1)


def _scalar(value: object) -> str | None:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float, str)):
        text = str(value).strip()
        return text or None
    if isinstance(value, (_dt.date, _dt.datetime)):
        return value.isoformat()
    return None


def _strings(value: object) -> list[str]:
    """A YAML list or a comma/space separated string ("tags: a, b" and "tags: a b" are both common)."""
    if value is None:
        return []
    if isinstance(value, str):
        return [v for v in re.split(r"[,\s]+", value) if v]
    if isinstance(value, (list, tuple)):
        return [s for v in value if (s := _scalar(v))]
    s = _scalar(value)
    return [s] if s else []


def clean_tag(tag: str) -> str:
    return tag.strip().lstrip("#").strip("/").lower()


def parse_front_matter(text: str, skip_properties: frozenset[str] = frozenset()) -> NoteMeta:
    found = find_front_matter(text)
    if found is None:
        return NoteMeta()
    try:
        data = yaml.safe_load(found.yaml) if found.yaml.strip() else {}
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 2}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or type(exc).__name__
        return NoteMeta(warning=f"front matter is not valid YAML{where}: {problem}", lines=found.lines)
    if data is None:
        data = {}
    if not isinstance(data, dict):
        return NoteMeta(warning=f"front matter is a YAML {type(data).__name__}, not a mapping of properties",
                        lines=found.lines)
    title, aliases, tags, props = "", [], [], []
    for key, value in data.items():
        name = str(key).strip()
        lower = name.lower()
        if lower in _TITLE_KEYS:
            title = " ".join((_scalar(value) or "").split())
        elif lower in _ALIAS_KEYS:
            aliases += [" ".join(a.split()) for a in (value if isinstance(value, list) else [value]) if _scalar(a)]
        elif lower in _TAG_KEYS:
            tags += [t for t in (clean_tag(v) for v in _strings(value)) if t]
        elif lower not in skip_properties:
            scalar = _scalar(value)
            if scalar is not None:
                props.append((name, " ".join(scalar.split())))
    return NoteMeta(title, tuple(dict.fromkeys(aliases)), tuple(dict.fromkeys(tags)), tuple(props), "",
                    found.lines)
