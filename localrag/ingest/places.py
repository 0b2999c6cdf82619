"""Passages of a document (PDF, Word, deck, e-book) and the locator a person finds each one by.

A document's text is Markdown written by its extractor (ingest/documents/), chunked as Markdown;
a page, slide or chapter is chunked on its own, so a passage never spans two and its locator is
exact: ``p. 12``, ``slide 3``. Word, OpenDocument and EPUB passages are found by the heading they
start under (``§ Results``), or by their paragraph or chapter number when no heading is above them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

from localrag.ingest.chunker import Chunk, chunk_text
from localrag.ingest.documents.layout import Layout, Units, format_units, parse_units
from localrag.records import Passage

HEADING_SEPARATOR = " > "
_ATX_HEADING = re.compile(r"^#{1,6}\s+(.*?)\s*$")


def chunk_document(text: str, layout: Layout, title: str, min_tokens: int, max_tokens: int) -> list[Chunk]:
    if not layout.separate:
        return chunk_text(text, "markdown", title, min_tokens, max_tokens)
    lines = text.split("\n")
    chunks: list[Chunk] = []
    for first, last in unit_runs(layout, len(lines)):
        part = "\n".join(lines[first - 1:last])
        if not part.strip():
            continue
        offset = first - 1
        for chunk in chunk_text(part, "markdown", title, min_tokens, max_tokens):
            chunks.append(replace(chunk, start_line=chunk.start_line + offset, end_line=chunk.end_line + offset))
    return chunks


def unit_runs(layout: Layout, line_count: int) -> list[tuple[int, int]]:
    """(first, last) 1-based text lines of each run of lines from one unit, in order."""
    runs: list[tuple[int, int]] = []
    start = 1
    for line in range(2, line_count + 1):
        if layout.unit_at(line) != layout.unit_at(start):
            runs.append((start, line - 1))
            start = line
    if line_count:
        runs.append((start, line_count))
    return runs


def locator(chunk: Chunk, layout: Layout) -> str:
    """``p. 12`` / ``slide 3`` / ``§ Heading`` / ``¶ 7–9`` / ``ch. 2`` for the passage ``chunk``."""
    if layout.by_heading:
        heading = _heading_at_start(chunk)
        if heading:
            return f"§ {heading}"
    if layout.separate:
        return layout.label(layout.unit_at(chunk.start_line))
    return range_locator(layout, chunk.start_line, chunk.end_line)


def _heading_at_start(chunk: Chunk) -> str:
    """The heading a person looks for: the innermost one the passage opens with (small sections
    merge, so a passage may open with its document's title and a section heading), else the
    innermost of its heading path. The first part of that path is the title, not a heading."""
    opening = ""
    for line in chunk.text.split("\n"):
        if not line.strip():
            continue
        m = _ATX_HEADING.match(line)
        if m is None:
            break
        opening = m.group(1)
    parts = [p for p in chunk.heading.split(HEADING_SEPARATOR) if p]
    title = parts[0] if parts else ""
    if opening and opening != title:
        return opening
    return parts[-1] if len(parts) > 1 else ""


_PLACE = re.compile(r"^\s*(?:p\.|pp\.|page|slide|ch\.|chapter|¶)\s*(\d+)\s*$", re.I)


def place_lines(layout: Layout, place: str) -> tuple[int, int] | None:
    """The text lines of the unit ``place`` names ("p. 12", "slide 3", "ch. 2", "¶ 7"); None when
    ``place`` names no unit (a line range, say) or a unit the document does not have."""
    m = _PLACE.match(place)
    if m is None:
        return None
    number = int(m.group(1))
    lines = [i + 1 for i, unit in enumerate(layout.units) if unit == number]
    return (lines[0], lines[-1]) if lines else None


def range_locator(layout: Layout, start: int, end: int) -> str:
    """``p. 12`` or ``p. 12–13``: the units text lines ``start``..``end`` come from."""
    return format_units(Units(layout.unit, layout.unit_at(start), layout.unit_at(end)))


@dataclass(frozen=True)
class IndexedText:
    """A document's text as its passages hold it, line for line: what its citations count, without
    reading the file again (a scanned PDF's pages would need OCR again, seconds each)."""

    lines: list[str]
    passages: list[Passage]

    @classmethod
    def of(cls, passages: list[Passage]) -> "IndexedText":
        lines = [""] * max((p.end_line for p in passages), default=0)
        for p in passages:
            for offset, line in enumerate(p.text.split("\n")[: p.end_line - p.start_line + 1]):
                lines[p.start_line - 1 + offset] = line
        return cls(lines, sorted(passages, key=lambda p: p.start_line))

    def place(self, place: str) -> tuple[int, int] | None:
        """The lines of the page or slide ``place`` names ("p. 12", "page 12"), None for any other text."""
        m = _PLACE.match(place)
        if m is None:
            return None
        number = int(m.group(1))
        found = [p for p in self.passages if (units := parse_units(p.locator)) and units.first <= number <= units.last]
        return (found[0].start_line, max(p.end_line for p in found)) if found else None

    def locator(self, start: int, end: int) -> str:
        """``p. 12`` or ``p. 12–13``: the units of the passages lines ``start``..``end`` fall in."""
        inside = [p for p in self.passages if p.end_line >= start and p.start_line <= end and p.locator]
        if not inside:
            return f"{start}-{end}"
        first, last = inside[0].locator, inside[-1].locator
        if first == last:
            return first
        opening, closing = parse_units(first), parse_units(last)
        if opening is None or closing is None or opening.unit != closing.unit:
            return f"{first}–{last}"  # headings, not units: both named
        return format_units(Units(opening.unit, opening.first, closing.last))
