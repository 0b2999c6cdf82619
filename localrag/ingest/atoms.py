"""Inline spans a passage boundary never cuts: wikilinks ``[[...]]``, embeds ``![[...]]`` and code
spans (`` `...` ``, any run of backticks closed by the same run).

The chunker and the window step cut an over-long line at sentence ends, then spaces, then
characters; a cut inside ``[[Note 413]]`` left ``[[Note`` in one passage and ``413]]`` in the
next, and the link was lost from the graph. Every cut point is moved out of these spans. A span
longer than ``MAX_ATOM_CHARS`` (no real link or inline code is) is not protected, so a hostile
line cannot make one passage unbounded.
"""

from __future__ import annotations

import bisect
import re

MAX_ATOM_CHARS = 1000
_ATOM = re.compile(
    r"!?\[\[[^\[\]\n]{0,%d}\]\]"  # a wikilink or an embed
    r"|(?<!`)(`+)(?!`)[^\n]{0,%d}?(?<!`)\1(?!`)" % (MAX_ATOM_CHARS, MAX_ATOM_CHARS)  # a code span
)


class Atoms:
    """The protected spans of one text, for asking whether an offset falls inside one."""

    def __init__(self, text: str) -> None:
        spans = [m.span() for m in _ATOM.finditer(text)] if ("[[" in text or "`" in text) else []
        self._starts = [s for s, _ in spans]
        self._ends = [e for _, e in spans]

    def inside(self, offset: int) -> tuple[int, int] | None:
        """The span that ``offset`` cuts (strictly between its first and last character), if any."""
        i = bisect.bisect_right(self._starts, offset) - 1
        if i >= 0 and self._starts[i] < offset < self._ends[i]:
            return self._starts[i], self._ends[i]
        return None


def split_outside(text: str, boundary: re.Pattern[str]) -> list[str]:
    """``boundary.split(text)``, except at the matches that fall inside a protected span."""
    atoms = Atoms(text)
    pieces: list[str] = []
    at = 0
    for m in boundary.finditer(text):
        if atoms.inside(m.start()) is not None or atoms.inside(m.end()) is not None:
            continue
        pieces.append(text[at:m.start()])
        at = m.end()
    pieces.append(text[at:])
    return pieces


def cut_every(text: str, size: int) -> list[str]:
    """``text`` in pieces of about ``size`` characters, each cut moved to the start of the span it
    would fall in (or past its end, when the span starts the piece)."""
    atoms = Atoms(text)
    pieces: list[str] = []
    at = 0
    while at < len(text):
        cut = min(at + max(1, size), len(text))
        span = atoms.inside(cut)
        if span is not None:
            cut = span[0] if span[0] > at else span[1]
        pieces.append(text[at:cut])
        at = cut
    return pieces
