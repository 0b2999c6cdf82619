"""`localrag feedback --wrong|--right [QUERY_ID]`: tell memory whether an answer was right."""

from __future__ import annotations

import argparse

from localrag.commands.common import UserError, console, indexed_settings


def register(sub: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser("feedback", parents=[common], help="mark an answer wrong (memory unlearns it) or right",
                       description="Mark the last answer (or QUERY_ID, as `ask --json` and the TUI show it) wrong "
                       "or right. Wrong: the edge memories that answer reinforced lose what they learned from the "
                       "question, and asking it again runs full retrieval. Right: they are reinforced once more.")
    verdict = p.add_mutually_exclusive_group(required=True)
    verdict.add_argument("--wrong", action="store_const", const="wrong", dest="verdict", help="the answer was wrong")
    verdict.add_argument("--right", action="store_const", const="right", dest="verdict", help="the answer was right")
    p.add_argument("query_id", nargs="?", type=int, help="query id (default: the last answered question)")
    p.add_argument("-f", "--folder", default=".", help="notes folder (default: current folder)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    # loaded on use: the pipeline (numpy, SQLite, the embedder) stays out of `localrag --help`
    from localrag.api import Index
    # loaded on use: the pipeline (numpy, SQLite, the embedder) stays out of `localrag --help`
    from localrag.memory.feedback import FeedbackError, mark

    settings = indexed_settings(args, args.folder)
    index = Index(settings)
    try:
        result = mark(index, args.verdict, args.query_id)
    except FeedbackError as exc:
        raise UserError(str(exc)) from exc
    finally:
        index.close()
    console.print(f"query {result.query_id} ({result.question[:80]!r}) marked {result.verdict}: {result.note}")
    return 0
