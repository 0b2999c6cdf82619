"""Build the configured backend."""

from __future__ import annotations

from localrag.config import LLMSettings
from localrag.llm.discovery import discover


def make_llm(settings: LLMSettings, role: str = "main"):
    """(backend, where it came from). ``role`` "index" uses llm.index_model when set."""
    if settings.url:
        from localrag.llm.openai_compat import OpenAICompatLLM  # type: ignore[import-not-found]

        model = settings.index_model if role == "index" and settings.index_model else settings.url_model
        return OpenAICompatLLM(settings, model=model), f"server {settings.url}"
    from localrag.llm.llamacpp import LlamaCppLLM

    configured = settings.index_model if role == "index" and settings.index_model else settings.model
    choice = discover(configured)
    return LlamaCppLLM(choice.path, settings), f"{choice.source}: {choice.path}"
