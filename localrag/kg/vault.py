"""Vault semantics in the graph: links resolved to notes, embeds, aliases, tags and properties.

No model is involved and nothing is guessed: each of these is written by the note's author.

- ``[[note|shown]]``, ``[[note#heading]]``, ``[[note^block]]`` and relative Markdown links
  resolve to a note (Obsidian's rule: a name matches the notes with that file name, a path
  matches the notes whose path ends with it; among several, the one in the linking note's
  folder, else the one with the shortest path; then a note with that alias) and become the
  fact (this title, links to, that title). An unresolved wikilink keeps its own name.
- ``![[note]]`` becomes (this title, embeds, that title), and the embedding passage mentions
  the embedded note's title entity, so the embedded text is one hop away in the graph
  without being indexed twice.
- ``aliases`` become (title, is also called, alias) facts that ``Graph.aliases`` treats as
  certain coreference, and every passage of the note mentions them; a query or link that
  names an alias lands on the note.
- ``tags`` (front matter and inline ``#tag``) become (title, has tag, tag) facts; other
  scalar properties (title, key, value) facts with origin "property".
"""

from __future__ import annotations

import posixpath
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from localrag.ingest.markdown import NoteLink, inline_refs, is_note_path
from localrag.text.normalise import normalise_phrase
from localrag.records import Passage, Triple
from localrag.store.documents import link_target
from localrag.store.vault import ALIAS, FILE_NAME, NamedNote, link_key, note_path_key

if TYPE_CHECKING:
    from localrag.store import Store

LINK_RELATION = "links to"
EMBED_RELATION = "embeds"
ALIAS_RELATION = "is also called"
TAG_RELATION = "has tag"
MAX_PROPERTY_CHARS = 100  # a longer value (a pasted paragraph) is not an entity
_NOT_ENTITIES = frozenset("true false yes no null none".split())


@dataclass
class NoteSignals:
    triples: list[Triple] = field(default_factory=list)
    mentions: list[str] = field(default_factory=list)

    def add(self, head: str, relation: str, tail: str, origin: str) -> None:
        if head and tail and relation and head != tail:
            self.triples.append(Triple(head, relation, tail, origin))


def title_entity(title: str) -> str:
    return normalise_phrase(title)


def fallback_title(path: str) -> str:
    stem = posixpath.splitext(posixpath.basename(path))[0]
    return stem.replace("-", " ").replace("_", " ").strip()


def tag_entity(tag: str) -> str:
    return normalise_phrase(tag.replace("/", " "))


# -- resolution -------------------------------------------------------------------------------


def pick_note(candidates: list[NamedNote], source_path: str) -> NamedNote | None:
    """Same folder as the linking note first, then the shortest path, then alphabetical."""
    if not candidates:
        return None
    folder = posixpath.dirname(source_path)
    return min(candidates, key=lambda c: (posixpath.dirname(c.path) != folder, c.path.count("/"), len(c.path), c.path))


def resolve_wikilink(store: "Store", target: str, source_path: str,
                     named_by_key: dict[str, list[NamedNote]] | None = None) -> NamedNote | None:
    """The note ``[[target]]`` in ``source_path`` points to (``named_by_key``: the notes of each link
    key, read beforehand for all of a passage's links)."""
    key = link_key(target)
    if not key:
        return None
    named = named_by_key[key] if named_by_key is not None and key in named_by_key else store.vault.notes_named(key)
    files = [n for n in named if n.kind == FILE_NAME]
    wanted = note_path_key(target.strip().lstrip("/"))
    if "/" in wanted:
        relative = posixpath.normpath(posixpath.join(posixpath.dirname(source_path.lower()), wanted))
        exact = [n for n in files if note_path_key(n.path) in (wanted, relative)]
        if exact:
            return pick_note(exact, source_path)
        files = [n for n in files if note_path_key(n.path).endswith("/" + wanted)]
    if files:
        return pick_note(files, source_path)
    if "/" not in wanted:
        return pick_note([n for n in named if n.kind == ALIAS], source_path)
    return None


def resolve_markdown(store: "Store", href: str, source_path: str) -> str | None:
    """The title of the note a relative Markdown link points to, if it is indexed."""
    doc = store.docs.get(link_target(source_path, href))
    return doc.title if doc else None


def linked_paths(store: "Store", text: str, source_path: str) -> list[str]:
    """The indexed notes ``text`` (written in ``source_path``) links to, in the order it links them:
    Markdown links to note files and wikilinks, not web pages, attachments or places in the same note."""
    out: list[str] = []
    for link in inline_refs(text).links:
        if link.markdown:
            path = link_target(source_path, link.target) if is_note_path(link.target) else ""
            if path and store.docs.get(path) is None:
                path = ""
        else:
            note = resolve_wikilink(store, link.target, source_path) if link.target else None
            path = note.path if note is not None else ""
        if path and path != source_path and path not in out:
            out.append(path)
    return out


@dataclass(frozen=True)
class ResolvedLink:
    link: NoteLink
    title: str  # the target's title entity (its own name when unresolved)
    resolved: bool


def resolve_links(store: "Store", links: tuple[NoteLink, ...], source_path: str) -> list[ResolvedLink]:
    out: list[ResolvedLink] = []
    keys = [key for link in links if not link.markdown and link.target for key in [link_key(link.target)] if key]
    named_by_key = store.vault.notes_named_many(keys) if len(keys) > 1 else None  # one query, not one a link
    for link in links:
        if link.markdown:
            if not is_note_path(link.target):
                continue  # an attachment or a web page, not a note
            found = resolve_markdown(store, link.target, source_path)
            out.append(ResolvedLink(link, title_entity(found or fallback_title(link.target)), found is not None))
            continue
        if not link.target:
            continue  # [[#heading]]: a place in this note
        note = resolve_wikilink(store, link.target, source_path, named_by_key)
        if note is None and "." in link.target.rsplit("/", 1)[-1] and not is_note_path(link.target) and link.embed:
            continue  # ![[picture.png]]: an attachment
        title = title_entity(note.title) if note else normalise_phrase(link.target)
        out.append(ResolvedLink(link, title, note is not None))
    return out


# -- one passage's signals ----------------------------------------------------------------------


def passage_signals(store: "Store", p: Passage, skip_properties: frozenset[str]) -> NoteSignals:
    """Everything the note's own structure says about this passage: its title mention, link and
    embed facts, and the note's aliases, tags and properties."""
    title = title_entity(p.title)
    out = NoteSignals(mentions=[title] if title else [])
    if not title:
        return out
    refs = inline_refs(p.text)
    for r in resolve_links(store, refs.links, p.path):
        if r.link.embed:
            out.add(title, EMBED_RELATION, r.title, "embed")
            if r.resolved and r.title != title:
                out.mentions.append(r.title)
        else:
            out.add(title, LINK_RELATION, r.title, "link")
    meta = store.vault.meta(p.doc_id)
    tags = list(refs.tags)
    if meta is not None:
        for alias in meta.alias_names:
            name = normalise_phrase(alias)
            if name and name != title:
                out.add(title, ALIAS_RELATION, name, "alias")
                out.mentions.append(name)
        tags = list(meta.tags) + [t for t in tags if t not in meta.tags]
        for key, value in meta.properties:
            if key.lower() in skip_properties or len(value) > MAX_PROPERTY_CHARS:
                continue
            tail = normalise_phrase(value)
            if tail.replace(" ", "").isdigit() or tail in _NOT_ENTITIES:
                continue  # booleans, numbers and dates would join unrelated notes at one node
            out.add(title, normalise_phrase(key), tail, "property")
    for tag in tags:
        out.add(title, TAG_RELATION, tag_entity(tag), "tag")
    seen: set[tuple[str, str, str]] = set()
    out.triples = [t for t in out.triples if not ((t.head, t.relation, t.tail) in seen or seen.add((t.head, t.relation, t.tail)))]
    out.mentions = list(dict.fromkeys(out.mentions))
    return out


