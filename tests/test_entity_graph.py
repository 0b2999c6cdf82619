"""The saved entity graph (walk matrix + mentions) and the batched coref search behind it."""

from __future__ import annotations

import networkx as nx
import numpy as np
from kg_helpers import NOTES, snapshot, write_notes

import localrag.kg.builder as builder
from localrag.kg.entity_graph import assemble, build_arrays, entity_graph
from localrag.store.graph_matrix import GraphMatrixStore

pytest_plugins = ["conftest_kg"]

MORE = {
    f"town-{i}.md": (f"# Town {i}\n\nTown {i} lies on the river Omsund near Orlinsford. Ada Lovelace visited Town {i} "
                     f"in {1830 + i} with Charles Babbage.\n\nThe mayor of Town {i} was Mary Somerville's cousin.\n")
    for i in range(12)
} | NOTES


def reference_graph(store) -> nx.Graph:
    """The graph as the ppr module built it before it was saved: networkx over every row."""
    g = nx.Graph()
    g.add_nodes_from(store.graph.entities.all())
    for fact in store.graph.facts.all():
        if fact.head != fact.tail:
            w = g.get_edge_data(fact.head, fact.tail, {}).get("weight", 0.0)
            g.add_edge(fact.head, fact.tail, weight=w + 1.0)
    for entity, alias, sim in store.graph.coref.all():
        if not g.has_edge(entity, alias):
            g.add_edge(entity, alias, weight=float(sim))
    return g


def assert_same_as_rebuild(store, eg) -> None:
    ref = reference_graph(store)
    assert eg.nodes == sorted(ref.nodes)
    want = nx.to_scipy_sparse_array(ref, nodelist=eg.nodes, weight="weight", format="csr")
    assert abs(eg.adjacency - want).max() < 1e-12 if want.nnz else eg.adjacency.nnz == 0
    mentions = sorted(store.graph.facts.all_mentions())
    got = sorted((eg.nodes[c], eg.passages[r]) for r, c in zip(*eg.mentions.nonzero()))
    assert got == mentions
    fresh = assemble(eg.version, build_arrays(GraphMatrixStore(store)), "built")
    assert abs(eg.transition - fresh.transition).max() < 1e-15 if fresh.transition.nnz else True


def test_a_new_process_loads_the_saved_graph(kg_index, tmp_path):
    folder = write_notes(tmp_path / "notes", MORE)
    index = kg_index(folder)
    index.sync()
    index.extract_graph()
    gm = GraphMatrixStore(index.store)
    assert gm.saved_version() == index.store.graph.version()
    assert gm.dirty()[0].size == 0 and gm.dirty()[1].size == 0
    index.close()

    again = kg_index(folder)
    eg = entity_graph(again.store)
    assert eg.how == "saved" and not eg.empty
    assert_same_as_rebuild(again.store, eg)


def test_edits_are_merged_from_the_marks_alone(kg_index, tmp_path):
    folder = write_notes(tmp_path / "notes", MORE)
    index = kg_index(folder)
    index.sync()
    index.extract_graph()
    entities_before = len(index.store.graph.entities.all())
    (folder / "town-3.md").write_text("# Town 3\n\nTown 3 was renamed Quillhaven by Grace Hopper in 1901.\n")
    (folder / "town-4.md").unlink()
    (folder / "harbour.md").write_text("# Harbour\n\nThe harbour of Orlinsford was built by Alan Turing.\n")
    index.sync()  # no graph phase yet: the deleted and edited passages' rows are gone, marked
    gm = GraphMatrixStore(index.store)
    dirty_entities, dirty_passages = gm.dirty()
    assert 0 < len(dirty_passages) <= 4 and 0 < len(dirty_entities) < entities_before
    index.close()

    reader = kg_index(folder)
    eg = entity_graph(reader.store)
    assert eg.how == "updated"  # the saved matrix plus the marked rows, not a rebuild
    assert_same_as_rebuild(reader.store, eg)
    reader.extract_graph()  # writes the edited and new passages, then saves
    assert GraphMatrixStore(reader.store).saved_version() == reader.store.graph.version()
    after = entity_graph(reader.store)
    assert after.version == reader.store.graph.version()
    assert_same_as_rebuild(reader.store, after)


def test_batched_coref_equals_a_rebuild_and_does_not_depend_on_batch_size(kg_index, tmp_path, monkeypatch):
    big = kg_index(write_notes(tmp_path / "big", MORE))
    big.sync()
    big.extract_graph()
    rows = big.store.graph.coref.all()
    assert rows  # the towns' names are near each other
    big.store.graph.coref.rebuild()  # from scratch, entity by entity
    assert big.store.graph.coref.all() == rows

    monkeypatch.setattr(builder, "BATCH", 1)
    small = kg_index(write_notes(tmp_path / "small", MORE))
    small.sync()
    small.extract_graph()
    assert snapshot(small) == snapshot(big)


def test_prefiltered_neighbours_match_exact_search(kg_index, tmp_path):
    index = kg_index(write_notes(tmp_path / "notes", MORE))
    index.sync()
    index.extract_graph()
    graph = index.store.graph
    ids = list(graph.entities.all())
    graph.entities.matrix.check()
    found = graph.entities.matrix.neighbours(ids, 5, 0.8)
    vectors = graph.entities.vectors(ids)
    matrix = np.stack([vectors[i] for i in ids]).astype(np.float64)
    for eid in ids:
        mine = vectors[eid].astype(np.float64)
        exact = (matrix @ mine) / (np.linalg.norm(matrix, axis=1) * np.linalg.norm(mine))
        order = sorted(range(len(ids)), key=lambda j: (-round(exact[j], 7), ids[j]))
        top = set(order[:5])
        want = [ids[j] for j in order if j in top or exact[j] >= 0.8]
        assert found[eid].ids.tolist() == want


def test_large_graph_seed_lookup_matches_vec0_and_follows_new_entities(kg_index, tmp_path, monkeypatch):
    import localrag.store.entities as entities_mod

    index = kg_index(write_notes(tmp_path / "notes", MORE))
    index.sync()
    index.extract_graph()
    entities = index.store.graph.entities
    queries = index.embedder.encode(["Ada Lovelace", "the river Omsund", "a town mayor", "Charles Babbage's visit"])
    exact = entities.nearest(queries, 3)  # a small graph: vec0's exact scan
    assert exact == [entities.knn(q, 3) for q in queries]
    monkeypatch.setattr(entities_mod, "EXACT_LIMIT", 0)  # the large-graph path: sign-bit prefilter + rescoring
    monkeypatch.setattr(entities_mod, "LOOKUP_CANDIDATES", 4)  # fewer candidates than entities: the prefilter works
    prefiltered = entities.nearest(queries, 3)
    assert prefiltered[0][0][0] == exact[0][0][0]  # an entity's own name: Hamming distance 0, always a candidate
    for q, got in zip(queries, prefiltered):  # whatever the prefilter kept is scored exactly, best first
        vecs = entities.vectors([e for e, _ in got])
        cosines = [float(vecs[e] @ q / (np.linalg.norm(vecs[e]) * np.linalg.norm(q))) for e, _ in got]
        assert np.allclose([s for _, s in got], cosines, atol=1e-5) and cosines == sorted(cosines, reverse=True)
    monkeypatch.setattr(entities_mod, "LOOKUP_CANDIDATES", 10_000)  # every row rescored: exactly vec0's answer
    assert [[e for e, _ in hits] for hits in entities.nearest(queries, 3)] == [[e for e, _ in h] for h in exact]
    write_notes(tmp_path / "notes", {"extra.md": "# Extra\n\nZenobia Quartermain founded Plovdiv Glassworks.\n"})
    index.sync()
    index.extract_graph()  # new entities, written by the graph phase: the reader's copy reads just those
    zen = index.embedder.encode(["Zenobia Quartermain"])
    assert entities.nearest(zen, 1)[0][0][0] == entities.knn(zen[0], 1)[0][0]
