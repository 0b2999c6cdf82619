"""The `ppr` strategy: HippoRAG-style personalised PageRank over the entity graph."""

from __future__ import annotations

import networkx as nx
import numpy as np
from kg_helpers import TOWN_NOTES, write_notes

from localrag.records import Triple
from localrag.retrieve import Context, get_strategy
from localrag.retrieve.ppr import PPRSeedsStep, entity_graph, personalised_pagerank
from localrag.trace import FallbackStep

pytest_plugins = ["conftest_kg"]


def ctx_for(index) -> Context:
    return Context(index.store, index.embedder, index.settings)


def built(kg_index, tmp_path, notes=TOWN_NOTES, **overrides):
    index = kg_index(write_notes(tmp_path / "notes", notes), **overrides)
    index.sync()
    index.extract_graph()
    return index


def test_power_iteration_matches_networkx_pagerank(kg_index, tmp_path):
    index = built(kg_index, tmp_path)
    eg = entity_graph(index.store)
    reset = np.zeros(len(eg.nodes))
    reset[0], reset[min(2, len(reset) - 1)] = 1.0, 0.5
    ours = personalised_pagerank(eg, reset, 0.5)
    personalization = {e: float(reset[i]) for i, e in enumerate(eg.nodes)}
    theirs = nx.pagerank(eg.graph, alpha=0.5, personalization=personalization, weight="weight", tol=1e-10, max_iter=500)
    assert np.allclose(ours, [theirs[e] for e in eg.nodes], atol=1e-4)
    assert abs(ours.sum() - 1.0) < 1e-6


def test_two_hop_over_a_link_reaches_the_linked_note(kg_index, tmp_path):
    index = built(kg_index, tmp_path)
    got = get_strategy("ppr").retrieve(ctx_for(index), "Which river flows through the town of the Kallendar Workshop?", 4)
    seeds = next(s for s in got.trace.steps if isinstance(s, PPRSeedsStep)).seeds
    assert any(s.name == "kallendar workshop" and s.via == "span" for s in seeds)
    top2 = {sp.passage.path for sp in got.passages[:2]}
    assert top2 == {"kallendar-workshop.md", "orlinsford.md"}
    assert got.passages[0].source == "ppr" and got.passages[0].score >= got.passages[1].score > 0


def test_no_query_entity_falls_back_to_dense_order(kg_index, tmp_path):
    index = built(kg_index, tmp_path, **{"graph.ppr_knn_min_sim": 1.01, "graph.ppr_span_min_sim": 1.01})
    query = "somewhere to buy bread"
    got = get_strategy("ppr").retrieve(ctx_for(index), query, 3)
    dense = get_strategy("dense").retrieve(ctx_for(index), query, 3)
    assert [sp.passage.id for sp in got.passages] == [sp.passage.id for sp in dense.passages]
    assert any(isinstance(s, FallbackStep) for s in got.trace.steps)


def test_graph_is_cached_until_the_graph_changes(kg_index, tmp_path, embedder):
    index = built(kg_index, tmp_path)
    first = entity_graph(index.store)
    assert entity_graph(index.store) is first
    pid = index.store.docs.all_passage_ids()[0]
    index.store.graph.write_extraction(pid, [Triple("orlinsford", "twinned with", "quillhaven", "llm")],
                                       ["orlinsford"], embedder.encode)
    second = entity_graph(index.store)
    assert second is not first and second.graph.number_of_edges() >= first.graph.number_of_edges()


def test_empty_graph_is_dense(kg_index, tmp_path):
    index = kg_index(write_notes(tmp_path / "notes", TOWN_NOTES))
    index.sync()  # no graph phase
    got = get_strategy("ppr").retrieve(ctx_for(index), "Orlinsford river", 2)
    assert len(got.passages) == 2 and got.passages[0].source == "dense"
