"""The graph tables: exact writes, garbage collection, coref maintenance, queue and migration."""

from __future__ import annotations

import numpy as np
import pytest

from localrag.records import Triple
from localrag.store import Store, schema
from localrag.store.documents import NewPassage
from localrag.store.extractions import CachedExtraction


@pytest.fixture
def store(embedder):
    s = Store(":memory:", dim=embedder.dim, embedder_id=embedder.id)
    yield s
    s.close()


def add_doc(store: Store, path: str, texts: list[str], mtime_ns: int = 1) -> list[int]:
    with store.transaction():
        doc = store.docs.insert(path, 10, mtime_ns, path, "markdown", path)
        return [store.docs.insert_passage(doc, path, NewPassage(i, "", t, f"{path}-{i}", i + 1, i + 1, 5))
                for i, t in enumerate(texts)]


def T(h: str, r: str, t: str) -> Triple:
    return Triple(h, r, t, "llm")


def counts(store: Store) -> tuple[int, int, int, int]:
    c = store.graph.counts()
    return c.entities, c.facts, c.mentions, int(store.one("SELECT COUNT(*) FROM fact_sources")[0])


def orphans_zero(store: Store) -> None:
    assert store.graph.orphans() == {k: 0 for k in store.graph.orphans()}


def test_passages_are_queued_by_trigger_newest_document_first(store):
    old = add_doc(store, "old.md", ["a", "b"], mtime_ns=100)
    new = add_doc(store, "new.md", ["c"], mtime_ns=200)
    assert [q.passage for q in store.graph.queue.next_batch(10)] == [new[0], old[0], old[1]]
    store.docs.delete_passages([old[1]])
    assert store.graph.queue.length() == 2  # the queue row went with the passage


def test_write_is_exact_and_dequeues_in_the_same_transaction(store, embedder):
    p1, p2 = add_doc(store, "a.md", ["x", "y"])
    r1 = store.graph.write_extraction(p1, [T("ada", "knew", "babbage"), T("ada", "born in", "london")], ["title a"], embedder.encode)
    assert (r1.facts_added, r1.entities_added) == (2, 4)
    r2 = store.graph.write_extraction(p2, [T("ada", "knew", "babbage")], ["title a"], embedder.encode)
    assert (r2.facts_added, r2.entities_added) == (0, 0)
    assert counts(store) == (4, 2, 4 + 3, 3)
    assert store.graph.queue.length() == 0
    ada = store.graph.entities.id("ada")
    assert store.graph.facts.passages_mentioning(ada) == [p1, p2]
    assert sorted(f.relation for f in store.graph.facts.of_entity_in_passage(ada, p1)) == ["born in", "knew"]
    assert {f.tail_name for f in store.graph.facts.in_passage(p2)} == {"babbage"}
    assert set(store.graph.entities.names(store.graph.facts.passage_entities(p2)).values()) == {"ada", "babbage", "title a"}
    vecs = store.graph.entities.vectors([ada])
    assert abs(float(np.linalg.norm(vecs[ada])) - 1.0) < 1e-4
    assert store.graph.entities.knn(vecs[ada], 1)[0][0] == ada
    orphans_zero(store)


def test_deleting_passages_collects_facts_entities_vectors_and_coref_exactly(store, embedder):
    p1, p2 = add_doc(store, "a.md", ["x", "y"])
    store.graph.write_extraction(p1, [T("ada", "knew", "babbage"), T("ada", "born in", "london")], ["title a"], embedder.encode)
    store.graph.write_extraction(p2, [T("ada", "knew", "babbage"), T("babbage", "built", "difference engine")],
                                 ["title a"], embedder.encode)
    assert counts(store) == (5, 3, 4 + 4, 4)
    with store.transaction():
        store.docs.delete_passages([p1])
    # "born in london" had only p1: the fact and "london" go; "ada knew babbage" stays (p2 supports it)
    assert counts(store) == (4, 2, 4, 2)
    assert store.graph.entities.id("london") is None
    assert len(store.graph.entities.vectors(list(store.graph.entities.all()))) == 4
    orphans_zero(store)
    with store.transaction():
        store.docs.delete_passages([p2])
    assert counts(store) == (0, 0, 0, 0)
    assert store.graph.counts().coref_pairs == 0
    assert store.one("SELECT COUNT(*) FROM entity_vec")[0] == 0
    orphans_zero(store)


def test_rewrite_of_a_passage_keeps_ids_of_what_it_still_says(store, embedder):
    (p,) = add_doc(store, "a.md", ["x"])
    store.graph.write_extraction(p, [T("ada", "knew", "babbage"), T("ada", "born in", "london")], [], embedder.encode)
    kept = store.graph.entities.id("ada"), store.graph.facts.in_passage(p)[0].id
    store.graph.write_extraction(p, [T("ada", "knew", "babbage")], [], embedder.encode)
    assert (store.graph.entities.id("ada"), store.graph.facts.in_passage(p)[0].id) == kept
    assert counts(store) == (2, 1, 2, 1)
    orphans_zero(store)


def test_write_for_a_vanished_passage_does_nothing(store, embedder):
    (p,) = add_doc(store, "a.md", ["x"])
    with store.transaction():
        store.docs.delete_passages([p])
    assert store.graph.write_extraction(p, [T("ada", "knew", "babbage")], [], embedder.encode) is None
    assert counts(store) == (0, 0, 0, 0)


def test_failures_and_cache_are_recorded_with_the_write(store, embedder):
    (p,) = add_doc(store, "a.md", ["x"])
    cache = CachedExtraction("sha1", "m", "v", {"data": None, "error": "cut"})
    store.graph.write_extraction(p, [], ["title"], embedder.encode, cache=cache, failure="cut", fallback=True, model="m")
    assert store.graph.extractions.failures() == [(p, "cut", True)]
    assert store.graph.counts().failed == 1
    assert store.graph.extractions.cached("sha1", "m", "v") == {"data": None, "error": "cut"}
    assert store.graph.extractions.cached("sha1", "m", "other-version") is None
    store.graph.write_extraction(p, [T("a b", "r", "c d")], ["title"], embedder.encode)
    assert store.graph.counts().failed == 0


def expected_coref(store: Store, k: int, threshold: float) -> set[tuple[int, int]]:
    ids = list(store.graph.entities.all())
    vecs = store.graph.entities.vectors(ids)
    m = np.stack([vecs[i] for i in ids])
    sims = m @ m.T
    out = set()
    for row, eid in enumerate(ids):
        top = np.argsort(-sims[row], kind="stable")[:k]
        out |= {(eid, ids[j]) for j in top if ids[j] != eid and sims[row, j] >= threshold}
    return out


NAMES = ["greybarrow makers guild", "the greybarrow makers guild", "greybarrow guild", "makers guild greybarrow",
         "greybarrow makers", "guild of greybarrow makers", "kallendar workshop", "the kallendar workshop",
         "otto kallendar", "orlinsford", "ada lovelace", "lovelace ada"]


def test_coref_is_top5_with_self_threshold_and_stays_exact_through_adds_and_deletes(store, embedder):
    store.graph.coref.configure(5, 0.8)
    pids = add_doc(store, "a.md", [f"p{i}" for i in range(len(NAMES))])
    for pid, name in zip(pids, NAMES):  # one new entity per write: the incremental path
        store.graph.write_extraction(pid, [], [name], embedder.encode)
    got = {(e, a) for e, a, _ in store.graph.coref.all()}
    assert got == expected_coref(store, 5, 0.8)
    assert all(e != a for e, a in got)
    assert max(sum(1 for e, _ in got if e == x) for x, _ in got) <= 4
    assert got  # the guild spellings are aliases of each other
    with store.transaction():
        store.docs.delete_passages(pids[:3])
    assert {(e, a) for e, a, _ in store.graph.coref.all()} == expected_coref(store, 5, 0.8)
    before = set(store.graph.coref.all())
    store.graph.coref.rebuild()
    assert set(store.graph.coref.all()) == before
    orphans_zero(store)


def test_coref_stays_exact_where_dozens_of_names_are_alike(store, embedder):
    """Every "note i" is above the threshold of every other: each newcomer is offered only to the names
    whose weakest alias it beats (their floor), and the rows are still a search over all pairs."""
    store.graph.coref.configure(5, 0.8)
    names = [f"note {i}" for i in range(60)]
    pids = add_doc(store, "a.md", [f"p{i}" for i in range(len(names) // 3 + 20)])
    for pid, name in zip(pids, names[:20]):  # one at a time
        store.graph.write_extraction(pid, [], [name], embedder.encode)
    with store.transaction(), store.graph.coref.deferred():  # then batches of several passages
        for pid, group in zip(pids[20:], [names[i:i + 2] for i in range(20, 60, 2)]):
            store.graph.write_extraction(pid, [], group, embedder.encode)
    assert {(e, a) for e, a, _ in store.graph.coref.all()} == expected_coref(store, 5, 0.8)
    with store.transaction():
        store.docs.delete_passages(pids[3:9])  # six of the first names go: their partners are recomputed
    assert {(e, a) for e, a, _ in store.graph.coref.all()} == expected_coref(store, 5, 0.8)
    more = add_doc(store, "b.md", ["q1", "q2"])
    store.graph.write_extraction(more[0], [], ["note 5", "note 500"], embedder.encode)  # after the deletes
    assert {(e, a) for e, a, _ in store.graph.coref.all()} == expected_coref(store, 5, 0.8)
    rows = store.graph.coref.all()
    store.graph.coref.rebuild()
    assert store.graph.coref.all() == rows


def test_a_rolled_back_write_leaves_no_raised_floor_behind(store, embedder):
    store.graph.coref.configure(5, 0.8)
    pids = add_doc(store, "a.md", [f"p{i}" for i in range(12)])
    for pid, name in zip(pids, [f"note {i}" for i in range(10)]):
        store.graph.write_extraction(pid, [], [name], embedder.encode)
    with pytest.raises(RuntimeError):
        with store.transaction():
            store.graph.write_extraction(pids[10], [], ["note 10", "note 11"], embedder.encode)
            raise RuntimeError("the commit never happens")
    store.graph.write_extraction(pids[11], [], ["note 12", "note 10"], embedder.encode)
    assert {(e, a) for e, a, _ in store.graph.coref.all()} == expected_coref(store, 5, 0.8)


def test_graph_version_changes_with_the_graph(store, embedder):
    (p,) = add_doc(store, "a.md", ["x"])
    v0 = store.graph.version()
    store.graph.write_extraction(p, [T("ada", "knew", "babbage")], [], embedder.encode)
    v1 = store.graph.version()
    with store.transaction():
        store.docs.delete_passages([p])
    assert v0 < v1 < store.graph.version()


def test_migration_enqueues_passages_that_existed_before_it(tmp_path, embedder, monkeypatch):
    db = tmp_path / "index.db"
    monkeypatch.setattr("localrag.store.db.MIGRATIONS", [m for m in schema.MIGRATIONS if m.version == 1])
    old = Store(db, dim=embedder.dim, embedder_id=embedder.id)  # as an index from before the graph
    with old.transaction():
        doc = old.docs.insert("a.md", 1, 5, "x", "markdown", "A")
        for i in range(3):  # as schema 1 wrote them: no locator column yet
            old.execute("INSERT INTO passages(doc_id, ordinal, heading, text, sha256, start_line, end_line, tokens) "
                        "VALUES(?,?,?,?,?,?,?,?)", (doc, i, "", f"t{i}", f"s{i}", 1, 1, 1))
    assert old.schema_version() == 1
    old.close()
    monkeypatch.undo()
    upgraded = Store(db, dim=embedder.dim, embedder_id=embedder.id)
    try:
        assert upgraded.schema_version() >= 2
        assert upgraded.graph.queue.length() == 3
    finally:
        upgraded.close()
