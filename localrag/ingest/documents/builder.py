"""Markdown written block by block, each line tagged with the unit (page, slide, ...) it came from.

Extractors see a document's structure (a heading style, a list paragraph, a table); writing it
as Markdown lets the one Markdown chunker keep headings as the passage's heading path and lists
and tables as whole blocks, and lets the evidence step read a table row with its header.
"""

from __future__ import annotations

import re
from typing import Sequence

from localrag.ingest.documents.layout import Extracted, Layout

_SPACE = re.compile(r"[ \t\r\n\f\v\u00a0\u2028\u2029]+")
# what would make a line of prose mean Markdown structure: #, >, -, +, *, 1. 1), |, ``` , = or - underlines
_BLOCK_START = re.compile(r"^(#{1,6}(\s|$)|>|[-+*](\s|$)|\d{1,9}[.)](\s|$)|\||```|~~~|=+\s*$|-+\s*$)")
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f\ufffe\uffff]")


def clean(text: str) -> str:
    """One line of text: control characters dropped, runs of white space made one space."""
    return _SPACE.sub(" ", _CONTROL.sub("", text)).strip()


def _prose(text: str) -> str:
    return "\\" + text if _BLOCK_START.match(text) else text


class MarkdownBuilder:
    def __init__(self, unit: str, by_heading: bool = False) -> None:
        self._unit_kind = unit
        self._by_heading = by_heading
        self._lines: list[str] = []
        self._units: list[int] = []
        self._unit = 1
        self._last = ""  # kind of the last block: consecutive list items stay one list

    def unit(self, number: int) -> None:
        """The lines written from now on come from unit ``number`` (a page, slide, chapter, paragraph)."""
        self._unit = number

    @property
    def current_unit(self) -> int:
        return self._unit

    def _block(self, kind: str, lines: Sequence[str]) -> None:
        if self._lines and not (kind == "item" and self._last == "item"):
            self._add("")
        for line in lines:
            self._add(line)
        self._last = kind

    def _add(self, line: str) -> None:
        self._lines.append(line)
        self._units.append(self._unit)

    def heading(self, level: int, text: str) -> None:
        text = clean(text)
        if text:
            self._block("heading", [f"{'#' * min(max(level, 1), 6)} {text}"])

    def paragraph(self, text: str) -> None:
        """A paragraph; its line breaks are kept (a PDF page's lines), each line cleaned."""
        lines = [clean(line) for line in text.splitlines()]
        lines = [_prose(line) for line in lines if line]
        if lines:
            self._block("paragraph", lines)

    def item(self, text: str, depth: int = 0) -> None:
        text = clean(text)
        if text:
            self._block("item", [f"{'  ' * min(depth, 8)}- {text}"])

    def table(self, rows: Sequence[Sequence[str]]) -> None:
        """A Markdown table, its first row the header; empty rows dropped, short rows padded."""
        cells = [[clean(c).replace("|", "\\|") for c in row] for row in rows]
        cells = [row for row in cells if any(row)]
        if not cells:
            return
        width = max(len(row) for row in cells)
        if width == 1:  # a one-column "table" is a layout box: its cells are paragraphs
            for row in cells:
                self.paragraph(row[0])
            return
        padded = [row + [""] * (width - len(row)) for row in cells]
        lines = ["| " + " | ".join(padded[0]) + " |", "|" + " --- |" * width]
        lines += ["| " + " | ".join(row) + " |" for row in padded[1:]]
        self._block("table", lines)

    def build(self, title: str) -> Extracted:
        return Extracted("\n".join(self._lines), clean(title), Layout(self._unit_kind, tuple(self._units), self._by_heading))
