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
from localrag.store.documents import link_target

LINK_RELATION = "links to"
NOTE_SUFFIXES = (".md", ".markdown", ".txt", ".rst", ".org", ".html", ".htm", ".pdf")

TitleOf = Callable[[str], str | None]  # a folder-relative path -> that document's title, if indexed


def title_entity(title: str) -> str:
    return normalise_phrase(title)


def fallback_title(path: str) -> str:
    """The title the loader gives a file without a heading: its name, dashes and underscores as spaces."""
    stem = posixpath.splitext(posixpath.basename(path))[0]
    return stem.replace("-", " ").replace("_", " ").strip()


def note_link_hrefs(text: str) -> list[str]:
    """Targets of the Markdown links to other notes in ``text``, as written (no #anchor), distinct, in order.

    The fast phase stores them with each passage (``passage_links``), so a change to a target
    note re-queues exactly the passages whose links resolve to it."""
    return list(dict.fromkeys(href for _, href in markdown_links(text) if href.lower().endswith(NOTE_SUFFIXES)))


def link_triples(text: str, title: str, doc_path: str = "", title_of: TitleOf | None = None) -> list[Triple]:
    """(this title, links to, target title) for each link to another note in ``text``.

    A Markdown link names a file: its target's title when that file is indexed, else the file's
    name. A [[wikilink]] names its target by itself, so it does not depend on any document."""
    source = title_entity(title)
    if not source:
        return []
    targets: list[str] = [normalise_phrase(name) for name in wikilinks(text)]
    for href in note_link_hrefs(text):
        found = title_of(link_target(doc_path, href)) if title_of else None
        targets.append(normalise_phrase(found or fallback_title(href)))
    out: list[Triple] = []
    for target in dict.fromkeys(targets):
        if target and target != source:
            out.append(Triple(source, LINK_RELATION, target, "link"))
    return out
