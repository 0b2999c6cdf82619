"""Evidence: the sentences of the top passages that best match the question, as exact quotes.

Passages are split Markdown-aware (markdown-it-py): a heading, a list item, a table row
and a code block are each one unit; a paragraph is split into sentences. The units are
ranked by cosine similarity to the question (and, for graph strategies, to the reasoning
chain the strategy found) with the embedder already loaded: no LLM.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from functools import lru_cache
from pathlib import PurePosixPath
from typing import Callable, Sequence

import numpy as np
from markdown_it import MarkdownIt

from localrag.embed import Embedder, comparable_similarity
from localrag.language import question_language, text_language
from localrag.records import Passage, Retrieval
from localrag.text.normalise import title_key
from localrag.text.sentences import announces, sentences
from localrag.text.spans import clean_markup
from localrag.text.words import IDENTIFIER, content_words, coverage, stem, stems

DEFAULT_SHOWN = 3
# a sentence of a note that the best sentences name ("… directed by Rex Ingram" -> Rex Ingram's note)
# holds the second hop of a multi-hop question; chosen on the dev questions (docs/benchmarks.md
# "Answers: evidence and candidates")
BRIDGE_BONUS = 0.3
PER_NOTE_SHOWN = 1  # the shown sentences come from different passages …
DIVERSE_WITHIN = 0.1  # … among those scoring within this of the best (an unrelated note gets no place)
# a sentence that says the question's words the best-matching sentence leaves out holds the next hop:
# "… an actress who starred in what for seven years?" -> "She starred in … for seven years"; chosen on
# the dev questions (docs/benchmarks.md "Answers: evidence and candidates")
RESIDUAL_WEIGHT = 0.3
# what a note answers with and a question rarely says: a code span, a number, a flag, a CamelCase or
# path::like identifier, a Windows /flag, an acronym ("use `-p-` for all ports", "sends only 4 packets")
_SPECIFIC = re.compile(r"`[^`]+`|\b\d[\w.:-]*|\b[A-Z][a-z]+[A-Z]\w*|\b\w+(?:::\w+)+|(?<![\w-])--?\w[\w-]*|(?<![\w/])/[a-z?]\w*|\b[A-Z]{2,}\b")
SPECIFIC_FULL = 2  # this many specific tokens the question does not say earn the whole bonus
MAX_UNIT_CHARS = 600  # a very long unit (a code block, a giant table row) is cut for display and embedding


@dataclass(frozen=True)
class Unit:
    """One sentence-like unit of a passage: its raw Markdown text and its offset in lines."""

    text: str
    line_offset: int  # lines after the passage's first line
    kind: str  # "sentence" | "heading" | "item" | "row" | "code"
    context: str = ""  # what a unit means only with: a table row's header cells


@dataclass(frozen=True)
class EvidenceSentence:
    text: str  # the quote as written in the note (Markdown kept)
    plain: str  # markup removed: what was embedded, what spans are taken from
    passage: Passage
    rank: int  # 1-based rank of its passage in the retrieval
    line: int  # the line of the note it starts on
    kind: str
    score: float  # what it is ranked by: cosine + RESIDUAL_WEIGHT x its share of the residual words
    cosine: float | None = None  # cosine similarity to the question (and path facts); None: = score

    @property
    def similarity(self) -> float:
        """Its cosine to the question: what abstention compares, unlike ``score``, which ranks."""
        return self.score if self.cosine is None else self.cosine

    @property
    def location(self) -> str:
        """``note.md:12``, or a document's ``report.pdf p. 3`` (its passage's locator)."""
        return self.passage.location_of_line(self.line)

    def to_json(self) -> dict:
        return {"text": self.text, "path": self.passage.path, "line": self.line, "location": self.location,
                "passage_rank": self.rank, "kind": self.kind, "score": round(self.score, 4),
                "similarity": round(self.similarity, 4)}


@lru_cache(maxsize=1)
def _parser():
    return MarkdownIt("commonmark").enable("table")


def _paragraph_units(content: str, first_line: int) -> list[Unit]:
    flat = content.replace("\n", " ")  # same length: offsets stay valid for the line count
    spans = [(start, end) for start, end in sentences(flat) if flat[start:end].strip()]
    if len(spans) > 1 and _bare_lead_in(flat[spans[-1][0]:spans[-1][1]]):
        spans[-2:] = [(spans[-2][0], spans[-1][1])]
    return [Unit(flat[start:end].strip(), first_line + content.count("\n", 0, start), "sentence") for start, end in spans]


BARE_LEAD_IN_WORDS = 8  # "Take a look at the following example:" says nothing of what the code shows


def _bare_lead_in(sentence: str) -> bool:
    """A short sentence that only announces what follows: the sentence before it says what that is
    ("… you can send the `--test-threads` flag … Take a look at the following example:")."""
    return announces(sentence) and len(sentence.split()) <= BARE_LEAD_IN_WORDS


_HTML_COMMENT = re.compile(r"<!--.*?(?:-->|$)", re.DOTALL)


def split_units(text: str) -> list[Unit]:
    """Sentence-like units of Markdown ``text``, in reading order, each with its line offset."""
    tokens = _parser().parse(text)
    units: list[Unit] = []
    lines = text.split("\n")
    in_item = 0
    header: list[str] = []
    in_head = False
    i = 0
    while i < len(tokens):
        tok = tokens[i]
        line = tok.map[0] if tok.map else 0
        if tok.type == "list_item_open":
            in_item += 1
            if in_item == 1 and tok.map:
                body = " ".join(_item_text(tokens, i))
                if body.strip():
                    units.append(Unit(_source(lines, tok.map), line, "item"))
        elif tok.type == "list_item_close":
            in_item -= 1
        elif in_item:
            pass  # the item is already one unit, nested paragraphs and lists included
        elif tok.type == "heading_open":
            units.append(Unit(tokens[i + 1].content.strip(), line, "heading"))
        elif tok.type == "paragraph_open":
            units.extend(_paragraph_units(tokens[i + 1].content, line))
        elif tok.type in ("thead_open", "thead_close"):
            in_head = tok.type == "thead_open"
        elif tok.type == "tr_open":
            cells = []
            j = i + 1
            while tokens[j].type != "tr_close":
                if tokens[j].type == "inline":
                    cells.append(tokens[j].content.strip())
                j += 1
            if in_head:
                header = cells  # the header row names the columns of the rows below; alone it says nothing
            elif any(cells):
                context = " ".join(f"{h}:" for h in header) if header else ""
                units.append(Unit("| " + " | ".join(cells) + " |", line, "row", context))
        elif tok.type in ("fence", "code_block"):
            if tok.content.strip():
                units.append(Unit(tok.content.strip("\n"), line + (tok.type == "fence"), "code"))
        elif tok.type == "html_block" and _HTML_COMMENT.sub("", tok.content).strip():
            units.extend(_paragraph_units(tok.content.strip(), line))  # a comment alone is never shown to a reader
        i += 1
    return _under_headings(_with_code([u for u in units if u.text.strip()]))


_CODE_ONLY = re.compile(r"^`[^`]+`$")  # a paragraph that is one code span: a command-line note's example
CODE_KEPT_CHARS = 240  # of the code a lead-in introduces, this much goes with it into the unit


def _is_code(unit: Unit) -> bool:
    return unit.kind == "code" or (unit.kind == "sentence" and bool(_CODE_ONLY.match(unit.text.strip())))


def _join_pairs(units: list[Unit], joined: Callable[[Unit, Unit], Unit | None]) -> list[Unit]:
    """Each unit and the one after it as ``joined`` makes them one (None: they stay apart)."""
    out: list[Unit] = []
    i = 0
    while i < len(units):
        both = joined(units[i], units[i + 1]) if i + 1 < len(units) else None
        out.append(both if both is not None else units[i])
        i += 2 if both is not None else 1
    return out


def _with_code(units: list[Unit]) -> list[Unit]:
    """A unit that introduces code ("Extract an archive into a folder:", "run the following command:")
    and the code right after it become one unit: the lead-in says what the code does, the code is the
    answer, and apart neither says both."""
    return _join_pairs(units, _lead_in_and_code)


def _lead_in_and_code(unit: Unit, nxt: Unit) -> Unit | None:
    if unit.kind not in ("item", "sentence") or _is_code(unit) or not announces(unit.text) \
            or not _is_code(nxt):
        return None
    code = nxt.text.strip()
    code = code if len(code) <= CODE_KEPT_CHARS else code[:CODE_KEPT_CHARS].rstrip() + " …"
    return Unit(f"{unit.text.rstrip()}\n{code}", unit.line_offset, unit.kind, unit.context)


def names_a_key(heading: str) -> bool:
    """Whether a heading is an identifier rather than words ("createMissingLinkedNotes", not "Method")."""
    words = heading.split()
    return 0 < len(words) <= 3 and any(IDENTIFIER.fullmatch(w.strip("()")) for w in words)


def _under_headings(units: list[Unit]) -> list[Unit]:
    """A heading that names a key and the unit right below it become one unit: in notes such a heading
    often is what the section answers with ("### createMissingLinkedNotes" above "- Create notes that do not exist
    yet"), and the unit alone never says it (docs/benchmarks.md "Notes suite: answers")."""
    return _join_pairs(units, _key_heading_and_unit)


def _key_heading_and_unit(unit: Unit, nxt: Unit) -> Unit | None:
    if unit.kind != "heading" or nxt.kind in ("heading", "row") or not names_a_key(unit.text):
        return None
    return Unit(f"{unit.text}\n{nxt.text}", unit.line_offset, nxt.kind, nxt.context)


def _item_text(tokens: list, start: int) -> list[str]:
    depth, out = 0, []
    for tok in tokens[start:]:
        if tok.type == "list_item_open":
            depth += 1
        elif tok.type == "list_item_close":
            depth -= 1
            if depth == 0:
                break
        elif tok.type == "inline":
            out.append(tok.content)
    return out


def _source(lines: list[str], span: list[int]) -> str:
    return "\n".join(lines[span[0]:span[1]]).strip()


def _with_header(unit: Unit) -> str:
    """A table row read with its header: "ingredient: cardamom amount: 2 tsp"."""
    if unit.kind != "row" or not unit.context:
        return unit.text
    names = unit.context.split()
    cells = [c.strip() for c in unit.text.strip("| ").split(" | ")]
    if len(names) != len(cells):
        return unit.text
    return " ".join(f"{n} {c}" for n, c in zip(names, cells))


def _plain(text: str) -> str:
    return " ".join(clean_markup(text).replace("|", " ").split())[:MAX_UNIT_CHARS]


def path_facts(retrieval: Retrieval) -> str:
    """The reasoning chain and kept path facts a graph strategy recorded ("" for the others)."""
    parts = [fact for step in retrieval.trace.steps for fact in step.path_facts()]
    return " ".join(p for p in parts if p)[:1500]


def _units(passage: Passage) -> list[Unit]:
    """A passage's units; a heading only when it is all the passage says (a title restates the question)."""
    units = split_units(passage.text)
    said = [u for u in units if u.kind != "heading"]
    return said or units


def linked_passages(question: str, ranked: Sequence[EvidenceSentence], top: int = 3) -> set[int]:
    """Passages whose title one of the ``top`` sentences names (and the question does not), but for
    the sentence's own passage and the notes of its own title and file name: a translation, the same
    command on another platform (``pages.de/common/tar.md``, ``linux/tar.md``) is not a second hop; a
    note of the same title in another file (the book "Madonna" beside the singer's article) is."""
    asked = f" {title_key(question)} "
    names = {e.passage.id: (title_key(e.passage.title), PurePosixPath(e.passage.path).name) for e in ranked}
    linked: set[int] = set()
    for e in ranked[:top]:
        said = f" {title_key(e.plain)} "
        own = names[e.passage.id]
        linked |= {pid for pid, (t, file) in names.items()
                   if t and pid != e.passage.id and (t, file) != own and f" {t} " in said and f" {t} " not in asked}
    return linked


def order_evidence(question: str, ranked: Sequence[EvidenceSentence], shown: int = DEFAULT_SHOWN,
                   bridge: float = BRIDGE_BONUS, per_note: int = PER_NOTE_SHOWN,
                   within: float = DIVERSE_WITHIN) -> list[EvidenceSentence]:
    """The order evidence is shown in: cosine plus ``bridge`` for the notes the best sentences name,
    the first ``shown`` from different passages where they score near the best (so a second hop gets
    a place), then the rest."""
    linked = linked_passages(question, ranked)

    def adjusted(e: EvidenceSentence) -> float:
        return e.score + (bridge if e.passage.id in linked else 0.0)

    by_score = sorted(ranked, key=lambda e: -adjusted(e))
    top = adjusted(by_score[0]) if by_score else 0.0
    first: list[EvidenceSentence] = []
    per: dict[int, int] = {}
    for e in by_score:
        if len(first) < shown and per.get(e.passage.id, 0) < per_note and adjusted(e) >= top - within:
            first.append(e)
            per[e.passage.id] = per.get(e.passage.id, 0) + 1
    for e in by_score:  # fewer passages than places: the best of the rest fill them
        if len(first) >= shown:
            break
        if all(e is not f for f in first):
            first.append(e)
    chosen = {id(e) for e in first}
    return first + [e for e in by_score if id(e) not in chosen]


def rank_evidence(embedder: Embedder, question: str, passages: Sequence[Passage], *, facts: str = "",
                  facts_weight: float = 0.3, with_title: bool = False,
                  residual_weight: float = RESIDUAL_WEIGHT, specific_weight: float = 0.0) -> list[EvidenceSentence]:
    """Every unit of ``passages``, best first (ties: earlier passage, earlier line).

    ``with_title`` embeds a unit after its note's title ("Finland: The markka was replaced by the
    euro"); off by default: on 50 MuSiQue dev questions it did not put more gold answers in the
    top 3 (docs/benchmarks.md "What we tried").
    """
    found: list[tuple[Unit, Passage, int, str]] = []
    seen: set[str] = set()
    for rank, p in enumerate(passages, start=1):
        for unit in _units(p):
            plain = _plain(_with_header(unit))
            if len(plain) >= 3 and plain not in seen:
                seen.add(plain)
                found.append((unit, p, rank, plain))
    if not found:
        return []
    texts = [f"{p.title}: {plain}" if with_title and p.title and p.title not in plain else plain
             for _, p, _, plain in found]
    vectors = embedder.encode(texts)
    scores = vectors @ embedder.encode_one(question)
    if facts.strip():
        scores = (1 - facts_weight) * scores + facts_weight * (vectors @ embedder.encode_one(facts))
    scores = comparable_similarity(embedder, scores)
    out = [EvidenceSentence(u.text[:MAX_UNIT_CHARS], plain, p, rank, p.start_line + u.line_offset, u.kind, float(s),
                            float(s))
           for (u, p, rank, plain), s in zip(found, np.asarray(scores, dtype=np.float64))]
    return favour_specific(question, with_residual(question, out, residual_weight), specific_weight)


def favour_specific(question: str, ranked: Sequence[EvidenceSentence], weight: float) -> list[EvidenceSentence]:
    """``ranked`` in the order evidence is shown once ``weight`` x ``specific_share`` is added to each
    score (``order_evidence`` of ``with_specific``)."""
    return order_evidence(question, with_specific(question, ranked, weight))


def prefer_language(question: str, ranked: Sequence[EvidenceSentence], penalty: float) -> list[EvidenceSentence]:
    """``ranked`` with ``penalty`` taken from the score of each unit whose passage is told to be in
    another language than the question, where some passage found is in the question's: in a folder
    of translations an English question reads English lines first, and a folder in one language is
    left as it is."""
    if not penalty or not ranked:
        return list(ranked)
    asked = question_language(question)
    written = {e.passage.id: text_language(e.passage.text) for e in ranked}
    if asked not in written.values():
        return list(ranked)
    return [replace(e, score=e.score - penalty) if written[e.passage.id] not in (None, asked) else e
            for e in ranked]


def specific_share(text: str, question: str) -> float:
    """How much of what an answer is made of ``text`` holds that ``question`` does not say, 0 to 1
    (``SPECIFIC_FULL`` such tokens or more: 1)."""
    asked = question.lower()
    novel = [t for t in _SPECIFIC.findall(text) if t.strip("`").lower() not in asked]
    return min(1.0, len(novel) / SPECIFIC_FULL)


def with_specific(question: str, ranked: Sequence[EvidenceSentence], weight: float) -> list[EvidenceSentence]:
    """``ranked`` with ``weight`` x ``specific_share`` added to each score, best first: of two units as
    close to the question, the one holding a command, a flag or a number is the answer more often than
    the one restating the question (docs/benchmarks.md "Notes suite")."""
    if not weight:
        return list(ranked)
    out = [replace(e, score=e.score + weight * specific_share(e.text, question)) for e in ranked]
    out.sort(key=lambda e: (-e.score, e.rank, e.line))
    return out


def residual_words(question: str, ranked: Sequence[EvidenceSentence]) -> set[str]:
    """The question's content words that its best-matching sentence (by cosine) and that sentence's
    note title do not say: what a second hop has to say."""
    if not ranked:
        return set()
    best = max(ranked, key=lambda e: (e.similarity, -e.rank, -e.line))
    said = stems(f"{best.plain} {best.passage.title}")
    return {w for w in content_words(question) if stem(w) not in said}


def with_residual(question: str, ranked: Sequence[EvidenceSentence], weight: float = RESIDUAL_WEIGHT
                  ) -> list[EvidenceSentence]:
    """``ranked`` rescored by cosine + ``weight`` x the share of the residual words each sentence says, best first."""
    wanted = residual_words(question, ranked) if weight else set()
    out = [replace(e, score=e.similarity + weight * coverage(e.plain, wanted))
           for e in ranked]
    out.sort(key=lambda e: (-e.score, e.rank, e.line))
    return out
