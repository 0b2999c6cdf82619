"""PDF pages to text with PDFium (pypdfium2): the reading order PDFium gives, one line per table
row, and the page of every line. docs/benchmarks.md "Documents" compares it with pypdf and pdfplumber.
A page without a text layer is read by OCR when an engine is given (ingest/documents/ocr.py)."""

from __future__ import annotations

import re
from dataclasses import replace

from localrag.ingest.documents.builder import MarkdownBuilder
from localrag.ingest.documents.layout import (ENCRYPTED, NO_TEXT_LAYER, OCR_FAILED, OCR_NO_TEXT, PAGE, PDF_ERROR,
                                              DocumentUnreadable, Extracted)
from localrag.ingest.documents.ocr import OcrError, PageOcr

_BLANK_LINE = re.compile(r"\n\s*\n")
# pages are drawn at this resolution for OCR: the photocopy-like page of 9-point type is read word
# for word at it (docs/benchmarks.md "Documents", scanned PDFs)
OCR_DPI = 150
OCR_MAX_SIDE_PX = 2000  # RapidOCR shrinks a larger image to this anyway


def extract_pdf(data: bytes, ocr: PageOcr | None = None) -> Extracted:
    import pypdfium2 as pdfium  # the PDFium binary, loaded only for a PDF

    try:
        pdf = pdfium.PdfDocument(data)
    except pdfium.PdfiumError as exc:
        if getattr(exc, "err_code", None) in (pdfium.raw.FPDF_ERR_PASSWORD, pdfium.raw.FPDF_ERR_SECURITY):
            raise DocumentUnreadable(ENCRYPTED, "the PDF is encrypted: it needs a password to open") from exc
        raise DocumentUnreadable(PDF_ERROR, f"the PDF could not be parsed: {exc}") from exc
    try:
        return _pages(pdf, _ScanReading(ocr))
    except pdfium.PdfiumError as exc:
        raise DocumentUnreadable(PDF_ERROR, f"the PDF could not be read: {exc}") from exc
    finally:
        pdf.close()


def _pages(pdf, scans: "_ScanReading") -> Extracted:
    out = MarkdownBuilder(PAGE)
    with_text = 0
    for number in range(1, len(pdf) + 1):
        page = pdf[number - 1]
        try:
            text = page.get_textpage().get_text_range()
            if not text.strip():
                text = scans.read(page, number, len(pdf))
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
        raise scans.unreadable(len(pdf))
    title = str(pdf.get_metadata_dict().get("Title", "") or "")
    return replace(out.build(title), ocr_pages=scans.read_pages, warning=scans.warning(len(pdf)))


class _ScanReading:
    """The pages of one PDF read by OCR: how many, which failed, which were left out past the cap."""

    def __init__(self, ocr: PageOcr | None) -> None:
        self.ocr = ocr
        self.tried = 0
        self.read_pages = 0
        self.failed: list[str] = []  # "p. 3 (why)"
        self.left_out: list[int] = []

    def read(self, page, number: int, pages: int) -> str:
        import pypdfium2.raw as pdfium_c  # loaded with pypdfium2 by extract_pdf

        if self.ocr is None or pdfium_c.FPDFPage_CountObjects(page.raw) == 0:  # no engine, or a blank page
            return ""
        if self.ocr.max_pages and self.tried >= self.ocr.max_pages:
            self.left_out.append(number)
            return ""
        self.tried += 1
        if self.ocr.on_page is not None:
            self.ocr.on_page(number, pages)
        try:
            text = self.ocr.engine.read(_pixels(page))
        except OcrError as exc:
            self.failed.append(f"p. {number} ({exc})")
            return ""
        self.read_pages += bool(text.strip())
        return text

    def unreadable(self, pages: int) -> DocumentUnreadable:
        counted = f"{pages} page{'s' if pages != 1 else ''}"
        if not self.tried:
            return DocumentUnreadable(NO_TEXT_LAYER, f"no text layer (scanned?): {counted}, none with text")
        engine = self.ocr.engine.name if self.ocr else ""
        if self.failed:
            return DocumentUnreadable(OCR_FAILED, f"no text layer (scanned?), and OCR ({engine}) failed: "
                                      + "; ".join(self.failed[:3]))
        return DocumentUnreadable(OCR_NO_TEXT, f"no text layer (scanned?), and OCR ({engine}) found no text "
                                  f"on the {self.tried} page{'s' if self.tried != 1 else ''} it read of {counted}")

    def warning(self, pages: int) -> str:
        if not self.tried or self.ocr is None:
            return ""
        said = [f"{self.read_pages} of {pages} pages read by OCR ({self.ocr.engine.name}): words may be misread"]
        if self.failed:
            said.append("OCR failed on " + "; ".join(self.failed[:3]) + (" ..." if len(self.failed) > 3 else ""))
        if self.left_out:
            said.append(f"{len(self.left_out)} page(s) from p. {self.left_out[0]} not read: index.ocr_max_pages "
                        f"is {self.ocr.max_pages}")
        return "; ".join(said)


def _pixels(page):
    """The page drawn in grey at OCR_DPI (less for a page so large it would pass OCR_MAX_SIDE_PX)."""
    width, height = page.get_size()
    scale = min(OCR_DPI / 72, OCR_MAX_SIDE_PX / max(width, height, 1))
    bitmap = page.render(scale=scale, grayscale=True)
    pixels = bitmap.to_numpy()
    return pixels.reshape(pixels.shape[:2]).copy()  # a copy: the bitmap's buffer is freed with it
