"""`localrag doctor`: check sqlite-vec, the embedder, the model file and the llama.cpp build."""

from __future__ import annotations

import argparse
import time
from dataclasses import dataclass
from pathlib import Path

from localrag.commands.common import add_folder, console, settings_from


@dataclass
class Check:
    name: str
    ok: bool
    detail: str


def register(sub: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser("doctor", parents=[common], help="check the installation (and --repair a damaged index)")
    add_folder(p)
    p.add_argument("--repair", action="store_true",
                   help="rebuild the index from the documents (keeps the LLM extraction cache when it is intact)")
    p.add_argument("--skip-model", action="store_true", help="do not load the language model")
    p.set_defaults(func=run)


def _sqlite() -> Check:
    # each check loads what it checks, so one that cannot import is reported, not fatal
    from localrag.store.connection import driver_name, self_test

    vec = self_test()
    return Check("sqlite + sqlite-vec", True, f"{driver_name()}, sqlite-vec {vec}, FTS5 ok")


def _embedder() -> Check:
    # each check loads what it checks, so one that cannot import is reported, not fatal
    from localrag.embed import default_embedder

    emb = default_embedder()
    t = time.perf_counter()
    vec = emb.encode(["doctor check"])
    return Check("embedder", vec.shape == (1, emb.dim), f"{emb.id}, {emb.dim}-d, loaded in {time.perf_counter() - t:.1f}s")


def _model(settings) -> list[Check]:
    # each check loads what it checks, so one that cannot import is reported, not fatal
    from localrag.llm.discovery import discover

    out: list[Check] = []
    choice = discover(settings.llm.model)
    size = choice.path.stat().st_size / 1e6
    out.append(Check("model file", True, f"{choice.path} ({size:.0f} MB, from {choice.source})"))
    # each check loads what it checks, so one that cannot import is reported, not fatal
    import llama_cpp

    info = llama_cpp.llama_print_system_info().decode(errors="replace").strip()
    gpu = llama_cpp.llama_supports_gpu_offload()
    out.append(Check("llama.cpp", True, f"llama-cpp-python {llama_cpp.__version__}, GPU offload {'yes' if gpu else 'no'}; {info[:160]}"))
    # each check loads what it checks, so one that cannot import is reported, not fatal
    from localrag.llm.llamacpp import LlamaCppLLM

    t = time.perf_counter()
    llm = LlamaCppLLM(choice.path, settings.llm)
    reply = llm.chat([{"role": "user", "content": "Say OK."}], max_tokens=8, phase="doctor")
    out.append(Check("generation", bool(reply.text.strip()), f"{reply.usage.completion_tokens} tokens in {time.perf_counter() - t:.1f}s (load + generate)"))
    return out


def _backend(settings) -> Check:
    """The llama.cpp build's backend (CPU / CUDA / Metal / Vulkan …) and the layers the model gets on the GPU."""
    # each check loads what it checks, so one that cannot import is reported, not fatal
    from localrag.llm.base import LLMError
    from localrag.llm.discovery import discover
    from localrag.llm.gguf_info import read_gguf_info
    from localrag.llm.gpu import llama_backend, plan_offload

    backend = llama_backend()
    try:
        choice = discover(settings.llm.model)
        info = read_gguf_info(choice.path)
        plan = plan_offload(settings.llm.gpu_layers, backend, info, choice.path.stat().st_size, settings.llm.n_ctx)
        layers = f"{choice.name}: {plan.describe()}"
    except LLMError as exc:
        layers = f"layers to offload unknown ({exc})"
    return Check("llama.cpp backend", not backend.error, f"{backend.describe()}; {layers}")


def run(args: argparse.Namespace) -> int:
    settings = settings_from(args, args.folder)
    if args.repair:
        return _repair(settings)
    checks: list[Check] = []
    steps = [("sqlite", lambda: [_sqlite()]), ("embedder", lambda: [_embedder()])]
    if not settings.llm.url:
        steps.append(("backend", lambda: [_backend(settings)]))
    if not args.skip_model and not settings.llm.url:
        steps.append(("model", lambda: _model(settings)))
    if settings.llm.url:
        def server():
            # each check loads what it checks, so one that cannot import is reported, not fatal
            from localrag.llm.server_check import check_server

            return [Check(c.name, c.ok, c.detail) for c in check_server(settings)]
        steps.append(("server", server))
    if settings.db_path.exists():
        def db():
            # each check loads what it checks, so one that cannot import is reported, not fatal
            from localrag.store.repair import check_database

            result = check_database(settings.db_path)
            hint = "" if not result.startswith("damaged") else (f"; run `localrag doctor {settings.folder_path} --repair` to rebuild it "
                                             "from your notes (cached model extractions are kept)")
            return [Check("index database", result == "ok", f"{settings.db_path}: {result}{hint}")]
        steps.append(("db", db))
    for name, fn in steps:
        try:
            checks.extend(fn())
        except Exception as exc:  # a doctor reports, it does not crash
            checks.append(Check(name, False, f"{type(exc).__name__}: {exc}"))
    for c in checks:
        mark = "[green]ok[/]  " if c.ok else "[red]FAIL[/]"
        console.print(f"{mark} [bold]{c.name}[/]: {c.detail}")
    return 0 if all(c.ok for c in checks) else 1


def _repair(settings) -> int:
    """Move a damaged index aside and rebuild it from the notes, keeping the content-keyed caches
    (LLM extractions, query entities) that still read cleanly: re-extraction then costs no model call."""
    # loaded on use: the pipeline (numpy, SQLite, the embedder) stays out of `localrag --help`
    from localrag.api import Index
    from localrag.store.lock import writer_lock
    from localrag.store.repair import check_database, move_aside, salvage_caches

    db = settings.db_path
    moved = None
    # both writers (the fast phase and the graph phase) are kept out while the file moves
    with writer_lock(db, wait_s=30), writer_lock(Path(str(db) + "-graph"), wait_s=30):
        if db.exists():
            state = check_database(db)
            moved = move_aside(db)
            console.print(f"moved the old index ({state}) to {moved}")
    index = Index(settings)
    try:
        if moved is not None:
            for s in salvage_caches(moved, index.store):
                console.print(f"kept from the old index: {s.describe()}")
        report = index.sync()
        console.print(f"rebuilt: {report.added} documents, {report.passages_added} passages, {len(report.skipped)} skipped")
        if hasattr(index, "extract_graph") and settings.index.extractor != "none":
            g = index.extract_graph()
            console.print(f"graph: {g.passages} passages, {g.facts_added} facts, {g.cached} from the kept cache, "
                          f"{g.llm_calls} LLM calls")
        state = check_database(db)
        console.print(f"index database: {state}")
    finally:
        index.close()
    return 0 if state == "ok" else 1
