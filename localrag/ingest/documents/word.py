"""Word (.docx) with python-docx: heading styles become the heading path, list paragraphs list
items, tables Markdown tables; each block's ordinal is its paragraph number (the locator when no
heading is above it)."""

from __future__ import annotations

import io
import re

from localrag.ingest.documents.builder import MarkdownBuilder
from localrag.ingest.documents.layout import DOCUMENT_ERROR, PARAGRAPH, DocumentUnreadable, Extracted
from localrag.ingest.documents.packages import checked_zip

_HEADING_STYLE = re.compile(r"^heading\s*(\d)", re.I)


def extract_docx(data: bytes) -> Extracted:
    checked_zip(data, ".docx")
    import docx  # python-docx (lxml), loaded only for a Word file
    from docx.opc.exceptions import PackageNotFoundError  # with the Word reader
    from docx.table import Table  # with the Word reader

    try:
        document = docx.Document(io.BytesIO(data))
    except (PackageNotFoundError, KeyError, ValueError) as exc:
        raise DocumentUnreadable(DOCUMENT_ERROR, f"not a readable .docx file: {type(exc).__name__}: {exc}") from exc
    out = MarkdownBuilder(PARAGRAPH, by_heading=True)
    number = 0
    for block in document.iter_inner_content():
        number += 1
        out.unit(number)
        if isinstance(block, Table):
            out.table(_rows(block))
        else:
            _paragraph(out, block)
    return out.build(document.core_properties.title or "")


def _paragraph(out: MarkdownBuilder, paragraph) -> None:
    text = paragraph.text
    style = (paragraph.style.name if paragraph.style is not None else "") or ""
    level = _heading_level(style)
    if level:
        out.heading(level, text)
    elif _is_list_item(paragraph, style):
        out.item(text, _list_depth(paragraph))
    else:
        out.paragraph(text.replace("\n", " "))


def _heading_level(style: str) -> int:
    """Title is the top level; Heading N sits below it (a document with no Title keeps the order)."""
    if style.lower() == "title":
        return 1
    m = _HEADING_STYLE.match(style)
    return min(int(m.group(1)) + 1, 6) if m else 0


def _is_list_item(paragraph, style: str) -> bool:
    ppr = paragraph._p.pPr  # python-docx has no public numbering API: the paragraph's <w:numPr>
    return style.lower().startswith("list") or (ppr is not None and ppr.numPr is not None)


def _list_depth(paragraph) -> int:
    ppr = paragraph._p.pPr
    if ppr is None or ppr.numPr is None or ppr.numPr.ilvl is None:
        return 0
    return int(ppr.numPr.ilvl.val or 0)


def _rows(table) -> list[list[str]]:
    rows = []
    for row in table.rows:
        cells, seen = [], set()
        for cell in row.cells:
            if id(cell._tc) in seen:  # a merged cell is listed once per grid column it covers
                continue
            seen.add(id(cell._tc))
            cells.append(cell.text)
        rows.append(cells)
    return rows
