"""Names that differ only in their numbers: one vector for a large family, and coreference over
entities that share a vector is still the search over all pairs (real SQLite + sqlite-vec, real
MiniLM)."""

from __future__ import annotations

import numpy as np
import pytest

from localrag.kg.name_families import FAMILY_SAMPLE, SHARED_FAMILY_MIN, embed_names, family_key, shared_families
from localrag.store import Store
from localrag.store.documents import NewPassage


def test_a_family_is_the_name_with_its_numbers_read_as_one_mark() -> None:
    assert family_key("note 17") == family_key("note 20000") == "note #"
    assert family_key("2024 01 05") == "# # #"
    assert family_key("lanternfish harbour gate 04213") == "lanternfish harbour gate #"
    assert family_key("wenna strake") == ""  # no number: no family
    names = [f"note {i}" for i in range(SHARED_FAMILY_MIN)] + [f"chapter {i}" for i in range(SHARED_FAMILY_MIN - 1)]
    assert list(shared_families(names)) == ["note #"]  # one member short of sharing: chapters


class Counting:
    """MiniLM, counting the names it is asked to embed."""

    def __init__(self, embedder) -> None:
        self.embedder = embedder
        self.asked: list[str] = []

    def __call__(self, names: list[str]) -> np.ndarray:
        self.asked += names
        return self.embedder.encode(names, batch_size=256)


def test_a_large_family_shares_its_centre_and_everything_else_keeps_its_own_vector(embedder) -> None:
    gates = [f"lanternfish harbour gate {i:05d}" for i in range(200)]
    others = ["wenna strake", "chapter 1", "chapter 2", "orlinsford"]
    names = others[:2] + gates + others[2:]
    encode = Counting(embedder)
    vectors = embed_names(names, encode)
    assert len(encode.asked) == len(others) + FAMILY_SAMPLE  # not one call a gate
    own = {n: v for n, v in zip(encode.asked, embedder.encode(encode.asked, batch_size=256))}
    for name, vec in zip(names, vectors):
        if name in own:  # the other names and the family's sample: their own vectors
            assert float(vec @ own[name]) > 0.9999
    shared = [vec for name, vec in zip(names, vectors) if name not in own]
    assert len(shared) == len(gates) - FAMILY_SAMPLE and all(np.array_equal(v, shared[0]) for v in shared)
    assert abs(float(np.linalg.norm(shared[0])) - 1.0) < 1e-5
    centre = np.mean([own[g] for g in gates if g in own], axis=0)
    assert float(shared[0] @ (centre / np.linalg.norm(centre))) > 0.9999
    real = embedder.encode(gates[100:101])[0]  # what the shared vector stands for
    assert float(real @ shared[0]) > 0.95


def test_the_sample_and_the_centre_do_not_depend_on_the_order_of_the_names(embedder) -> None:
    gates = [f"gate {i}" for i in range(40)]
    forward = dict(zip(gates, embed_names(gates, Counting(embedder))))
    backward = dict(zip(gates[::-1], embed_names(gates[::-1], Counting(embedder))))
    for gate in gates:
        assert float(forward[gate] @ backward[gate]) > 0.9999


def test_small_calls_are_embedded_exactly(embedder) -> None:
    names = [f"note {i}" for i in range(SHARED_FAMILY_MIN - 1)]
    encode = Counting(embedder)
    vectors = embed_names(names, encode)
    assert encode.asked == names
    assert np.allclose(vectors, embedder.encode(names, batch_size=256), atol=1e-5)


# -- coreference over shared vectors ---------------------------------------------------------------

@pytest.fixture
def store(embedder):
    s = Store(":memory:", dim=embedder.dim, embedder_id=embedder.id)
    yield s
    s.close()


def _passages(store: Store, count: int) -> list[int]:
    with store.transaction():
        doc = store.docs.insert("a.md", 10, 1, "a.md", "markdown", "a.md")
        return [store.docs.insert_passage(doc, "a.md", NewPassage(i, "", f"p{i}", f"a-{i}", i + 1, i + 1, 5))
                for i in range(count)]


def _all_pairs(store: Store, k: int, threshold: float) -> set[tuple[int, int]]:
    """Coreference by brute force: each entity's k - 1 best others by (similarity, id), >= threshold
    (with ties at 1.0 beyond k, an entity need not rank among its own top k)."""
    ids = list(store.graph.entities.all())
    vecs = store.graph.entities.vectors(ids)
    m = np.stack([vecs[i] for i in ids]).astype(np.float64)
    sims = np.round(m @ m.T, 7)
    out: set[tuple[int, int]] = set()
    for row, eid in enumerate(ids):
        others = [j for j in np.lexsort((np.array(ids), -sims[row])) if ids[j] != eid][: k - 1]
        out |= {(eid, ids[j]) for j in others if sims[row, j] >= threshold}
    return out


def test_entities_that_share_a_vector_get_the_rows_of_a_search_over_all_pairs(store, embedder) -> None:
    store.graph.coref.configure(5, 0.8)
    pids = _passages(store, 6)
    first = [f"lanternfish harbour gate {i:05d}" for i in range(10)] + ["lanternfish harbour", "harbour gate"]
    store.graph.write_extraction(pids[0], [], first, embedder.encode)  # each its own vector
    encode = Counting(embedder)
    with store.transaction(), store.graph.coref.deferred():  # a batch whose gates share their centre
        for pid, start in zip(pids[1:], range(10, 210, 40)):
            group = [f"lanternfish harbour gate {i:05d}" for i in range(start, start + 40)]
            store.graph.write_extraction(pid, [], group, lambda names: embed_names(names, encode))
    assert len(encode.asked) < 5 * 40  # some of them shared a vector
    got = {(e, a) for e, a, _ in store.graph.coref.all()}
    assert got == _all_pairs(store, 5, 0.8)
    assert got  # the gates are aliases of one another
    rows = store.graph.coref.all()
    store.graph.coref.rebuild()
    assert store.graph.coref.all() == rows


def test_the_candidate_cap_keeps_the_lowest_ids_of_a_tie() -> None:
    from localrag.store.entity_matrix import EntityMatrix

    cand = np.arange(0, 400, 2)  # positions, ascending
    rng = np.random.default_rng(1)
    for _ in range(20):  # whatever order a partition would leave the tie in
        sims = np.ones(len(cand), dtype=np.float32)
        sims[rng.choice(len(cand), 30, replace=False)] = 0.5  # some worse than the tie
        sims[[150, 7]] = 1.5  # two better
        picked = EntityMatrix._best(cand, sims, 10)
        tied = cand[sims == 1.0]
        assert sorted(picked.tolist()) == sorted([cand[7], cand[150]] + tied[:8].tolist())
