"""How large the answering model is, from its GGUF metadata, without loading its weights.

llama.cpp loads a model ``vocab_only`` in 0.1–0.3 s (the tensors are not read) and still
reports the parameter count and the ``general.size_label`` the file declares. `auto`
(``Assistant.resolve``) decides by this count; a served model has no file here, so its
size is ``llm.params`` when the user states it, else unknown.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import threading
from dataclasses import dataclass
from pathlib import Path

from localrag.config import LLMSettings
from localrag.llm.base import LLMError
from localrag.llm.discovery import discover


@dataclass(frozen=True)
class ModelSize:
    params: int  # 0 = unknown
    label: str  # the file's general.size_label ("135M", "0.5B"), or a count formatted here
    model: str  # file stem or served model name
    source: str  # where the count came from

    @property
    def known(self) -> bool:
        return self.params > 0


def format_params(n: int) -> str:
    return f"{n / 1e9:.1f}B" if n >= 1e9 else f"{n / 1e6:.0f}M"


_CACHE: dict[tuple[str, int, int], ModelSize] = {}
_LOCK = threading.Lock()


def gguf_size(path: Path) -> ModelSize:
    """Parameter count and size label of a GGUF file (cached by path, size and mtime)."""
    stat = path.stat()
    key = (str(path.resolve()), stat.st_size, stat.st_mtime_ns)
    with _LOCK:
        if key in _CACHE:
            return _CACHE[key]
    size = _read_gguf(path)
    with _LOCK:
        _CACHE[key] = size
    return size


@contextlib.contextmanager
def quiet_stderr():
    """llama.cpp writes model-load chatter straight to fd 2; keep the terminal clean."""
    try:
        fd = os.dup(2)
    except OSError:
        yield
        return
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, 2)
        yield
    finally:
        os.dup2(fd, 2)
        os.close(fd)
        os.close(devnull)


def _read_gguf(path: Path) -> ModelSize:
    try:
        # heavy native library: only reading a GGUF's metadata needs it
        import llama_cpp
    except ImportError:
        return ModelSize(0, "", path.stem, "unknown: llama-cpp-python is not installed")
    params = llama_cpp.llama_model_default_params()
    params.vocab_only = True
    with quiet_stderr():
        model = llama_cpp.llama_model_load_from_file(str(path).encode(), params)
    if not model:
        return ModelSize(0, "", path.stem, "unknown: llama.cpp could not read the file's metadata")
    try:
        n = int(llama_cpp.llama_model_n_params(model))
        buf = ctypes.create_string_buffer(64)
        got = llama_cpp.llama_model_meta_val_str(model, b"general.size_label", buf, len(buf))
        label = buf.value.decode("utf-8", "replace") if got > 0 else ""
    finally:
        llama_cpp.llama_model_free(model)
    return ModelSize(n, label or format_params(n), path.stem, "GGUF metadata")


def is_served(settings: LLMSettings) -> bool:
    """Whether answers come from a server (``llm.url``, or a backend other than in-process llama.cpp)."""
    return bool(settings.url) or settings.backend not in ("", "llamacpp")


def model_size(settings: LLMSettings) -> ModelSize:
    """The size of the model answers would use (``llm.params`` wins when set)."""
    if settings.params > 0:
        name = settings.url_model or (Path(settings.model).stem if settings.model else "the model")
        return ModelSize(settings.params, format_params(settings.params), name, "llm.params setting")
    if is_served(settings):
        return ModelSize(0, "", settings.url_model or "served model",
                         "unknown: a served model (set llm.params to its parameter count)")
    try:
        choice = discover(settings.model)
    except LLMError as exc:
        return ModelSize(0, "", "no model", f"unknown: {exc}")
    return gguf_size(choice.path)
