"""Knowledge-graph test helpers: small note folders, settings, graph snapshots (fixtures: conftest_kg)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Mapping, Sequence

from localrag.api import Index
from localrag.config import Settings, load_settings
from localrag.records import Triple

NOTES = {
    "ada-lovelace.md": (
        "# Ada Lovelace\n\n"
        "Ada Lovelace was born in London in 1815. She worked with Charles Babbage on the Analytical Engine.\n\n"
        "Her notes were translated by Luigi Menabrea. See [[Charles Babbage]].\n"
    ),
    "charles-babbage.md": (
        "# Charles Babbage\n\n"
        "Charles Babbage designed the Difference Engine in London. He was a professor at Cambridge University.\n"
    ),
    "mary-somerville.md": (
        "# Mary Somerville\n\n"
        "Mary Somerville tutored Ada Lovelace. She wrote \"On the Connexion of the Physical Sciences\" in 1834.\n\n"
        "She met [Charles Babbage](charles-babbage.md) in London.\n"
    ),
}


# four towns and places, one linking another by [[wikilink]] (the graph fusion and PPR tests)
TOWN_NOTES = {
    "kallendar-workshop.md": "# Kallendar Workshop\n\nThe Kallendar Workshop is a converted tannery in [[Orlinsford]].\n",
    "orlinsford.md": "# Orlinsford\n\nOrlinsford is a market town on the river Omsund, known for its stone bridge.\n",
    "quillhaven.md": "# Quillhaven\n\nQuillhaven is a coastal town with a lighthouse called the Tessaly Light.\n",
    "bakery.md": "# The Harebell Oven\n\nThe Harebell Oven is a bakery that sells a rye and plum loaf.\n",
}


def write_triples(index: Index, triples: Mapping[str, Sequence[tuple[str, str, str]]]) -> None:
    """Hand-written facts as the extraction of each named one-passage note (embedded with the index's embedder)."""
    for name, facts in triples.items():
        (p,) = index.store.docs.passages_of(name)
        index.store.graph.write_extraction(p.id, [Triple(*t) for t in facts], [], index.embedder.encode)


def write_notes(folder: Path, notes: dict[str, str] = NOTES) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in notes.items():
        (folder / name).write_text(text, encoding="utf-8")
    return folder


def indexed_folder(folder: Path, notes: dict[str, str], embedder) -> Path:
    """``notes`` written to ``folder`` and indexed there (fast phase, default settings), the index closed:
    a module fixture builds it once and each test works on a copy."""
    index = Index(load_settings(write_notes(folder, notes), env={}), embedder)
    index.sync()
    index.close()
    return folder


def kg_settings(folder: Path, **overrides) -> Settings:
    values = {"index.extractor": "rules"}
    values.update(overrides)
    return load_settings(folder, values, env={})


@dataclass(frozen=True)
class GraphSnapshot:
    """The graph by names (ids differ between databases), for comparing two indexes."""

    entities: frozenset[str]
    facts: frozenset[tuple[str, str, str]]
    sources: frozenset[tuple[tuple[str, str, str], str]]  # (fact, passage as "path#ordinal")
    mentions: frozenset[tuple[str, str]]  # (entity, passage as "path#ordinal")
    coref: frozenset[tuple[str, str]]
    queued: int


def snapshot(index: Index) -> GraphSnapshot:
    g = index.store.graph
    names = g.entities.all()
    shas = {p.id: f"{p.path}#{p.ordinal}" for p in index.store.docs.passages(index.store.docs.all_passage_ids())}
    facts = {f.id: (f.head_name, f.relation, f.tail_name) for f in g.facts.all()}
    return GraphSnapshot(
        frozenset(names.values()),
        frozenset(facts.values()),
        frozenset((facts[f], shas[p]) for f, p, _ in g.facts.all_sources()),
        frozenset((names[e], shas[p]) for e, p in g.facts.all_mentions()),
        frozenset((names[e], names[a]) for e, a, _ in g.coref.all()),
        g.queue.length(),
    )


def assert_healthy(index: Index) -> None:
    assert index.store.integrity_check() == "ok"
    assert all(n == 0 for n in index.store.graph.orphans().values()), index.store.graph.orphans()
