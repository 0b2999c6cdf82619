"""dense / lexical / hybrid over the sample notes (real store + embedder)."""

from __future__ import annotations

import json

import pytest

from localrag.api import Assistant, Index
from localrag.records import Retrieval
from localrag.retrieve import get_strategy, strategy_names
from localrag.retrieve.fusion import rrf, rrf_onto
from localrag.store.lexical import fts_query

from conftest import EXAMPLES


@pytest.fixture(scope="module")
def assistant(tmp_path_factory, embedder):
    import shutil

    from localrag.config import load_settings

    d = tmp_path_factory.mktemp("r") / "notes"
    shutil.copytree(EXAMPLES, d, ignore=shutil.ignore_patterns(".localrag"))
    idx = Index(load_settings(d, env={}), embedder)
    idx.sync()
    yield Assistant(idx, llm=object())
    idx.close()


QUESTIONS = [json.loads(l) for l in (EXAMPLES.parent / "questions.jsonl").read_text().splitlines() if l.strip()]


@pytest.mark.parametrize("name", ["dense", "lexical", "hybrid"])
def test_strategies_return_the_same_type_and_find_gold_notes(assistant, name):
    found = 0
    for q in QUESTIONS:
        r = assistant.retrieve(q["question"], name, 5)
        assert isinstance(r, Retrieval) and r.trace.strategy == name
        assert len(r.passages) <= 5
        scores = [sp.score for sp in r.passages]
        assert scores == sorted(scores, reverse=True)
        if q["gold_files"][0] in {sp.passage.path for sp in r.passages}:
            found += 1
    # the first hop's note is named in the question: most must be found in the top 5
    assert found >= len(QUESTIONS) * 0.6, found


def test_hybrid_recall_not_below_dense_or_lexical(assistant):
    def recall(name):
        total = 0.0
        for q in QUESTIONS:
            paths = {sp.passage.path for sp in assistant.retrieve(q["question"], name, 5).passages}
            total += len(paths & set(q["gold_files"])) / len(q["gold_files"])
        return total / len(QUESTIONS)

    dense, lexical, hybrid = recall("dense"), recall("lexical"), recall("hybrid")
    assert hybrid >= min(dense, lexical)


def test_rrf_fuses_by_rank():
    fused = rrf([[(1, 0.9), (2, 0.8)], [(2, 5.0), (3, 4.0)]], 3)
    assert [pid for pid, _ in fused] == [2, 1, 3]


def test_rrf_onto_keeps_the_base_head_and_lets_the_rest_compete():
    base = [(1, 0.9), (2, 0.8), (3, 0.7), (4, 0.6)]
    walked = [(4, 1.0), (9, 1.0)]
    plain = rrf_onto(base, [walked], [1.0], 4, 8, keep_top=0)
    assert plain == rrf([base, walked], 4, weights=[1.0, 1.0], rrf_k=8)
    assert plain[0][0] == 4  # unheld, the walk's first passage jumps to the top
    held = rrf_onto(base, [walked], [1.0], 4, 8, keep_top=2)
    assert [pid for pid, _ in held] == [1, 2, 4, 9]  # 3 loses its place to what both lists found, not 1 or 2
    scores = [s for _, s in held]
    assert scores == sorted(scores, reverse=True)


def test_fts_query_is_safe_for_any_text(assistant):
    nasty = 'what is "AND" OR NOT near(x) * title:foo ^bar'
    assert fts_query(nasty) == '"not" OR "near" OR "x" OR "title" OR "foo" OR "bar"'
    assert fts_query("???") == ""
    assistant.index.store.lexical.search(nasty, 5)  # no FTS5 syntax error


def test_unknown_strategy_lists_choices():
    with pytest.raises(ValueError, match="dense"):
        get_strategy("nope")
    assert {"dense", "lexical", "hybrid"} <= set(strategy_names())


def test_dense_fast_path_agrees_with_exact(assistant):
    store = assistant.index.store
    q = assistant.index.embedder.encode_one("river town bridge")
    exact = store.vectors.knn_exact(q, 5)
    fast = store.vectors.knn_fast(q, 5)
    assert [p for p, _ in fast] == [p for p, _ in exact]


def test_hybrid_equals_the_fusion_of_dense_and_lexical_run_side_by_side(assistant):
    """hybrid runs BM25 on the store's second connection, concurrently: same ranking as in sequence."""
    from localrag.retrieve.dense import dense_ranked

    ctx = assistant.context()
    store = ctx.store
    pool = max(ctx.settings.hybrid_pool, 8)
    for q in QUESTIONS[:5]:
        side = store.lexical.search(q["question"], pool, side=True)
        assert side == store.lexical.search(q["question"], pool)
        expected = rrf([dense_ranked(ctx, q["question"], pool), side], 8, rrf_k=ctx.settings.hybrid_rrf_k)
        got = [(sp.passage.id) for sp in assistant.retrieve(q["question"], "hybrid", 8).passages]
        assert got == [pid for pid, _ in expected]


def test_side_connection_sees_committed_rows_only_and_closes(tmp_path):
    from localrag.store import Store

    s = Store(tmp_path / "i.db", dim=4, embedder_id="t")
    s.execute("CREATE TABLE t(x)")
    s.execute("INSERT INTO t VALUES (1)")
    assert s.side_query("SELECT count(*) FROM t") == [(1,)]
    with s.transaction():
        s.execute("INSERT INTO t VALUES (2)")
        assert s.side_query("SELECT count(*) FROM t") == [(1,)]  # not committed yet
    assert s.side_query("SELECT count(*) FROM t") == [(2,)]
    s.close()
    assert s._side is None


def test_top_order_is_the_stable_argsort_head():
    import numpy as np

    from localrag.retrieve.ppr import top_order

    rng = np.random.default_rng(7)
    for _ in range(200):
        scores = rng.integers(0, 4, int(rng.integers(1, 120))).astype(float) / 3  # many ties
        m = int(rng.integers(1, 150))
        assert top_order(scores, m).tolist() == np.argsort(-scores, kind="stable")[:m].tolist()
