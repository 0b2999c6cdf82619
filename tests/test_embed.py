"""The embedder's precision switch: bf16 autocast must give the fp32 vectors, near enough."""

from __future__ import annotations

import os

import numpy as np
import pytest

from localrag.embed import OPENMP_SPIN, EmbedderError, MiniLMEmbedder, longest_first, resolve_precision

TEXTS = [
    "Marguerite Okafor restored the lighthouse of Port Ellery in 1931.",
    "The harbour ferry timetable changes every October.",
    "A short note.",
    "Sourdough starter: feed it twice a day with equal weights of flour and water. " * 6,
]


def test_precision_names_and_environment(monkeypatch):
    monkeypatch.delenv("LOCALRAG_EMBED_PRECISION", raising=False)
    assert resolve_precision("fp32") == "fp32"
    assert resolve_precision("BF16") == "bf16"
    assert resolve_precision() in ("fp32", "bf16")
    monkeypatch.setenv("LOCALRAG_EMBED_PRECISION", "fp32")
    assert resolve_precision() == "fp32"
    with pytest.raises(EmbedderError, match="fp16.*auto, fp32, bf16"):
        resolve_precision("fp16")


def test_loading_the_model_shortens_openmp_spinning_unless_the_user_says(monkeypatch):
    monkeypatch.delenv("GOMP_SPINCOUNT", raising=False)
    MiniLMEmbedder().load_model()
    assert os.environ["GOMP_SPINCOUNT"] == OPENMP_SPIN
    monkeypatch.setenv("GOMP_SPINCOUNT", "7")
    MiniLMEmbedder().load_model()
    assert os.environ["GOMP_SPINCOUNT"] == "7"


def test_bf16_vectors_match_fp32_and_are_unit_length():
    fp32 = MiniLMEmbedder(precision="fp32").encode(TEXTS)
    bf16 = MiniLMEmbedder(precision="bf16").encode(TEXTS)
    assert fp32.dtype == bf16.dtype == np.float32
    assert np.allclose(np.linalg.norm(bf16, axis=1), 1.0, atol=1e-5)
    cos = np.sum(fp32 * bf16, axis=1)
    assert cos.min() > 0.999, cos
    # and the neighbours are the same: the ranking of the texts against one query agrees
    q32 = MiniLMEmbedder(precision="fp32").encode_one("who restored the lighthouse")
    assert np.argsort(-(fp32 @ q32)).tolist() == np.argsort(-(bf16 @ q32)).tolist()


def test_numpy_forward_pass_gives_the_same_vectors_without_torch():
    """A new process embeds its question with numpy (localrag/embed_numpy.py): the same vectors as
    sentence-transformers, and torch is not loaded for it."""
    texts = ["Where was the director of film Emile The African born?", "Rosalind Achterberg", "cardamom",
             "Ünïcode and punctuation: (1998–2004)!"]
    fresh = MiniLMEmbedder(precision="fp32")
    small = fresh.encode(texts)
    assert not fresh.loaded, "a few short texts never load the torch model"
    assert small.shape == (4, 384) and np.allclose(np.linalg.norm(small, axis=1), 1.0, atol=1e-5)
    assert np.allclose(fresh.encode_one(texts[0]), small[0])
    reference = MiniLMEmbedder(precision="fp32")
    full = reference._load().encode(texts, normalize_embeddings=True, convert_to_numpy=True)
    assert (small * full).sum(axis=1).min() > 0.99999
    long_text = " ".join(["word"] * 300)
    assert not fresh._small().fits([long_text]) and not fresh._small().fits(["a"] * 17), "indexing stays on torch"


def test_longest_first_orders_by_length_and_keeps_ties_in_order():
    assert longest_first([3, 9, 3, 1, 9]) == [1, 4, 0, 2, 3]
    assert longest_first([]) == []


def test_batches_by_wordpieces_give_each_text_its_own_vector_in_its_place():
    """More texts than a batch are ordered by wordpieces before batching: the vectors come back in the
    callers' order, each the one the text gets alone."""
    texts = [f"{i} " + "sourdough starter flour water " * (i % 7) + f"note {i}" for i in range(40)]
    embedder = MiniLMEmbedder(precision="fp32")
    batched = embedder.encode(texts, batch_size=8)
    alone = np.stack([embedder._load().encode([t], normalize_embeddings=True, convert_to_numpy=True)[0]
                      for t in texts[:12]])
    assert (batched[:12] * alone).sum(axis=1).min() > 0.99999
    assert np.argmax(batched @ alone.T, axis=0).tolist() == list(range(12))
