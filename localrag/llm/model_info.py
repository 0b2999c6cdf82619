"""How large the answering model is, from its GGUF header, without loading its weights.

``gguf_info`` reads the parameter count and the ``general.size_label`` the file declares. `auto`
(``Assistant.resolve``) decides by this count; a served model has no file here, so its
size is ``llm.params`` when the user states it, else unknown.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from localrag.config import LLMSettings
from localrag.llm.base import LLMError
from localrag.llm.discovery import discover
from localrag.llm.gguf_info import UnreadableGGUF, format_params, read_gguf_info


@dataclass(frozen=True)
class ModelSize:
    params: int  # 0 = unknown
    label: str  # the file's general.size_label ("135M", "0.5B"), or a count formatted here
    model: str  # file stem or served model name
    source: str  # where the count came from

    @property
    def known(self) -> bool:
        return self.params > 0


def gguf_size(path: Path, name: str = "") -> ModelSize:
    """Parameter count and size label of a GGUF file, from its header (``name``: how it is shown)."""
    shown = name or path.stem
    try:
        info = read_gguf_info(path)
    except UnreadableGGUF as exc:
        return ModelSize(0, "", shown, f"unknown: llama.cpp could not read the file's metadata ({exc})")
    return ModelSize(info.params, info.size_label, shown, "GGUF metadata")


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
    return gguf_size(choice.path, choice.name)
