"""`localrag bench`: the benchmarks live outside the core, in the `localrag-bench` distribution
(bench/, package localrag_bench, with matplotlib for its plots). Without it, `localrag bench`
says how to install it."""

from __future__ import annotations

import argparse
import importlib.util

from localrag.commands.common import UserError

INSTALL_HINT = "benchmarks are the localrag-bench distribution: pip install -e ./bench (make test installs it)"


def bench_installed() -> bool:
    return all(importlib.util.find_spec(name) is not None for name in ("localrag_bench", "matplotlib"))


def register(sub: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    if bench_installed():
        # the bench CLI imports rich progress and the dataset code: loaded only when installed
        from localrag_bench.cli import register as register_bench

        register_bench(sub, common)
        return
    # "+" prefixes: whatever options follow are taken as words, so any bench command line gets the hint
    p = sub.add_parser("bench", help="benchmarks (needs localrag-bench: pip install -e ./bench)", description=INSTALL_HINT,
                       prefix_chars="+", add_help=False)
    p.add_argument("arguments", nargs="*", help=argparse.SUPPRESS)
    p.set_defaults(func=_not_installed)


def _not_installed(args: argparse.Namespace) -> int:
    raise UserError(INSTALL_HINT)
