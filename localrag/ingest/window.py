"""Fit chunks to the embedder's real window, so no text is silently left out of a vector.

The chunker caps passages by a cheap regex count (~300 word-tokens), but MiniLM reads at
most 256 wordpieces (254 after [CLS] and [SEP]) and drops the rest: on a real Markdown
vault about one passage in nine lost its tail (docs/benchmarks.md "Scale: passages and the
embedder's window"). A chunk whose embedded text (heading path + text) is longer than
the window is split here at line boundaries, then sentences, then words, each piece
keeping the source lines it came from. BERT's tokenizer splits on whitespace first, so the wordpieces of lines
joined by a newline are the sum of theirs: each line is counted once.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable, Sequence

from localrag.ingest.atoms import split_outside
from localrag.ingest.chunker import Chunk, count_tokens
from localrag.text.sentences import CLAUSE_END, announces

_SPACE = re.compile(" ")
CountFn = Callable[[Sequence[str]], list[int]]  # wordpieces per text, no special tokens


@dataclass(frozen=True)
class _Line:
    text: str
    line: int  # source line (1-based) of this piece
    tokens: int


def source_lines(chunk: Chunk, lines: Sequence[str]) -> list[int]:
    """The line of ``lines`` each line of ``chunk.text`` comes from (a piece of a long line
    keeps that line's number; blank separators take the next blank line)."""
    out: list[int] = []
    at = chunk.start_line  # 1-based
    for piece in chunk.text.split("\n"):
        want = piece.strip()
        probe = at
        while probe <= min(chunk.end_line, len(lines)):
            have = lines[probe - 1]
            if (not want and not have.strip()) or (want and want in have):
                break
            probe += 1
        else:
            probe = at  # not found (the loader rewrote it): keep the running line
        out.append(probe)
        at = probe if want else probe + 1
    return out


def _split_text(text: str, count: CountFn, limit: int) -> list[str]:
    """A line over the limit: sentences, packed; a sentence over it: words, packed (never cut inside
    a link, an embed or a code span: ingest/atoms.py). Texts joined by a space count as the sum of
    their counts (the tokenizers split on whitespace first), so each word is counted once, in one
    batch: counting a growing string once per word was quadratic (84 s for a 6.5 MB one-line note)."""
    pieces: list[tuple[str, int]] = []
    sentences = split_outside(text, CLAUSE_END)
    for sentence, n in zip(sentences, count(sentences)):
        if n <= limit:
            pieces.append((sentence, n))
            continue
        words = split_outside(sentence, _SPACE)
        pieces += _packed(list(zip(words, count(words))), limit)
    packed = [piece for piece, _ in _packed(pieces, limit)]
    out: list[str] = []
    for piece, n in zip(packed, count(packed)):
        # where a tokenizer does not add up (a rare normaliser case), the piece is cut word by word
        out += [piece] if n <= limit else _cut_by_words(piece, count, limit)
    return out


def _packed(items: list[tuple[str, int]], limit: int) -> list[tuple[str, int]]:
    """Neighbouring texts joined by a space while their summed count fits ``limit``."""
    out: list[tuple[str, int]] = []
    for text, n in items:
        if out and out[-1][1] + n <= limit:
            out[-1] = (f"{out[-1][0]} {text}", out[-1][1] + n)
        else:
            out.append((text, n))
    return out


def _cut_by_words(text: str, count: CountFn, limit: int) -> list[str]:
    """Words packed while the count of the whole piece fits: exact, slow, for what the sums missed."""
    pieces, cur = [], []
    for w in split_outside(text, _SPACE):
        if cur and count([" ".join(cur + [w])])[0] > limit:
            pieces.append(" ".join(cur))
            cur = []
        cur.append(w)
    if cur:
        pieces.append(" ".join(cur))
    return pieces


def fit_chunk(chunk: Chunk, lines: Sequence[str], count: CountFn, window: int) -> list[Chunk]:
    """``chunk`` when its embedded text fits ``window`` wordpieces, else pieces that each do."""
    if count([chunk.embed_text])[0] <= window:
        return [chunk]
    prefix = count([chunk.heading])[0]  # the heading path (">" marks count too): an upper bound
    limit = max(16, window - prefix)
    texts = chunk.text.split("\n")
    numbers = source_lines(chunk, lines)
    counts = count(texts)
    items: list[_Line] = []
    for text, line, n in zip(texts, numbers, counts):
        if n <= limit:
            items.append(_Line(text, line, n))
        else:
            parts = _split_text(text, count, limit)
            items += [_Line(p, line, c) for p, c in zip(parts, count(parts))]
    out: list[Chunk] = []
    cur: list[_Line] = []
    for item in items:
        if cur and sum(i.tokens for i in cur) + item.tokens > limit:
            kept, carried = _lead_in_carried(cur)
            if carried and sum(i.tokens for i in carried) + item.tokens > limit:
                kept, carried = cur, []
            out.append(_piece(chunk, kept))
            cur = carried
        if not cur and not item.text.strip():
            continue  # a piece never starts with a blank line
        cur.append(item)
    if cur and any(i.text.strip() for i in cur):
        out.append(_piece(chunk, cur))
    return out


def _lead_in_carried(items: list[_Line]) -> tuple[list[_Line], list[_Line]]:
    """(what a piece keeps, what opens the next one): a last line that announces what follows ("- 创建一个
    新的包并指定其 32 位版和 64 位版的安装 URL：" above its command) goes with it, as the chunker's lead-ins
    do, unless it is all the piece holds."""
    filled = [n for n, i in enumerate(items) if i.text.strip()]
    if len(filled) < 2 or not announces(items[filled[-1]].text):
        return items, []
    return items[:filled[-1]], items[filled[-1]:]


def _piece(chunk: Chunk, items: list[_Line]) -> Chunk:
    while items and not items[-1].text.strip():
        items = items[:-1]
    text = "\n".join(i.text for i in items)
    return Chunk(text, chunk.heading, items[0].line, items[-1].line, count_tokens(text))


def fit_window(chunks: list[Chunk], text: str, embedder: object) -> list[Chunk]:
    """Every chunk within the embedder's window (unchanged when the embedder has none)."""
    counter = getattr(embedder, "window_counter", None)
    found = counter() if callable(counter) else None
    if found is None:
        return chunks
    count, window = found
    lines = text.split("\n")
    return [piece for c in chunks for piece in fit_chunk(c, lines, count, window)]
