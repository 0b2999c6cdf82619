"""`localrag bench`: recall@k / EM / F1 on a QA data set; `bench scale`, `bench plot`, `bench table`, `bench followup`,
and the sweeps and one-off measurements (`bench extraction`, `bench fusion`, `bench graph-phase`, `bench adversarial`,
`bench injection`,
`bench queue-order`, `bench window-share`, in cli_tools.py). Only the parsers are here: they are built on every
`localrag` start, so what a command runs (bench/localrag_bench/commands.py and the modules it names) is imported when the
command runs."""

from __future__ import annotations

import argparse

from localrag_bench.cli_notes import register_notes
from localrag_bench.cli_tools import add_question_set_options, command, register_tools

# kept in step with localrag_bench.rounds (not imported here: it loads the whole pipeline); a test checks it
ROUND_NAMES = ("first", "same", "similar", "different", "different-nomem")
DEFAULT_ROUNDS = "first,same,different,different-nomem"
ROUNDS_HELP = """memory rounds (--rounds SPEC):
  The selected questions (after --ids and --limit, in that order) are split in two:
  set A = the first ceil(n/2), set B = the rest. For each strategy, on its own fresh
  memory (`memory reset` before `first`), the rounds run in the order given:
    first            ask A, memory on (read and written: memories are learned here)
    same             ask A again, memory on
    similar          ask A reworded ("Could you tell me where ...?"), memory on
    different        ask B (other questions, same corpus) with what A taught, memory on
    different-nomem  ask B with memory off: neither read nor written (the control)
  SPEC must start with `first`; a round named again is labelled same-2, same-3, ...
  The query-entity cache is cleared before each round (--keep-ner-cache keeps it).
  Works with and without --answer. The JSON records each question's round and the
  memory settings used (penalty mode, alpha, lambda, knn recall); `bench table` and
  `bench plot --rounds` show the rounds.
  e.g. localrag bench --data DIR --strategy neuropath,remind --rounds --limit 40
"""


class _KeepLayoutFormatter(argparse.HelpFormatter):
    """Wraps one-line texts as usual; a text with line breaks (the rounds epilog) keeps its layout."""

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        if "\n" in text:
            return "".join(indent + line for line in text.splitlines(keepends=True))
        return super()._fill_text(text, width, indent)


def register(sub: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser(
        "bench", parents=[common], help="benchmark retrieval and answers on a QA data set",
        description="Index a data set's corpus (one note per passage, cached outside the repository) with the "
        "real pipeline, ask its questions, print recall@2/@5 (and EM/F1 with --answer), LLM calls and tokens "
        "per question, and write a JSON result. Subcommands: scale (synthetic 100k-passage corpus), plot, table, "
        "followup (two-turn conversations, the long-session check), extraction (extractor variants on gold "
        "passages), fusion (sweeps of the fusion constants), graph-phase, adversarial, injection, queue-order, "
        "window-share. "
        "With --rounds: the memory protocol of ReMindRAG (same / similar / different questions) over one index.",
        epilog=ROUNDS_HELP, formatter_class=_KeepLayoutFormatter,
    )
    add_question_set_options(p)
    p.add_argument("--strategy", metavar="S[,S2...]",
                   help="strategies, comma-separated (default: dense,lexical,hybrid; with --rounds: neuropath)")
    p.add_argument("--limit", type=int, metavar="N", help="only the first N questions (after --ids)")
    p.add_argument("--answer", action="store_true",
                   help="also answer with the LLM and score EM/F1: the answer by question shape (grammar-constrained "
                   "span for short questions) beside the old free generation, the random-choice baseline, gold in "
                   "the shown evidence, abstention, time to evidence / first token, per question type")
    p.add_argument("--no-free", action="store_true", help="with --answer: skip the free-generation answer")
    p.add_argument("--drop-gold", action="store_true",
                   help="index the corpus without the asked questions' gold passages (own cache folder): the right "
                   "answer is then 'not in your notes', so abstention can be measured")
    p.add_argument("--k", type=int, default=5, help="largest recall cut-off (recall@2 and @5 are always shown)")
    p.add_argument("--depth", type=int, default=0, help="passages retrieved per question (default 2·k)")
    p.add_argument("--out", metavar="FILE", help="JSON result file (default: bench-results/<dataset>-<time>.json)")
    p.add_argument("--work", metavar="DIR", help="notes + index cache (default: ~/.cache/localrag/bench/<name>-<hash>)")
    p.add_argument("--no-memory", action="store_true", help="neither read nor write edge memories")
    p.add_argument("--extract-asked", type=int, metavar="N",
                   help="the model's graph where asked: `graph` on the rules graph, then each question's first N "
                   "retrieved passages extracted by the model (llm+rules) on a copy of the index, then `graph` "
                   "again (strategy graph+asked); the extraction's passages, calls, tokens and seconds in the result")
    p.add_argument("--rounds", nargs="?", const=DEFAULT_ROUNDS, metavar="SPEC",
                   help=f"run the memory-rounds protocol: comma-separated rounds from {', '.join(ROUND_NAMES)} "
                   f"(default when SPEC is left out: {DEFAULT_ROUNDS}); see the rounds section below")
    p.add_argument("--keep-ner-cache", action="store_true",
                   help="with --rounds: keep the query-entity (NER) cache between rounds (default: cleared before "
                   "each round, so the savings measured are memory's alone)")
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                   help="a setting for this run, e.g. hybrid_rrf_k=60 or neuropath.max_hop=1 (repeatable)")
    p.add_argument("--quiet", action="store_true", help="no progress bars")
    p.set_defaults(func=command("commands", "run_bench_command"))
    bench_sub = p.add_subparsers(dest="bench_command", metavar="{notes,scale,plot,table,followup,extraction,fusion,"
                                 "graph-phase,adversarial,injection,queue-order,window-share}")

    s = bench_sub.add_parser("scale", help="indexing throughput and query latency on a generated corpus",
                             description="Generate N varied passages (deterministic), index them without an LLM, "
                             "time an unchanged re-sync in a fresh process, and time dense / lexical / hybrid "
                             "queries (p50/p95) and the store's exact vs binary-prefiltered KNN.")
    s.add_argument("--passages", type=int, default=100_000)
    s.add_argument("--queries", type=int, default=200)
    s.add_argument("--seed", type=int, default=7)
    s.add_argument("--work", metavar="DIR", help="corpus + index (default: ~/.cache/localrag/bench/scale-N-seedS)")
    s.add_argument("--fresh", action="store_true", help="rebuild the index (to measure indexing again)")
    s.add_argument("--out", metavar="FILE", help="JSON result file (default: bench-results/scale-<N>.json)")
    s.add_argument("--quiet", action="store_true", help="no progress bars")
    s.add_argument("--graph", action="store_true",
                   help="the graph instead: a generated vault with recurring people, places, organisations and "
                   "links; fast phase, graph phase (rules) with its time per step, re-index, one-file edit, "
                   "ppr / graph fusion / NeuroPath (instant model) latency, cold `ask` (default work dir "
                   "~/.cache/localrag/bench/scale-graph-N-seedS; --seed default 11)")
    s.add_argument("--notes", metavar="DIR",
                   help="with --graph: both indexing phases on this folder of real notes instead of a generated "
                   "one (throughput in passages/s and tokens/s; the index goes in --work, default a temporary folder)")
    s.add_argument("--queries-only", action="store_true",
                   help="with --graph: time the queries and five cold asks again on the index an earlier "
                   "--graph run of the generated vault left in the work dir (after a change to retrieval), nothing else; "
                   "not with --notes")
    s.add_argument("--neuropath-queries", type=int, metavar="N",
                   help="with --graph: time NeuroPath on the first N of the queries only (it takes seconds each)")
    s.set_defaults(func=command("commands", "run_scale_command"))

    pl = bench_sub.add_parser("plot", help="grouped bars of recall@k per strategy and data set (--rounds: "
                              "tokens/question and recall@k per memory round)")
    pl.add_argument("results", nargs="+", metavar="RESULT.json")
    pl.add_argument("-o", "--output", help="PNG file (default: docs/img/recall.png; with --rounds: "
                    "docs/img/memory-rounds.png)")
    pl.add_argument("--rounds", action="store_true",
                    help="plot memory rounds (`bench --rounds` results): tokens per question per round (bars) and "
                    "recall@k per round (lines), per strategy")
    pl.add_argument("--k", default="5", help="which recall@k to plot (default 5)")
    pl.add_argument("--no-reference", action="store_true", help="leave out the BM25 reference bars")
    pl.set_defaults(func=command("commands", "run_plot_command"))

    register_notes(bench_sub)
    register_followup(bench_sub)

    t = bench_sub.add_parser("table", help="print result files as one Markdown table (for docs)")
    t.add_argument("results", nargs="+", metavar="RESULT.json")
    t.add_argument("--pivot", action="store_true", help="strategies down, data sets across (recall@2 / @5)")
    t.add_argument("--answers", action="store_true",
                   help="the answers table (`bench --answer` results): constrained EM, random-choice EM, free EM, "
                   "gold in evidence, abstention, time to evidence / first token")
    t.add_argument("--rounds", action="store_true",
                   help="only the memory-rounds table: strategy × round with recall@2/@5, EM, F1, calls/q, tokens/q "
                   "and the change in tokens vs `first` (printed anyway, after the main table, when a file has rounds)")
    t.set_defaults(func=command("commands", "run_table_command"))
    register_tools(bench_sub)


def register_followup(bench_sub: argparse._SubParsersAction) -> None:
    f = bench_sub.add_parser(
        "followup", help="follow-up questions: MuSiQue sub-question pairs as two-turn conversations",
        description="Build two-turn conversations from a MuSiQue set's question_decomposition (2-hop): turn 1 the "
        "first sub-question, turn 2 the second with #1 replaced by 'it' / 'they' / 'that place'. Print recall@2/@5 "
        "of the turn-2 gold paragraph for (a) turn 2 alone, (b) in the conversation, (c) the oracle and, with "
        "--own-answer, (d) after the model's own turn-1 answer. With --session: ask the set's questions one after "
        "another in one session vs each alone (self-contained questions must be left alone).")
    f.add_argument("--data", metavar="DIR", required=True, help="data set folder (MuSiQue for conversations)")
    f.add_argument("--ids", metavar="FILE", help="question ids to use, one a line")
    f.add_argument("--limit", type=int, metavar="N", help="only the first N questions (after --ids)")
    f.add_argument("--strategy", default="hybrid", help="retrieval strategy (default hybrid)")
    f.add_argument("--resolver", default="rules", choices=["rules", "llm"],
                   help="rules (no model) or llm (the bounded rewrite call, rules as fallback)")
    f.add_argument("--own-answer", action="store_true", help="also answer turn 1 with the model and resolve from that")
    f.add_argument("--session", action="store_true", help="the long-session check instead of the conversations")
    f.add_argument("--work", metavar="DIR", help="notes + index (default: ~/.cache/localrag/bench/followup-<set>)")
    f.add_argument("--out", metavar="FILE", help="JSON result file (default: bench-results/followup-<set>-….json)")
    f.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="a setting for this run")
    f.add_argument("--quiet", action="store_true", help="no progress line")
    f.set_defaults(func=command("cli_followup", "run_followup_command"), no_memory=False)
