"""`localrag models`: every GGUF model found on this machine, with what its header says."""

from __future__ import annotations

import argparse
import json

from rich.markup import escape

from localrag.commands.common import console, settings_from
from localrag.llm.catalog import Catalog, ModelEntry, catalog, columns
from localrag.llm.model_stores import search_locations


def register(sub: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser("models", parents=[common],
                       help="list the GGUF models found (models/, Hugging Face cache, LM Studio, Ollama) and which "
                       "one is used; pick one with --model NAME")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    settings = settings_from(args, ".", check=False)
    found = catalog(settings.llm)
    min_params = settings.auto_min_params
    if args.json:
        print(json.dumps(_json(found, min_params), indent=2))
        return 0
    for entry in found.entries:
        _print_entry(entry, min_params)
    if not found.entries:
        console.print("no GGUF model found")
    _footer(found, settings.llm.url)
    return 0


def _print_entry(entry: ModelEntry, min_params: int) -> None:
    """Two lines a model: its name and source, then the header's figures (or why it cannot be used)."""
    name, source, size, params, quant, context, template, auto = columns(entry, min_params)
    mark = "[bold green]*[/] " if entry.default else "  "
    console.print(f"{mark}[bold]{escape(name)}[/]  [dim]{escape(source)}[/]")
    if not entry.usable:
        console.print(f"    [red]{escape(params)}[/]  [dim]{escape(str(entry.model.path))}[/]")
        return
    template = "chat template" if template == "yes" else "[yellow]no chat template[/]"
    console.print(f"    {size} · {params} · {quant} · context {context} · {template} · auto runs {auto}")


def _footer(found: Catalog, url: str) -> None:
    default = found.default
    if url:
        console.print(f"answers come from the server at {escape(url)} (llm.url); these files are not used")
    elif default is not None:
        console.print(f"* used without --model: {escape(default.model.name)}; pick another with "
                      "--model NAME (or llm.model = \"NAME\" in config.toml)")
    else:
        console.print(f"no default model: {escape(found.default_problem)}")
    looked = ", ".join(f"{escape(str(loc.path))}" for loc in search_locations() if loc.exists)
    console.print(f"[dim]looked in: {looked or 'no model folder exists'} (and the paths in llm.model)[/]")


def _json(found: Catalog, min_params: int) -> dict:
    return {
        "models": [_entry_json(e, min_params) for e in found.entries],
        "default": found.default.model.name if found.default is not None else None,
        "default_problem": found.default_problem,
        "looked_in": [{"source": loc.source, "path": str(loc.path), "exists": loc.exists} for loc in search_locations()],
    }


def _entry_json(entry: ModelEntry, min_params: int) -> dict:
    model, info = entry.model, entry.info
    return {
        "name": model.name, "aliases": list(model.aliases), "source": model.source, "path": str(model.path),
        "size_bytes": model.size_bytes, "usable": entry.usable, "problem": entry.problem, "default": entry.default,
        "params": info.params if info else None, "size_label": info.size_label if info else None,
        "architecture": info.architecture if info else None, "quantisation": info.quantisation if info else None,
        "context_length": info.context_length if info else None, "layers": info.layers if info else None,
        "chat_template": info.chat_template if info else None,
        "auto_strategy": entry.auto_strategy(min_params) if info else None,
    }
