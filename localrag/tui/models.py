"""The GGUF models a user can switch to: files in models/ and the bundled SmolLM2."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from localrag.config import LLMSettings
from localrag.ingest.watcher import Interrupted
from localrag.llm.base import LLMError
from localrag.llm.discovery import bundled_model, discover, model_dirs


@dataclass(frozen=True)
class ModelOption:
    path: Path
    source: str  # "models/" | "bundled" | "config"
    size_bytes: int

    @property
    def name(self) -> str:
        return self.path.stem


def available_models(configured: str = "") -> list[ModelOption]:
    seen: set[Path] = set()
    out: list[ModelOption] = []

    def add(path: Path, source: str) -> None:
        real = path.resolve()
        if real in seen or not path.is_file():
            return
        seen.add(real)
        out.append(ModelOption(path, source, path.stat().st_size))

    if configured:
        add(Path(configured).expanduser(), "config")
    for d in model_dirs():
        for p in sorted(d.glob("*.gguf")):
            add(p, "models/")
    bundled = bundled_model()
    if bundled is not None:
        add(bundled, "bundled")
    return out


def model_label(settings: LLMSettings) -> str:
    """Which model the next load will use, without loading it."""
    if settings.url:
        return f"{settings.url_model or 'server model'} @ {settings.url}"
    try:
        choice = discover(settings.model)
    except LLMError as exc:
        return f"none ({exc})"
    return f"{choice.path.stem} ({choice.source})"


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
        return discover(self._settings.model).path.stem

    def chat(self, messages, **kwargs):
        if self._loaded is None:
            self._loaded = self._get_llm()
        if self._interrupt is not None and kwargs.get("on_token") is None:
            kwargs["on_token"] = self._check  # streaming lets a long extraction call stop between tokens
        return self._loaded.chat(messages, **kwargs)

    def _check(self, _token: str) -> None:
        if self._interrupt():
            raise Interrupted()
