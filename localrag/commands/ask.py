"""`localrag ask "question"`: retrieve, answer with citations (streamed), or print JSON."""

from __future__ import annotations

import argparse
import json
import sys

from rich.markup import escape

from localrag.commands.common import (UsageError, UserError, check_strategy, console, err_console, readable_text,
                                      settings_from)
from localrag.commands.sessions import add_session_options, open_conversation
from localrag.commands.trace_view import print_trace

MAX_TOP_K = 1000  # passages a question may ask for (sqlite-vec's KNN takes at most 4,096, widened 4x by filters)


def register(sub: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser("ask", parents=[common], help="ask a question about your notes",
                       description="Answer a question from the indexed notes, citing passages as [1], [2] … "
                       "(path:lines). The folder is synced first (cheap when nothing changed).")
    p.add_argument("question")
    p.add_argument("-f", "--folder", default=".", help="notes folder (default: current folder)")
    p.add_argument("--strategy", help="retriever: auto (default: graph, or neuropath with a model of 3B+ parameters), dense, lexical, hybrid, ppr, graph, neuropath, remind")
    p.add_argument("-k", "--top-k", type=int, default=None, help="passages to retrieve")
    p.add_argument("--json", action="store_true", help="print answer, citations, passages, LLM calls, tokens, timings, trace")
    p.add_argument("--trace", action="store_true", help="print how the passages were found")
    p.add_argument("--no-answer", action="store_true", help="retrieve only, no LLM answer")
    p.add_argument("--no-sync", action="store_true", help="do not update the index before answering")
    p.add_argument("--no-memory", action="store_true", help="neither read nor write edge memories")
    p.add_argument("--where", action="append", default=[], metavar="FILTER",
                   help="only passages of notes with this tag (tag:project, nested tags included) or under this "
                   "folder (path:work/; -path:archive/ leaves one out); repeatable: tags must all hold, paths are alternatives")
    add_session_options(p)
    p.add_argument("--free", action="store_true",
                   help="free-text answer for every question (default: short questions get a span of the "
                   "evidence: decided by the notes' dates, the no-model ranking or the model under a grammar; "
                   "open ones free text)")
    p.add_argument("--quiet", action="store_true", help="no step progress on stderr")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    # loaded on use: the pipeline (numpy, SQLite, the embedder) stays out of `localrag --help`
    from localrag.answer.record import answer_record
    from localrag.api import Assistant, Index
    from localrag.store.lock import LockBusy
    # loaded on use: the pipeline (numpy, SQLite, the embedder) stays out of `localrag --help`
    from localrag.retrieve.filters import FilterError, parse_where

    args.question = readable_text(args.question)
    if not args.question.strip():
        raise UsageError("the question is empty: ask `localrag ask \"your question\"`")
    check_strategy(args.strategy)
    if args.top_k is not None and not 1 <= args.top_k <= MAX_TOP_K:
        raise UsageError(f"--top-k must be between 1 and {MAX_TOP_K}, not {args.top_k}")
    try:
        where = parse_where([readable_text(w) for w in args.where or []])
    except FilterError as exc:
        raise UsageError(str(exc)) from exc
    extra = {"memory.enabled": False} if args.no_memory else {}
    settings = settings_from(args, args.folder, **extra)
    if not settings.db_path.exists() and args.no_sync:
        raise UserError(f"{settings.folder_path} is not indexed yet: run `localrag index {args.folder}`")
    index = Index(settings)
    try:
        if not args.no_sync:
            try:
                index.sync(wait_s=0)
            except LockBusy as exc:
                err_console.print(f"[dim]{exc}; answering from the index as it is[/]")
        assistant = Assistant(index)
        conversation = open_conversation(args, index, announce=not args.json)
        streaming = not args.json and not args.no_answer
        # step progress on a terminal only: a pipe or a script reads the answer, not the steps
        printer = None if args.json or not sys.stderr.isatty() else ProgressPrinter(show_steps=not args.quiet)
        if streaming:
            assistant.llm()  # load the model before the question is echoed, so errors come first
        answer = assistant.ask(
            args.question, strategy=args.strategy, k=args.top_k, answer=not args.no_answer, where=where,
            on_token=(lambda t: (sys.stdout.write(t), sys.stdout.flush())) if streaming else None,
            conversation=conversation,
            mode="free" if getattr(args, "free", False) else None,
            on_event=printer,
        )
    except Exception as exc:
        found = index.diagnosed(exc)
        if found is exc:
            raise
        raise found from exc
    finally:
        index.close()
    if args.json:
        record = answer_record(answer, filter_text=where.describe() if where else "")
        print(json.dumps(record, indent=2, ensure_ascii=False))
        return 0
    if streaming and not (printer is not None and printer.line_ended):
        sys.stdout.write("\n")
        sys.stdout.flush()
    print_outcome(answer)
    print_sources(answer, retrieved_only=args.no_answer)
    if args.trace:
        print_trace(answer)
    print_cost(answer)
    return 0


class ProgressPrinter:
    """Each step on stderr while it runs (elapsed seconds first); the evidence on stdout, before the answer."""

    def __init__(self, show_steps: bool = True):
        # loaded on use: the event types import the strategies' modules (numpy, SQLite), kept out of `localrag --help`
        from localrag.answer import events

        self.show_steps = show_steps
        self._events = events
        self.answering = False  # the answer's tokens are being written on stdout
        self.line_ended = False  # … and its line was ended before the last step's

    def __call__(self, event) -> None:
        if isinstance(event, self._events.FirstToken):
            self.answering = True
        elif self.answering and isinstance(event, self._events.AnswerDone):
            sys.stdout.write("\n")  # the step line goes below the answer, not after its last word
            sys.stdout.flush()
            self.line_ended = True
        if self.show_steps and not isinstance(event, self._events.FirstToken):
            err_console.print(f"[dim]{event.elapsed_s:6.2f} s  {escape(event.label())}[/]")
        if isinstance(event, self._events.EvidenceReady):
            print_evidence(event.quotes)
            sys.stdout.flush()


def print_evidence(quotes) -> None:
    if not quotes:
        return
    console.print("[bold]Evidence[/]")
    for i, quote in enumerate(quotes, start=1):
        location, _, text = quote.partition("  ")
        console.print(f"  {i}. [cyan]{escape(location)}[/]  “{escape(' '.join(text.split()))}”")
    console.print()


def print_outcome(answer) -> None:
    """What the answer stands on: the short answer's sentence, an abstention's reason, unsupported sentences."""
    if answer.overridden:  # the streamed reply is not the answer: say so, then show what is
        console.print("[yellow]  not the answer: the model's reply followed an instruction found in the notes; "
                      "the evidence instead:[/]")
        console.print(escape(answer.text))
    if answer.abstained:
        console.print(f"[yellow]not in your notes[/] [dim]({escape(answer.abstain_reason)})[/]")
    elif answer.span_sentence is not None and not answer.span:  # the quote is the answer
        console.print(f"[dim]  quoted from[/] [cyan]{escape(answer.span_sentence.location)}[/]")
    elif answer.span_sentence is not None:
        s = answer.span_sentence
        console.print(f"[dim]  from[/] “{escape(' '.join(s.text.split()))}” [cyan]{escape(s.location)}[/]")
    for sentence in answer.unsupported:
        console.print(f"[yellow]  unsupported (no citation):[/] {escape(sentence)}")


def print_sources(answer, retrieved_only: bool = False) -> None:
    console.print()
    if retrieved_only:
        for i, sp in enumerate(answer.retrieval.passages, start=1):
            console.print(f"[bold]{i:>2}.[/] {sp.passage.location}  [dim]{sp.score:.3f} {sp.source}[/]")
        return
    cited = [c for c in answer.citations if c.cited]
    given = [c for c in answer.citations if not c.cited]
    if cited:
        console.print("[bold]Cited[/]")
    for c in cited:
        mark = " (attributed by word overlap)" if c.inferred else ""
        console.print(f"[bold][{c.number}] {c.location}[/]{mark}  [dim]{escape(c.passage.title)}[/]")
    if given:
        asked = any(c.phase == "answer" for c in answer.calls)
        console.print("[dim]Closest passages[/]" if answer.abstained else
                      "[dim]Given to the model, not cited[/]" if asked else "[dim]Retrieved, not cited[/]")
    for c in given:
        console.print(f"[dim][{c.number}] {c.location}  {escape(c.passage.title)}[/]")


def print_cost(answer) -> None:
    phases = ", ".join(f"{k} {v:,}" for k, v in answer.tokens_by_phase().items())
    seconds = (answer.total_ms or answer.retrieve_ms + answer.answer_ms) / 1000
    line = f"{answer.strategy} · {len(answer.calls)} LLM calls · {answer.tokens:,} tokens"
    line += f" ({phases})" if phases else ""
    line += f" · {seconds:.1f} s"
    if answer.evidence_ms is not None:
        line += f" (evidence {answer.evidence_ms / 1000:.2f} s"
        line += f", first token {answer.first_token_ms / 1000:.2f} s)" if answer.first_token_ms is not None else ")"
    console.print(f"[dim]{line}[/]")
    for note in answer.notes:
        console.print(f"[dim]{note}[/]")
