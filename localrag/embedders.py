"""The embedder ``index.embedder`` names: MiniLM (English), multilingual-e5-small, or a GGUF file.

One instance per choice and process, as ``default_embedder`` is for MiniLM: a model is large and
its instance is thread-safe behind its lock.
"""

from __future__ import annotations

import threading
from pathlib import Path

from localrag.config import Settings
from localrag.embed import Embedder, default_embedder

_SHARED: dict[tuple, Embedder] = {}
_LOCK = threading.Lock()


def is_default(settings: Settings) -> bool:
    return settings.index.embedder == "minilm"


def embedder_for(settings: Settings) -> Embedder:
    """The embedder the settings choose (MiniLM's shared instance for "minilm")."""
    index = settings.index
    if is_default(settings):
        return default_embedder()
    if index.embedder == "e5-small":
        key: tuple = ("e5-small", index.embed_threads)
    else:
        key = ("gguf", str(Path(index.embedder).expanduser().resolve()), index.embed_threads,
               settings.llm.gpu_layers, index.embed_query_prefix, index.embed_passage_prefix)
    with _LOCK:
        if key not in _SHARED:
            _SHARED[key] = _make(settings)
        return _SHARED[key]


def _make(settings: Settings) -> Embedder:
    index = settings.index
    if index.embedder == "e5-small":
        # loaded on use: the engine is mapped only when an index asks for it
        from localrag.embed_e5 import E5SmallEmbedder

        return E5SmallEmbedder(threads=index.embed_threads)
    # loaded on use: llama.cpp only for an index that names a GGUF embedder
    from localrag.embed_gguf import MAX_WINDOW, GGUFEmbedder
    from localrag.llm.gpu import offload_for

    path = Path(index.embedder).expanduser()
    layers = offload_for(path, settings.llm.gpu_layers, MAX_WINDOW).gpu_layers if path.is_file() else 0
    return GGUFEmbedder(path, gpu_layers=layers, threads=index.embed_threads,
                        query_prefix=index.embed_query_prefix, passage_prefix=index.embed_passage_prefix)
