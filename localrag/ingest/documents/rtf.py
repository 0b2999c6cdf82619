"""RTF with striprtf: one paragraph per line of its text (the locator is the paragraph number, as
RTF keeps no heading structure striprtf reads); rows of cells (``\\cell ... \\row``, which
striprtf writes as ``a|b|``) become Markdown tables."""

from __future__ import annotations

import re

from localrag.ingest.documents.builder import MarkdownBuilder
from localrag.ingest.documents.layout import DOCUMENT_ERROR, PARAGRAPH, DocumentUnreadable, Extracted

_TITLE = re.compile(rb"\{\\info[^{}]*?\{\\title\s+([^{}]*)\}")


def extract_rtf(data: bytes) -> Extracted:
    if not data.lstrip().startswith(b"{\\rtf"):
        raise DocumentUnreadable(DOCUMENT_ERROR, "not an RTF file (it does not start with {\\rtf)")
    from striprtf.striprtf import rtf_to_text  # striprtf, loaded only for an RTF file

    # RTF is 7-bit text; 8-bit bytes are in the document's code page, which striprtf decodes from \'xx
    source = data.decode("latin-1")
    try:
        text = rtf_to_text(source, errors="replace")
    except (ValueError, IndexError, LookupError) as exc:
        raise DocumentUnreadable(DOCUMENT_ERROR, f"the RTF could not be read: {type(exc).__name__}: {exc}") from exc
    out = MarkdownBuilder(PARAGRAPH)
    number = 0
    rows: list[list[str]] = []
    for line in text.splitlines():
        if line.rstrip().endswith("|"):
            if not rows:
                number += 1
                out.unit(number)
            rows.append(line.rstrip().rstrip("|").split("|"))
            continue
        if rows:
            out.table(rows)
            rows = []
        if line.strip():
            number += 1
            out.unit(number)
            out.paragraph(line)
    if rows:
        out.table(rows)
    title = _TITLE.search(data)
    return out.build(title.group(1).decode("latin-1") if title else "")
