"""What a GGUF file says about its model, read from its header without loading the weights.

llama.cpp loads a model ``vocab_only`` in 0.1–0.4 s: the key-value header and the tensor
table are read and checked against the file's size (a truncated download fails here), the
weights are not. The ``gguf`` package of llama.cpp parses the same header in pure Python, but
builds every tokenizer array eagerly (4.5 s for SmolLM2's 49k tokens), too slow to list a
folder of models. Results are cached per path, size and modification time.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import re
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

from localrag.llm.base import LLMError

GGUF_MAGIC = b"GGUF"
KV_BYTES = 2  # llama.cpp keeps the KV cache in f16 by default


class UnreadableGGUF(LLMError):
    """The file is not a GGUF model llama.cpp can read; the message says why in one line."""


@dataclass(frozen=True)
class GGUFInfo:
    params: int  # llama.cpp's count of the file's weights
    size_label: str  # general.size_label ("135M", "1.5B"), or the count formatted
    architecture: str  # general.architecture ("llama", "qwen2")
    quantisation: str  # from general.file_type ("Q4_K_M"); "" when the file does not say
    context_length: int  # the context the model was trained for; 0 = not stated
    layers: int  # repeating blocks; llama.cpp offloads layers + 1 (the output layer) for "all"
    chat_template: bool  # tokenizer.chat_template is present
    kv_bytes_per_token: int  # KV cache per token of context (f16), for fitting layers on a GPU; 0 = unknown


def format_params(n: int) -> str:
    return f"{n / 1e9:.1f}B" if n >= 1e9 else f"{n / 1e6:.0f}M"


_CACHE: dict[tuple[str, int, int], GGUFInfo | UnreadableGGUF] = {}
_LOCK = threading.Lock()


def read_gguf_info(path: Path) -> GGUFInfo:
    """The header of ``path``; ``UnreadableGGUF`` when it is missing, not GGUF, or broken."""
    try:
        stat = path.stat()
    except OSError as exc:
        raise UnreadableGGUF(f"cannot read {path}: {exc.strerror or exc}") from exc
    key = (str(path.resolve()), stat.st_size, stat.st_mtime_ns)
    with _LOCK:
        cached = _CACHE.get(key)
    if cached is None:
        try:
            cached = _read(path)
        except UnreadableGGUF as exc:
            cached = exc
        with _LOCK:
            _CACHE[key] = cached
    if isinstance(cached, UnreadableGGUF):
        raise UnreadableGGUF(str(cached))
    return cached


def file_magic(path: Path) -> bytes:
    """The first four bytes (b"GGUF" for a GGUF file); an OSError is the caller's to word."""
    with path.open("rb") as fh:
        return fh.read(4)


def _read(path: Path) -> GGUFInfo:
    try:
        magic = file_magic(path)
    except OSError as exc:
        raise UnreadableGGUF(f"cannot read {path}: {exc.strerror or exc}") from exc
    if magic != GGUF_MAGIC:
        raise UnreadableGGUF(f"not a GGUF file (it starts with {magic!r})")
    try:
        # heavy native library: only reading a GGUF's header needs it
        import llama_cpp
    except ImportError as exc:
        raise UnreadableGGUF(f"llama-cpp-python is not installed ({exc})") from exc
    params = llama_cpp.llama_model_default_params()
    params.vocab_only = True
    with captured_stderr() as log:
        model = llama_cpp.llama_model_load_from_file(str(path).encode(), params)
    if not model:
        raise UnreadableGGUF(load_error(log.text))
    try:
        return _info(llama_cpp, model)
    finally:
        llama_cpp.llama_model_free(model)


def _info(llama_cpp, model) -> GGUFInfo:
    def meta(key: str) -> str:
        buf = ctypes.create_string_buffer(256)
        got = llama_cpp.llama_model_meta_val_str(model, key.encode(), buf, len(buf))
        return buf.value.decode("utf-8", "replace") if got >= 0 else ""

    def number(key: str) -> int:
        try:
            return int(float(meta(key)))
        except ValueError:
            return 0

    n = int(llama_cpp.llama_model_n_params(model))
    arch = meta("general.architecture")
    layers = number(f"{arch}.block_count")
    heads, heads_kv, width = (number(f"{arch}.attention.head_count"), number(f"{arch}.attention.head_count_kv"),
                              number(f"{arch}.embedding_length"))
    kv_width = heads_kv * width // heads if heads else 0
    return GGUFInfo(
        params=n, size_label=meta("general.size_label") or format_params(n), architecture=arch,
        quantisation=quantisation_name(meta("general.file_type")), context_length=number(f"{arch}.context_length"),
        layers=layers, chat_template=bool(llama_cpp.llama_model_chat_template(model, None)),
        kv_bytes_per_token=2 * layers * kv_width * KV_BYTES,
    )


def quantisation_name(file_type: str) -> str:
    """general.file_type's number as llama.cpp names it (15 -> "Q4_K_M"); "" when absent or unknown."""
    if not file_type.strip().isdigit():
        return ""
    # heavy native library: only reading a GGUF's header needs it
    import llama_cpp

    wanted = int(file_type)
    for name in dir(llama_cpp):
        if name.startswith("LLAMA_FTYPE_") and name != "LLAMA_FTYPE_GUESSED" and getattr(llama_cpp, name) == wanted:
            return name.removeprefix("LLAMA_FTYPE_MOSTLY_").removeprefix("LLAMA_FTYPE_ALL_")
    return ""


_REASON = re.compile(r"(?:error loading model|gguf_init_from_\w+): (.+)")
_GENERIC = ("failed to load model from", "failed to read header", "llama_model_loader: failed")


def load_error(log: str) -> str:
    """llama.cpp's own reason for refusing a file, from what it logged, as one line."""
    reasons = [m.group(1).strip() for m in map(_REASON.search, log.splitlines()) if m]
    specific = [r for r in reasons if not any(g in r for g in _GENERIC)]
    if specific:
        return specific[0].removeprefix("error loading model architecture: ")
    return "llama.cpp cannot read its header (truncated or corrupt)"


@contextlib.contextmanager
def quiet_stderr() -> Iterator[None]:
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


@dataclass
class Captured:
    text: str = ""  # what was written to fd 2, once the block has ended


@contextlib.contextmanager
def captured_stderr() -> Iterator[Captured]:
    """fd 2 goes to a temporary file while the block runs; ``text`` holds what was written after it."""
    captured = Captured()
    try:
        saved = os.dup(2)
    except OSError:
        yield captured
        return
    with tempfile.TemporaryFile() as sink:
        os.dup2(sink.fileno(), 2)
        try:
            yield captured
        finally:
            os.dup2(saved, 2)
            os.close(saved)
            sink.seek(0)
            captured.text = sink.read().decode("utf-8", "replace")
