"""Graph signals that need no LLM (DESIGN.md): the note's title and its links to other notes.

Every passage mentions its document's title entity, and a [[wikilink]] or a Markdown
link to another note becomes the fact (this title, "links to", that title). A passage
that names another note's title (a span equal to it) then meets that note's passages at
the same entity: this is what makes multi-hop over titles work.
"""

from __future__ import annotations

import posixpath
from typing import Callable

from localrag.kg.normalise import normalise_phrase
from localrag.kg.spans import markdown_links, wikilinks
from localrag.records import Triple

LINK_RELATION = "links to"
NOTE_SUFFIXES = (".md", ".markdown", ".txt", ".rst", ".org", ".html", ".htm", ".pdf")

TitleOf = Callable[[str], str | None]  # a folder-relative path -> that document's title, if indexed


def title_entity(title: str) -> str:
    return normalise_phrase(title)


def fallback_title(path: str) -> str:
    """The title the loader gives a file without a heading: its name, dashes and underscores as spaces."""
    stem = posixpath.splitext(posixpath.basename(path))[0]
    return stem.replace("-", " ").replace("_", " ").strip()


def link_triples(text: str, title: str, doc_path: str = "", title_of: TitleOf | None = None) -> list[Triple]:
    """(this title, links to, target title) for each link to another note in ``text``."""
    source = title_entity(title)
    if not source:
        return []
    targets: list[str] = [normalise_phrase(name) for name in wikilinks(text)]
    for _, target in markdown_links(text):
        if not target.lower().endswith(NOTE_SUFFIXES):
            continue
        resolved = posixpath.normpath(posixpath.join(posixpath.dirname(doc_path), target))
        found = title_of(resolved) if title_of else None
        targets.append(normalise_phrase(found or fallback_title(target)))
    out: list[Triple] = []
    for target in dict.fromkeys(targets):
        if target and target != source:
            out.append(Triple(source, LINK_RELATION, target, "link"))
    return out
