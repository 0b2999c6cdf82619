"""`localrag index DIR`: the fast phase (embed) then the graph phase, with progress bars."""

from __future__ import annotations

import argparse

from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

from localrag.commands.common import add_folder, console, err_console, settings_from
from localrag.kg.extractors import EXTRACTORS


def register(sub: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser("index", parents=[common], help="index a notes folder (incremental)",
                       description="Index a folder: load, chunk and embed changed files (fast), then build the "
                       "knowledge graph from the extraction queue (slow, resumable).")
    add_folder(p, required=True)
    p.add_argument("--no-graph", action="store_true", help="only the fast phase (dense and lexical search)")
    p.add_argument("--extractor", choices=["auto", *EXTRACTORS.names()], help="graph extractor (default from config)")
    p.add_argument("--reembed", action="store_true",
                   help="an index built with another embedder (index.embedder) is embedded again with this one")
    p.add_argument("--quiet", action="store_true", help="no progress bars")
    p.set_defaults(func=run)


def progress_bar(quiet: bool = False) -> Progress:
    return Progress(
        TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(),
        TextColumn("{task.fields[rate]}"), TimeElapsedColumn(), TextColumn("ETA"), TimeRemainingColumn(),
        console=console, disable=quiet, transient=False,
    )


def run(args: argparse.Namespace) -> int:
    # loaded on use: the pipeline (numpy, SQLite, the embedder) stays out of `localrag --help`
    from localrag.api import Index

    extra = {"index.extractor": args.extractor} if args.extractor else {}
    settings = settings_from(args, args.folder, **extra)
    index = Index(settings, reembed=args.reembed)
    if index.replaced is not None and not args.quiet:
        err_console.print(f"[dim]embedding every note again with {escape(index.embedder.id)}; the old index is kept "
                          f"at {escape(str(index.replaced))} until this one is complete[/]")
    try:
        check = index.check_health()
        if check.ran and not args.quiet:
            err_console.print(f"[dim]index database checked: {escape(check.describe())}[/]")
        with progress_bar(args.quiet) as bar:
            scan = bar.add_task("files", total=None, rate="")
            embed = bar.add_task("embedded", total=None, rate="", visible=False)
            ocr = bar.add_task("OCR pages", total=None, rate="", visible=False)
            ocr_pages: list[int] = []  # the pages of the scanned document being read

            def on_sync(ev) -> None:
                if ev.phase == "scan":
                    bar.update(scan, completed=ev.done, total=ev.total or None)
                    if ocr_pages:  # the scanned document before was read to its end
                        bar.update(ocr, completed=ocr_pages.pop())
                elif ev.phase == "ocr":  # seconds a page: the page being read, of its document
                    ocr_pages[:] = [ev.total]
                    bar.update(ocr, visible=True, completed=ev.done - 1, total=ev.total, rate=escape(ev.path))
                elif ev.phase == "embed":
                    bar.update(embed, visible=True, completed=ev.done, total=ev.total,
                               rate=_rate(bar, embed, "passages"))
                elif ev.phase == "remove":
                    bar.update(scan, description="removing", completed=ev.done, total=ev.total)

            report = index.sync(progress=on_sync)
            bar.update(scan, completed=1, total=1)
            if report.embedded:
                bar.update(embed, completed=report.embedded, total=report.embedded)
        console.print(escape(sync_summary(report)))
        if not report.deferred and (replaced := index.finish_reembed()) is not None:
            console.print(f"re-embedded with {escape(index.embedder.id)}; removed the old index {escape(str(replaced))}")
        for s in report.skipped:
            console.print(f"  [yellow]skipped[/] {escape(s.path)}: {escape(s.reason)} — {escape(s.detail)}")
        if not args.no_graph and hasattr(index, "extract_graph") and settings.index.extractor != "none":
            _graph_phase(index, args.quiet)
    finally:
        index.close()
    return 0


def sync_summary(report) -> str:
    """One line whose file counts add up to the files seen; documents removed from the index are counted apart."""
    skipped = "skipped" + (f" ({report.still_skipped} unchanged since last time)" if report.still_skipped else "")
    parts = [(report.added, "added"), (report.updated, "changed"),
             (report.rechunked, "cut into passages again (the passage rules changed)"),
             (report.touched, "touched (same content)"),
             (report.moved, "moved"), (report.unchanged, "unchanged"),
             (len(report.skipped) + report.still_skipped, skipped), (report.deferred, "left for the next run")]
    counts = ", ".join(f"{n} {label}" for n, label in parts if n or label in ("added", "unchanged", skipped))
    removed = f" · {report.removed} removed from the index" if report.removed else ""
    removed += f" · {report.ocr_pages} page{'s' if report.ocr_pages != 1 else ''} read by OCR" if report.ocr_pages else ""
    return (f"{report.files_seen} files: {counts}{removed} · passages +{report.passages_added} "
            f"−{report.passages_removed} (kept {report.passages_kept}) · embedded {report.embedded}, reused "
            f"{report.vectors_reused} · {report.seconds:.1f}s")


# Another process's graph phase that has just found its queue empty lets go of the lock within
# moments; one that is still working will also take the passages this run queued.
GRAPH_LOCK_WAIT_S = 5.0


def _graph_phase(index, quiet: bool) -> None:
    # loaded on use: the store (numpy, SQLite) stays out of `localrag --help`
    from localrag.store.lock import LockBusy

    with progress_bar(quiet) as bar:
        task = bar.add_task("graph", total=None, rate="")

        def on_graph(ev) -> None:
            bar.update(task, completed=ev.done, total=ev.total, rate=_rate(bar, task, "passages") +
                       (f" · {ev.failed} failed" if ev.failed else ""))

        try:
            report = index.extract_graph(progress=on_graph, wait_s=GRAPH_LOCK_WAIT_S)
        except LockBusy as exc:
            err_console.print(f"[dim]graph phase: {exc}; that process extracts the new passages too[/]")
            return
    again = f" ({report.requeued} queued again: this version finds names by other rules)" if report.requeued else ""
    console.print(
        f"graph: {report.passages} passages extracted{again}, +{report.facts_added} facts, "
        f"{report.failed} failed, {report.fallback} by rules fallback, {report.llm_calls} LLM calls, {report.seconds:.1f}s"
    )


def _rate(bar: Progress, task_id, unit: str) -> str:
    task = bar.tasks[task_id] if isinstance(task_id, int) and task_id < len(bar.tasks) else None
    if task is None or not task.speed:
        return ""
    return f"{task.speed:.1f} {unit}/s"
