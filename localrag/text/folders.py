"""The folders a note lies in, and the folders a question names.

A note's folders say what it is about as its title does ("windows/ping.md", "Recipes/bread.md"), but
neither its text nor its title says them, so neither the vectors nor BM25 see them. A question names a
folder when the words of the folder's own name stand in it, in order, as whole words ("… ping send on
Windows …" names ``windows/``, "… my cisco ios router …" names ``cisco-ios/``); a folder whose name is
only function words ("to", "misc" is not one) is never named.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Mapping

from localrag.text.stopwords import CONTENT_STOPWORDS

_WORD = re.compile(r"\w+")
MAX_NAMED = 3  # a question naming more folders than this keeps the rarest


@dataclass(frozen=True)
class NamedFolder:
    """A folder a question names: its path in the notes folder and the share of all notes under it."""

    path: str  # "windows", "Projects/Acme" (no trailing slash)
    share: float  # notes under it (its subfolders' included) / all notes

    @property
    def rarity(self) -> float:
        """1 − its share: a folder holding most notes (tldr's common/, 62 %) says little of a question."""
        return 1.0 - self.share


def folders_of(path: str) -> list[str]:
    """The folders a note lies in, outermost first, each as its own name ("a/b/c.md" -> ["a", "b"])."""
    return [part for part in path.split("/")[:-1] if part]


def name_words(name: str) -> tuple[str, ...]:
    return tuple(w.lower() for w in _WORD.findall(name))


def _says_in_order(said: list[str], wanted: tuple[str, ...]) -> bool:
    n = len(wanted)
    return any(tuple(said[i:i + n]) == wanted for i in range(len(said) - n + 1))


def named_folders(question: str, notes_per_folder: Mapping[str, int], total: int) -> list[NamedFolder]:
    """The folders ``question`` names (module doc), rarest first, at most ``MAX_NAMED``;
    ``notes_per_folder``: each folder's path -> the notes under it; ``total``: all notes."""
    if total <= 0:
        return []
    said = list(name_words(question))
    found: list[NamedFolder] = []
    for path, notes in notes_per_folder.items():
        wanted = name_words(path.rsplit("/", 1)[-1])
        if not wanted or all(w in CONTENT_STOPWORDS or len(w) < 2 for w in wanted):
            continue
        if _says_in_order(said, wanted):
            found.append(NamedFolder(path, notes / total))
    found.sort(key=lambda f: (f.share, f.path))
    return found[:MAX_NAMED]
