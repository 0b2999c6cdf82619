"""Which GGUF model to use: --model/config (a path or a name `localrag models` lists), else the
largest *.gguf in models/, else in ~/.cache/localrag/models, else the bundled SmolLM2."""

from __future__ import annotations

import difflib
import os
from dataclasses import dataclass
from pathlib import Path

from localrag.llm.base import LLMError
from localrag.llm.gguf_info import GGUF_MAGIC, file_magic
from localrag.llm.model_stores import FoundModel, bundled_model, cache_models_dir, find_models, lookup, model_dirs

__all__ = ["ModelChoice", "UnknownModel", "bundled_model", "check_gguf", "discover", "model_dirs"]


class UnknownModel(LLMError):
    """``--model NAME`` names no model found (or several): a mistake in what was asked for."""


@dataclass(frozen=True)
class ModelChoice:
    path: Path
    source: str  # "config" | "models/" | "localrag cache" | "bundled" | a store's name ("Ollama", …)
    name: str  # how the model is shown and keyed: Ollama's name, else the file's stem


def discover(configured: str = "") -> ModelChoice:
    if configured:
        if is_path(configured):
            path = Path(configured).expanduser()
            check_gguf(path)
            return ModelChoice(path, "config", path.stem)
        return by_name(configured)
    for source, dirs in (("models/", model_dirs()), ("localrag cache", [cache_models_dir()])):
        candidates = [p for d in dirs if d.is_dir() for p in d.glob("*.gguf") if p.is_file()]
        if candidates:
            best = max(candidates, key=lambda p: p.stat().st_size)
            check_gguf(best)
            return ModelChoice(best, source, best.stem)
    bundled = bundled_model()
    if bundled is None:
        raise LLMError(
            "no language model found: put a GGUF file in models/ (see models/README.md), "
            "pass --model PATH or a name `localrag models` lists, or run `make install` to get the bundled SmolLM2"
        )
    return ModelChoice(bundled, "bundled", bundled.stem)


def is_path(value: str) -> bool:
    """Whether ``--model VALUE`` means a file (else it is a listed model's name, e.g. ``qwen2.5:14b``)."""
    path = Path(value).expanduser()
    return (path.exists() or value.lower().endswith(".gguf") or value.startswith(("/", "~", "."))
            or (os.sep != "/" and os.sep in value))


def by_name(name: str) -> ModelChoice:
    models = find_models()
    hits = lookup(name, models)
    if len(hits) > 1:
        raise UnknownModel(f"{name!r} names {len(hits)} models ({', '.join(m.name for m in hits)}): "
                           "give the whole name `localrag models` shows")
    if not hits:
        close = difflib.get_close_matches(name, [n for m in models for n in m.names], n=3, cutoff=0.5)
        hint = f" (did you mean {', '.join(close)}?)" if close else ""
        raise UnknownModel(f"no model named {name!r}{hint}: `localrag models` lists the models found "
                           "(models/, the Hugging Face cache, LM Studio, Ollama), or give a GGUF file's path")
    return chosen(hits[0])


def chosen(model: FoundModel) -> ModelChoice:
    if model.problem:
        raise LLMError(f"model {model.name}: {model.problem}")
    check_gguf(model.path)
    return ModelChoice(model.path, model.source, model.name if model.source == "Ollama" else model.path.stem)


def check_gguf(path: Path) -> None:
    """One clear error naming the path, before llama.cpp prints pages of its own."""
    if not path.exists():
        raise LLMError(f"model file not found: {path} — check --model / llm.model, or remove it to use models/ or the bundled model")
    if not path.is_file():
        raise LLMError(f"model path is not a file: {path}")
    try:
        magic = file_magic(path)
    except OSError as exc:
        raise LLMError(f"cannot read model file {path}: {exc.strerror or exc}") from exc
    if magic != GGUF_MAGIC:
        raise LLMError(
            f"{path} is not a GGUF model file (it starts with {magic!r}); "
            "download a .gguf build of the model (e.g. Qwen2.5-14B-Instruct-Q4_K_M.gguf) into models/"
        )
