"""`localrag memory stats|reset`: what the edge memories have learned, and forgetting it."""

from __future__ import annotations

import argparse

import numpy as np

from localrag.commands.common import UserError, add_folder, console, settings_from


def register(sub: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser("memory", parents=[common], help="edge memories: stats or reset")
    msub = p.add_subparsers(dest="memory_command", metavar="ACTION", required=True)
    s = msub.add_parser("stats", parents=[common], help="reinforced edges, norm histogram, queries learned")
    add_folder(s)
    s.set_defaults(func=stats)
    r = msub.add_parser("reset", parents=[common], help="forget every edge memory (the graph is kept)")
    add_folder(r)
    r.add_argument("--yes", action="store_true", help="do not ask for confirmation")
    r.set_defaults(func=reset)


def _index(args):
    # loaded on use: the pipeline (numpy, SQLite, the embedder) stays out of `localrag --help`
    from localrag.api import Index

    settings = settings_from(args, args.folder)
    if not settings.db_path.exists():
        raise FileNotFoundError(f"{settings.folder_path} is not indexed yet: run `localrag index {args.folder}`")
    return Index(settings)


def stats(args: argparse.Namespace) -> int:
    index = _index(args)
    try:
        st = index.store.memory.stats()
        by_kind = index.store.memory.reinforced_by_kind()
    finally:
        index.close()
    console.print(f"reinforced edges: {st.reinforced} ({', '.join(f'{k} {n}' for k, n in by_kind) or 'none'})")
    console.print(f"queries learned:  {st.queries_learned} ({st.updates} edge updates)")
    console.print(f"penalty mode:     {index.settings.memory.penalty}, α {index.settings.memory.alpha}, λ {index.settings.memory.lam}")
    if st.norms:
        counts, edges = np.histogram(st.norms, bins=10, range=(0.0, 1.0 + 1e-9))
        console.print("memory norms:")
        top = max(counts) or 1
        for c, lo, hi in zip(counts, edges[:-1], edges[1:]):
            bar = "█" * int(round(30 * c / top))
            console.print(f"  {lo:4.1f}–{hi:3.1f} {bar} {c}")
    return 0


def reset(args: argparse.Namespace) -> int:
    index = _index(args)
    try:
        if not args.yes:
            n = index.store.memory.count()
            try:
                answer = console.input(f"forget {n} edge memories in {index.folder}? [y/N] ")
            except EOFError:  # no terminal to ask (a script, a pipe): nothing is forgotten without --yes
                raise UserError("memory reset needs a yes: no answer on stdin (pass --yes in scripts)") from None
            if answer.strip().lower() not in {"y", "yes"}:
                console.print("kept")
                return 1
        n = index.store.memory.reset()
    finally:
        index.close()
    console.print(f"forgot {n} edge memories")
    return 0
