"""What the `localrag bench` commands run: load the data, run the benchmark, print and write the result.

The parsers are in bench/localrag_bench/cli.py (built on every `localrag` start); this module loads the
pipeline, so cli.py imports it only when a bench command runs.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as _dt
import shlex
import sys
from pathlib import Path
from typing import Any, Callable, Iterator

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn
from rich.table import Table

from localrag.commands.common import UsageError, UserError, console, err_console
from localrag_bench.asked_extraction import ASKED, BASE, run_asked_extraction
from localrag_bench.data import BenchDataError, load_dataset
from localrag_bench.loogle import is_loogle, load_loogle
from localrag_bench.notes_set import load_notes_dataset
from localrag_bench.report import markdown_answers, markdown_pivot, markdown_table, plot_recall, print_result
from localrag_bench.results import load_result
from localrag_bench.rounds import parse_rounds, rounds_for, run_rounds
from localrag_bench.rounds_report import has_rounds, markdown_rounds, plot_rounds, print_rounds_result
from localrag_bench.runner import BenchError, BenchSpec, RunOptions, run_bench
from localrag_bench.scale import run_scale, write_scale_result
from localrag_bench.scale_graph import run_folder_scale, run_graph_latency, run_graph_scale, write_graph_scale_result

DEFAULT_RESULTS = Path("bench-results")


def wide_console() -> Console:
    """Tables keep their columns when stdout is a file or a pipe (logs of long runs)."""
    return console if console.is_terminal else Console(width=160, highlight=False)


def _bar(quiet: bool) -> Progress:
    return Progress(TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                    TextColumn("ETA"), TimeRemainingColumn(), console=err_console, disable=quiet, transient=True)


def command_line() -> str:
    return shlex.join(["localrag", *sys.argv[1:]])


def default_out(stem: str) -> Path:
    return DEFAULT_RESULTS / f"{stem}-{_dt.datetime.now().strftime('%Y%m%d-%H%M%S')}.json"


def overrides_of(args: argparse.Namespace) -> dict[str, Any]:
    if getattr(args, "db", None):
        raise UserError("bench keeps its own index in --work DIR (index.db); --db is not used here")
    out = {
        "llm.model": getattr(args, "model", None),
        "llm.url": getattr(args, "llm_url", None),
        "llm.url_model": getattr(args, "llm_model", None),
        "llm.concurrency": getattr(args, "concurrency", None),
        "llm.index_model": getattr(args, "index_model", None),
    }
    if args.no_memory:
        out["memory.enabled"] = False
    for item in args.set:
        key, eq, value = item.partition("=")
        if not eq or not key.strip():
            raise UserError(f"--set expects KEY=VALUE, got {item!r}")
        out[key.strip()] = value.strip()
    return {k: v for k, v in out.items() if v is not None}


def run_bench_command(args: argparse.Namespace) -> int:
    if not args.data and not args.notes:
        raise UserError("--data DIR is required (or --notes DIR --questions FILE; or use `localrag bench scale|plot|table`)")
    if bool(args.notes) != bool(args.questions) or (args.notes and args.data):
        raise UserError("--notes DIR needs --questions FILE (and no --data)")
    if args.rounds is not None and args.extract_asked is not None:
        raise UserError("--extract-asked and --rounds are two protocols; run them apart")
    if args.rounds is not None:
        return run_rounds_command(args)
    if args.keep_ner_cache:
        raise UserError("--keep-ner-cache only applies with --rounds")
    if args.no_free and not args.answer:
        raise UserError("--no-free only applies with --answer")
    if args.extract_asked is not None:
        return run_extract_asked_command(args)
    try:
        dataset = _load(args)
        spec = _spec(args, dataset, "dense,lexical,hybrid")
        n_runs = len([s for s in spec.strategies if s.strip()]) * len(dataset.questions)
        with _progress_sinks(args.quiet, n_runs, lambda r: f"questions ({r.strategy})") as (on_progress, on_record):
            result = run_bench(spec, on_record=on_record, on_progress=on_progress)
    except (BenchDataError, BenchError) as exc:
        raise UserError(str(exc)) from exc
    print_result(result, wide_console())
    return _write(result, args.out, "")


def run_extract_asked_command(args: argparse.Namespace) -> int:
    """`bench --extract-asked N` (localrag_bench/asked_extraction.py): graph, the model's extraction, graph again."""
    if args.extract_asked < 1:
        raise UserError("--extract-asked needs N ≥ 1 (passages a question)")
    if args.strategy and args.strategy != BASE:
        raise UserError(f"--extract-asked compares `{BASE}` with itself on the model's graph; leave out --strategy")
    if args.answer:
        raise UserError("--extract-asked measures retrieval; leave out --answer")
    try:
        dataset = _load(args)
        spec = _spec(args, dataset, BASE)
        with _progress_sinks(args.quiet, 2 * len(dataset.questions), lambda r: f"questions ({r.strategy})") as (
                on_progress, on_record):
            result = run_asked_extraction(spec, args.extract_asked, on_record=on_record, on_progress=on_progress)
    except (BenchDataError, BenchError) as exc:
        raise UserError(str(exc)) from exc
    print_result(result, wide_console())
    x = result.asked_extraction
    console.print(f"{ASKED}: {x.extracted} of {x.passages} asked passages extracted by {x.model} ({x.extractor}): "
                  f"{x.llm_calls} calls, {x.prompt_tokens + x.completion_tokens:,} tokens, {x.facts_added} facts, "
                  f"{x.fallback} fallbacks, {x.failed} failed; {x.seconds:.0f} s wall, {x.cpu_seconds:.0f} s CPU")
    return _write(result, args.out, f"-asked{args.extract_asked}")


def _load(args: argparse.Namespace) -> Any:
    if args.notes:
        return load_notes_dataset(args.notes, args.questions, args.ids, args.limit)
    if is_loogle(Path(args.data)):
        return load_loogle(args.data, args.ids, args.limit)
    return load_dataset(args.data, args.ids, args.limit)


def _spec(args: argparse.Namespace, dataset: Any, default_strategies: str) -> Any:
    return BenchSpec(dataset, (args.strategy or default_strategies).split(","),
                     RunOptions(args.k, args.depth, args.answer, free_too=not getattr(args, "no_free", False),
                                drop_gold=getattr(args, "drop_gold", False)),
                     Path(args.work) if args.work else None,
                     overrides_of(args), command_line(), config_file=getattr(args, "config", None))


def _write(result: Any, out_arg: str | None, suffix: str) -> int:
    out = Path(out_arg) if out_arg else default_out(f"{result.dataset}-{'+'.join(result.strategies)}{suffix}")
    result.write(out)
    console.print(f"result written to {out}")
    return 0


@contextlib.contextmanager
def _progress_sinks(quiet: bool, n_runs: int, describe: Callable[[Any], str]) -> Iterator[tuple[Callable, Callable]]:
    """(on_progress, on_record) driving two bars: indexing the corpus, then the questions."""
    with _bar(quiet) as bar:
        sync_task = bar.add_task("indexing corpus", total=None)
        ask_task = bar.add_task("questions", total=n_runs, visible=False)

        def on_progress(ev) -> None:
            label = {"embed": "embedding passages", "scan": "reading notes"}.get(getattr(ev, "phase", ""), "graph")
            bar.update(sync_task, description=label, completed=ev.done, total=ev.total or None)

        def on_record(record) -> None:
            bar.update(sync_task, visible=False)
            bar.update(ask_task, visible=True, advance=1, description=describe(record))

        yield on_progress, on_record


def run_rounds_command(args: argparse.Namespace) -> int:
    if args.no_memory:
        raise UserError("--rounds measures edge memory; leave out --no-memory (round `different-nomem` is the "
                        "memory-off control)")
    try:
        plans = parse_rounds(args.rounds)
        dataset = _load(args)
        spec = _spec(args, dataset, "neuropath")
        n_runs = len([s for s in spec.strategies if s.strip()]) * rounds_for(plans, len(dataset.questions))
        with _progress_sinks(args.quiet, n_runs, lambda r: f"{r.strategy}: round {r.round}") as (on_progress, on_record):
            result = run_rounds(spec, plans, clear_query_cache=not args.keep_ner_cache, on_record=on_record,
                                on_progress=on_progress)
    except (BenchDataError, BenchError) as exc:
        raise UserError(str(exc)) from exc
    print_rounds_result(result, wide_console())
    return _write(result, args.out, "-rounds")


def run_scale_command(args: argparse.Namespace) -> int:
    if args.graph:
        return run_graph_scale_command(args)
    try:
        with _bar(args.quiet) as bar:
            task = bar.add_task("indexing", total=None)

            def on_progress(ev) -> None:
                if ev.phase == "embed":
                    bar.update(task, description="embedding passages", completed=ev.done, total=ev.total or None)

            result = run_scale(args.passages, args.queries, Path(args.work) if args.work else None, seed=args.seed,
                               fresh=args.fresh, progress=on_progress,
                               log=lambda msg: err_console.print(f"[dim]{msg}[/]"))
    except ValueError as exc:
        raise UserError(str(exc)) from exc
    print_scale(result)
    out = Path(args.out) if args.out else DEFAULT_RESULTS / f"scale-{args.passages}.json"
    write_scale_result(result, out)
    console.print(f"result written to {out}")
    return 0


def run_graph_scale_command(args: argparse.Namespace) -> int:
    seed = args.seed if args.seed != 7 else 11  # 7 is the plain scale corpus's default
    if args.queries_only:
        if args.notes:  # its queries and cold asks are the generated vault's: on a real folder they would re-index it
            raise UsageError("--queries-only re-times the generated vault of an earlier --graph run; it does not take --notes")
        return run_graph_latency_command(args, seed)
    if args.notes:
        return run_folder_scale_command(args)
    try:
        result = run_graph_scale(args.passages, args.queries, Path(args.work) if args.work else None, seed=seed,
                                 fresh=args.fresh, log=lambda msg: err_console.print(f"[dim]{msg}[/]"))
    except ValueError as exc:
        raise UserError(str(exc)) from exc
    print_graph_scale(result)
    out = Path(args.out) if args.out else DEFAULT_RESULTS / f"scale-graph-{args.passages}.json"
    write_graph_scale_result(result, out)
    console.print(f"result written to {out}")
    return 0


def run_folder_scale_command(args: argparse.Namespace) -> int:
    try:
        result = run_folder_scale(Path(args.notes), Path(args.work) if args.work else None,
                                  log=lambda msg: err_console.print(f"[dim]{msg}[/]"))
    except ValueError as exc:
        raise UserError(str(exc)) from exc
    out = wide_console()
    out.print(phase_table(f"{result.folder}: {result.fast.passages:,} passages in {result.files:,} files",
                          result.fast, result.graph))
    out.print("graph phase steps (s): " + ", ".join(f"{k} {v:,.1f}" for k, v in result.graph_steps.items()))
    out.print(f"graph: {result.graph_counts} · peak RSS {result.peak_rss_mb_graph:,.0f} MB · db {result.db_bytes / 1e6:,.0f} MB")
    dest = Path(args.out) if args.out else DEFAULT_RESULTS / "scale-graph-notes.json"
    write_graph_scale_result(result, dest)
    console.print(f"result written to {dest}")
    return 0


def run_graph_latency_command(args: argparse.Namespace, seed: int) -> int:
    try:
        result = run_graph_latency(args.passages, args.queries, Path(args.work) if args.work else None, seed=seed,
                                   neuropath_queries=args.neuropath_queries,
                                   log=lambda msg: err_console.print(f"[dim]{msg}[/]"))
    except ValueError as exc:
        raise UserError(str(exc)) from exc
    print_latency_table(result.latency)
    wide_console().print(f"cold `ask --no-answer --strategy ppr`, new processes: "
                      f"{', '.join(f'{s:.2f}' for s in result.cold_ask_seconds)} s (graph {result.cold_ask_graph_loaded})")
    out = Path(args.out) if args.out else DEFAULT_RESULTS / f"scale-graph-{args.passages}-queries.json"
    write_graph_scale_result(result, out)
    console.print(f"result written to {out}")
    return 0


def phase_table(title: str, fast: Any, graph: Any) -> Table:
    """The fast and graph phases' figures, one row each."""
    table = Table(title=title, title_justify="left")
    for name in ("phase", "passages", "wall s", "CPU s", "passages/s", "tokens/s", "wordpieces/s", "passages/CPU-s", "load"):
        table.add_column(name, justify="left" if name == "phase" else "right")
    for label, ph in (("fast (embed + store)", fast), ("graph (rules)", graph)):
        r = ph.summary()
        table.add_row(label, f"{ph.passages:,}", f"{ph.seconds:,.1f}", f"{ph.cpu_seconds:,.1f}", f"{r['passages_per_s']:,.1f}",
                      f"{r['tokens_per_s']:,.0f}", f"{r['wordpieces_per_s']:,.0f}", f"{r['passages_per_cpu_s']:,.1f}",
                      " ".join(f"{x:.1f}" for x in ph.load))
    return table


def print_graph_scale(result) -> None:
    out = wide_console()
    out.print(phase_table(f"{result.indexed_passages:,} passages in {result.files:,} files", result.fast, result.graph))
    total = sum(result.graph_steps.values()) or 1.0
    out.print("graph phase steps (s; embed runs on a worker thread, overlapping the rest): " + ", ".join(
        f"{k} {v:,.1f} ({v / total:.0%})" for k, v in result.graph_steps.items()))
    out.print(f"graph: {result.graph_counts} · peak RSS {result.peak_rss_mb_fast:,.0f} MB after the fast phase, "
              f"{result.peak_rss_mb_graph:,.0f} MB after the graph phase · db {result.db_bytes / 1e6:,.0f} MB")
    e = result.edit
    out.print(f"unchanged re-index {result.resync_seconds:.2f} s ({result.resync_process_seconds:.2f} s whole process) · "
              f"one file edited: sync {e.sync_seconds:.2f} s, graph phase {e.graph_seconds:.2f} s for "
              f"{e.graph_passages} passages (the file has {e.file_passages}); a new reader's matrix: {e.matrix_how} · "
              f"cold `ask --no-answer --strategy ppr` {result.cold_ask_seconds:.2f} s (graph {result.cold_ask_graph_loaded})")
    print_latency_table(result.latency)
    out.print(f"load {result.machine.load_before} -> {result.machine.load_after} on {result.machine.cpus} CPUs")


def print_latency_table(latency: list) -> None:
    lat = Table(title="query latency, warm (ms)", title_justify="left")
    for name in ("what", "p50", "p95", "mean", "CPU p50"):
        lat.add_column(name, justify="left" if name == "what" else "right")
    for x in latency:
        lat.add_row(x.name, f"{x.p50_ms:.1f}", f"{x.p95_ms:.1f}", f"{x.mean_ms:.1f}", f"{x.cpu_p50_ms:.1f}")
    wide_console().print(lat)


def print_scale(result) -> None:
    out = wide_console()
    out.print(
        f"[bold]{result.indexed_passages:,} passages[/] in {result.files:,} files · indexing "
        f"{result.passages_per_s:,.1f} passages/s ({result.index_seconds:,.1f} s wall, "
        f"{result.passages_per_cpu_s:,.1f} passages per CPU-second; measured {result.index_measured}) · "
        f"unchanged re-sync {result.resync_seconds:.2f} s in a fresh process "
        f"({result.resync_process_seconds:.2f} s with start-up; {result.resync_in_process_seconds:.2f} s in process) · "
        f"db {result.db_bytes / 1e6:,.0f} MB"
    )
    table = Table(title=f"query latency over {result.query_embed.queries} queries (ms)", title_justify="left")
    for name in ("what", "p50", "p95", "mean", "CPU p50", "source in top 10"):
        table.add_column(name, justify="left" if name == "what" else "right")

    def row(lat, extra: str = "") -> None:
        table.add_row(lat.name, f"{lat.p50_ms:.1f}", f"{lat.p95_ms:.1f}", f"{lat.mean_ms:.1f}", f"{lat.cpu_p50_ms:.1f}",
                      extra)

    row(result.query_embed)
    for r in result.retrievers:
        row(r.with_embedding, f"{r.source_hit_at_10:.3f}")
        row(r.without_embedding, f"{r.source_hit_at_10:.3f}")
    row(result.knn_exact)
    row(result.knn_fast)
    row(result.knn_vec0_prefilter)
    out.print(table)
    out.print(f"knn_fast recall@10 vs exact: {result.knn_fast_recall_at_10:.3f} (all-vec0 variant: "
              f"{result.knn_vec0_prefilter_recall_at_10:.3f}) · knn() uses: {result.knn_path} · "
                  f"load {result.machine.load_before} -> {result.machine.load_after} on {result.machine.cpus} CPUs")
    for note in result.notes:
        out.print(f"[yellow]note:[/] {note}")


def _load_all(paths: list[str]) -> list:
    try:
        return [load_result(Path(p)) for p in paths]
    except ValueError as exc:
        raise UserError(str(exc)) from exc


def run_plot_command(args: argparse.Namespace) -> int:
    results = _load_all(args.results)
    try:
        if args.rounds:
            out = plot_rounds(results, Path(args.output or "docs/img/memory-rounds.png"), k=str(args.k))
        else:
            out = plot_recall(results, Path(args.output or "docs/img/recall.png"), k=str(args.k),
                              with_reference=not args.no_reference)
    except ValueError as exc:
        raise UserError(str(exc)) from exc
    console.print(f"plot written to {out}")
    return 0


def run_table_command(args: argparse.Namespace) -> int:
    results = _load_all(args.results)
    if getattr(args, "answers", False):
        console.print(markdown_answers(results), markup=False, soft_wrap=True)
        return 0
    with_rounds = [r for r in results if has_rounds(r)]
    if args.rounds and not with_rounds:
        raise UserError("none of these result files has memory rounds (run `localrag bench --rounds ...`)")
    if not args.rounds:
        console.print(markdown_pivot(results) if args.pivot else markdown_table(results), markup=False, soft_wrap=True)
    if with_rounds:
        if not args.rounds:
            console.print()
        console.print(markdown_rounds(with_rounds), markup=False, soft_wrap=True)
    return 0
