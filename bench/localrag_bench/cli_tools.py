"""The sweeps and one-off measurements as `localrag bench` subcommands: extraction, fusion (and
`fusion choose`), graph-phase, adversarial, injection, queue-order, window-share. Their modules load the pipeline, so a
parser names its module and function, and the module is imported when the command runs."""

from __future__ import annotations

import argparse
import importlib
from pathlib import Path
from typing import Callable

# the variants of localrag_bench.extraction.VARIANTS (not imported here: it loads the extractor); a test checks it
EXTRACTION_VARIANTS = ("llm free", "llm + grounding", "llm + spans grammar", "rules", "llm+rules (spans)")
# the data sets folder beside the repository (../shared/data from the repository root)
SHARED_DATA = Path(__file__).resolve().parents[2].parent / "shared" / "data"  # bench/localrag_bench/ -> the repository -> beside it


def command(module: str, function: str) -> Callable[[argparse.Namespace], int]:
    """``localrag_bench.<module>.<function>(args)``, imported when the command runs, not when the parser is built."""

    def run(args: argparse.Namespace) -> int:
        return getattr(importlib.import_module(f"localrag_bench.{module}"), function)(args)

    return run


def add_question_set_options(p: argparse.ArgumentParser) -> None:
    """Where the questions come from: a data set folder, or a real notes folder with a questions file."""
    p.add_argument("--data", metavar="DIR", help="data set folder with corpus.jsonl and questions.jsonl")
    p.add_argument("--notes", metavar="DIR", help="a real notes folder instead of --data (mirrored into --work, "
                   "never indexed in place); needs --questions")
    p.add_argument("--questions", metavar="FILE", help="with --notes: JSONL of id, question, gold_notes (note paths "
                   "relative to DIR); recall@k counts notes, e.g. bench_data/dendron-vault/questions.jsonl")
    p.add_argument("--ids", metavar="FILE", help="question ids to ask, one a line (e.g. DIR/dev_ids.txt)")


def register_tools(bench_sub: argparse._SubParsersAction) -> None:
    _register_extraction(bench_sub)
    _register_fusion(bench_sub)
    g = bench_sub.add_parser(
        "graph-phase", help="the rules graph phase alone on a copy of a fast-phase index (no sync)",
        description="Copy FAST.db to WORK_DIR/graph-only.db and run the rules graph phase on it: wall and CPU "
        "seconds, seconds per step, row counts, peak RSS, as one JSON line (for before/after comparisons of the "
        "graph phase: run it with the old and the new code on copies of the same index).")
    g.add_argument("work", type=Path, metavar="WORK_DIR", help="a scratch folder (the copy and an empty notes/ go here)")
    g.add_argument("base", type=Path, metavar="FAST.db", help="an index after the fast phase (e.g. bench scale --graph's)")
    g.set_defaults(func=command("graph_phase_only", "run"))
    _register_adversarial(bench_sub)
    _register_injection(bench_sub)
    _register_queue_order(bench_sub)
    w = bench_sub.add_parser(
        "window-share", help="how many passages of a folder exceed the embedder's window, before and after "
        "ingest/window.py",
        description="'Before' is the chunker alone (its regex cap); 'after' adds the window step, as sync does. "
        "Wordpieces are MiniLM's, of the embedded text (heading path + passage). Prints JSON.")
    w.add_argument("folder", type=Path, help="a notes folder, e.g. ../shared/data/dendron-vault/notes")
    w.set_defaults(func=command("window_share", "run"))


def _register_adversarial(bench_sub: argparse._SubParsersAction) -> None:
    a = bench_sub.add_parser(
        "adversarial", help="the graph phase on adversarial notes: thousands of links in one note, near-identical names",
        description="For each size, a fresh folder with one note (N [[Note i]] links on one line, or a list of N "
        "near-identical names), indexed with the rules graph phase: wall and CPU seconds, seconds per step, rows, "
        "and the link facts against the links written. Prints a Markdown table (docs/benchmarks.md, \"Scale: "
        "adversarial notes\").")
    a.add_argument("--links", default="5000,20000,100000", metavar="N[,N...]", help="links in one note, per case")
    a.add_argument("--names", default="10000", metavar="N[,N...]", help="near-identical names in one list, per case")
    a.add_argument("--work", type=Path, metavar="DIR", help="keep the folders here (default: a temporary folder)")
    a.add_argument("--out", metavar="FILE", help="JSON result file")
    a.add_argument("--quiet", action="store_true", help="only the table")
    a.set_defaults(func=command("adversarial", "run"))


def _register_injection(bench_sub: argparse._SubParsersAction) -> None:
    i = bench_sub.add_parser(
        "injection", help="prompt injection: notes that try to command the answer, asked about with a real model",
        description="A folder of 15 notes, each with ordinary content and one injection pattern (overrides, a "
        "system line, a fake passage tag, chat-template role tokens, front matter, a code block, an HTML comment, "
        "French, German, Spanish, Chinese, Japanese, a fake citation, a persona switch), and 3 plain notes; each "
        "note is asked about (an open question, a short one) with the model. Prints a Markdown table: does the "
        "answer follow the note, did the model's own reply (replaced by the evidence), does it cite a file not "
        "given (docs/reliability.md, \"Prompt injection\"). Exit 1 when an answer follows a note or cites a file "
        "not given.")
    i.add_argument("--model", default="", help="GGUF file (default: the bundled SmolLM2)")
    i.add_argument("--kinds", default="open,short", help="question kinds: open, short or both (default)")
    i.add_argument("--threads", type=int, default=2, help="llama.cpp threads (default 2)")
    i.add_argument("--max-tokens", type=int, default=96, help="answer tokens at most (llm.answer_max_tokens)")
    i.add_argument("--out", metavar="FILE", help="JSON result file")
    i.add_argument("--quiet", action="store_true", help="only the table")
    i.set_defaults(func=command("injection", "run"))


def _register_extraction(bench_sub: argparse._SubParsersAction) -> None:
    e = bench_sub.add_parser(
        "extraction", help="each extractor variant on gold supporting passages of the dev sets",
        description="Run each extractor variant on gold supporting passages sampled from 2wiki/dev and "
        "musique100 and print one table row per variant: facts/passage, grounded/passage, relation in text (a "
        "proxy for invented relations), title-linked, s/passage, prompt tokens evaluated vs total (the difference "
        "is the fixed prefix reused from the KV cache), calls/passage, rejected. Variants that send the same first "
        "request share its reply (replayed with its measured time and tokens).")
    e.add_argument("--per-set", type=int, default=20, help="gold passages sampled from each dev set")
    e.add_argument("--model", default="", help="GGUF file (default: the bundled SmolLM2)")
    e.add_argument("--threads", type=int, default=0, help="llama.cpp threads (0 = all cores)")
    e.add_argument("--max-triples", type=int, default=8)
    e.add_argument("--variants", default=",".join(EXTRACTION_VARIANTS),
                   help="comma-separated subset of: " + ", ".join(EXTRACTION_VARIANTS))
    e.add_argument("--data", default=str(SHARED_DATA), help="the data sets folder (default: ../shared/data)")
    e.add_argument("-v", "--verbose", action="store_true", help="print every passage's facts")
    e.add_argument("--kv-check", type=int, default=0, metavar="N",
                   help="only time N prompts with and without the cached fixed prefix")
    e.set_defaults(func=command("extraction", "run"))


def _register_fusion(bench_sub: argparse._SubParsersAction) -> None:
    f = bench_sub.add_parser(
        "fusion", help="sweep the hybrid fusion constant, or the `graph` fusion's constants, on a benchmark index",
        description="Each question's dense and lexical rankings (hybrid_pool deep) are computed once and fused for "
        "every constant, so a sweep costs one query embedding per question. With --graph each question's PPR walk "
        "is computed once too, and every read-out damping and weighting of the three lists is scored without "
        "retrieving again; --json keeps every configuration's recall for `bench fusion choose`. The index is the "
        "one `localrag bench` built for the same data (same cache folder).")
    add_question_set_options(f)
    f.add_argument("--rrf-k", default="1,3,5,8,10,12,15,20,30,60", help="comma-separated RRF constants to try")
    f.add_argument("--work", metavar="DIR", help="the bench work dir (default: the data set's cache folder)")
    f.add_argument("--graph", action="store_true", help="sweep the `graph` fusion (dampings, weights, RRF constant)")
    f.add_argument("--json", metavar="FILE", help="with --graph: write every configuration's recall here")
    f.set_defaults(func=command("fusion", "run"))
    choose = f.add_subparsers(dest="fusion_command", metavar="{choose}").add_parser(
        "choose", help="configurations by mean recall@5 over several `fusion --graph --json` sweeps",
        description="Rank the configurations of the sweeps given by mean recall@5 over the sets, with each set's "
        "figure and the worst margin over the best single strategy of each set.")
    choose.add_argument("sweeps", nargs="+", metavar="SWEEP.json")
    choose.set_defaults(func=command("fusion", "run_choose"))


def _register_queue_order(bench_sub: argparse._SubParsersAction) -> None:
    q = bench_sub.add_parser(
        "queue-order", help="does the graph grow where the user asks? FIFO vs asked-first extraction order",
        description="On a copy of a bench --work dir's index with every passage queued for a model extractor, ask "
        "a few questions (hybrid, which needs no graph), let the graph phase extract N passages, and count how many "
        "of the questions' retrieved passages now have model facts; once with index.queue_asked_first off (file "
        "order) and once on.")
    q.add_argument("work", type=Path, help="a bench --work dir (notes/ and index.db, graph extracted or not)")
    q.add_argument("model", type=Path, help="the GGUF model the extractor uses")
    q.add_argument("--questions", type=Path, required=True, help="questions.jsonl (a 'question' field per line)")
    q.add_argument("--ask", type=int, default=4, help="questions asked")
    q.add_argument("--k", type=int, default=3, help="passages retrieved per question")
    q.add_argument("--extract", type=int, default=12, help="passages the graph phase extracts")
    q.add_argument("--out", type=Path, help="JSON result file")
    q.set_defaults(func=command("queue_order", "run"))
