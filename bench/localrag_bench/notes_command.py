"""What `localrag bench notes` runs: the notes suite over its three corpora, one table, one result file."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Sequence

from rich.console import Console
from rich.table import Table

from localrag.commands.common import UsageError, UserError, console, err_console
from localrag_bench.commands import _bar, command_line, default_out, overrides_of, wide_console
from localrag_bench.data import BenchDataError
from localrag_bench.notes_suite import SuiteResult, SuiteRow, SuiteSpec, corpora_named, run_suite
from localrag_bench.runner import BenchError, RunOptions, check_strategies


def run_notes_command(args: argparse.Namespace) -> int:
    if args.free and not args.answer:
        raise UsageError("--free only applies with --answer")
    if args.k < 1:
        raise UsageError("--k must be at least 1")
    data_root, questions_root = Path(args.data_root).expanduser(), Path(args.questions_root).expanduser()
    for folder, flag in ((data_root, "--data-root"), (questions_root, "--questions-root")):
        if not folder.is_dir():
            raise UsageError(f"{flag} {folder} is not a folder")
    try:
        spec = SuiteSpec(data_root, questions_root, corpora_named(args.corpus), args.split,
                         check_strategies(args.strategy.split(",")),
                         RunOptions(args.k, 0, args.answer, free_too=args.free), overrides_of(args), args.limit,
                         Path(args.work_root).expanduser() if args.work_root else None, command_line(),
                         getattr(args, "config", None))
        with _bar(args.quiet) as bar:
            task = bar.add_task("notes suite", total=None)

            def on_corpus(corpus, dataset) -> None:
                bar.update(task, description=f"{corpus.name}: indexing", completed=0, total=None)

            def on_progress(ev) -> None:
                bar.update(task, completed=ev.done, total=ev.total or None)

            def on_record(record) -> None:
                bar.update(task, description=f"questions ({record.strategy})", advance=1, total=None)

            result = run_suite(spec, on_record=on_record, on_corpus=on_corpus, on_progress=on_progress)
    except (BenchDataError, BenchError) as exc:
        raise UserError(str(exc)) from exc
    print_suite(result, wide_console())
    out = Path(args.out) if args.out else default_out(f"notes-{args.split}")
    result.write(out)
    console.print(f"result written to {out}")
    return 0


def _f(value: float | None, digits: int = 3) -> str:
    return "—" if value is None else f"{value:.{digits}f}"


def _ms(value: float | None) -> str:
    return "—" if value is None else f"{value / 1000:.2f}"


def suite_table(rows: Sequence[SuiteRow], answers: bool, title: str) -> Table:
    table = Table(title=title, show_lines=False)
    for name in ("corpus", "strategy", "kind", "n", "R@2", "R@5"):
        table.add_column(name, justify="left" if name in ("corpus", "strategy", "kind") else "right")
    if answers:
        for name in ("ev@1", "ev@3", "ans hit", "EM", "abst (unans)", "false abst", "ungrounded",
                     "evid s p50/p95", "1st tok s p50", "total s p50/p95"):
            table.add_column(name, justify="right")
    table.add_column("cpu s p50", justify="right")
    for r in rows:
        cells = [r.corpus, r.strategy, r.kind, str(r.questions), _f(r.recall2), _f(r.recall5)]
        if answers:
            cells += [_f(r.evidence_hit1), _f(r.evidence_hit3), _f(r.answer_hit), _f(r.em),
                      _f(r.abstained_unanswerable), _f(r.false_abstention), str(r.ungrounded),
                      f"{_ms(r.evidence_ms_p50)}/{_ms(r.evidence_ms_p95)}", _ms(r.first_token_ms_p50),
                      f"{_ms(r.ms_p50)}/{_ms(r.ms_p95)}"]
        cells.append(_ms(r.cpu_ms_p50))
        table.add_row(*cells)
    return table


def print_suite(result: SuiteResult, out: Console) -> None:
    out.print(suite_table(result.rows, result.answer,
                          f"notes suite, {result.split} half" + (f", model {result.model}" if result.model else "")))
    for corpus, gaps in result.gaps().items():
        listed = ", ".join(f"{s} {g:+.3f}" for s, g in sorted(gaps.items(), key=lambda t: -t[1]))
        out.print(f"[dim]{corpus}: recall@5 against the best strategy there: {listed}[/]")
    for run in result.runs:
        info = run.index
        out.print(f"[dim]{run.dataset}: {info.documents:,} notes, {info.passages:,} passages, sync "
                  f"{info.sync_seconds:.1f} s; graph: {info.graph or 'not needed'}; load {run.machine.load_before} "
                  f"-> {run.machine.load_after}[/]")
        for note in run.notes:
            err_console.print(f"[yellow]note:[/] {run.dataset}: {note}")
