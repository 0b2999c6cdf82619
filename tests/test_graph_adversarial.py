"""The graph phase on adversarial notes: 20,000 links in one note, every name alike.

The entity names get vectors that are all within cosine ~0.9 of each other (the worst case for
pseudo-coreference: every name is above the 0.8 threshold of every other), from a cheap stand-in
for the embedder, so what is measured is the graph phase's own work, not MiniLM's. The first test
gives every name its own vector (the family sharing of kg/name_families.py turned off), so the
candidate cap and the floors are what bound coreference: before them this note took 168 s of
coreference alone; each new name was rescored against, and offered to, every other. The second
runs the note as indexing does: the names differ only in their numbers, so a batch's members
share their family's vector, few names reach the embedder and coreference runs once a vector.
"""

from __future__ import annotations

import hashlib
import time

import numpy as np
from kg_helpers import kg_settings

from localrag.api import Index
from localrag.kg import name_families
from localrag.kg.vault import LINK_RELATION
from localrag.store import coref as coref_module
from localrag.store.entity_matrix import EntityMatrix

LINKS = 20_000


class AlikeEmbedder:
    """Every text's vector is one shared direction plus a little noise of its own (unit length)."""

    id = "alike-test-embedder"
    dim = 384

    def __init__(self) -> None:
        self._base = np.random.default_rng(0).standard_normal(self.dim)
        self._base /= np.linalg.norm(self._base)
        self.encoded = 0  # texts embedded

    def _one(self, text: str) -> np.ndarray:
        seed = int.from_bytes(hashlib.sha256(text.encode("utf-8", "surrogatepass")).digest()[:8], "little")
        v = self._base + 0.3 * np.random.default_rng(seed).standard_normal(self.dim) / np.sqrt(self.dim)
        return (v / np.linalg.norm(v)).astype(np.float32)

    def encode(self, texts, batch_size: int = 32, *, threads: int = 0) -> np.ndarray:
        self.encoded += len(texts)
        return np.stack([self._one(t) for t in texts]) if texts else np.zeros((0, self.dim), dtype=np.float32)

    def encode_one(self, text: str) -> np.ndarray:
        return self._one(text)


def _links_note(tmp_path):
    folder = tmp_path / "notes"
    folder.mkdir()
    (folder / "links.md").write_text("# Links\n\n" + " ".join(f"[[Note {i}]]" for i in range(LINKS)) + "\n")
    return folder


def _graph_phase(folder, embedder, monkeypatch):
    """(report, seconds, facts, coref rows, candidates scored per rescoring) of the note's graph phase."""
    scored: list[int] = []
    rescored = EntityMatrix._rescored

    def counting(self, eid, cand, k, threshold):
        scored.append(len(cand))
        return rescored(self, eid, cand, k, threshold)

    monkeypatch.setattr(EntityMatrix, "_rescored", counting)
    index = Index(kg_settings(folder), embedder=embedder)
    try:
        index.sync()
        embedder.encoded = 0
        started = time.perf_counter()
        report = index.extract_graph()
        seconds = time.perf_counter() - started
        facts = index.store.graph.facts.all()
        coref = index.store.graph.coref.all()
    finally:
        index.close()
    links = [f for f in facts if f.relation == LINK_RELATION]
    assert len(links) == LINKS and {f.tail_name for f in links} == {f"note {i}" for i in range(LINKS)}
    for _, _, sim in coref:
        assert sim >= 0.8
    print(f"\n20,000 links: graph phase {seconds:.1f} s wall, steps "
          f"{ {k: round(v, 1) for k, v in report.steps.seconds.items()} }, {len(coref):,} coref rows, "
          f"{embedder.encoded:,} names embedded, {len(scored):,} rescorings")
    return report, seconds, coref, scored


def aliases_per_entity(coref) -> dict[int, int]:
    per_entity: dict[int, int] = {}
    for entity, _, _ in coref:
        per_entity[entity] = per_entity.get(entity, 0) + 1
    return per_entity


def test_a_note_of_20k_links_with_a_vector_a_name_has_bounded_coreference(tmp_path, monkeypatch):
    monkeypatch.setattr(name_families, "SHARED_FAMILY_MIN", LINKS + 1)  # every name its own vector
    embedder = AlikeEmbedder()
    _, _, coref, scored = _graph_phase(_links_note(tmp_path), embedder, monkeypatch)
    assert embedder.encoded >= LINKS
    assert len(scored) >= LINKS and max(scored) <= coref_module.CANDIDATE_CAP  # not all 20,000 alike names
    per_entity = aliases_per_entity(coref)
    assert len(per_entity) >= LINKS and max(per_entity.values()) == 4  # every name has its k - 1 aliases


def test_a_note_of_20k_numbered_links_embeds_a_few_names_a_batch_and_finds_coreference_once_a_vector(
        tmp_path, monkeypatch):
    embedder = AlikeEmbedder()
    _, _, coref, scored = _graph_phase(_links_note(tmp_path), embedder, monkeypatch)
    # each batch of passages embeds its family's sample and its other names (20,026 names before)
    assert embedder.encoded < LINKS / 50
    assert len(scored) < LINKS / 50  # one rescoring a distinct vector, not one a name
    per_entity = aliases_per_entity(coref)
    assert len(per_entity) >= LINKS and max(per_entity.values()) == 4  # still the k - 1 aliases each
