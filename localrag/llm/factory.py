"""Build the configured backend."""

from __future__ import annotations

from pathlib import Path

from localrag.config import LLMSettings
from localrag.llm.discovery import discover


def _is_gguf_path(name: str) -> bool:
    return name.lower().endswith(".gguf") or Path(name).expanduser().is_file()


def make_llm(settings: LLMSettings, role: str = "main"):
    """(backend, where it came from). ``role`` "index" uses llm.index_model when set.

    With a server URL, llm.index_model is a model name on that server, unless it is a GGUF
    path: then extraction runs in process and answers go to the server.
    """
    index_model = settings.index_model if role == "index" else ""
    if settings.url and not (index_model and _is_gguf_path(index_model)):
        from localrag.llm.openai_compat import OpenAICompatLLM

        llm = OpenAICompatLLM(settings, model=index_model or settings.url_model)
        return llm, f"server {llm.url.display} (model {index_model or settings.url_model or 'first listed'})"
    from localrag.llm.llamacpp import LlamaCppLLM

    choice = discover(index_model or settings.model)
    return LlamaCppLLM(choice.path, settings), f"{choice.source}: {choice.path}"
