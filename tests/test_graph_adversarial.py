"""The graph phase on adversarial notes: 20,000 links in one note, every name alike.

The entity names get vectors that are all within cosine ~0.9 of each other (the worst case for
pseudo-coreference: every name is above the 0.8 threshold of every other), from a cheap stand-in
for the embedder, so what is measured is the graph phase's own work, not MiniLM's (embedding
20,000 names takes MiniLM tens of seconds on two cores: docs/benchmarks.md "Scale: adversarial
notes"). Before the candidate cap and the floors, this note took 168 s of coreference
alone; each new name was rescored against, and offered to, every other.
"""

from __future__ import annotations

import hashlib
import time

import numpy as np
from kg_helpers import kg_settings

from localrag.api import Index
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

    def _one(self, text: str) -> np.ndarray:
        seed = int.from_bytes(hashlib.sha256(text.encode("utf-8", "surrogatepass")).digest()[:8], "little")
        v = self._base + 0.3 * np.random.default_rng(seed).standard_normal(self.dim) / np.sqrt(self.dim)
        return (v / np.linalg.norm(v)).astype(np.float32)

    def encode(self, texts, batch_size: int = 32, *, threads: int = 0) -> np.ndarray:
        return np.stack([self._one(t) for t in texts]) if texts else np.zeros((0, self.dim), dtype=np.float32)

    def encode_one(self, text: str) -> np.ndarray:
        return self._one(text)


def test_a_note_of_20k_links_goes_through_the_graph_phase_with_bounded_coreference(tmp_path, monkeypatch):
    folder = tmp_path / "notes"
    folder.mkdir()
    (folder / "links.md").write_text("# Links\n\n" + " ".join(f"[[Note {i}]]" for i in range(LINKS)) + "\n")
    scored: list[int] = []
    rescored = EntityMatrix._rescored

    def counting(self, eid, cand, k, threshold):
        scored.append(len(cand))
        return rescored(self, eid, cand, k, threshold)

    monkeypatch.setattr(EntityMatrix, "_rescored", counting)
    index = Index(kg_settings(folder), embedder=AlikeEmbedder())
    try:
        index.sync()
        started = time.perf_counter()
        report = index.extract_graph()
        seconds = time.perf_counter() - started
        facts = index.store.graph.facts.all()
        coref = index.store.graph.coref.all()
    finally:
        index.close()
    links = [f for f in facts if f.relation == LINK_RELATION]
    assert len(links) == LINKS and {f.tail_name for f in links} == {f"note {i}" for i in range(LINKS)}
    assert len(scored) >= LINKS and max(scored) <= coref_module.CANDIDATE_CAP  # before: up to 20,000 each
    per_entity: dict[int, int] = {}
    for entity, _, sim in coref:
        per_entity[entity] = per_entity.get(entity, 0) + 1
        assert sim >= 0.8
    assert len(per_entity) >= LINKS and max(per_entity.values()) == 4  # every name has its k - 1 aliases
    print(f"\n20,000 links: graph phase {seconds:.1f} s wall, steps "
          f"{ {k: round(v, 1) for k, v in report.steps.seconds.items()} }, {len(coref):,} coref rows")
