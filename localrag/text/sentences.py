"""Where sentences end: ``sentences`` splits prose for spans, rules and evidence."""

from __future__ import annotations

import re

# a full stop after these does not end a sentence ("St. Maurice", "e.g. this")
ABBREVIATIONS = frozenset("st mr mrs ms dr jr sr mt no vs ca c prof gen col lt sgt rev fr inc ltd co corp u.s e.g i.e etc".split())


def sentences(text: str) -> list[tuple[int, int]]:
    """(start, end) of each sentence; lines are boundaries too (list items, headings)."""
    out: list[tuple[int, int]] = []
    pos = 0
    for line in text.split("\n"):
        line_start, line_end = pos, pos + len(line)
        pos = line_end + 1
        start = line_start
        for m in re.finditer(r"[.!?]+[\"”)]?\s+(?=[A-Z\"“(\[0-9])", line):
            before = line[: m.start()].rsplit(None, 1)
            word = before[-1].lower().strip("(\"“") if before else ""
            if word in ABBREVIATIONS or (len(word) == 1 and word.isalpha()):
                continue  # "St. Maurice", "G. Stanley Hall"
            end = line_start + m.start() + 1
            if line[start - line_start:end - line_start].strip():
                out.append((start, end))
            start = line_start + m.end()
        if text[start:line_end].strip():
            out.append((start, line_end))
    return out
