"""PDF pages to text with PDFium (pypdfium2): the reading order PDFium gives, one line per table
row, and the page of every line. docs/benchmarks.md "Documents" compares it with pypdf and pdfplumber."""

from __future__ import annotations

import re

from localrag.ingest.documents.builder import MarkdownBuilder
from localrag.ingest.documents.layout import ENCRYPTED, NO_TEXT_LAYER, PAGE, PDF_ERROR, DocumentUnreadable, Extracted

_BLANK_LINE = re.compile(r"\n\s*\n")


def extract_pdf(data: bytes) -> Extracted:
    import pypdfium2 as pdfium  # the PDFium binary, loaded only for a PDF

    try:
        pdf = pdfium.PdfDocument(data)
    except pdfium.PdfiumError as exc:
        if getattr(exc, "err_code", None) in (pdfium.raw.FPDF_ERR_PASSWORD, pdfium.raw.FPDF_ERR_SECURITY):
            raise DocumentUnreadable(ENCRYPTED, "the PDF is encrypted: it needs a password to open") from exc
        raise DocumentUnreadable(PDF_ERROR, f"the PDF could not be parsed: {exc}") from exc
    try:
        return _pages(pdf)
    except pdfium.PdfiumError as exc:
        raise DocumentUnreadable(PDF_ERROR, f"the PDF could not be read: {exc}") from exc
    finally:
        pdf.close()


def _pages(pdf) -> Extracted:
    out = MarkdownBuilder(PAGE)
    with_text = 0
    for number in range(1, len(pdf) + 1):
        page = pdf[number - 1]
        try:
            text = page.get_textpage().get_text_range()
        finally:
            page.close()
        # PDFium marks a word hyphenated at a line end with U+FFFE: the word is joined again
        text = text.replace("\r\n", "\n").replace("\r", "\n").replace("\ufffe\n", "")
        if text.strip():
            with_text += 1
        out.unit(number)
        for paragraph in _BLANK_LINE.split(text):
            out.paragraph(paragraph)
    if not with_text:
        pages = f"{len(pdf)} page{'s' if len(pdf) != 1 else ''}"
        raise DocumentUnreadable(NO_TEXT_LAYER, f"no text layer (scanned?): {pages}, none with text")
    title = str(pdf.get_metadata_dict().get("Title", "") or "")
    return out.build(title)
