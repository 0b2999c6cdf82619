"""The sweeps and one-off measurements as `localrag bench` subcommands (bench/localrag_bench/cli_tools.py): their
parsers, their errors, and the fast ones run for real (rules extractor, recorded sweeps, a small index)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest
from bench_helpers import write_data_set

from localrag.api import Index
from localrag.cli import common_parser
from localrag.commands.common import run_command
from localrag.config import load_settings
from localrag_bench import cli as bench_cli
from localrag_bench import cli_tools, extraction

REPO = Path(__file__).resolve().parents[1]
SWEEPS = sorted((REPO / "docs" / "results" / "issue15-sweeps").glob("sweep2-*.json"))
TOOLS = {
    "extraction": ["--per-set", "--variants", "--kv-check"],
    "fusion": ["--rrf-k", "--graph", "--json"],
    "graph-phase": ["WORK_DIR", "FAST.db"],
    "adversarial": ["--links", "--names", "--work"],
    "queue-order": ["--questions", "--extract"],
    "window-share": ["folder"],
}


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="localrag")
    bench_cli.register(parser.add_subparsers(), common_parser())
    return parser


def _cli(argv: list[str]) -> int:
    return run_command(_parser().parse_args(argv))


@pytest.mark.parametrize("name", sorted(TOOLS))
def test_each_tool_has_help_with_its_options(name, capsys):
    with pytest.raises(SystemExit) as done:
        _parser().parse_args(["bench", name, "--help"])
    assert done.value.code == 0
    printed = capsys.readouterr().out
    assert printed.startswith(f"usage: localrag bench {name}")
    assert all(option in printed for option in TOOLS[name])


def test_bench_help_lists_the_tools(capsys):
    with pytest.raises(SystemExit):
        _parser().parse_args(["bench", "--help"])
    printed = capsys.readouterr().out
    assert all(name in printed for name in TOOLS)


def test_tool_arguments_parse_into_their_commands():
    args = _parser().parse_args(["bench", "fusion", "--graph", "--data", "D", "--ids", "I", "--json", "out.json"])
    assert (args.graph, args.data, args.ids, args.json, args.rrf_k) == (True, "D", "I", "out.json", "1,3,5,8,10,12,15,20,30,60")
    args = _parser().parse_args(["bench", "fusion", "choose", "a.json", "b.json"])
    assert args.sweeps == ["a.json", "b.json"] and args.fusion_command == "choose"
    args = _parser().parse_args(["bench", "queue-order", "W", "M.gguf", "--questions", "q.jsonl", "--ask", "2"])
    assert (args.work, args.model, args.questions, args.ask, args.k, args.extract) == \
        (Path("W"), Path("M.gguf"), Path("q.jsonl"), 2, 3, 12)
    args = _parser().parse_args(["bench", "extraction"])
    assert args.variants.split(",") == list(extraction.VARIANTS) and args.data == str(cli_tools.SHARED_DATA)


def test_the_extraction_variants_in_the_help_are_the_benchmarks():
    assert cli_tools.EXTRACTION_VARIANTS == tuple(extraction.VARIANTS)


def test_the_shared_data_folder_is_beside_the_repository():
    assert cli_tools.SHARED_DATA == REPO.parent / "shared" / "data"


@pytest.fixture
def gold_sets(tmp_path) -> Path:
    """A data folder with the two dev sets the extraction benchmark samples, two gold passages each."""
    passages = [(1, "Mira Okafor", "Mira Okafor leads the Heron project at the Lund institute."),
                (2, "Vessby", "Vessby lies on the river Orle, north of the Tarn hills.")]
    for name in extraction.SETS:
        write_data_set(tmp_path / name, [{"doc_id": d, "title": t, "text": x} for d, t, x in passages],
                       [{"id": "q1", "question": "?", "gold_doc_ids": [1, 2]}])
    return tmp_path


def test_extraction_runs_the_rules_variant(gold_sets, capsys):
    assert _cli(["bench", "extraction", "--data", str(gold_sets), "--per-set", "2", "--variants", "rules"]) == 0
    printed = capsys.readouterr().out
    assert "4 gold passages" in printed and "| rules |" in printed


def test_extraction_rejects_an_unknown_variant(gold_sets, capsys):
    assert _cli(["bench", "extraction", "--data", str(gold_sets), "--variants", "rules,nonsense"]) == 1
    err = capsys.readouterr().err
    assert "unknown variant 'nonsense'" in err and "Traceback" not in err


def test_fusion_needs_a_data_set(capsys):
    assert _cli(["bench", "fusion"]) == 1
    assert "--data DIR is required" in capsys.readouterr().err


def test_fusion_choose_ranks_the_recorded_sweeps(capsys):
    assert len(SWEEPS) == 3
    assert _cli(["bench", "fusion", "choose", *map(str, SWEEPS)]) == 0
    printed = capsys.readouterr().out
    assert printed.startswith("best single strategy mean R@5:")
    assert "| configuration | 2wiki-dev | dendron-vault | hotpotqa100 | mean | worst margin |" in printed


def test_window_share_counts_the_examples(capsys):
    assert _cli(["bench", "window-share", str(REPO / "examples" / "notes")]) == 0
    figures = json.loads(capsys.readouterr().out)
    assert figures["files"] > 0 and figures["after"]["over_window"] == 0
    assert figures["after"]["passages"] >= figures["before"]["passages"] > 0


def test_graph_phase_runs_on_a_copy_of_a_fast_index(tmp_path, notes_dir, embedder, capsys, monkeypatch):
    import localrag.embed

    monkeypatch.setattr(localrag.embed, "_DEFAULT", embedder)
    fast = tmp_path / "fast.db"
    index = Index(load_settings(notes_dir, {"db": str(fast), "index.extractor": "rules"}, env={}), embedder)
    index.sync()
    index.close()
    work = tmp_path / "work"
    work.mkdir()
    assert _cli(["bench", "graph-phase", str(work), str(fast)]) == 0
    figures = json.loads(capsys.readouterr().out)
    assert figures["passages"] > 0 and figures["counts"] and figures["wall_s"] >= 0
    assert (work / "graph-only.db").is_file() and fast.stat().st_size > 0


def test_adversarial_notes_report_every_link_as_a_fact(tmp_path, embedder, capsys, monkeypatch):
    import localrag.embed

    monkeypatch.setattr(localrag.embed, "_DEFAULT", embedder)
    out = tmp_path / "adversarial.json"
    assert _cli(["bench", "adversarial", "--links", "300", "--names", "120", "--work", str(tmp_path / "w"),
                 "--out", str(out), "--quiet"]) == 0
    printed = capsys.readouterr().out
    assert printed.startswith("| case |") and "links-300" in printed and "names-120" in printed
    cases = {c["name"]: c for c in json.loads(out.read_text())["cases"]}
    assert cases["links-300"]["link_facts"] == 300 and cases["names-120"]["link_facts"] == 120
    assert cases["links-300"]["graph_seconds"] > 0 and cases["links-300"]["counts"]["coref_pairs"] > 0
