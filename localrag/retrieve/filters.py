"""Passage filters written as ``tag:project``, ``path:work/`` or ``-path:archive/``.

The same words work after ``--where`` (``localrag ask``), in the TUI's question line
(``/tag:project /path:work/ who leads it?``) and in the MCP ``search`` tool. Several tags
must all hold; several paths are alternatives; an excluded path never shows.
"""

from __future__ import annotations

import re
from typing import Iterable

from localrag.errors import LocalragError
from localrag.ingest.frontmatter import clean_tag
from localrag.store.vault import PassageFilter

__all__ = ["FilterError", "PassageFilter", "parse_where", "split_inline_filters"]

KEYS = ("tag", "path", "-path")
_INLINE = re.compile(r"(?:^|\s)/(-?(?:tag|path)):(\S+)")


class FilterError(LocalragError, ValueError):
    """A filter that cannot be read (unknown key or empty value)."""

    internal = True


def parse_where(terms: Iterable[str]) -> PassageFilter | None:
    """``["tag:project", "path:work/"]`` -> a PassageFilter; None when there is nothing to filter."""
    tags: list[str] = []
    paths: list[str] = []
    excluded: list[str] = []
    for term in terms:
        key, sep, value = term.strip().partition(":")
        key, value = key.strip().lower(), value.strip()
        if not sep or key not in KEYS:
            raise FilterError(f"cannot read the filter {term!r}: write tag:NAME, path:FOLDER/ or -path:FOLDER/")
        if not value:
            raise FilterError(f"the filter {term!r} has no value")
        if key == "tag":
            tag = clean_tag(value)
            if not tag:
                raise FilterError(f"the filter {term!r} names no tag")
            tags.append(tag)
        else:
            path = value.lstrip("./") if value not in (".", "./") else ""
            (paths if key == "path" else excluded).append(path)
    f = PassageFilter(tuple(dict.fromkeys(tags)), tuple(dict.fromkeys(paths)), tuple(dict.fromkeys(excluded)))
    return None if f.empty else f


def split_inline_filters(text: str) -> tuple[str, list[str]]:
    """A question line with ``/tag:x`` and ``/path:y`` words -> (the question, the filter terms)."""
    terms = [f"{m.group(1)}:{m.group(2)}" for m in _INLINE.finditer(text)]
    return " ".join(_INLINE.sub(" ", text).split()), terms
