"""The LLM layer: a small protocol, backends, prompts and their JSON schemas."""

from localrag.llm.base import LLM, LLMError, Message, Reply, Usage

__all__ = ["LLM", "LLMError", "Message", "Reply", "Usage"]
