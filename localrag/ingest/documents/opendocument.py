"""OpenDocument text (.odt) and presentations (.odp) with odfdo: text:h levels become the heading
path, text:list items list items, table:table tables; a presentation has one unit per
draw:page, its title frame the slide's heading."""

from __future__ import annotations

import io

from localrag.ingest.documents.builder import MarkdownBuilder
from localrag.ingest.documents.layout import DOCUMENT_ERROR, PARAGRAPH, SLIDE, DocumentUnreadable, Extracted
from localrag.ingest.documents.packages import checked_zip

SLIDE_TITLE_LEVEL = 2  # below the deck's title
_SKIPPED = {"text:table-of-content", "text:tracked-changes", "office:forms", "text:sequence-decls",
            "text:variable-decls", "presentation:notes", "office:annotation"}


def extract_odt(data: bytes) -> Extracted:
    document = _open(data, ".odt")
    out = MarkdownBuilder(PARAGRAPH, by_heading=True)
    counter = [0]
    for element in document.body.children:
        _text_block(out, element, counter)
    return out.build(_title(document))


def extract_odp(data: bytes) -> Extracted:
    document = _open(data, ".odp")
    out = MarkdownBuilder(SLIDE)
    number = 0
    for page in document.body.children:
        if page.tag != "draw:page":
            continue
        number += 1
        out.unit(number)
        frames = page.get_elements("draw:frame")
        titles = [f for f in frames if f.get_attribute("presentation:class") == "title"]
        for frame in titles:
            out.heading(SLIDE_TITLE_LEVEL, str(frame))
        for frame in frames:
            if frame in titles:
                continue
            for element in frame.children:
                for inner in (element.children if element.tag == "draw:text-box" else [element]):
                    _text_block(out, inner, [number], keep_unit=True)
    return out.build(_title(document))


def _open(data: bytes, what: str):
    checked_zip(data, what)
    from odfdo import Document  # odfdo (lxml), loaded only for an OpenDocument file

    try:
        return Document(io.BytesIO(data))
    except (KeyError, ValueError, TypeError, AttributeError) as exc:
        raise DocumentUnreadable(DOCUMENT_ERROR, f"not a readable {what} file: {type(exc).__name__}: {exc}") from exc


def _title(document) -> str:
    meta = document.meta
    return str(meta.title or "") if meta is not None else ""


def _text_block(out: MarkdownBuilder, element, counter: list[int], keep_unit: bool = False) -> None:
    """One block of the text body; ``counter`` numbers the paragraphs (the unit of a text document)."""
    tag = element.tag
    if tag in _SKIPPED:
        return
    if tag == "text:section":
        for child in element.children:
            _text_block(out, child, counter, keep_unit)
        return
    if not keep_unit:
        counter[0] += 1
        out.unit(counter[0])
    if tag == "text:h":
        out.heading(int(element.get_attribute("text:outline-level") or 1), str(element))
    elif tag == "text:list":
        _list(out, element, 0)
    elif tag == "table:table":
        out.table([["" if v is None else str(v) for v in row] for row in element.get_values()])
    elif tag == "text:p":
        out.paragraph(str(element).replace("\n", " "))


def _list(out: MarkdownBuilder, element, depth: int) -> None:
    for item in element.children:
        if item.tag not in ("text:list-item", "text:list-header"):
            continue
        for child in item.children:
            if child.tag == "text:list":
                _list(out, child, depth + 1)
            else:
                out.item(str(child), depth)
