"""The models a user can switch to (every GGUF `localrag models` lists), the model and offload shown in the header."""

from __future__ import annotations

from localrag.config import LLMSettings
from localrag.ingest.watcher import Interrupted
from localrag.llm.base import LLMError
from localrag.llm.catalog import configured_paths
from localrag.llm.discovery import discover
from localrag.llm.gpu import llama_backend, offload_for
from localrag.llm.model_info import is_served
from localrag.llm.model_stores import FoundModel, find_models


def available_models(settings: LLMSettings) -> list[FoundModel]:
    """The models found, usable ones only (no header read: the palette lists them at once)."""
    return [m for m in find_models(configured_paths(settings)) if not m.problem]


def model_label(settings: LLMSettings) -> str:
    """Which model the next load will use, without loading it."""
    if settings.url:
        return f"{settings.url_model or 'server model'} @ {settings.url}"
    try:
        choice = discover(settings.model)
    except LLMError as exc:
        return f"none ({exc})"
    return f"{choice.name} ({choice.source})"


def offload_label(settings: LLMSettings, loaded: object | None = None) -> str:
    """Where the model's layers go, for the header: "CPU", or "CUDA 29/29 layers" (``loaded``: the
    loaded backend, when one is; a backend without an offload plan, such as a given model, shows nothing)."""
    if loaded is not None:
        plan = getattr(loaded, "offload", None)
    elif is_served(settings):
        return ""
    else:
        try:
            plan = offload_for(discover(settings.model).path, settings.gpu_layers, settings.n_ctx)
        except LLMError:
            return ""
    if plan is None:
        return ""
    backend = llama_backend()
    if not backend.gpus:
        return "CPU"
    if plan.gpu_layers == 0:
        return f"CPU ({backend.name} unused: llm.gpu_layers = 0)"
    if plan.total:
        return f"{backend.name} {plan.offloaded}/{plan.total} layers"
    return f"{backend.name} {'all' if plan.gpu_layers < 0 else plan.gpu_layers} layers"


class SharedModel:
    """The answering model, lent to graph extraction so a big GGUF is loaded once, not twice.

    Loading is deferred to the first extraction call (a queue served from the cache never
    loads it); ``model_id`` is known before that, as the extraction cache key needs it.
    """

    def __init__(self, get_llm, settings: LLMSettings, interrupt=None):
        self._get_llm = get_llm  # () -> the loaded backend (the app loads it and reports the state)
        self._settings = settings
        self._loaded = None
        self._interrupt = interrupt  # () -> bool: abandon the call now (the user is waiting for an answer)

    @property
    def model_id(self) -> str:
        if self._loaded is not None:
            return self._loaded.model_id
        if self._settings.url:
            return self._settings.url_model or "server"
        return discover(self._settings.model).name

    def chat(self, messages, **kwargs):
        if self._loaded is None:
            self._loaded = self._get_llm()
        if self._interrupt is not None and kwargs.get("on_token") is None:
            kwargs["on_token"] = self._check  # streaming lets a long extraction call stop between tokens
        return self._loaded.chat(messages, **kwargs)

    def _check(self, _token: str) -> None:
        if self._interrupt():
            raise Interrupted()
