"""When the notes found cannot answer: the no-model signals behind "not in your notes".

Three rules, measured on answerable questions, on the same questions with their gold passages
dropped (``scripts/answer_sweeps.py abstain``, docs/benchmarks.md "Answers: abstention") and on the
notes suite's unanswerable questions (docs/benchmarks.md "Notes suite: answers"):

1. the best evidence sentence is far from the question (cosine < ``answer.abstain_below``);
2. the question names things (people, works, places: the spans the graph extractor finds) and,
   for more than half of them, none of the notes found is about it (no note title, nor a folder
   a note lies in, is the name, holds it or is held by it: ``cisco-ios/write.md`` is about Cisco),
   while the best sentence is only moderately close (cosine < ``answer.abstain_unnamed_below``).
   A question about a thing is answered by the note about it or by one that names it in passing
   and says the asked fact closely; when the note about it is missing, what is retrieved are notes
   that merely mention it, and their closest sentence says something else about it;
3. the question names a thing, or a key of code ("no_std"), that no passage of the whole folder says
   (``answer.abstain_unmentioned``; a near spelling of a word the folder says is a typo, not a missing
   thing): "Does the preview render PlantUML diagrams?" in a vault that never writes "PlantUML". The closest
   sentences are about the preview, often close enough to pass rules 1 and 2, and none can say what
   the question asks of a thing the notes never name.

Rules 2 and 3 find names by English capitalisation (every German noun is capitalised). A question in
another language gets rule 3 on the names whose form says they are names in any language
(``script_names``): keys of code, acronyms ("PDF"), and in a Chinese or Japanese question every word in
Latin letters ("怎么在 Linux 上创建 swap 文件"); rule 2 is English only.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Callable, Sequence

from localrag.config import AnswerSettings
from localrag.records import Passage
from localrag.text.cjk import has_cjk
from localrag.text.folders import folders_of
from localrag.text.normalise import POSSESSIVE_S, name_key
from localrag.text.spans import find_spans
from localrag.text.stopwords import CONTENT_STOPWORDS
from localrag.text.words import DEMONYM, IDENTIFIER, WORD

NAME_KINDS = ("name", "quoted", "title")
MIN_HELD_CHARS = 4  # a name held in a longer title counts from this length ("Hayek" in "Friedrich Hayek")
MIN_SHARE_ABOUT = 0.5  # below this share of the question's names with a note among those found, rule 2 applies
_LEADING_STOP = re.compile(r"^(?:(?:is|are|was|were|does|do|did|can|the|a|an|what|which|who|how|when|where|why)\s+)+",
                           re.I)
QUALIFIER = re.compile(r"\([^)]*\)")  # "(2005 film)"
HIERARCHY = re.compile(r"^[^\s.]+(?:\.[^\s.][^.]*)+$")  # Dendron-style "a.b.c" note names
ACRONYM = re.compile(r"(?<![\w-])[A-Z]{2,}[0-9]*(?![\w-])")  # "PDF", "HTTP", "MP3"; not "E-Mail" or "CPUs"
LATIN_WORD = re.compile(r"[A-Za-z][A-Za-z0-9]*(?:[._+\-][A-Za-z0-9]+)*")  # "swap", "docker-compose", "v2.1"


def question_names(question: str) -> list[str]:
    """The things a question names, as written, first occurrence kept; nationality words left out."""
    seen: dict[str, str] = {}
    for span in find_spans(question):
        text = _LEADING_STOP.sub("", POSSESSIVE_S.sub("", span.text))  # "Is KaTeX rendering on …" names KaTeX
        if span.kind in NAME_KINDS and len(name_key(text)) > 2 and not _adjective(text, question[span.end:]):
            seen.setdefault(name_key(text), text)
    return list(seen.values())


def _adjective(name: str, after: str) -> bool:
    """ "Canadian actress", "British comedy": a nationality word before the noun it describes."""
    following = WORD.match(after.lstrip())
    return bool(DEMONYM.match(name) and following and following.group(0).islower()
                and following.group(0) not in CONTENT_STOPWORDS)


@lru_cache(maxsize=4096)
def _title_keys(title: str) -> frozenset[str]:
    """A title; for "McRae, Arkansas" also the name before its first comma; for a hierarchy title
    ("dendron.topic.workspace.sqlite") also each of its segments but numbers (each title keyed once,
    however many names are compared with it)."""
    keys = [title, title.split(",")[0]]
    if HIERARCHY.match(title):
        keys += title.split(".")
    return frozenset(f" {k} " for k in map(name_key, keys) if k and not k.replace(" ", "").isdigit())


def _extends_name(title: str, name: str) -> bool:
    """Whether a title holding ``name`` is still a note about it: its other words extend the name
    (capitalised words, numbers: "Friedrich Hayek", "2018 Winter Olympics"), or the title has no
    capitals to tell by ("python tips"). "Jung Joon Young 1st mini album", "Ed Roland discography", "Science
    News for Students" are notes about something of the name, which the note about it does not
    replace (measured: docs/benchmarks.md "Answers: abstention")."""
    if title == title.lower():
        return True
    held = set(name_key(name).split())
    others = [w for w in WORD.findall(QUALIFIER.sub(" ", title)) if name_key(w) not in held]
    return all(w[:1].isupper() or w[:1].isdigit() for w in others)


def is_about(name: str, titles: Sequence[str], question: str = "") -> bool:
    """Whether one of ``titles`` is a note about ``name``: equal, the title held in the name, or the
    name held in the title as whole words when the question says the whole title ("Welcome to the
    Show" for the names "Welcome", "Show") or the title's other words extend the name (``_extends_name``)."""
    key = f" {name_key(name)} "
    asked = f" {name_key(question)} "
    for title in titles:
        for t in _title_keys(title):
            if t == key or (len(t) >= MIN_HELD_CHARS + 2 and t in key):
                return True
            if len(key) >= MIN_HELD_CHARS + 2 and key in t and (t in asked or _extends_name(title, name)):
                return True
    return False


MentionCount = Callable[[str], int]  # a name -> how many passages of the folder say it (up to a cap)


def names_without_note(question: str, passages: Sequence[Passage], common: MentionCount | None = None,
                       common_from: int = 0) -> tuple[list[str], int]:
    """The question's names that no passage's note is about, and how many names it gives; a name
    that ``common_from`` or more passages of the folder say (``common``) is the folder's setting
    ("Linux" in a folder of command pages, "Dendron" in its own docs), not a thing with a note of
    its own, and is not counted."""
    names = question_names(question)
    if common is not None and common_from > 0:
        names = [n for n in names if common(n) < common_from]
    titles = [p.title for p in passages] + [f for p in passages for f in folders_of(p.path)]
    return [n for n in names if not is_about(n, titles, question)], len(names)


NEAR_SPELLING = 0.85  # a word this alike (difflib ratio) to one the folder says is a misspelling of it
SPELLING_PREFIX = 4  # a misspelling is looked for among the folder's words that start as it does
WordsStarting = Callable[[str], set[str]]  # a prefix -> the folder's words (lower case) that start with it


def script_names(question: str) -> list[str]:
    """The names of a question in any language that its script tells, not its capitalisation: keys of
    code, acronyms and, in a Chinese or Japanese question, the words in Latin letters; first occurrence kept."""
    names = question_identifiers(question) + ACRONYM.findall(question)
    if has_cjk(question):
        names += [w for w in LATIN_WORD.findall(question) if len(w) >= 3]
    return list(dict.fromkeys(names))


def unmentioned_names(question: str, common: MentionCount | None, passages: Sequence[Passage] = (),
                      starting: WordsStarting | None = None, english: bool = True) -> list[str]:
    """The question's names one of whose words no passage of the folder says ([] without a way to
    count). Word by word: "Windows PC" is mentioned in a folder that says "Windows" and "PC" apart,
    "Cloudflare Pages" is not in one that never says "Cloudflare". A word spelt nearly as the passages
    found or the folder (``starting``) say one is a misspelling, not a missing thing ("Margaraviate").
    ``english`` False: only the names ``script_names`` finds."""
    if common is None:
        return []
    found: set[str] | None = None  # the words of the passages found, read once and only when needed
    out = []
    names = question_names(question) + question_identifiers(question) if english else script_names(question)
    for name in names:
        for word in WORD.findall(name):
            if len(word) < 3 or word.lower() in CONTENT_STOPWORDS or common(word) > 0:
                continue
            if found is None:
                found = {w.lower() for p in passages for w in WORD.findall(p.text)}
            if not _misspelt(word.lower(), found, starting):
                out.append(name)
                break
    return out


def question_identifiers(question: str) -> list[str]:
    """The keys of code or configuration a question gives ("no_std", "directChildOnly"), first occurrence kept."""
    tokens = (t.strip(",.?!;:\"'()[]") for t in question.split())
    return list(dict.fromkeys(t for t in tokens if t and IDENTIFIER.fullmatch(t)))


def _misspelt(word: str, found: set[str], starting: WordsStarting | None) -> bool:
    said = found | starting(word[:SPELLING_PREFIX]) if starting is not None else found
    return any(abs(len(w) - len(word)) <= 2 and difflib.SequenceMatcher(None, word, w).ratio() >= NEAR_SPELLING
               for w in said)


@dataclass(frozen=True)
class EvidenceCheck:
    """Whether the evidence is too weak to answer from, and why (empty when it is not)."""

    reason: str = ""

    @property
    def weak(self) -> bool:
        return bool(self.reason)


def check_evidence(question: str, passages: Sequence[Passage], best: float | None,
                   settings: AnswerSettings, min_share_about: float = MIN_SHARE_ABOUT,
                   common: MentionCount | None = None, english: bool = True,
                   starting: WordsStarting | None = None) -> EvidenceCheck:
    """The three rules of the module docstring; ``best``: the best evidence sentence's cosine, None if none.
    ``english`` False (a question in another language: localrag/language.py): rule 2 is not applied, and rule 3
    reads only the names ``script_names`` finds."""
    if best is None:
        return EvidenceCheck("no evidence sentences") if settings.abstain_below > 0 else EvidenceCheck()
    rule_3 = settings.abstain_unmentioned
    unmentioned = unmentioned_names(question, common, passages, starting, english=english) if rule_3 else []
    if unmentioned:
        shown = ", ".join(f"“{n}”" for n in unmentioned[:3])
        return EvidenceCheck(f"no note of the folder mentions {shown}")
    if settings.abstain_below > 0 and best < settings.abstain_below:
        return EvidenceCheck(f"the best evidence sentence scores {best:.2f} < answer.abstain_below "
                             f"{settings.abstain_below:g}")
    if english and settings.abstain_unnamed_below > 0 and best < settings.abstain_unnamed_below:
        missing, named = names_without_note(question, passages, common, settings.abstain_common_from)
        if named and (named - len(missing)) < min_share_about * named:
            shown = ", ".join(f"“{n}”" for n in missing[:3])
            return EvidenceCheck(f"no note found is about {shown}, and the best evidence sentence scores "
                                 f"{best:.2f} < answer.abstain_unnamed_below {settings.abstain_unnamed_below:g}")
    return EvidenceCheck()
