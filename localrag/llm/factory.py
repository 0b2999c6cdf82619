"""Build the configured backend, found by name in the backend registry.

Built-ins: "llamacpp" (a GGUF in process) and "openai" (an OpenAI-compatible server).
``llm.backend`` empty keeps the default rule: the server when ``llm.url`` is set, else
llama.cpp. A third-party backend is an entry point in the group ``localrag.backends``: a
callable ``(settings: LLMSettings, model: str) -> BuiltLLM`` (``model`` is the role's model,
"" for the configured default).
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable

from localrag.config import LLMSettings
from localrag.llm.base import BuiltLLM, LLMError
from localrag.registry import Registry, UnknownPlugin

Backend = Callable[[LLMSettings, str], BuiltLLM]

BACKENDS: Registry[Backend] = Registry("LLM backend", "localrag.backends", {
    "llamacpp": "localrag.llm.llamacpp:backend",
    "openai": "localrag.llm.openai_compat:backend",
})


def _is_gguf_path(name: str) -> bool:
    return name.lower().endswith(".gguf") or Path(name).expanduser().is_file()


def backend_for(settings: LLMSettings, role: str = "main") -> tuple[str, str]:
    """(backend name, the role's model or "" for the default). ``role`` "index" uses llm.index_model when set.

    With a server URL, llm.index_model is a model name on that server, unless it is a GGUF
    path: then extraction runs in process and answers go to the server.
    """
    index_model = settings.index_model if role == "index" else ""
    if settings.backend:
        return settings.backend, index_model
    if settings.url and not (index_model and _is_gguf_path(index_model)):
        return "openai", index_model
    return "llamacpp", index_model


def make_llm(settings: LLMSettings, role: str = "main") -> BuiltLLM:
    """(backend, where it came from) for ``role`` ("main" answers and tracking, "index" extraction)."""
    name, model = backend_for(settings, role)
    try:
        backend = BACKENDS.get(name)
    except UnknownPlugin as exc:  # a setting the user wrote: an LLMError is shown as one line, like other load failures
        raise LLMError(f"llm.backend: {exc}") from exc
    return backend(settings, model)
