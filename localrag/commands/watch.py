"""`localrag watch DIR`: index, then keep the index in step with the folder until Ctrl-C."""

from __future__ import annotations

import argparse
import time

from rich.text import Text

from localrag.commands.common import add_folder, console, err_console, settings_from


def register(sub: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser("watch", parents=[common], help="index a folder, then re-index on every change until Ctrl-C",
                       description="Index a folder, then watch it (create / modify / delete / move, new subfolders) "
                       "and sync the changed files after each debounced batch of changes, then the whole folder once it has been "
                       "quiet for a second (what the events missed). One line per batch, and one for what the "
                       "folder's sync found that the events did not.")
    add_folder(p, required=True)
    p.add_argument("--no-graph", action="store_true", help="only the fast phase (dense and lexical search)")
    p.add_argument("--debounce-ms", type=int, help="quiet period before a batch is synced (index.watch_debounce_ms)")
    p.set_defaults(func=run)


def cycle_line(cycle) -> str:
    """One line describing an AutoIndexer cycle (also used by tests)."""
    what = cycle.trigger.describe() if cycle.trigger is not None else "start-up sync"
    if cycle.error:
        return f"{what} -> error: {cycle.error}"
    parts: list[str] = []
    r = cycle.sync
    if r is not None:
        parts.append(f"+{r.added} ~{r.updated} >{r.moved} -{r.removed} files, "
                     f"passages +{r.passages_added} -{r.passages_removed}, {r.embedded} embedded, {r.seconds:.2f}s")
        if r.ocr_pages:
            parts.append(f"{r.ocr_pages} page{'s' if r.ocr_pages != 1 else ''} read by OCR")
        parts += [f"skipped {s.path} ({s.reason})" for s in r.skipped if cycle.trigger is None or s.path in cycle.trigger.paths]
    g = cycle.graph
    if g is not None:
        parts.append(f"graph {getattr(g, 'passages', 0)} passages, +{getattr(g, 'facts_added', 0)} facts, "
                     f"{getattr(g, 'failed', 0)} failed")
    if cycle.stopped:
        parts.append("interrupted")
    return f"{what} -> " + "; ".join(parts)


def run(args: argparse.Namespace) -> int:
    # loaded on use: the pipeline (numpy, SQLite, the embedder) stays out of `localrag --help`
    from localrag.api import Index
    from localrag.ingest.watcher import AutoIndexer

    extra = {"index.watch_debounce_ms": args.debounce_ms} if args.debounce_ms is not None else {}
    settings = settings_from(args, args.folder, **extra)
    index = Index(settings)
    graph = not args.no_graph and settings.index.extractor != "none"

    def on_result(cycle) -> None:
        console.print(f"[dim]{time.strftime('%H:%M:%S')}[/] {cycle_line(cycle)}")

    def on_watch_fallback(fallback) -> None:
        err_console.print(Text.assemble(("warning:", "bold yellow"), " ", fallback.message))

    indexer = AutoIndexer(index, on_result=on_result, graph=graph, on_watch_fallback=on_watch_fallback)
    console.print(f"watching {index.folder} (Ctrl-C to stop)")
    try:
        indexer.run()
    except KeyboardInterrupt:
        console.print("stopped")
    finally:
        index.close()
    return 0
