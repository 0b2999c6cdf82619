"""EPUB: the zip's container.xml names the package (OPF), whose spine lists the chapters (XHTML)
in reading order; each chapter is one unit, its h1..h6 the heading path, lists and tables kept.

Read with the standard library's zipfile and lxml (the XML library python-docx and odfdo use)
rather than ebooklib, which is AGPL-licensed; docs/benchmarks.md "Documents" says why.
"""

from __future__ import annotations

import posixpath
import zipfile
from urllib.parse import unquote

from lxml import etree

from localrag.ingest.documents.builder import MarkdownBuilder
from localrag.ingest.documents.layout import CHAPTER, DOCUMENT_ERROR, ENCRYPTED, DocumentUnreadable, Extracted
from localrag.ingest.documents.packages import checked_zip

_XML = etree.XMLParser(resolve_entities=False, no_network=True, huge_tree=False)
_HTML = etree.HTMLParser(no_network=True, remove_comments=True)
_CHAPTER_TYPES = {"application/xhtml+xml", "text/html", "application/x-dtbook+xml"}
_HEADINGS = {"h1": 1, "h2": 2, "h3": 3, "h4": 4, "h5": 5, "h6": 6}
_SKIPPED = {"script", "style", "head", "nav", "noscript", "template", "svg", "math", "rt", "rp"}
_BLOCKS = {"p", "div", "section", "article", "blockquote", "pre", "figure", "figcaption", "aside", "header",
           "footer", "address", "center", "main", "dl", "dt", "dd", "body", "hr"}


def extract_epub(data: bytes) -> Extracted:
    package = checked_zip(data, ".epub")
    opf_path = _package_path(package)
    opf = _xml(package, opf_path)
    chapters = _spine(opf, posixpath.dirname(opf_path))
    _refuse_drm(package, chapters)
    out = MarkdownBuilder(CHAPTER, by_heading=True)
    number = 0
    for href in chapters:
        try:
            raw = package.read(href)
        except KeyError:
            continue  # a spine entry the zip lacks: the rest of the book is still read
        root = etree.fromstring(raw, _HTML) if raw.strip() else None
        body = _child(root, "body") if root is not None else None
        if body is None or not "".join(body.itertext()).strip():
            continue
        number += 1
        out.unit(number)
        _Walker(out).block(body)
    return out.build(_book_title(opf))


def _package_path(package: zipfile.ZipFile) -> str:
    container = _xml(package, "META-INF/container.xml")
    for element in container.iter():
        if _local(element) == "rootfile" and element.get("full-path"):
            return unquote(element.get("full-path"))
    raise DocumentUnreadable(DOCUMENT_ERROR, "not a readable .epub file: container.xml names no package (OPF)")


def _xml(package: zipfile.ZipFile, name: str):
    try:
        return etree.fromstring(package.read(name), _XML)
    except KeyError as exc:
        raise DocumentUnreadable(DOCUMENT_ERROR, f"not a readable .epub file: it has no {name}") from exc
    except etree.XMLSyntaxError as exc:
        raise DocumentUnreadable(DOCUMENT_ERROR, f"not a readable .epub file: {name} is not XML ({exc})") from exc


def _spine(opf, base: str) -> list[str]:
    manifest = {}
    for element in opf.iter():
        if _local(element) == "item" and element.get("media-type") in _CHAPTER_TYPES:
            manifest[element.get("id")] = posixpath.normpath(posixpath.join(base, unquote(element.get("href", ""))))
    return [manifest[ref.get("idref")] for ref in opf.iter()
            if _local(ref) == "itemref" and ref.get("idref") in manifest]


def _refuse_drm(package: zipfile.ZipFile, chapters: list[str]) -> None:
    """An EPUB whose chapters are encrypted (DRM) cannot be read; obfuscated fonts alone are fine."""
    try:
        encryption = etree.fromstring(package.read("META-INF/encryption.xml"), _XML)
    except (KeyError, etree.XMLSyntaxError):
        return
    locked = {unquote(e.get("URI", "")) for e in encryption.iter() if _local(e) == "cipherreference"}
    if locked & set(chapters):
        raise DocumentUnreadable(ENCRYPTED, "the EPUB's chapters are encrypted (DRM): it can only be read by its own reader")


def _book_title(opf) -> str:
    for element in opf.iter():
        if _local(element) == "title" and element.text:
            return element.text
    return ""


def _local(element) -> str:
    return etree.QName(element).localname.lower() if isinstance(element.tag, str) else ""


def _child(root, name: str):
    return next((e for e in root.iter() if _local(e) == name), None)


class _Walker:
    """XHTML blocks into the builder: text between blocks gathered into paragraphs."""

    def __init__(self, out: MarkdownBuilder) -> None:
        self.out = out
        self._inline: list[str] = []

    def block(self, element) -> None:
        self._text(element.text)
        for child in element:
            name = _local(child)
            if name in _SKIPPED or not name:
                pass
            elif name in _HEADINGS:
                self._flush()
                self.out.heading(_HEADINGS[name], _text_of(child))
            elif name in ("ul", "ol"):
                self._flush()
                self._list(child, 0)
            elif name == "table":
                self._flush()
                self.out.table(_table_rows(child))
            elif name in _BLOCKS:
                self._flush()
                self.block(child)
                self._flush()
            elif name == "br":
                self._inline.append("\n")
            else:
                self._inline.append(_text_of(child))
            self._text(child.tail)
        self._flush()

    def _text(self, text: str | None) -> None:
        if text:
            self._inline.append(text)

    def _flush(self) -> None:
        text = "".join(self._inline)
        self._inline = []
        if text.strip():
            self.out.paragraph(" ".join(text.split()))

    def _list(self, element, depth: int) -> None:
        for item in element:
            if _local(item) != "li":
                continue
            nested = [c for c in item if _local(c) in ("ul", "ol")]
            own = [item.text or ""] + [(_text_of(c) if c not in nested else "") + (c.tail or "") for c in item]
            self.out.item("".join(own), depth)
            for inner in nested:
                self._list(inner, depth + 1)


def _text_of(element) -> str:
    return " ".join("".join(t for t in element.itertext() if t).split())


def _table_rows(table) -> list[list[str]]:
    return [[_text_of(cell) for cell in row if _local(cell) in ("td", "th")]
            for row in table.iter() if _local(row) == "tr"]
