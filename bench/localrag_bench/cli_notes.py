"""The parser of `localrag bench notes` (what it runs: bench/localrag_bench/notes_command.py)."""

from __future__ import annotations

import argparse

from localrag_bench.cli_tools import command

DEFAULT_STRATEGIES = "dense,lexical,hybrid,ppr,graph"


def register_notes(bench_sub: argparse._SubParsersAction) -> None:
    n = bench_sub.add_parser(
        "notes", help="the notes suite: dendron-vault, tldr-pages and rust-book questions, one table",
        description="Run the notes suite: each corpus's notes folder (under --data-root) indexed with the real "
        "pipeline, its questions (bench_data/<corpus>/questions.jsonl; the tuning half is dev_ids.txt, every other "
        "question the untouched half) asked with each strategy. Prints one table per corpus, strategy and question "
        "kind: note recall@2/@5 and, with --answer, evidence hit in the first / first three shown sentences, answer "
        "hit, EM, abstention on the unanswerable questions, false abstention, time to evidence / first token / "
        "answer; writes one JSON result file.")
    n.add_argument("--data-root", metavar="DIR", default="../shared/data",
                   help="the folder holding dendron-vault/, tldr-pages/ and rust-book/ (default ../shared/data)")
    n.add_argument("--questions-root", metavar="DIR", default="bench_data",
                   help="the folder holding each corpus's question set (default bench_data)")
    n.add_argument("--corpus", metavar="NAME[,NAME2...]", help="only these corpora (default: all three)")
    n.add_argument("--split", default="all", choices=["tuning", "untouched", "all"],
                   help="which half of each question set (default all)")
    n.add_argument("--strategy", metavar="S[,S2...]", default=DEFAULT_STRATEGIES,
                   help=f"strategies, comma-separated (default {DEFAULT_STRATEGIES})")
    n.add_argument("--answer", action="store_true", help="also answer (by question shape) and score the answers")
    n.add_argument("--free", action="store_true", help="with --answer: also the free generation beside it (slow)")
    n.add_argument("--limit", type=int, metavar="N", help="only the first N questions of each corpus (after --split)")
    n.add_argument("--k", type=int, default=5, help="largest recall cut-off (recall@2 and @5 are always shown)")
    n.add_argument("--work-root", metavar="DIR",
                   help="notes + index caches, one folder per corpus (default: ~/.cache/localrag/bench/...)")
    n.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="a setting for this run (repeatable)")
    n.add_argument("--out", metavar="FILE", help="JSON result file (default: bench-results/notes-<split>-<time>.json)")
    n.add_argument("--quiet", action="store_true", help="no progress bars")
    n.set_defaults(func=command("notes_command", "run_notes_command"), no_memory=False)
