"""Which llama.cpp backend this build has (CPU / CUDA / Metal / Vulkan …) and how many layers go to the GPU.

The backend registry of ggml (the library under llama.cpp) lists the devices the build can
use, with their free memory. ``llm.gpu_layers = -1`` (the default) offloads every layer that
fits: all of them when the file and the KV cache of ``llm.n_ctx`` tokens fit in the GPUs' free
memory (less a reserve for llama.cpp's compute buffers), else as many layers as fit. Any other
value is passed to llama.cpp as it is (0 = CPU only).
"""

from __future__ import annotations

import ctypes
import functools
from dataclasses import dataclass
from pathlib import Path

from localrag.llm.gguf_info import GGUFInfo, UnreadableGGUF, read_gguf_info

AUTO = -1
# llama.cpp's compute buffers and scratch on the GPU beside weights and KV cache: a margin, not
# a measurement (CUDA's compute buffer for a 7B model at 4k context is a few hundred MB)
COMPUTE_RESERVE_BYTES = 768 * 1024 * 1024
DEVICE_KINDS = {0: "CPU", 1: "GPU", 2: "iGPU", 3: "accelerator"}  # enum ggml_backend_dev_type


@dataclass(frozen=True)
class Device:
    name: str  # "CUDA0", "Metal", "CPU"
    description: str  # "NVIDIA GeForce RTX 4070", "Apple M2 Pro"
    kind: str  # "CPU" | "GPU" | "iGPU" | "accelerator"
    backend: str  # the ggml backend it belongs to: "CUDA", "Metal", "Vulkan", "CPU", …
    free_bytes: int
    total_bytes: int


@dataclass(frozen=True)
class Backend:
    devices: tuple[Device, ...]
    error: str = ""  # why the registry could not be read ("" = it was)

    @property
    def gpus(self) -> tuple[Device, ...]:
        return tuple(d for d in self.devices if d.kind in ("GPU", "iGPU"))

    @property
    def name(self) -> str:
        """The GPU backend ("CUDA", "Metal", "Vulkan", …), or "CPU" when the build has none."""
        return self.gpus[0].backend if self.gpus else "CPU"

    def describe(self) -> str:
        if self.error:
            return f"unknown ({self.error})"
        if not self.gpus:
            return "CPU (this llama.cpp build has no GPU backend)"
        gpus = "; ".join(f"{d.description or d.name}, {d.free_bytes / 2**30:.1f} of {d.total_bytes / 2**30:.1f} GiB free"
                         for d in self.gpus)
        return f"{self.name} ({gpus})"


@dataclass(frozen=True)
class Offload:
    gpu_layers: int  # what llama.cpp is given (n_gpu_layers): -1 = all
    offloaded: int  # layers on the GPU, output layer included
    total: int  # the model's layers + 1 (the output layer); 0 = unknown
    reason: str

    def describe(self) -> str:
        if self.total:
            return f"{self.offloaded} of {self.total} layers on the GPU ({self.reason})"
        return f"{'all' if self.gpu_layers < 0 else self.gpu_layers} layers on the GPU ({self.reason})"


@functools.cache
def llama_backend() -> Backend:
    """The devices of the installed llama.cpp build (read once per process)."""
    try:
        # heavy native library: only the backend check needs it
        from llama_cpp._ggml import libggml
    except (ImportError, OSError) as exc:
        return Backend((), f"llama-cpp-python is not importable: {exc}")
    try:
        return Backend(tuple(_devices(libggml)))
    except AttributeError as exc:  # a ggml without the backend registry API
        return Backend((), f"this llama.cpp build does not list its devices: {exc}")


def _devices(lib) -> list[Device]:
    size_t, ptr = ctypes.c_size_t, ctypes.c_void_p
    lib.ggml_backend_dev_count.restype = size_t
    lib.ggml_backend_dev_get.restype, lib.ggml_backend_dev_get.argtypes = ptr, [size_t]
    for fn in ("ggml_backend_dev_name", "ggml_backend_dev_description"):
        getattr(lib, fn).restype, getattr(lib, fn).argtypes = ctypes.c_char_p, [ptr]
    lib.ggml_backend_dev_type.restype, lib.ggml_backend_dev_type.argtypes = ctypes.c_int, [ptr]
    lib.ggml_backend_dev_backend_reg.restype, lib.ggml_backend_dev_backend_reg.argtypes = ptr, [ptr]
    lib.ggml_backend_reg_name.restype, lib.ggml_backend_reg_name.argtypes = ctypes.c_char_p, [ptr]
    lib.ggml_backend_dev_memory.argtypes = [ptr, ctypes.POINTER(size_t), ctypes.POINTER(size_t)]
    out = []
    for i in range(lib.ggml_backend_dev_count()):
        dev = lib.ggml_backend_dev_get(i)
        free, total = size_t(), size_t()
        lib.ggml_backend_dev_memory(dev, ctypes.byref(free), ctypes.byref(total))
        reg = lib.ggml_backend_dev_backend_reg(dev)
        out.append(Device(_text(lib.ggml_backend_dev_name(dev)), _text(lib.ggml_backend_dev_description(dev)),
                          DEVICE_KINDS.get(lib.ggml_backend_dev_type(dev), "other"),
                          _text(lib.ggml_backend_reg_name(reg)) if reg else "", free.value, total.value))
    return out


def _text(raw: bytes | None) -> str:
    return raw.decode("utf-8", "replace") if raw else ""


def plan_offload(setting: int, backend: Backend, info: GGUFInfo | None, file_bytes: int, n_ctx: int) -> Offload:
    """How many layers llama.cpp should put on the GPU (``setting``: ``llm.gpu_layers``)."""
    total = info.layers + 1 if info is not None and info.layers else 0
    if setting != AUTO:
        shown = min(setting, total) if total else setting
        return Offload(setting, max(shown, 0), total, "llm.gpu_layers")
    if not backend.gpus:
        return Offload(0, 0, total, "no GPU backend in this llama.cpp build")
    if not total:
        return Offload(AUTO, 0, 0, "all: the file does not say how many layers it has")
    free = sum(d.free_bytes for d in backend.gpus)
    kv = info.kv_bytes_per_token * n_ctx if info is not None else 0
    per_layer = file_bytes / total
    fit = int((free - kv - COMPUTE_RESERVE_BYTES) // per_layer) if per_layer else total
    if fit >= total:
        return Offload(AUTO, total, total, f"auto: all fit in {free / 2**30:.1f} GiB free")
    fit = max(fit, 0)
    return Offload(fit, fit, total, f"auto: {fit} fit in {free / 2**30:.1f} GiB free beside the KV cache")


def offload_for(path: Path, setting: int, n_ctx: int) -> Offload:
    """The offload of the model at ``path``; its header is read only when there is a GPU to fit it on."""
    backend = llama_backend()
    info = None
    if backend.gpus and setting == AUTO:
        try:
            info = read_gguf_info(path)
        except UnreadableGGUF:
            info = None  # llama.cpp's own load reports the file
    return plan_offload(setting, backend, info, _size(path), n_ctx)


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0
