"""Graph signals that need no LLM: the note's title and its links to other notes
(docs/design.md "Graph signals that need no model").

Every passage mentions its document's title entity, and a [[wikilink]] or a Markdown
link to another note becomes the fact (this title, "links to", that title). A passage
that names another note's title (a span equal to it) then meets that note's passages at
the same entity: this is what makes multi-hop over titles work. kg/vault.py resolves
links against the index (names, aliases, embeds, tags, properties); this module is the
store-free part.
"""

from __future__ import annotations

from typing import Callable

from localrag.ingest.markdown import is_note_path, note_links
from localrag.text.normalise import normalise_phrase
from localrag.kg.vault import LINK_RELATION, fallback_title, title_entity
from localrag.records import Triple
from localrag.store.documents import link_target

__all__ = ["LINK_RELATION", "fallback_title", "link_triples", "title_entity"]

TitleOf = Callable[[str], str | None]  # a folder-relative path -> that document's title, if indexed


def link_triples(text: str, title: str, doc_path: str = "", title_of: TitleOf | None = None) -> list[Triple]:
    """(this title, links to, target title) for each link to another note in ``text``, without an
    index: a Markdown link names a file (its title when ``title_of`` knows it, else its name), a
    [[wikilink]] its target by itself."""
    source = title_entity(title)
    if not source:
        return []
    targets: list[str] = []
    for link in note_links(text):
        if link.markdown and is_note_path(link.target):
            found = title_of(link_target(doc_path, link.target)) if title_of else None
            targets.append(normalise_phrase(found or fallback_title(link.target)))
        elif not link.markdown and link.target:
            targets.append(normalise_phrase(link.target))
    return [Triple(source, LINK_RELATION, t, "link") for t in dict.fromkeys(targets) if t and t != source]
