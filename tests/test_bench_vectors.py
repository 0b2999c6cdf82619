"""The fast KNN path of store/vectors.py (Hamming prefilter + exact rescoring) on a real sqlite-vec store."""

from __future__ import annotations

import numpy as np
import pytest

from localrag.store import Store
from localrag.store.vectors import MIN_CANDIDATES, sign_bits

DIM = 384
N = 3000  # well above MIN_CANDIDATES, so the prefilter really filters


def _unit(rows: np.ndarray) -> np.ndarray:
    return (rows / np.linalg.norm(rows, axis=1, keepdims=True)).astype(np.float32)


@pytest.fixture
def store(tmp_path):
    s = Store(tmp_path / "v.db", dim=DIM, embedder_id="test-random")
    rng = np.random.default_rng(3)
    s.vectors.put_many((i + 1, v) for i, v in enumerate(_unit(rng.standard_normal((N, DIM)))))
    yield s
    s.close()


def test_sign_bits_pack_384_dims_into_six_words():
    v = np.zeros(DIM, dtype=np.float32)
    v[[0, 9, 383]] = 1.0
    words = sign_bits(v)
    assert words.shape == (1, 6) and words.dtype == np.uint64
    assert int(np.bitwise_count(words).sum()) == 3


def test_fast_path_finds_near_duplicates_and_agrees_with_exact(store):
    rng = np.random.default_rng(5)
    stored = store.vectors.get(list(range(1, 41)))
    overlap = []
    for pid, vec in stored.items():
        query = _unit((vec + 0.03 * rng.standard_normal(DIM)).reshape(1, -1))[0]
        fast = store.vectors.knn_fast(query, 10)
        exact = store.vectors.knn_exact(query, 10)
        assert fast[0][0] == pid == exact[0][0]
        assert fast[0][1] == pytest.approx(exact[0][1], abs=1e-5)  # rescoring gives exact cosines
        assert [s for _, s in fast] == sorted((s for _, s in fast), reverse=True)
        overlap.append(len({p for p, _ in fast} & {p for p, _ in exact}) / 10)
    # random vectors have no structure beyond the planted neighbour: the rest of the top 10 are near-ties
    assert np.mean(overlap) > 0.5  # measured 0.72


def test_all_candidates_when_the_index_is_small(tmp_path):
    s = Store(tmp_path / "small.db", dim=DIM, embedder_id="test-random")
    try:
        vecs = _unit(np.random.default_rng(1).standard_normal((MIN_CANDIDATES - 50, DIM)))
        s.vectors.put_many((i + 1, v) for i, v in enumerate(vecs))
        q = vecs[7]
        assert [p for p, _ in s.vectors.knn_fast(q, 8)] == [p for p, _ in s.vectors.knn_exact(q, 8)]
    finally:
        s.close()


def test_the_in_memory_bits_follow_inserts_and_deletes(store):
    probe = _unit(np.random.default_rng(9).standard_normal((1, DIM)))[0]
    assert store.vectors.knn_fast(probe, 1)[0][0] != 99_999
    version, count = store.vectors.version()
    assert count == N
    store.vectors.put_many([(99_999, probe)])
    assert store.vectors.version() == (version + 1, N + 1)
    assert store.vectors.knn_fast(probe, 1)[0] == (99_999, pytest.approx(1.0, abs=1e-5))
    store.execute("DELETE FROM passage_f32 WHERE id = 99999")
    assert store.vectors.count() == N
    assert store.vectors.knn_fast(probe, 1)[0][0] != 99_999


def test_an_index_made_before_the_rescoring_table_is_backfilled(tmp_path):
    path = tmp_path / "old.db"
    s = Store(path, dim=DIM, embedder_id="test-random")
    vecs = _unit(np.random.default_rng(2).standard_normal((30, DIM)))
    s.vectors.put_many((i + 1, v) for i, v in enumerate(vecs))
    # roll the file back to schema 4: no plain vectors, no counter
    for sql in ("DROP TRIGGER passages_gone_f32", "DROP TABLE passage_f32", "DROP TABLE vector_state",
                "DELETE FROM schema_migrations WHERE version = 5"):
        s.execute(sql)
    s.close()
    reopened = Store(path, dim=DIM, embedder_id="test-random")
    try:
        assert reopened.vectors.count() == 30
        got = reopened.vectors.get([7])[7]
        assert np.allclose(got, vecs[6])
        assert reopened.vectors.knn_fast(vecs[6], 1)[0][0] == 7
    finally:
        reopened.close()


def test_a_filter_in_a_large_index_prefilters_among_its_own_vectors(store, monkeypatch):
    """Over EXACT_LIMIT vectors, a filter of more passages than the search rescores is prefiltered by
    sign bits among those passages alone: only they come back, the planted neighbour first, exact cosines."""
    import localrag.store.vectors as vectors_mod
    monkeypatch.setattr(vectors_mod, "EXACT_LIMIT", 0)
    only = set(range(1, N + 1, 2))  # 1,500 odd ids: more than MIN_CANDIDATES
    rng = np.random.default_rng(8)
    among = store.vectors.get(sorted(only))
    ids, matrix = np.array(list(among)), np.stack(list(among.values()))
    for pid, vec in store.vectors.get([1, 3, 5, 7, 9, 2, 4]).items():
        query = _unit((vec + 0.03 * rng.standard_normal(DIM)).reshape(1, -1))[0]
        hits = store.vectors.knn(query, 10, only=only)
        assert len(hits) == 10 and {p for p, _ in hits} <= only
        if pid in only:  # the planted neighbour first, with its exact cosine
            best = int(np.argmax(matrix @ query))
            assert hits[0] == (pid, pytest.approx(float(matrix[best] @ query), abs=1e-5)) and ids[best] == pid
