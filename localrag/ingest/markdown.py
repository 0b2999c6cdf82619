"""Markdown structure from markdown-it-py: block line ranges, headings, front matter, and the
inline constructs a notes vault uses (links, wikilinks, embeds, #tags).

The chunker packs the blocks into passages; the graph phase reads the links and tags of a
passage's text. Code (fenced, indented, inline) is never searched for links or tags.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Iterator
from urllib.parse import unquote

from markdown_it import MarkdownIt
from markdown_it.token import Token
from mdit_py_plugins.footnote import footnote_plugin
from mdit_py_plugins.front_matter import front_matter_plugin

from localrag.store.vault import NOTE_SUFFIXES, link_key

# [[target#heading^block|shown]], optionally preceded by ! (an embed)
_WIKILINK = re.compile(r"(!?)\[\[([^\[\]\n]+?)\]\]")
# Obsidian's tag: # then letters, digits, _ - / with at least one non-digit; not inside a word or URL
_TAG = re.compile(r"(?<![\w/#&\]\[])#([\w\-/]*[^\W\d][\w\-/]*)", re.UNICODE)
_URL_SCHEME = re.compile(r"^[a-z][a-z0-9+.-]*:", re.I)


def _new_parser() -> MarkdownIt:
    return MarkdownIt("commonmark").use(front_matter_plugin).use(footnote_plugin).enable("table")


@lru_cache(maxsize=1)
def parser() -> MarkdownIt:
    return _new_parser()


@lru_cache(maxsize=1)
def _parser_without_links() -> MarkdownIt:
    """``parser`` without the Markdown link and image rules, for text that can hold neither: the link
    rule tries every ``[`` as a link label, and a note of thousands of [[wikilinks]] spent most of its
    graph phase there."""
    return _new_parser().disable(["link", "image"])


@lru_cache(maxsize=1)
def _block_parser() -> MarkdownIt:
    """``parser`` without the inline pass: block line ranges and heading texts need none of it (a
    third of a note's parse). Not for a text with footnotes: their definitions are placed by a rule
    after the inline pass, for the references it finds."""
    return _new_parser().disable("inline")


def _inline_parser(text: str) -> MarkdownIt:
    """The parser that finds the same links, tags and code spans in ``text`` at the least cost: a
    Markdown link or image needs ``](`` and a reference link its ``]:`` definition."""
    return parser() if "](" in text or "]:" in text else _parser_without_links()


@dataclass(frozen=True)
class MdBlock:
    start: int  # 1-based first line
    end: int  # 1-based last line (inclusive)
    heading_level: int = 0
    heading_text: str = ""


@dataclass(frozen=True)
class FrontMatter:
    text: str  # the YAML between the fences
    start: int  # 1-based line of the opening ---
    end: int  # 1-based line of the closing ---


@dataclass(frozen=True)
class ParsedMarkdown:
    blocks: list[MdBlock]
    front_matter: FrontMatter | None


def parse_markdown(text: str) -> ParsedMarkdown:
    """Top-level blocks in reading order (front matter left out), with exact 1-based line ranges."""
    tokens = (parser() if "[^" in text else _block_parser()).parse(text)
    blocks: list[MdBlock] = []
    front: FrontMatter | None = None
    i = 0
    in_footnotes = False
    while i < len(tokens):
        t = tokens[i]
        if t.type == "front_matter" and t.map:
            front = FrontMatter(t.content, t.map[0] + 1, t.map[1])
        elif t.type == "footnote_block_open":
            in_footnotes = True
        elif t.type == "footnote_block_close":
            in_footnotes = False
        elif in_footnotes:
            # a footnote definition's own blocks (level 1 inside footnote_open) keep their place in the file
            if t.level == 1 and t.map and t.nesting >= 0:
                blocks.append(MdBlock(t.map[0] + 1, t.map[1]))
        elif t.level == 0 and t.map and t.nesting >= 0:
            if t.type == "heading_open":
                inline = tokens[i + 1] if i + 1 < len(tokens) else None
                title = inline.content.strip() if inline is not None and inline.type == "inline" else ""
                blocks.append(MdBlock(t.map[0] + 1, t.map[1], int(t.tag[1:]), title))
            else:
                blocks.append(MdBlock(t.map[0] + 1, t.map[1]))
        i += 1
    lines = text.split("\n")
    out = [_trimmed(b, lines) for b in sorted(blocks, key=lambda b: b.start)]
    return ParsedMarkdown([b for b in out if b is not None], front)


def _trimmed(block: MdBlock, lines: list[str]) -> MdBlock | None:
    """markdown-it's ranges of lists and quotes take the blank line after them: dropped here."""
    end = min(block.end, len(lines))
    while end >= block.start and not lines[end - 1].strip():
        end -= 1
    if end < block.start:
        return None
    return MdBlock(block.start, end, block.heading_level, block.heading_text)


# -- inline constructs ------------------------------------------------------------------------


@dataclass(frozen=True)
class NoteLink:
    """A link to another note as written: [[target#heading|shown]], ![[embed]] or [shown](path.md)."""

    target: str  # the note named (wikilink: a name or path without extension; Markdown: the href path)
    heading: str = ""  # #heading part, if any
    block: str = ""  # ^block id, if any
    shown: str = ""  # the visible text, if given
    embed: bool = False
    markdown: bool = False  # a Markdown [text](href) link (a file path relative to the note)


def _prose_runs(tokens: list[Token]) -> Iterator[tuple[str, list[Token]]]:
    """(text of an inline token with code spans blanked, its children) for every inline token."""
    for t in tokens:
        if t.type != "inline" or not t.children:
            continue
        parts = []
        for c in t.children:
            if c.type == "text":
                parts.append(c.content)
            elif c.type in ("softbreak", "hardbreak"):
                parts.append("\n")
            elif c.type == "code_inline":
                parts.append(" ")
            elif c.type in ("link_open", "link_close", "image"):
                parts.append(" ")
        yield "".join(parts), t.children


def split_wikilink(inner: str) -> tuple[str, str, str, str]:
    """(target, heading, block, shown) of the inside of [[...]].

    Obsidian writes [[target|shown]]; Dendron writes [[shown|target]]. The side that holds a
    # or ^ part, a dot path or a slash is the target; with neither, Obsidian's order."""
    target, shown = inner, ""
    if "|" in inner:
        left, right = (s.strip() for s in inner.split("|", 1))
        target, shown = left, right
        if not _looks_like_target(left) and _looks_like_target(right):
            target, shown = right, left
    target = target.strip()
    block = ""
    heading = ""
    if "^" in target:
        target, block = target.split("^", 1)
        target = target.rstrip("#")
    if "#" in target:
        target, heading = target.split("#", 1)
    return target.strip(), heading.strip(), block.strip(), shown.strip()


def _looks_like_target(side: str) -> bool:
    return any(ch in side for ch in "#^/") or ("." in side and " " not in side) or side.startswith("dendron://")


@dataclass(frozen=True)
class InlineRefs:
    links: tuple[NoteLink, ...]
    tags: tuple[str, ...]


CACHED_REFS_CHARS = 65_536  # a passage's refs are asked for twice by the graph phase: parsed once


def inline_refs(text: str) -> InlineRefs:
    """The links and #tags of a passage or note, from one parse."""
    return _cached_refs(text) if len(text) <= CACHED_REFS_CHARS else _parse_refs(text)


@lru_cache(maxsize=256)
def _cached_refs(text: str) -> InlineRefs:
    return _parse_refs(text)


def _may_link(text: str) -> bool:
    """False when ``text`` cannot hold a link: a wikilink needs ``[[``, a Markdown link ``](`` or a
    reference definition's ``]:``, and an entity could spell any of them."""
    return "[[" in text or "](" in text or "]:" in text or "&#" in text


# markup that can stand right before a tag's # and is gone from the prose: "[#tag](url)", "_#tag_"
_TAG_UNBLOCKED = str.maketrans("[]_*", "    ")


def _may_tag(text: str) -> bool:
    """False when ``text`` cannot hold a #tag: prose is the raw text less its markup, so a tag there
    matches in the raw text too once the markup that can precede it is blanked (or an entity spells it)."""
    return "#" in text and ("&#" in text or _TAG.search(text.translate(_TAG_UNBLOCKED)) is not None)


def _runs(text: str) -> list[tuple[str, list[Token]]]:
    return list(_prose_runs(_inline_parser(text).parse(text)))


def _parse_refs(text: str) -> InlineRefs:
    # most passages hold neither, and parsing them all cost a first index more than its notes' own parse
    if not _may_link(text) and not _may_tag(text):
        return InlineRefs((), ())
    runs = _runs(text)
    return InlineRefs(tuple(_links(runs)), tuple(_tags(runs)))


def note_links(text: str) -> list[NoteLink]:
    """Wikilinks, embeds and relative Markdown links in prose (not in code), in reading order."""
    return _links(_runs(text)) if _may_link(text) else []


def inline_tags(text: str) -> list[str]:
    """#tags written in prose (not in code or headings' # marks), lowercased, distinct, in order."""
    return _tags(_runs(text)) if _may_tag(text) else []


def _links(runs: list[tuple[str, list[Token]]]) -> list[NoteLink]:
    out: list[NoteLink] = []
    for prose, children in runs:
        for m in _WIKILINK.finditer(prose):
            target, heading, block, shown = split_wikilink(m.group(2))
            target = _strip_vault_prefix(target)
            if target or heading or block:
                out.append(NoteLink(target, heading, block, shown, embed=m.group(1) == "!"))
        for i, c in enumerate(children):
            if c.type != "link_open":
                continue
            href = str(c.attrs.get("href", ""))
            if not href or _URL_SCHEME.match(href) or href.startswith("#"):
                continue
            shown = children[i + 1].content if i + 1 < len(children) and children[i + 1].type == "text" else ""
            path, _, heading = href.partition("#")
            out.append(NoteLink(_unquote(path), heading, "", shown, markdown=True))
    return out


def _strip_vault_prefix(target: str) -> str:
    """dendron://vault/note.name -> note.name (a cross-vault link into this vault)."""
    if target.startswith("dendron://"):
        rest = target[len("dendron://"):]
        return rest.split("/", 1)[1] if "/" in rest else ""
    return target


def _unquote(href: str) -> str:
    return unquote(href)


def _tags(runs: list[tuple[str, list[Token]]]) -> list[str]:
    found: list[str] = []
    for prose, _ in runs:
        for m in _TAG.finditer(prose):
            tag = m.group(1).strip("/").lower()
            if tag and tag not in found:
                found.append(tag)
    return found


def is_note_path(target: str) -> bool:
    return target.lower().endswith(NOTE_SUFFIXES)


def link_hrefs(text: str) -> list[str]:
    """What the fast phase records per passage (``passage_links``) so a change to a link's target
    re-queues it: Markdown note hrefs as written, and ``[[key]]`` for each wikilink's name."""
    out: list[str] = []
    for link in inline_refs(text).links:
        if link.markdown:
            if is_note_path(link.target):
                out.append(link.target)
        elif link.target and link_key(link.target):
            out.append(f"[[{link_key(link.target)}]]")
    return list(dict.fromkeys(out))
