"""all-MiniLM-L6-v2's forward pass in numpy, for a few short texts: a question, its names.

Why: a new process that asks one question (`localrag ask`, the MCP server's first search)
spent about 3 s importing torch and sentence-transformers to embed a dozen words
(docs/benchmarks.md "Scale: cold `ask`"). This reads the same weights from the same package
(safetensors, memory-mapped, only the rows of the words used) and computes the same
vectors (cosine > 0.99999 to sentence-transformers', tests/test_embed.py) in milliseconds.
Long or many texts (indexing) still go through sentence-transformers, which batches them
on all cores.
"""

from __future__ import annotations

import json
import threading
from functools import lru_cache
from pathlib import Path
from typing import Sequence

import numpy as np
from threadpoolctl import ThreadpoolController

MAX_TEXTS = 16  # more than this (indexing) is sentence-transformers' job
MAX_TOKENS = 128  # … and so is anything longer


@lru_cache(maxsize=1)
def _blas() -> ThreadpoolController:
    return ThreadpoolController()


class NumpyMiniLM:
    """The BERT encoder, mean pooling and normalisation of all-MiniLM-L6-v2, read from ``model_dir``."""

    def __init__(self, model_dir: Path):
        # the fast tokenizer, safetensors' reader and SciPy's erf are light (no torch), loaded with the first
        # query rather than with every process that imports the embedder
        from safetensors import safe_open
        from scipy.special import erf
        from tokenizers import Tokenizer

        self._erf = erf
        self._dir = model_dir
        config = json.loads((model_dir / "config.json").read_text())
        self.heads = int(config["num_attention_heads"])
        self.layers = int(config["num_hidden_layers"])
        self.eps = float(config["layer_norm_eps"])
        self.window = int(json.loads((model_dir / "sentence_bert_config.json").read_text())["max_seq_length"])
        self.tokenizer = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
        self.tokenizer.enable_truncation(self.window)
        self.tokenizer.no_padding()
        self._file = safe_open(str(model_dir / "model.safetensors"), framework="np")
        self._words = self._file.get_slice("embeddings.word_embeddings.weight")
        self._weights: dict[str, np.ndarray] = {}
        self._transposed: dict[str, np.ndarray] = {}
        self._lock = threading.Lock()

    def _w(self, name: str) -> np.ndarray:
        found = self._weights.get(name)
        if found is None:
            found = self._weights[name] = self._file.get_tensor(name)
        return found

    def _norm(self, x: np.ndarray, prefix: str) -> np.ndarray:
        mean = x.mean(-1, keepdims=True)
        var = ((x - mean) ** 2).mean(-1, keepdims=True)
        return (x - mean) / np.sqrt(var + self.eps) * self._w(prefix + ".weight") + self._w(prefix + ".bias")

    def _dense(self, x: np.ndarray, prefix: str) -> np.ndarray:
        # a row-major copy of W.T, once: a dozen query rows times the stored (out, in) matrix's
        # transposed view took twice the CPU, with the same products
        w = self._transposed.get(prefix)
        if w is None:
            w = self._transposed[prefix] = np.ascontiguousarray(self._w(prefix + ".weight").T)
        return x @ w + self._w(prefix + ".bias")

    def _layer(self, x: np.ndarray, i: int) -> np.ndarray:
        p = f"encoder.layer.{i}."
        n, dim = x.shape
        head = dim // self.heads

        def split(t: np.ndarray) -> np.ndarray:
            return t.reshape(n, self.heads, head).transpose(1, 0, 2)

        q = split(self._dense(x, p + "attention.self.query"))
        k = split(self._dense(x, p + "attention.self.key"))
        v = split(self._dense(x, p + "attention.self.value"))
        scores = q @ k.transpose(0, 2, 1) / np.sqrt(head)
        scores = np.exp(scores - scores.max(-1, keepdims=True))
        context = (scores / scores.sum(-1, keepdims=True)) @ v
        context = context.transpose(1, 0, 2).reshape(n, dim)
        x = self._norm(self._dense(context, p + "attention.output.dense") + x, p + "attention.output.LayerNorm")
        hidden = self._dense(x, p + "intermediate.dense")
        hidden = 0.5 * hidden * (1.0 + self._erf(hidden / np.sqrt(2.0)))  # BERT's exact GELU
        return self._norm(self._dense(hidden, p + "output.dense") + x, p + "output.LayerNorm")

    def _forward(self, ids: np.ndarray) -> np.ndarray:
        # one BLAS thread: products this small gain nothing from more, and threads that spin
        # beside other work (an index being built, a model answering) cost ten times the CPU
        with self._lock, _blas().limit(limits=1, user_api="blas"):
            rows = {int(i): self._words[int(i):int(i) + 1][0] for i in set(ids.tolist())}  # only the rows used
            x = (np.stack([rows[int(i)] for i in ids])
                 + self._w("embeddings.position_embeddings.weight")[:len(ids)]
                 + self._w("embeddings.token_type_embeddings.weight")[0])
            x = self._norm(x.astype(np.float32), "embeddings.LayerNorm")
            for i in range(self.layers):
                x = self._layer(x, i)
        pooled = x.mean(0)
        return (pooled / max(float(np.linalg.norm(pooled)), 1e-12)).astype(np.float32)

    def encode_if_small(self, texts: Sequence[str]) -> np.ndarray | None:
        """The vectors of ``texts`` when they are few and short enough that this is the faster way
        (no torch to import); None otherwise. Each text is tokenized once either way."""
        encoded = self._encoded_if_small(texts)
        if encoded is None or not encoded:
            return None
        return np.stack([self._forward(np.asarray(e.ids, dtype=np.int64)) for e in encoded])

    def fits(self, texts: Sequence[str]) -> bool:
        return self._encoded_if_small(texts) is not None

    def _encoded_if_small(self, texts: Sequence[str]) -> list | None:
        if len(texts) > MAX_TEXTS:
            return None
        encoded = self.tokenizer.encode_batch(list(texts))
        return None if any(len(e.ids) > MAX_TOKENS for e in encoded) else encoded
