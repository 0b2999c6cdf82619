"""The models a user can pick, each with what its GGUF header says: `localrag models` and the TUI's list."""

from __future__ import annotations

from dataclasses import dataclass

from localrag.config import LLMSettings
from localrag.llm.base import LLMError
from localrag.llm.discovery import discover, is_path
from localrag.llm.gguf_info import GGUFInfo, UnreadableGGUF, read_gguf_info
from localrag.llm.model_stores import FoundModel, find_models


@dataclass(frozen=True)
class ModelEntry:
    model: FoundModel
    info: GGUFInfo | None  # None when unreadable
    problem: str  # why it cannot be used ("" = it can)
    default: bool  # the one used without --model (or the configured one)

    @property
    def usable(self) -> bool:
        return not self.problem

    def auto_strategy(self, min_params: int) -> str:
        """What `auto` runs with this model once the graph is built (Assistant.resolve's rule)."""
        return "neuropath" if self.info is not None and self.info.params >= min_params else "graph"


@dataclass(frozen=True)
class Catalog:
    entries: list[ModelEntry]
    default_problem: str  # why no default model could be chosen ("" = one is marked)

    @property
    def default(self) -> ModelEntry | None:
        return next((e for e in self.entries if e.default), None)


def configured_paths(settings: LLMSettings) -> list[str]:
    """The model paths the settings name (``llm.model``, ``llm.index_model``), listed with the others."""
    return [v for v in (settings.model, settings.index_model) if v and is_path(v)]


def catalog(settings: LLMSettings, *, read_headers: bool = True) -> Catalog:
    """Every model found, with its header read (``read_headers``: 0.1–0.5 s a file, cached per file)."""
    found = find_models(configured_paths(settings))
    try:
        choice = discover(settings.model)
        default_path, default_problem = choice.path.resolve(), ""
    except LLMError as exc:
        default_path, default_problem = None, str(exc)
    entries = []
    for model in found:
        info, problem = _header(model) if read_headers else (None, model.problem)
        entries.append(ModelEntry(model, info, problem, default_path is not None and _is(model, default_path, settings)))
    seen_default = False
    for i, entry in enumerate(entries):  # one default: the first entry of the chosen file
        if entry.default and seen_default:
            entries[i] = ModelEntry(entry.model, entry.info, entry.problem, False)
        seen_default = seen_default or entry.default
    return Catalog(entries, default_problem)


def _is(model: FoundModel, default_path, settings: LLMSettings) -> bool:
    if settings.model and not is_path(settings.model):
        return settings.model in model.names
    return model.path.resolve() == default_path


def _header(model: FoundModel) -> tuple[GGUFInfo | None, str]:
    if model.problem:
        return None, model.problem
    try:
        return read_gguf_info(model.path), ""
    except UnreadableGGUF as exc:
        return None, f"unreadable: {exc}"


HEADERS = ("name", "source", "size", "params", "quant", "context", "chat template", "auto runs")


def columns(entry: ModelEntry, min_params: int) -> tuple[str, ...]:
    """One row of the listing (HEADERS), the same in `localrag models` and the TUI."""
    model, info = entry.model, entry.info
    size = file_size(model.size_bytes) if model.size_bytes else ""
    if info is None:
        return (model.name, model.source, size, entry.problem or "header not read", "", "", "", "")
    context = f"{info.context_length:,}" if info.context_length else "?"
    return (model.name, model.source, size, info.size_label, info.quantisation or "?", context,
            "yes" if info.chat_template else "no", entry.auto_strategy(min_params))


def file_size(n: int) -> str:
    if n >= 1e9:
        return f"{n / 1e9:.1f} GB"
    return f"{n / 1e6:.0f} MB" if n >= 1e6 else f"{n / 1e3:.0f} KB" if n >= 1e3 else f"{n} B"
