"""An embedder's similarity scale (embed.SimilarityScale) reaches every threshold chosen on MiniLM's
cosines: pseudo-coreference, the PPR seeds, the graph fusion's dense lead. A fake embedder (MiniLM's
vectors, a scale that is not the identity) shows each threshold reading the scaled value."""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

import numpy as np
import pytest

from localrag.api import Index
from localrag.config import load_settings
from localrag.embed import MiniLMEmbedder, SimilarityScale, comparable_cosine, similarity_scale
from localrag.kg.builder import GraphBuilder
from localrag.retrieve.base import Context
from localrag.retrieve.graph import FusionWeights, dense_lead
from localrag.retrieve.ppr import query_seeds
from localrag.store import Store
from localrag.store.documents import NewPassage

STRICTER = SimilarityScale(center=0.0, slope=1.0, offset=-0.15)  # a cosine counts 0.15 less than MiniLM's
SPREAD = SimilarityScale(center=0.8, slope=8.0, offset=0.1)  # e5-like: crowded cosines pulled apart


class ScaledEmbedder:
    """MiniLM's vectors under another scale."""

    dim = 384

    def __init__(self, inner: MiniLMEmbedder, scale: SimilarityScale):
        self.inner, self.similarity_scale = inner, scale
        self.id = f"scaled-{scale.offset}"

    def encode(self, texts: Sequence[str], batch_size: int = 32) -> np.ndarray:
        return self.inner.encode(texts, batch_size)

    def encode_one(self, text: str) -> np.ndarray:
        return self.inner.encode_one(text)


def _settings(folder: Path, **overrides):
    folder.mkdir(parents=True, exist_ok=True)
    return load_settings(folder, {"db": str(folder / "index.db"), "index.extractor": "rules", **overrides}, env={})


def _passages(store: Store, n: int) -> list[int]:
    with store.transaction():
        doc = store.docs.insert("a.md", 10, 1, "a.md", "markdown", "a.md")
        return [store.docs.insert_passage(doc, "a.md", NewPassage(i, "", f"p{i}", f"a-{i}", i + 1, i + 1, 5))
                for i in range(n)]


def test_the_scale_and_its_inverse_agree_and_minilm_has_none(embedder):
    assert similarity_scale(embedder) is None
    assert comparable_cosine(embedder, 0.8125) == 0.8125
    for value in (-0.3, 0.06, 0.8, 1.4):
        assert SPREAD.apply(np.float64(SPREAD.cosine_at(value))) == pytest.approx(value)
    assert comparable_cosine(ScaledEmbedder(embedder, SPREAD), 0.85) == pytest.approx(0.5)


GUILD, THE_GUILD, SHORT = "greybarrow makers guild", "the greybarrow makers guild", "greybarrow guild"


def test_coreference_keeps_the_aliases_whose_scaled_cosine_reaches_the_threshold(tmp_path, embedder):
    vecs = embedder.encode([GUILD, THE_GUILD, SHORT])
    close, closer = float(vecs[0] @ vecs[2]), float(vecs[0] @ vecs[1])
    assert 0.8 <= close < 0.95 <= closer, "the names straddle both thresholds"
    for emb, cut, aliases in ((embedder, 0.8, {THE_GUILD, SHORT}), (ScaledEmbedder(embedder, STRICTER), 0.95, {THE_GUILD})):
        index = Index(_settings(tmp_path / emb.id), emb)  # sets the store's coreference from the settings
        try:
            coref = index.store.graph.coref
            assert coref.threshold == pytest.approx(cut)  # graph.coref_threshold 0.8, through the inverse scale
            (pid,) = _passages(index.store, 1)
            index.store.graph.write_extraction(pid, [], [GUILD, THE_GUILD, SHORT], emb.encode)
            ids = index.store.graph.entities.ids([GUILD, THE_GUILD, SHORT])
            names = {v: k for k, v in ids.items()}
            assert {names[a] for a, _ in coref.stored(ids[GUILD])} == aliases, emb.id
            coref.configure(5, 0.8)  # the graph phase configures it again, with its embedder's scale
            GraphBuilder(index.store, emb, index.settings)
            assert coref.threshold == pytest.approx(cut)
        finally:
            index.close()


def test_ppr_seeds_compare_the_scaled_cosine_with_their_thresholds(tmp_path, embedder):
    store = Store(":memory:", dim=embedder.dim, embedder_id="x")
    try:
        pids = _passages(store, 2)
        store.graph.write_extraction(pids[0], [], [SHORT], embedder.encode)
        store.graph.write_extraction(pids[1], [], ["harbour wall"], embedder.encode)
        by_span, by_query = "Who founded the Greybarrow Makers Guild?", "Who built the stone walls by the sea?"
        span_sim = float(embedder.encode([GUILD])[0] @ embedder.encode([SHORT])[0])  # the span and its nearest entity
        ((wall, knn_sim),) = store.graph.entities.nearest(embedder.encode_one(by_query)[None, :], 1)[0]
        assert wall == store.graph.entities.id("harbour wall")
        # each threshold between the cosine and the cosine less 0.15 (STRICTER's value for it)
        settings = _settings(tmp_path, **{"graph.ppr_span_min_sim": span_sim - 0.1, "graph.ppr_knn_min_sim": knn_sim - 0.1,
                                          "graph.ppr_query_knn": 1})

        def seeds(emb, query: str, via: str) -> list[tuple[str, float]]:
            found = query_seeds(Context(store, emb, settings), query, embedder.encode_one(query))
            return [(s.name, s.weight) for s in found if s.via == via]

        stricter = ScaledEmbedder(embedder, STRICTER)
        assert seeds(embedder, by_span, "span") == [(SHORT, pytest.approx(span_sim, abs=1e-5))]  # the weight stays the cosine
        assert seeds(stricter, by_span, "span") == []
        assert seeds(embedder, by_query, "query") == [("harbour wall", pytest.approx(knn_sim))]
        assert seeds(stricter, by_query, "query") == []
    finally:
        store.close()


def test_the_dense_lead_is_measured_on_the_embedders_scale(tmp_path, embedder):
    dense = [(1, 0.860), (2, 0.858), (3, 0.857), (4, 0.856), (5, 0.855)]  # a lead of 0.005: no leader on MiniLM
    flat = [(i, 2.0) for i in range(1, 6)]  # BM25's head is flat: its weight drops only while dense has a leader
    settings = _settings(tmp_path)
    assert dense_lead(dense) == pytest.approx(0.005)
    assert dense_lead(dense, SPREAD) == pytest.approx(0.04)
    store = Store(":memory:", dim=embedder.dim, embedder_id="x")
    try:
        plain = FusionWeights.of(Context(store, embedder, settings))
        spread = FusionWeights.of(Context(store, ScaledEmbedder(embedder, SPREAD), settings))
    finally:
        store.close()
    assert plain.scale is None and spread.scale is SPREAD
    assert plain.lexical_weight(flat, dense) == settings.graph.fusion_lexical
    assert spread.lexical_weight(flat, dense) == pytest.approx(settings.graph.fusion_lexical * settings.graph.fusion_lexical_flat)
