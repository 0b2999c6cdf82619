"""What an extractor hands back: the document as Markdown, and where in the document each line is.

A person finds a passage of a PDF by its page, of a deck by its slide, of a Word file or an
e-book by its heading. ``Layout.units[i]`` is the page, slide, chapter or paragraph (1-based)
that text line ``i + 1`` came from; the passage's locator is built from it (ingest/places.py),
written by ``format_units`` and read back by ``parse_units``: the store keeps only that string.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from localrag.errors import LocalragError

PAGE = "page"
SLIDE = "slide"
CHAPTER = "chapter"
PARAGRAPH = "paragraph"

# units a passage never spans: each page, slide or chapter is chunked on its own
SEPARATE_UNITS = frozenset({PAGE, SLIDE, CHAPTER})
_LABELS = {PAGE: "p. ", SLIDE: "slide ", CHAPTER: "ch. ", PARAGRAPH: "¶ "}
_UNIT_LOCATOR = re.compile(rf"^({'|'.join(re.escape(label) for label in _LABELS.values())})(\d+)(?:–(\d+))?$", re.ASCII)

# Reasons recorded for documents that are skipped (shown by `localrag status`)
PDF_ERROR = "pdf-error"
DOCUMENT_ERROR = "document-error"  # a Word / PowerPoint / OpenDocument / EPUB / RTF file that cannot be read
ENCRYPTED = "encrypted"
NO_TEXT_LAYER = "no-text-layer"  # and no OCR engine (or index.ocr = "off"): OCR may read it later
OCR_NO_TEXT = "no-text-by-ocr"  # no text layer, and OCR found no text either
OCR_FAILED = "ocr-failed"  # no text layer, and OCR failed on every page it tried
UNPACKS_TOO_LARGE = "unpacks-too-large"


class DocumentUnreadable(LocalragError):
    """A document that cannot be indexed, with a reason key and a sentence for the person."""

    internal = True

    def __init__(self, reason: str, detail: str):
        super().__init__(f"{reason}: {detail}")
        self.reason = reason
        self.detail = detail


@dataclass(frozen=True)
class Layout:
    unit: str  # PAGE | SLIDE | CHAPTER | PARAGRAPH
    units: tuple[int, ...]  # units[i]: the unit text line i + 1 came from
    by_heading: bool = False  # the locator names the heading a passage starts under, when it has one

    @property
    def separate(self) -> bool:
        return self.unit in SEPARATE_UNITS

    def unit_at(self, line: int) -> int:
        """The unit of 1-based text line ``line`` (the last one past the end)."""
        if not self.units:
            return 1
        return self.units[min(max(line, 1), len(self.units)) - 1]

    def label(self, number: int) -> str:
        return format_units(Units(self.unit, number, number))


@dataclass(frozen=True)
class Units:
    """Units ``first``..``last`` of one kind: what a locator such as ``p. 12`` or ``¶ 7–9`` names."""

    unit: str  # PAGE | SLIDE | CHAPTER | PARAGRAPH
    first: int
    last: int


def format_units(units: Units) -> str:
    """``p. 12``, ``slide 3``, ``ch. 2``, ``¶ 7``; ``p. 12–13`` for more than one: a passage's locator."""
    label = f"{_LABELS[units.unit]}{units.first}"
    return label if units.last == units.first else f"{label}–{units.last}"


def parse_units(locator: str) -> Units | None:
    """The units a locator ``format_units`` wrote names; None for any other (a heading's ``§ Results``, "")."""
    m = _UNIT_LOCATOR.match(locator)
    if m is None:
        return None
    unit = next(kind for kind, label in _LABELS.items() if label == m.group(1))
    first = int(m.group(2))
    return Units(unit, first, int(m.group(3)) if m.group(3) else first)


@dataclass(frozen=True)
class Extracted:
    text: str  # Markdown: headings, paragraphs, list items, tables
    title: str  # the document's own title ("" when it has none)
    layout: Layout
    ocr_pages: int = 0  # pages whose text is OCR's (a scanned PDF)
    warning: str = ""  # what a person should know of a document that is indexed (pages read by OCR, or not read)
