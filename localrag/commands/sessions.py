"""`localrag sessions`: the conversations kept in an index; and the --session / --continue options of `ask`."""

from __future__ import annotations

import argparse
import datetime as _dt
import json
from typing import TYPE_CHECKING

from rich.table import Table

from localrag.commands.common import UserError, console, err_console, indexed_settings, readable_text

if TYPE_CHECKING:
    from localrag.api import Index
    from localrag.conversation import Conversation, Resolution, Session, Turn


def add_session_options(p: argparse.ArgumentParser) -> None:
    group = p.add_mutually_exclusive_group()
    group.add_argument("--session", metavar="NAME",
                       help="continue the conversation NAME (created if new): follow-ups such as 'where was she "
                       "born?' are resolved against its earlier turns, and this turn is kept in it")
    group.add_argument("--continue", dest="continue_session", action="store_true",
                       help="continue the last conversation (of `ask --session`, or the terminal UI)")


def open_conversation(args: argparse.Namespace, index: "Index", announce: bool = True) -> "Conversation | None":
    """The conversation the flags name, or None for a single question; prints "searched for: …" when asked."""
    name = getattr(args, "session", None)
    name = readable_text(name) if name is not None else None
    last = getattr(args, "continue_session", False)
    if not name and not last:
        return None
    # loaded on use: the pipeline (numpy, SQLite, the embedder) stays out of `localrag --help`
    from localrag.conversation import Conversation, SessionNotFound

    if name is not None and not name.strip():
        raise UserError("--session needs a name, e.g. --session cobblebell")
    try:
        conversation = Conversation.open(index.store, index.settings, name=name.strip() if name else None, last=last)
    except SessionNotFound as exc:
        raise UserError(str(exc)) from exc
    if announce:
        conversation.on_resolved = print_resolution
    return conversation


def print_resolution(resolution: "Resolution") -> None:
    if resolution.changed:
        err_console.print(f"[dim]searched for: {resolution.query}[/]")


def register(sub: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser("sessions", parents=[common], help="list the conversations kept in the index",
                       description="List conversations (newest first) with their first question, turns and last "
                       "use; --show prints one conversation turn by turn. Continue one with "
                       "`localrag ask --session NAME` or `--continue`.")
    p.add_argument("-f", "--folder", default=".", help="notes folder (default: current folder)")
    p.add_argument("--show", metavar="NAME|#ID", help="print the turns of one conversation")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.add_argument("--limit", type=int, default=50, help="at most this many conversations (default 50)")
    p.set_defaults(func=run)


def _when(ts: float) -> str:
    return _dt.datetime.fromtimestamp(ts).strftime("%Y-%m-%d %H:%M")


def _find(index: "Index", ref: str) -> "Session":
    key = ref.strip()
    session = index.store.sessions.by_name(key)
    if session is None and key.lstrip("#").isdigit():
        session = index.store.sessions.get(int(key.lstrip("#")))
    if session is None:
        raise UserError(f"no conversation named {ref!r} in this index (see `localrag sessions`)")
    return session


def turn_json(turn: "Turn") -> dict:
    return {"turn": turn.ordinal, "question": turn.question, "resolved_query": turn.resolved,
            "resolver": turn.resolver, "answer": turn.answer, "strategy": turn.strategy, "query_id": turn.query_id,
            "citations": [{"n": c.number, "location": c.location, "title": c.title} for c in turn.citations],
            "created": turn.created}


def session_json(session: "Session") -> dict:
    return {"id": session.id, "name": session.name, "label": session.label, "turns": session.turns,
            "first_question": session.first_question, "created": session.created, "updated": session.updated}


def run(args: argparse.Namespace) -> int:
    # loaded on use: the pipeline (numpy, SQLite, the embedder) stays out of `localrag --help`
    from localrag.api import Index

    settings = indexed_settings(args, args.folder)
    if args.limit < 1:
        raise UserError("--limit must be at least 1")
    index = Index(settings)
    try:
        if args.show:
            session = _find(index, args.show)
            turns = index.store.sessions.turns(session.id)
            if args.json:
                print(json.dumps(session_json(session) | {"turn_list": [turn_json(t) for t in turns]}, indent=2,
                                 ensure_ascii=False))
            else:
                print_turns(session, turns)
            return 0
        sessions = index.store.sessions.recent(args.limit)
    finally:
        index.close()
    if args.json:
        print(json.dumps([session_json(s) for s in sessions], indent=2, ensure_ascii=False))
        return 0
    if not sessions:
        console.print("no conversations yet: `localrag ask \"…\" --session NAME` starts one (the terminal UI too)")
        return 0
    table = Table(title="conversations (newest first)", title_justify="left")
    for column in ("session", "turns", "first question", "started", "last used"):
        table.add_column(column, justify="right" if column == "turns" else "left")
    for s in sessions:
        table.add_row(s.label, str(s.turns), s.first_question[:70], _when(s.created), _when(s.updated))
    console.print(table)
    return 0


def print_turns(session: "Session", turns: list["Turn"]) -> None:
    console.print(f"[bold]{session.label}[/] · {len(turns)} turns · started {_when(session.created)}")
    for t in turns:
        console.print(f"\n[bold]{t.ordinal}. {t.question}[/]", markup=True, highlight=False)
        if t.was_resolved:
            console.print(f"[dim]searched for: {t.resolved}[/]")
        console.print(t.answer, markup=False)
        for c in t.citations:
            console.print(f"[dim][{c.number}] {c.location}[/]", markup=True)
