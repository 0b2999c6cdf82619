"""Where sentences end. ``sentences`` splits prose for spans, rules and evidence; the patterns split
or test text for one use each, and differ on purpose: what may follow the stop, and which marks count."""

from __future__ import annotations

import re

# a full stop after these does not end a sentence ("St. Maurice", "e.g. this")
ABBREVIATIONS = frozenset("st mr mrs ms dr jr sr mt no vs ca c prof gen col lt sgt rev fr inc ltd co corp u.s e.g i.e etc".split())
# the gap after a sentence's end mark: chunks and bench passages are cut at it (ingest/chunker.py, bench/localrag_bench/loogle.py)
SENTENCE_END = re.compile(r"(?<=[.!?])\s+")
# the same gap captured, so a split keeps the gaps at odd indexes (answer.collapse_repetition)
SENTENCE_GAP = re.compile(r"((?<=[.!?])\s+)")
# ; and : too: a line longer than the embedder's window is cut at clauses before words (ingest/window.py)
CLAUSE_END = re.compile(r"(?<=[.!?;:])\s+")
# only before what opens a sentence, so "e.g. the" stays whole (answer/flow.py: the sentences of an answer)
ANSWER_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"“(\[])")
# the Chinese and Japanese stops too, and line breaks: the parts of a note an instruction may sit in (answer/injection.py)
LINE_PARTS = re.compile(r"(?<=[.!?。！？])\s+|\n+")
# an end mark with more text after it: a rewrite of one question that says more than one sentence (conversation/rewrite.py)
SENTENCE_BREAK = re.compile(r"[.?!]\s+\S")
# what ends a lead-in, a sentence or item that announces what follows ("Extract an archive:" above its
# command); Chinese and Japanese write the full-width colon (ingest/chunker.py, answer/evidence.py)
LEAD_IN_COLONS = (":", "\uff1a")


def announces(text: str) -> bool:
    """Whether ``text`` ends as a lead-in to what follows it."""
    return text.rstrip().endswith(LEAD_IN_COLONS)


# a word, an end mark and a capital: the question told something before it asked (conversation/resolve.py)
EARLIER_SENTENCE = re.compile(r"\w[.!?]\s+[A-Z]")  # "There is a country where … . Who … this country …?"


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
