"""PowerPoint (.pptx) with python-pptx: one unit per slide, its title the heading, shapes in
reading order (top to bottom, left to right), body placeholders as list items, tables as
tables, speaker notes under a "Notes" heading."""

from __future__ import annotations

import io

from localrag.ingest.documents.builder import MarkdownBuilder
from localrag.ingest.documents.layout import DOCUMENT_ERROR, SLIDE, DocumentUnreadable, Extracted
from localrag.ingest.documents.packages import checked_zip

SLIDE_TITLE_LEVEL = 2  # below the deck's title
NOTES_HEADING = "Notes"


def extract_pptx(data: bytes) -> Extracted:
    checked_zip(data, ".pptx")
    from pptx import Presentation  # python-pptx (lxml), loaded only for a deck
    from pptx.exc import PackageNotFoundError  # with the deck reader

    try:
        deck = Presentation(io.BytesIO(data))
    except (PackageNotFoundError, KeyError, ValueError) as exc:
        raise DocumentUnreadable(DOCUMENT_ERROR, f"not a readable .pptx file: {type(exc).__name__}: {exc}") from exc
    out = MarkdownBuilder(SLIDE)
    for number, slide in enumerate(deck.slides, start=1):
        out.unit(number)
        title_shape = slide.shapes.title
        if title_shape is not None and title_shape.has_text_frame:
            out.heading(SLIDE_TITLE_LEVEL, title_shape.text_frame.text)
        for shape in _reading_order(slide.shapes):
            if title_shape is not None and shape.shape_id == title_shape.shape_id:
                continue
            _shape(out, shape)
        if slide.has_notes_slide and slide.notes_slide.notes_text_frame is not None:
            notes = slide.notes_slide.notes_text_frame.text
            if notes.strip():
                out.heading(SLIDE_TITLE_LEVEL + 1, NOTES_HEADING)
                out.paragraph(notes)
    return out.build(deck.core_properties.title or "")


def _reading_order(shapes) -> list:
    return sorted(shapes, key=lambda s: ((s.top or 0), (s.left or 0)))


def _shape(out: MarkdownBuilder, shape) -> None:
    if hasattr(shape, "shapes"):  # a group: its shapes in their own reading order
        for inner in _reading_order(shape.shapes):
            _shape(out, inner)
    elif getattr(shape, "has_table", False) and shape.has_table:
        out.table([[cell.text for cell in row.cells] for row in shape.table.rows])
    elif shape.has_text_frame:
        as_items = shape.is_placeholder and len(shape.text_frame.paragraphs) > 1
        for paragraph in shape.text_frame.paragraphs:
            text = "".join(run.text for run in paragraph.runs) or paragraph.text
            if as_items:
                out.item(text, paragraph.level)
            else:
                out.paragraph(text)
