"""Which extractor reads which file suffix, and the kind a document is recorded as."""

from __future__ import annotations

from typing import Callable

from localrag.ingest.documents.epub import extract_epub
from localrag.ingest.documents.layout import Extracted
from localrag.ingest.documents.opendocument import extract_odp, extract_odt
from localrag.ingest.documents.pdf import extract_pdf
from localrag.ingest.documents.rtf import extract_rtf
from localrag.ingest.documents.slides import extract_pptx
from localrag.ingest.documents.word import extract_docx

EXTRACTORS: dict[str, tuple[str, Callable[[bytes], Extracted]]] = {
    ".pdf": ("pdf", extract_pdf),
    ".docx": ("docx", extract_docx),
    ".pptx": ("pptx", extract_pptx),
    ".odt": ("odt", extract_odt),
    ".odp": ("odp", extract_odp),
    ".epub": ("epub", extract_epub),
    ".rtf": ("rtf", extract_rtf),
}
DOCUMENT_SUFFIXES = tuple(EXTRACTORS)
DOCUMENT_KINDS = frozenset(kind for kind, _ in EXTRACTORS.values())
