"""File -> text with a line map. Anything that cannot be read raises SkipFile with a reason."""

from __future__ import annotations

import codecs
import errno
import html.parser
import os
import re
import stat
from dataclasses import dataclass, replace
from pathlib import Path
from typing import BinaryIO

from localrag.errors import LocalragError
from localrag.ingest.documents.formats import EXTRACTORS
from localrag.ingest.documents.layout import DocumentUnreadable, Layout
from localrag.ingest.documents.ocr import PageOcr
from localrag.ingest.documents.pdf import extract_pdf
from localrag.ingest.frontmatter import parse_front_matter
from localrag.records import NoteMeta

TEXT_KINDS = {".md": "markdown", ".markdown": "markdown", ".txt": "text", ".rst": "rst", ".org": "org",
              ".html": "html", ".htm": "html"}
# documents (PDF, Word, PowerPoint, OpenDocument, EPUB, RTF): ingest/documents/
LOADABLE_SUFFIXES = frozenset(TEXT_KINDS) | frozenset(EXTRACTORS)

# Reasons recorded for skipped files (shown by `localrag status`).
TOO_LARGE = "too-large"
EMPTY = "empty"
BINARY = "binary"
BAD_ENCODING = "invalid-utf16"  # a BOM-marked UTF-16 file that does not decode (bad UTF-8 is shown as U+FFFD)
UNREADABLE = "unreadable"
UNSUPPORTED = "unsupported"
VANISHED = "vanished"
NOT_REGULAR = "not-a-regular-file"
FAILED = "error"  # an unexpected failure while indexing the file (the rest of the folder goes on)


class SkipFile(LocalragError):
    internal = True

    def __init__(self, reason: str, detail: str):
        super().__init__(f"{reason}: {detail}")
        self.reason = reason
        self.detail = detail


@dataclass(frozen=True)
class LoadedText:
    text: str
    kind: str
    title: str
    # line_map[i] = 1-based source line of text line i; None = identity
    line_map: tuple[int, ...] | None = None
    meta: NoteMeta | None = None  # a Markdown note's front matter (title, aliases, tags, properties)
    warning: str = ""  # a problem the note is indexed despite (bytes that were not UTF-8)
    layout: Layout | None = None  # a document's pages / slides / paragraphs per text line (Markdown text)
    ocr_pages: int = 0  # a scanned PDF's pages whose text OCR read

    def source_line(self, text_line: int) -> int:
        """1-based source line of 1-based text line."""
        if self.line_map is None or not self.line_map:
            return text_line
        return self.line_map[min(text_line, len(self.line_map)) - 1]


def open_regular(path: Path, follow_symlinks: bool = True) -> BinaryIO:
    """Open for reading without blocking on a FIFO (and, if asked, without following a symlink)."""
    extra = getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0)
    if not follow_symlinks:
        extra |= getattr(os, "O_NOFOLLOW", 0)
    return open(path, "rb", opener=lambda name, flags: os.open(name, flags | extra))


def read_bytes(path: Path, max_bytes: int, *, follow_symlinks: bool = True) -> bytes:
    """At most ``max_bytes`` of a regular file; the type and size are checked again on the open file.

    A file swapped for a FIFO, a device or a folder after the folder was listed is refused, not
    waited on; with ``follow_symlinks=False`` one swapped for a symlink is refused too.
    """
    try:
        size = path.stat().st_size
    except FileNotFoundError as exc:
        raise SkipFile(VANISHED, "the file disappeared before it could be read") from exc
    except OSError as exc:
        raise SkipFile(UNREADABLE, f"cannot stat: {exc.strerror or exc}") from exc
    if size > max_bytes:
        raise SkipFile(TOO_LARGE, f"{size:,} bytes is over the limit of {max_bytes:,} (index.max_file_bytes)")
    try:
        with open_regular(path, follow_symlinks) as fh:
            st = os.fstat(fh.fileno())
            if not stat.S_ISREG(st.st_mode):
                raise SkipFile(NOT_REGULAR, "not a regular file (replaced by a folder, FIFO, socket or device?)")
            if st.st_size > max_bytes:
                raise SkipFile(TOO_LARGE, f"grew past the limit of {max_bytes:,} bytes before it was read")
            data = fh.read(max_bytes + 1)
    except FileNotFoundError as exc:
        raise SkipFile(VANISHED, "the file disappeared before it could be read") from exc
    except PermissionError as exc:
        raise SkipFile(UNREADABLE, "permission denied") from exc
    except IsADirectoryError as exc:
        raise SkipFile(NOT_REGULAR, "not a regular file (replaced by a folder?)") from exc
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise SkipFile(NOT_REGULAR, "it became a symlink after the folder was listed") from exc
        raise SkipFile(UNREADABLE, exc.strerror or str(exc)) from exc
    if len(data) > max_bytes:
        raise SkipFile(TOO_LARGE, f"grew past the limit of {max_bytes:,} bytes while being read")
    return data


MAX_BAD_SHARE = 0.3  # more of the characters than this undecodable: not a text file (random bytes give ~0.5)
_REPLACEMENT = "\ufffd"


@dataclass(frozen=True)
class Decoded:
    text: str
    warning: str = ""  # bytes that were not UTF-8 and became U+FFFD (the note is indexed)


def decode_text(data: bytes) -> Decoded:
    """UTF-8 (optionally with BOM) or BOM-marked UTF-16. A few bytes that are not UTF-8 become U+FFFD,
    as an editor shows them, with a warning; a file mostly made of them is skipped as binary."""
    if data.startswith(codecs.BOM_UTF16_LE) or data.startswith(codecs.BOM_UTF16_BE):
        try:
            return Decoded(_newlines(data.decode("utf-16")))
        except UnicodeDecodeError as exc:
            raise SkipFile(BAD_ENCODING, f"invalid UTF-16 at byte {exc.start}") from exc
    if b"\x00" in data[:8192]:
        raise SkipFile(BINARY, "contains NUL bytes (looks like a binary file)")
    try:
        decoded = Decoded(data.decode("utf-8-sig"))
    except UnicodeDecodeError as exc:
        decoded = _replaced(data, exc)
    if "\x00" in decoded.text:
        raise SkipFile(BINARY, "contains NUL characters")
    return Decoded(_newlines(decoded.text), decoded.warning)


def _replaced(data: bytes, first: UnicodeDecodeError) -> Decoded:
    """``data`` decoded with U+FFFD for each undecodable sequence; SkipFile when they are most of it."""
    text = data.decode("utf-8-sig", errors="replace")
    bad = text.count(_REPLACEMENT) - data.count(_REPLACEMENT.encode("utf-8"))
    if bad > MAX_BAD_SHARE * max(1, len(text)):
        raise SkipFile(BINARY, f"{bad:,} of {len(text):,} characters are not UTF-8 (looks like a binary file)")
    where = f"byte 0x{data[first.start]:02x} at offset {first.start}"
    plural = "s" if bad != 1 else ""
    return Decoded(text, f"not valid UTF-8: {bad:,} undecodable byte sequence{plural} shown as U+FFFD (the first: {where})")


def _newlines(text: str) -> str:
    return text.replace("\r\n", "\n").replace("\r", "\n")


def _first_heading(text: str, kind: str, skip_lines: int = 0) -> str:
    for line in text.splitlines()[skip_lines:skip_lines + 50]:
        s = line.strip()
        if kind == "markdown" and s.startswith("# "):
            return s[2:].strip()
        if kind == "org" and s.lower().startswith("#+title:"):
            return s.split(":", 1)[1].strip()
    return ""


def load_file(path: Path, max_bytes: int, ocr: PageOcr | None = None) -> LoadedText:
    return load_data(path, read_bytes(path, max_bytes), ocr)


def load_data(path: Path, data: bytes, ocr: PageOcr | None = None) -> LoadedText:
    """Text of a file's bytes; ``path`` gives the type and the fallback title; ``ocr`` reads a PDF's
    pages that have no text layer (none given: such pages have no text)."""
    suffix = path.suffix.lower()
    kind = TEXT_KINDS.get(suffix)
    if kind is None and suffix not in EXTRACTORS:
        raise SkipFile(UNSUPPORTED, f"no loader for {path.suffix or 'files without an extension'}")
    if not data.strip():
        raise SkipFile(EMPTY, "the file is empty")
    if kind is None:
        loaded = _load_document(suffix, data, ocr)
    elif kind == "html":
        decoded = decode_text(data)
        loaded = replace(_load_html(decoded.text), warning=decoded.warning)
    else:
        decoded = decode_text(data)
        text = decoded.text
        meta = parse_front_matter(text) if kind == "markdown" else None
        skip = meta.lines if meta is not None else 0
        title = _first_heading(text, kind, skip)  # a front-matter title is an alias (kg/vault.py)
        loaded = LoadedText(text=text, kind=kind, title=title, meta=meta, warning=decoded.warning)
    if not loaded.text.strip():
        raise SkipFile(EMPTY, "no text in the file")
    title = loaded.title or path.stem.replace("-", " ").replace("_", " ").strip()
    return replace(loaded, title=title)


class _HTMLText(html.parser.HTMLParser):
    """Visible text of an HTML page as Markdown-ish lines, each mapped to its source line."""

    BLOCK = {"p", "div", "br", "li", "tr", "section", "article", "header", "footer", "blockquote", "pre", "table", "ul", "ol"}
    SKIP = {"script", "style", "head", "noscript", "template", "svg"}

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.lines: list[tuple[str, int]] = []
        self._buf: list[str] = []
        self._line = 1
        self._skip = 0
        self._heading = 0
        self.title = ""
        self._in_title = False

    def _flush(self) -> None:
        text = re.sub(r"\s+", " ", "".join(self._buf)).strip()
        if text:
            prefix = "#" * self._heading + " " if self._heading else ""
            self.lines.append((prefix + text, self._line))
        self._buf = []

    def handle_starttag(self, tag: str, attrs: list) -> None:
        if tag == "title":
            self._in_title = True
        if tag in self.SKIP:
            self._skip += 1
            return
        if tag in self.BLOCK or re.fullmatch(r"h[1-6]", tag):
            self._flush()
            self._line = self.getpos()[0]
            if re.fullmatch(r"h[1-6]", tag):
                self._heading = int(tag[1])

    def handle_endtag(self, tag: str) -> None:
        if tag == "title":
            self._in_title = False
        if tag in self.SKIP:
            self._skip = max(0, self._skip - 1)
            return
        if tag in self.BLOCK or re.fullmatch(r"h[1-6]", tag):
            self._flush()
            if re.fullmatch(r"h[1-6]", tag):
                self._heading = 0
                self.lines.append(("", self.getpos()[0]))
            elif tag in {"p", "div", "section", "article"}:
                self.lines.append(("", self.getpos()[0]))

    def handle_data(self, data: str) -> None:
        if self._in_title:
            self.title += data
        if self._skip:
            return
        if not self._buf:
            self._line = self.getpos()[0]
        self._buf.append(data)


def _load_html(source: str) -> LoadedText:
    parser = _HTMLText()
    try:
        parser.feed(source)
        parser.close()
    except Exception as exc:  # html.parser is lenient; this is a last resort
        raise SkipFile(UNREADABLE, f"HTML could not be parsed: {exc}") from exc
    parser._flush()
    lines = parser.lines
    text = "\n".join(t for t, _ in lines)
    title = re.sub(r"\s+", " ", parser.title).strip()
    if not title:
        for t, _ in lines:
            if t.startswith("# "):
                title = t[2:]
                break
    return LoadedText(text=text, kind="html", title=title, line_map=tuple(n for _, n in lines))


def _load_document(suffix: str, data: bytes, ocr: PageOcr | None) -> LoadedText:
    kind, extract = EXTRACTORS[suffix]
    try:
        extracted = extract_pdf(data, ocr) if extract is extract_pdf else extract(data)
    except DocumentUnreadable as exc:
        raise SkipFile(exc.reason, exc.detail) from exc
    return LoadedText(text=extracted.text, kind=kind, title=extracted.title, layout=extracted.layout,
                      ocr_pages=extracted.ocr_pages, warning=extracted.warning)
