"""`localrag bench followup`: two-turn MuSiQue conversations (turn 2 alone / in conversation / oracle), and
with --session the long-session check (a set's questions one after another in one conversation).
The parser is in bench/localrag_bench/cli.py."""

from __future__ import annotations

import argparse
import dataclasses
import json
from pathlib import Path

from localrag.commands.common import UserError, console, err_console
from localrag_bench.commands import command_line, default_out, overrides_of
from localrag_bench.data import BenchDataError, load_dataset
from localrag_bench.followup import run_followup_bench, run_session_bench

CONDITIONS = (("alone", "(a) turn 2 alone"), ("conversation", "(b) in conversation (gold turn-1 answer)"),
              ("oracle", "(c) oracle: #1 = gold answer"), ("own_answer", "(d) in conversation (model's turn-1 answer)"))


def run_followup_command(args: argparse.Namespace) -> int:
    try:
        dataset = load_dataset(args.data, args.ids, args.limit)
    except BenchDataError as exc:
        raise UserError(str(exc)) from exc
    overrides = overrides_of(args)
    work = Path(args.work) if args.work else None
    if args.session:
        check = run_session_bench(dataset, work=work, overrides=overrides, strategy=args.strategy,
                                  resolver=args.resolver, command=command_line())
        print_session_check(check)
        out = Path(args.out) if args.out else default_out(f"session-{dataset.name}-{args.resolver}")
        _write_json(check, out)
        return 0
    seen = [0]

    def progress(record) -> None:
        seen[0] += 1
        if not args.quiet:
            err_console.print(f"[dim]{seen[0]} {record.id}: {record.queries.get('conversation', '')[:90]}[/]")

    try:
        result = run_followup_bench(dataset, work=work, overrides=overrides, strategy=args.strategy,
                                    resolver=args.resolver, own_answer=args.own_answer, command=command_line(),
                                    on_record=progress)
    except ValueError as exc:
        raise UserError(str(exc)) from exc
    print_followup(result)
    out = Path(args.out) if args.out else default_out(f"followup-{dataset.name}-{args.resolver}")
    result.write(out)
    console.print(f"result written to {out}")
    return 0


def _write_json(obj, out: Path) -> None:
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(dataclasses.asdict(obj), indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    console.print(f"result written to {out}")


def print_followup(result) -> None:
    model = f" · model {result.model}" if result.model else ""
    console.print(f"[bold]{result.dataset}[/] · {result.conversations} conversations · strategy {result.strategy} · "
                  f"resolver {result.resolver}{model} · {result.seconds:.0f} s wall, {result.cpu_seconds:.0f} s CPU · "
                  f"load {result.load}")
    print(markdown_followup(result))
    means = result.means
    if "conversation" in means and "oracle" in means and "alone" in means:
        b, c, a = means["conversation"]["5"], means["oracle"]["5"], means["alone"]["5"]
        console.print(f"(b)/(c) = {b / c if c else 0:.3f} (target ≥ 0.9) · (b) − (a) = {100 * (b - a):+.1f} points "
                      "(target ≥ +15)")
    rewrites = sum(r.rewrite_calls for r in result.records)
    if rewrites:
        tokens = sum(r.rewrite_tokens for r in result.records)
        console.print(f"rewrite calls {rewrites}, {tokens / max(rewrites, 1):.0f} tokens each; "
                      f"model rewrites used: {sum(1 for r in result.records if r.methods.get('conversation') == 'llm')}")
    for note in result.notes:
        console.print(f"[yellow]note:[/] {note}")


def markdown_followup(result) -> str:
    lines = ["| condition | recall@2 | recall@5 |", "|---|---:|---:|"]
    for name, label in CONDITIONS:
        if name in result.means:
            m = result.means[name]
            lines.append(f"| {label} | {m['2']:.3f} | {m['5']:.3f} |")
    return "\n".join(lines)


def print_session_check(check) -> None:
    console.print(f"[bold]{check.dataset}[/] · {check.questions} questions in one session · strategy "
                  f"{check.strategy} · resolver {check.resolver} · load {check.load}")
    print("| asked | recall@2 | recall@5 |\n|---|---:|---:|")
    print(f"| each alone | {check.separate['2']:.3f} | {check.separate['5']:.3f} |")
    print(f"| one after another in one session | {check.session['2']:.3f} | {check.session['5']:.3f} |")
    delta = 100 * (check.session["5"] - check.separate["5"])
    console.print(f"questions rewritten in the session: {check.changed} of {check.questions} · recall@5 change "
                  f"{delta:+.1f} points (target within ±1)")
    for c in check.changed_questions[:10]:
        console.print(f"[dim]  {c['question']}  ->  {c['searched_for']}[/]")
