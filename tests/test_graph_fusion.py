"""The `graph` strategy: PPR, dense and lexical fused by weighted reciprocal rank, with hub damping. No LLM."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import scipy.sparse as sp
from kg_helpers import TOWN_NOTES, write_notes

from localrag.retrieve import Context, get_strategy
from localrag.retrieve.graph import FusionStep, FusionWeights, fuse, passage_scores

pytest_plugins = ["conftest_kg"]


def test_a_passage_found_by_all_three_lists_outranks_one_list_leaders():
    dense = [(1, 0.9), (2, 0.8), (3, 0.7)]
    lexical = [(4, 9.0), (2, 5.0), (3, 4.0)]
    ppr = [(5, 0.3), (3, 0.2), (2, 0.1)]
    ranked = fuse(dense, lexical, ppr, FusionWeights(1.0, 1.0, 1.0, 8), 5)
    assert [pid for pid, _ in ranked[:2]] == [2, 3]  # in every list beats first in one
    assert {pid for pid, _ in ranked[2:]} == {1, 4, 5}


def test_weights_decide_between_list_leaders_and_an_empty_walk_changes_nothing_else():
    dense, lexical, ppr = [(1, 0.9)], [(2, 1.0)], [(3, 0.5)]
    assert fuse(dense, lexical, ppr, FusionWeights(1.0, 1.0, 2.0, 8), 3)[0][0] == 3
    assert fuse(dense, lexical, ppr, FusionWeights(1.0, 1.5, 1.0, 8), 3)[0][0] == 2
    assert [p for p, _ in fuse(dense, lexical, [], FusionWeights(1.0, 0.5, 1.0, 8), 3)] == [1, 2]


def test_hub_damping_lowers_the_hub_passage_not_the_specific_one():
    # passage 0 (a hub) mentions entities 0-3; passage 1 mentions only entity 0; entity 3 is in every passage
    mentions = sp.csr_matrix(np.array([[1, 1, 1, 1], [1, 0, 0, 1], [0, 0, 0, 1]], dtype=float))
    eg = SimpleNamespace(mentions=mentions, mention_counts=np.asarray(mentions.sum(axis=0)).ravel())
    mass = np.array([0.4, 0.1, 0.1, 0.4])
    raw = passage_scores(eg, mass, 0.0, 0.0)
    assert raw[0] > raw[1] and np.isclose(raw[2], 0.4)
    per_passage = passage_scores(eg, mass, 0.0, 1.0)
    assert per_passage[1] > per_passage[0]  # the hub's long mention list does not win
    idf = passage_scores(eg, mass, 1.0, 0.0)
    assert idf[2] < raw[2] / 2  # mass on an entity every passage mentions counts a third


def test_two_hop_question_fuses_without_a_model(kg_index, tmp_path):
    index = kg_index(write_notes(tmp_path / "notes", TOWN_NOTES))
    index.sync()
    index.extract_graph()
    ctx = Context(index.store, index.embedder, index.settings)  # no llm_factory: a model call would raise
    got = get_strategy("graph").retrieve(ctx, "Which river flows through the town of the Kallendar Workshop?", 4)
    assert {sp.passage.path for sp in got.passages[:2]} == {"kallendar-workshop.md", "orlinsford.md"}
    fusion = next(s for s in got.trace.steps if isinstance(s, FusionStep))
    assert fusion.hits.ppr > 0 and any(s.name == "kallendar workshop" for s in fusion.seeds)
    assert not got.trace.calls
    scores = [sp.score for sp in got.passages]
    assert scores == sorted(scores, reverse=True)


def test_without_a_graph_it_is_dense_and_lexical(kg_index, tmp_path):
    index = kg_index(write_notes(tmp_path / "notes", TOWN_NOTES))
    index.sync()  # no extraction: an empty graph
    ctx = Context(index.store, index.embedder, index.settings)
    got = get_strategy("graph").retrieve(ctx, "Where can I buy a rye and plum loaf?", 3)
    assert got.passages[0].passage.path == "bakery.md"
    assert next(s for s in got.trace.steps if isinstance(s, FusionStep)).hits.ppr == 0


def test_a_walk_from_hub_seeds_counts_less_than_one_from_a_specific_entity():
    weights = FusionWeights(1.0, 1.0, 3.0, 8, focus=0.1)
    assert weights.ppr_weight(0.5) == 3.0 and weights.ppr_weight(0.05) == 1.5 and weights.ppr_weight(0.0) == 0.0
    dense, lexical, ppr = [(1, 0.9), (2, 0.8)], [(1, 5.0), (2, 4.0)], [(3, 0.5)]
    assert fuse(dense, lexical, ppr, weights, 3, focus=0.5)[0][0] == 3  # a specific seed: its walk leads
    assert [p for p, _ in fuse(dense, lexical, ppr, weights, 3, focus=0.001)][:2] == [1, 2]  # hub seeds: it barely counts


def test_a_walk_whose_first_passage_no_text_retriever_finds_counts_less():
    weights = FusionWeights(1.0, 1.0, 2.0, 5, uncorroborated=0.25, corroboration_pool=2)
    dense, lexical = [(1, 0.9), (2, 0.8), (9, 0.7)], [(2, 5.0), (1, 4.0), (9, 3.0)]
    mention = [(7, 0.5), (8, 0.4)]  # a passing mention: neither list has passage 7 in its first two
    subject = [(2, 0.5), (8, 0.4)]  # the named entity's own note: the text lists find it too
    assert not weights.corroborated(mention, dense, lexical) and weights.corroborated(subject, dense, lexical)
    assert weights.ppr_weight(1.0, corroborated=False) == 0.5
    assert [p for p, _ in fuse(dense, lexical, mention, weights, 2)] == [1, 2]
    assert fuse(dense, lexical, mention, FusionWeights(1.0, 1.0, 2.0, 5), 1)[0][0] == 7  # uncorroborated at full weight


def test_a_flat_bm25_head_counts_less_only_while_the_dense_list_has_a_leader():
    weights = FusionWeights(1.0, 1.0, 1.0, 5, lexical_flat=0.5, lexical_peak=1.5, dense_lead=0.02)
    flat = [(10 + i, 5.0 - 0.01 * i) for i in range(6)]  # first / fifth ~ 1.01: the question's words are everywhere
    peaked = [(10 + i, s) for i, s in enumerate((9.0, 5.0, 4.0, 3.5, 3.0, 2.0))]  # 3.0: full weight
    leading = [(1, 0.80), (2, 0.70), (3, 0.69), (4, 0.68), (5, 0.67)]
    level = [(1, 0.70), (2, 0.70), (3, 0.69), (4, 0.69), (5, 0.69)]
    assert abs(weights.lexical_weight(flat, leading) - 0.5) < 0.02
    assert weights.lexical_weight(peaked, leading) == 1.0
    assert weights.lexical_weight(flat, level) == 1.0  # both heads flat: neither knows better
    assert weights.lexical_weight(flat[:3], leading) == 1.0  # too few hits to judge
