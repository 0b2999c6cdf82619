"""A GGUF embedding model the user provides, run by llama.cpp (multilingual-e5, bge-m3 and the like).

For a machine with a GPU: llama.cpp offloads the model as it does the chat model
(``llm.gpu_layers``). The index records the file's name and size as the embedder's id, so a
different file is a different embedder (localrag/store/db.py refuses to mix their vectors).
"""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import Callable, Sequence

import numpy as np

from localrag.embed import EmbedderError
from localrag.llm.gguf_info import UnreadableGGUF, quiet_stderr, read_gguf_info

E5_PREFIXES = ("query: ", "passage: ")  # what an e5 model was trained with (question side, passage side)
MAX_WINDOW = 2048  # positions read per text at most (bge-m3 takes 8192: chunks are far shorter)


class GGUFEmbedderError(EmbedderError):
    """The GGUF embedding model cannot be loaded or run."""


def prefixes_for(path: Path, query_prefix: str, passage_prefix: str) -> tuple[str, str]:
    """The (question, passage) prefixes: as set, or for "auto" e5's own when the file is named e5, else none."""
    auto = E5_PREFIXES if "e5" in path.name.lower() else ("", "")
    return (auto[0] if query_prefix == "auto" else query_prefix, auto[1] if passage_prefix == "auto" else passage_prefix)


class GGUFEmbedder:
    def __init__(self, path: str | Path, *, gpu_layers: int = 0, threads: int = 0,
                 query_prefix: str = "auto", passage_prefix: str = "auto"):
        self.path = Path(path).expanduser()
        if not self.path.is_file():
            raise GGUFEmbedderError(f"embedding model {self.path} not found")
        self.id = f"gguf:{self.path.name}:{self.path.stat().st_size}"
        self.query_prefix, self.passage_prefix = prefixes_for(self.path, query_prefix, passage_prefix)
        self._gpu_layers = gpu_layers
        self._threads = threads or (os.cpu_count() or 2)
        self._lock = threading.Lock()
        self._llm = None
        self._query_cache: dict[str, np.ndarray] = {}
        self.dim = self._load().n_embd()

    def _load(self):
        if self._llm is None:
            try:
                # heavy native library: loaded with the model, not when localrag starts
                from llama_cpp import Llama
            except ImportError as exc:
                raise GGUFEmbedderError(f"llama-cpp-python is not installed ({exc}); run `make install`") from exc
            try:
                trained = read_gguf_info(self.path).context_length
            except UnreadableGGUF as exc:
                raise GGUFEmbedderError(f"{self.path} is not a readable GGUF model: {exc}") from exc
            window = min(trained or MAX_WINDOW, MAX_WINDOW)
            try:
                with quiet_stderr():
                    self._llm = Llama(model_path=str(self.path), embedding=True, n_ctx=window, n_batch=window,
                                      n_ubatch=window, n_threads=self._threads, n_threads_batch=self._threads,
                                      n_gpu_layers=self._gpu_layers, verbose=False)
            except (ValueError, RuntimeError, OSError) as exc:
                raise GGUFEmbedderError(f"llama.cpp could not load the embedding model {self.path}: {exc}") from exc
        return self._llm

    @property
    def window(self) -> int:
        return int(self._load().n_ctx())

    def _embed(self, text: str) -> np.ndarray:
        llm = self._load()
        with self._lock, quiet_stderr():
            out = llm.embed(text, normalize=False, truncate=True)
        vector = np.asarray(out, dtype=np.float32)
        if vector.ndim == 2:  # a model without a pooling layer answers per token: mean-pool them
            vector = vector.mean(axis=0)
        norm = float(np.linalg.norm(vector))
        return vector / norm if norm > 0 else vector

    def encode(self, texts: Sequence[str], batch_size: int = 32) -> np.ndarray:
        """Passages, one text per llama.cpp call (a call holds one context of ``window`` tokens)."""
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        return np.stack([self._embed(self.passage_prefix + t) for t in texts]).astype(np.float32)

    def encode_one(self, text: str) -> np.ndarray:
        hit = self._query_cache.get(text)
        if hit is None:
            hit = self._embed(self.query_prefix + text)
            if len(self._query_cache) > 4096:
                self._query_cache.clear()
            self._query_cache[text] = hit
        return hit

    def window_counter(self) -> tuple[Callable[[Sequence[str]], list[int]], int]:
        """(tokens per text, how many fit): the passage prefix and the specials are counted out of the window."""
        llm = self._load()
        overhead = len(llm.tokenize(self.passage_prefix.encode("utf-8"), add_bos=True)) + 1

        def count(texts: Sequence[str]) -> list[int]:
            return [len(llm.tokenize(t.encode("utf-8"), add_bos=False)) for t in texts]

        return count, self.window - overhead
