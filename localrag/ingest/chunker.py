"""Split text into passages by headings and paragraphs (~100-300 tokens), keeping line ranges.

Markdown is parsed by markdown-it-py (ingest/markdown.py: front matter left out, tables,
footnotes, fences and lists as whole blocks); the other kinds by their heading lines.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass

from localrag.ingest.atoms import cut_every, split_outside
from localrag.ingest.markdown import parse_markdown
from localrag.text.sentences import SENTENCE_END, announces
from localrag.text.words import WORDISH

_MD_HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
_ORG_HEADING = re.compile(r"^(\*{1,6})\s+(.*)$")
_RST_UNDERLINE = re.compile(r"^([=\-~^\"'`#*+])\1{2,}\s*$")
_SPACE = re.compile(" ")


def count_tokens(text: str) -> int:
    """A cheap token estimate (words and punctuation marks), close to BPE counts for prose."""
    return len(WORDISH.findall(text))


@dataclass(frozen=True)
class Chunk:
    text: str  # the passage as it stands in the file
    heading: str  # heading path above it ("Title > Section"), for context and citations
    start_line: int  # 1-based, inclusive
    end_line: int
    tokens: int
    note_context: str = ""  # the note's own summary (front-matter description), on its first passage only

    @property
    def embed_text(self) -> str:
        """What is embedded and hashed: the heading path gives the passage its context."""
        first = self.text.lstrip().splitlines()[0] if self.text.strip() else ""
        context = self.heading.split(" > ")
        if context and context[-1] and context[-1] in first:
            context = context[:-1]
        prefix = "\n".join(x for x in (" > ".join(c for c in context if c), self.note_context) if x)
        return f"{prefix}\n{self.text}" if prefix else self.text

    @property
    def sha256(self) -> str:
        return hashlib.sha256(self.embed_text.encode("utf-8")).hexdigest()


@dataclass
class _Block:
    lines: list[str]
    start: int  # 1-based line of lines[0]
    heading_level: int = 0
    heading_text: str = ""
    last: int = 0  # 1-based line of lines[-1] when lines are pieces of longer lines (0 = one line each)

    @property
    def text(self) -> str:
        return "\n".join(self.lines)

    @property
    def end(self) -> int:
        return self.last or self.start + len(self.lines) - 1


def _heading(line: str, next_line: str | None, kind: str) -> tuple[int, str] | None:
    if kind in ("markdown", "html", "pdf", "text"):
        m = _MD_HEADING.match(line)
        if m and kind != "text":
            return len(m.group(1)), m.group(2)
    if kind == "org":
        m = _ORG_HEADING.match(line)
        if m:
            return len(m.group(1)), m.group(2)
    if kind == "rst" and next_line is not None and line.strip() and _RST_UNDERLINE.match(next_line):
        if len(next_line.strip()) >= len(line.strip()) - 1:
            level = "=-~^\"'`#*+".index(next_line.strip()[0]) + 1
            return level, line.strip()
    return None


def _markdown_blocks(text: str) -> list[_Block]:
    lines = text.split("\n")
    return [_Block(lines[b.start - 1:b.end], b.start, b.heading_level, b.heading_text)
            for b in parse_markdown(text).blocks]


def _blocks(text: str, kind: str) -> list[_Block]:
    if kind == "markdown":
        return _markdown_blocks(text)
    lines = text.split("\n")
    blocks: list[_Block] = []
    cur: list[str] = []
    start = 1
    in_fence = False
    i = 0
    while i < len(lines):
        line = lines[i]
        nxt = lines[i + 1] if i + 1 < len(lines) else None
        if line.strip().startswith("```"):
            in_fence = not in_fence
        head = None if in_fence else _heading(line, nxt, kind)
        if head is not None:
            if cur:
                blocks.append(_Block(cur, start))
            blocks.append(_Block([line], i + 1, head[0], head[1].strip()))
            cur = []
            if kind == "rst":
                i += 1  # the underline belongs to the heading
                blocks[-1].lines.append(lines[i])
            start = i + 2
        elif not line.strip() and not in_fence:
            if cur:
                blocks.append(_Block(cur, start))
            cur = []
            start = i + 2
        else:
            if not cur:
                start = i + 1
            cur.append(line)
        i += 1
    if cur:
        blocks.append(_Block(cur, start))
    return blocks


def _split_long(block: _Block, max_tokens: int) -> list[_Block]:
    """A paragraph over the limit is cut at line, then sentence, then word boundaries."""
    if count_tokens(block.text) <= max_tokens:
        return [block]
    out: list[_Block] = []
    cur: list[str] = []
    cur_start = block.start
    cur_tokens = 0
    line_no = block.start
    for offset, line in enumerate(block.lines):
        pieces = [line]
        if count_tokens(line) > max_tokens:
            pieces = _split_line(line, max_tokens)
        for piece in pieces:
            t = count_tokens(piece)
            if cur and cur_tokens + t > max_tokens:
                out.append(_Block(cur, cur_start, last=line_no))
                cur, cur_tokens = [], 0
                cur_start = block.start + offset
            cur.append(piece)
            cur_tokens += t
            line_no = block.start + offset  # pieces of one line share its line number
    if cur:
        out.append(_Block(cur, cur_start, last=line_no))
    return out


def _split_line(line: str, max_tokens: int) -> list[str]:
    """Sentences, then words, then characters; never inside a link, an embed or a code span (ingest/atoms.py)."""
    sentences = split_outside(line, SENTENCE_END)
    out: list[str] = []
    cur = ""
    for s in sentences:
        if count_tokens(s) > max_tokens:
            words = split_outside(s, _SPACE)
            step = max(1, max_tokens // 2)
            for j in range(0, len(words), step):
                piece = " ".join(words[j:j + step])
                if piece:
                    out.append(piece)
            continue
        cand = f"{cur} {s}".strip()
        if cur and count_tokens(cand) > max_tokens:
            out.append(cur)
            cur = s
        else:
            cur = cand
    if cur:
        out.append(cur)
    # a line of one enormous "word" (no spaces) is cut by characters
    final: list[str] = []
    for piece in out:
        if count_tokens(piece) > max_tokens * 2:
            size = max_tokens * 4
            final.extend(cut_every(piece, size))
        else:
            final.append(piece)
    return final


def _carried_lead_in(blocks: list[_Block], max_tokens: int) -> bool:
    """Whether the last block announces the next one ("- Extract an archive:" above its command, "… like
    this:" above a listing): it then opens the next passage with what it announces rather than end
    this one, where neither half says what the other means."""
    last = blocks[-1]
    return (not last.heading_level and announces(last.text)
            and count_tokens(last.text) <= max_tokens // 3
            and any(not b.heading_level for b in blocks[:-1]))


def chunk_text(text: str, kind: str = "markdown", title: str = "", min_tokens: int = 100, max_tokens: int = 300) -> list[Chunk]:
    """Pack paragraphs under their heading into passages of about min..max tokens."""
    headings: list[tuple[int, str]] = []
    chunks: list[Chunk] = []
    cur: list[_Block] = []
    cur_tokens = 0
    cur_heading = title

    def heading_path() -> str:
        parts = [h for _, h in headings]
        if title and (not parts or parts[0] != title):
            parts.insert(0, title)
        return " > ".join(parts)

    def flush() -> None:
        nonlocal cur, cur_tokens
        if cur and any(b.text.strip() for b in cur):
            body_lines: list[str] = []
            prev_end = None
            for b in cur:
                if prev_end is not None:
                    body_lines.append("")
                body_lines.extend(b.lines)
                prev_end = b.end
            body = "\n".join(body_lines).strip("\n")
            chunks.append(Chunk(body, cur_heading, cur[0].start, max(b.end for b in cur), count_tokens(body)))
        cur, cur_tokens = [], 0

    for block in _blocks(text, kind):
        if block.heading_level:
            # a section with real content gets its own passage; tiny sections merge
            if any(not b.heading_level for b in cur) and cur_tokens >= min_tokens // 2:
                flush()
            while headings and headings[-1][0] >= block.heading_level:
                headings.pop()
            headings.append((block.heading_level, block.heading_text))
            if not cur:
                cur_heading = heading_path()
            cur.append(block)
            cur_tokens += count_tokens(block.text)
            continue
        for piece in _split_long(block, max_tokens):
            t = count_tokens(piece.text)
            if cur and cur_tokens + t > max_tokens:
                lead_in = cur.pop() if _carried_lead_in(cur, max_tokens) else None
                flush()
                if lead_in is not None:
                    cur_heading = heading_path()
                    cur, cur_tokens = [lead_in], count_tokens(lead_in.text)
            if not cur:
                cur_heading = heading_path()
            cur.append(piece)
            cur_tokens += t
    flush()
    return chunks
