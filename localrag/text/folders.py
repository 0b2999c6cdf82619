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
    """A folder name a question says: every folder of that name (``linux/`` and ``pages.de/linux/`` are
    one name) and the share of all notes under them."""

    name: str  # as the first such folder spells it: "windows", "Acme Corp"
    paths: tuple[str, ...]  # the folders of that name ("pages/linux", "pages.de/linux"), no trailing slash
    share: float  # notes under any of them / all notes

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
    """The folder names ``question`` says (module doc), rarest first, at most ``MAX_NAMED``;
    ``notes_per_folder``: each folder's path -> the notes under it; ``total``: all notes."""
    if total <= 0:
        return []
    said = list(name_words(question))
    by_name: dict[tuple[str, ...], list[str]] = {}
    for path in sorted(notes_per_folder):
        wanted = name_words(path.rsplit("/", 1)[-1])
        if not wanted or all(w in CONTENT_STOPWORDS or len(w) < 2 for w in wanted) or not _says_in_order(said, wanted):
            continue
        paths = by_name.setdefault(wanted, [])
        if not any(path.startswith(outer + "/") for outer in paths):  # "linux/linux" counts once
            paths.append(path)
    found = [NamedFolder(paths[0].rsplit("/", 1)[-1], tuple(paths), sum(notes_per_folder[p] for p in paths) / total)
             for paths in by_name.values()]
    found.sort(key=lambda f: (f.share, f.name))
    return found[:MAX_NAMED]
