"""The memory-rounds benchmark protocol (`bench --rounds`): order, sets, memory on/off, aggregates, report.

A small real index (SQLite + sqlite-vec, the MiniLM embedder) over a data set folder in the
benchmark format, with a hand-written graph; NeuroPath is driven by a scripted LLM.
"""

from __future__ import annotations

import argparse
import copy
import json
from pathlib import Path

import numpy as np
import pytest

from localrag.api import Index
from localrag_bench.data import Question, load_dataset
from localrag_bench.results import MemoryCounts, QuestionRecord, RoundStat, load_result, summarise
from localrag_bench.rounds import (
    DEFAULT_ROUNDS, ROUND_NAMES, RoundPlan, fill_changes, parse_rounds, reword, run_rounds, split_sets,
)
from localrag_bench.rounds_report import markdown_rounds, plot_rounds, round_rows
from localrag_bench.runner import BenchError, BenchSpec, RunOptions, prepare_index
from localrag.cli import common_parser
from localrag_bench import cli as bench_cmd
from localrag.commands.common import run_command
from localrag.memory.edges import enhance
from localrag.records import Triple

from bench_helpers import write_data_set
from scripted_llm import ScriptedLLM

CORPUS = [
    (1, "Mira Okafor", "Mira Okafor leads the Heron project at the institute."),
    (2, "Heron project", "The Heron project is hosted in Vessby, in the old mill."),
    (3, "Vessby", "Vessby lies on the river Orle, north of the hills."),
    (4, "Bakery", "The bakery on Mill Street sells rye bread and plum cake every morning."),
    (5, "Plum cake", "Plum cake is baked with plums from the Orle valley."),
]
TRIPLES = {
    1: [("mira okafor", "leads", "heron project")],
    2: [("heron project", "hosted in", "vessby")],
    3: [("vessby", "lies on", "river orle")],
    4: [("bakery", "sells", "plum cake")],
    5: [("plum cake", "baked with", "plums")],
}
QUESTIONS = [  # A = the first two, B = the last two
    ("qa1", "Where is the project led by Mira Okafor hosted?", ["Vessby"], [1, 2]),
    ("qa2", "What does the Bakery on Mill Street sell?", ["plum cake"], [4, 5]),  # names are capitalised:
    ("qb1", "Which river does Vessby lie on?", ["river Orle"], [3]),
    ("qb2", "What is Plum Cake baked with?", ["plums"], [5]),  # NeuroPath drops common nouns
]
ENTITIES = ["Mira Okafor", "bakery", "Vessby", "plum cake", "Heron project"]
ANSWERS = {"Mira Okafor": "Vessby", "bakery": "plum cake", "Vessby": "the river Orle", "plum cake": "plums"}
# free answers: the protocol is measured on the memory and the answer call (a scripted model answers by entity)
SETTINGS = {"neuropath.ner": "llm", "index.extractor": "rules", "answer.mode": "free"}


def write_set(folder: Path) -> Path:
    """A data set folder in the ../shared/data/README.md format."""
    return write_data_set(folder, [{"doc_id": d, "title": t, "text": x} for d, t, x in CORPUS],
                          [{"id": i, "question": q, "answers": a, "gold_titles": [], "gold_doc_ids": g}
                           for i, q, a, g in QUESTIONS])


@pytest.fixture(scope="module")
def data_set(tmp_path_factory) -> Path:
    return write_set(tmp_path_factory.mktemp("data") / "rounds")


@pytest.fixture(scope="module")
def graph_work(data_set, tmp_path_factory, embedder) -> Path:
    """The data set's index with a hand-written graph (so the scripted model's choices are known).

    Shared by the module: every protocol run resets memory before `first`.
    """
    work = tmp_path_factory.mktemp("work")
    index, _ = prepare_index(load_dataset(data_set), work, SETTINGS, embedder, env={})
    try:
        for doc_id, triples in TRIPLES.items():
            (p,) = index.store.docs.passages_of(f"{doc_id}.md")
            index.store.graph.write_extraction(p.id, [Triple(*t) for t in triples], [], embedder.encode)
    finally:
        index.close()
    return work


def scripted_neuropath() -> ScriptedLLM:
    """NER names the known entities in the question; tracking keeps the first path; answers by entity.

    Anything else (remind's next-node, judge and labelling calls) gets a reply it cannot use.
    """

    def respond(messages, schema, phase):
        user = messages[-1]["content"]
        if phase == "ner":
            return {"named_entities": [e for e in ENTITIES if e.lower() in user.lower()]}
        if phase == "track":
            return {"current_chain": "the first path answers it", "valid_ids": [0], "expansion_requirements": "",
                    "need_expand_ids": [], "continue": 0}
        if phase != "answer":  # remind's traversal and labelling: an unusable reply (it retries, then stops)
            return "I cannot tell."
        question = next((line for line in user.splitlines() if line.startswith("Question:")), "")
        entity = next((e for e in ANSWERS if e.lower() in question.lower()), None)
        return f"Answer: {ANSWERS[entity] if entity else 'unknown'} [1]"

    return ScriptedLLM(respond)


def spec_for(data_set: Path, work: Path, strategies: list[str], answer: bool = True) -> BenchSpec:
    return BenchSpec(load_dataset(data_set), strategies, RunOptions(k=5, answer=answer), work, dict(SETTINGS), env={})


def seed_memory(work: Path, embedder) -> None:
    """A memory left over from an earlier run: the protocol must forget it before `first`."""
    from localrag.config import load_settings

    index = Index(load_settings(work / "notes", {"db": str(work / "index.db"), **SETTINGS}, env={}), embedder)
    try:
        (p,) = index.store.docs.passages_of("3.md")
        (f,) = index.store.graph.facts.in_passage(p.id)
        q = embedder.encode_one("something else entirely")
        with index.store.transaction():
            index.store.memory.put(("fact", f.id, p.id), enhance(np.zeros_like(q), q))
            index.store.memory.log("an old question", "neuropath", 1, 0, "intended")
        assert index.store.memory.stats().reinforced == 1
    finally:
        index.close()


# -- the protocol ------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def neuropath_run(data_set, graph_work, embedder):
    seed_memory(graph_work, embedder)
    llm = scripted_neuropath()
    result = run_rounds(spec_for(data_set, graph_work, ["neuropath"]), parse_rounds(DEFAULT_ROUNDS),
                        embedder=embedder, llm=llm)
    return result, llm


def test_rounds_run_in_order_with_the_right_sets_and_labels(neuropath_run):
    result, _ = neuropath_run
    a, b = ["qa1", "qa2"], ["qb1", "qb2"]
    assert [(r.round, r.id) for r in result.records] == (
        [("first", i) for i in a] + [("same", i) for i in a] + [("different", i) for i in b]
        + [("different-nomem", i) for i in b])
    assert result.rounds.rounds == ["first", "same", "different", "different-nomem"]
    assert result.rounds.set_a == a and result.rounds.set_b == b
    assert [(s.round, s.question_set, s.memory) for s in result.rounds.stats] == [
        ("first", "A", "on"), ("same", "A", "on"), ("different", "B", "on"), ("different-nomem", "B", "off")]
    assert [(s.strategy, s.round, s.questions) for s in result.summaries] == [
        ("neuropath", "first", 2), ("neuropath", "same", 2), ("neuropath", "different", 2),
        ("neuropath", "different-nomem", 2)]
    assert not any(r.error for r in result.records)


def test_memory_is_reset_before_first_and_learned_there(neuropath_run):
    result, _ = neuropath_run
    first = result.rounds.stats[0]
    assert first.memory_before == MemoryCounts(0, 0, 0)  # the seeded memory and its log are gone
    assert first.memory_after.reinforced >= 2 and first.memory_after.queries_learned == 2
    assert "reset" in result.rounds.reset


def test_same_costs_fewer_llm_calls_than_first(neuropath_run):
    result, _ = neuropath_run
    by_round = {s.round: s for s in result.summaries}
    first, same = by_round["first"], by_round["same"]
    assert first.calls_by_phase_per_q == {"answer": 1.0, "ner": 1.0, "track": 1.0}
    assert same.calls_by_phase_per_q == {"answer": 1.0, "ner": 1.0}  # recall replaced tracking, NER paid again
    assert same.llm_calls_per_q < first.llm_calls_per_q and same.tokens_per_q < first.tokens_per_q
    assert same.memory_per_q["recalled_edges"] >= 1 and same.memory_per_q["skipped_rounds"] >= 1
    assert same.recall["5"] >= first.recall["5"]
    st = {s.round: s for s in result.rounds.stats}
    assert st["same"].tokens_change_vs_first == pytest.approx(same.tokens_per_q / first.tokens_per_q - 1)
    assert st["first"].tokens_change_vs_first == 0.0


def test_different_nomem_neither_reads_nor_writes_memory(neuropath_run):
    result, _ = neuropath_run
    st = {s.round: s for s in result.rounds.stats}
    assert st["different-nomem"].memory_before == st["different-nomem"].memory_after
    assert st["different-nomem"].memory_before == st["different"].memory_after
    nomem = [r for r in result.records if r.round == "different-nomem"]
    assert all(r.memory == {} for r in nomem)  # no memory step in the trace: no recall, no update
    assert all(r.calls_by_phase.get("track") == 1 for r in nomem)  # tracking paid in full
    assert all(r.memory for r in result.records if r.round != "different-nomem")
    assert st["different"].memory_after.queries_learned == 4  # `different` learns with memory on


def test_answers_are_scored_per_round_and_the_settings_recorded(neuropath_run, tmp_path):
    result, _ = neuropath_run
    for s in result.summaries:
        assert s.em == 1.0 and s.f1 == 1.0  # the scripted model answers every question right
    m = result.rounds.memory
    assert (m.penalty, m.alpha, m.lam, m.knn_recall) == ("intended", 0.1, 0.5, True)
    assert "cleared before every round" in result.rounds.query_cache
    loaded = load_result(result.write(tmp_path / "rounds.json"))
    assert loaded.rounds == result.rounds and loaded.summaries == result.summaries
    assert loaded.records[2].round == "same" and loaded.records[2].memory == result.records[2].memory


def test_memory_settings_come_from_the_settings(data_set, graph_work, embedder):
    spec = spec_for(data_set, graph_work, ["neuropath"], answer=False)
    spec.overrides.update({"memory.penalty": "off", "memory.lam": "0.4", "memory.knn_recall": "false"})
    result = run_rounds(spec, parse_rounds("first,same"), embedder=embedder, llm=scripted_neuropath())
    m = result.rounds.memory
    assert (m.penalty, m.lam, m.knn_recall) == ("off", 0.4, False)
    assert [s.round for s in result.summaries] == ["first", "same"] and result.summaries[0].em is None


def test_each_strategy_runs_the_protocol_on_fresh_memory(data_set, graph_work, embedder):
    spec = spec_for(data_set, graph_work, ["neuropath", "remind"], answer=False)
    result = run_rounds(spec, parse_rounds("first,same,different"), embedder=embedder, llm=scripted_neuropath())
    assert [(s.strategy, s.round) for s in result.rounds.stats] == [
        ("neuropath", "first"), ("neuropath", "same"), ("neuropath", "different"),
        ("remind", "first"), ("remind", "same"), ("remind", "different")]
    neuropath_end = result.rounds.stats[2].memory_after
    assert neuropath_end.reinforced > 0
    assert result.rounds.stats[3].memory_before == MemoryCounts(0, 0, 0)  # remind starts from nothing
    assert len(result.records) == 2 * 6 and not any(r.error for r in result.records)


def test_keeping_the_ner_cache_is_a_choice_and_is_recorded(data_set, graph_work, embedder):
    result = run_rounds(spec_for(data_set, graph_work, ["neuropath"], answer=False), parse_rounds("first,same"),
                        embedder=embedder, llm=scripted_neuropath(), clear_query_cache=False)
    same = next(s for s in result.summaries if s.round == "same")
    assert "ner" not in same.calls_by_phase_per_q and same.llm_calls_per_q == 0
    assert "kept" in result.rounds.query_cache


def test_similar_round_rewords_set_a(data_set, graph_work, embedder):
    result = run_rounds(spec_for(data_set, graph_work, ["neuropath"], answer=False),
                        parse_rounds("first,similar,same,same"), embedder=embedder, llm=scripted_neuropath())
    similar = [r for r in result.records if r.round == "similar"]
    assert [r.question for r in similar] == [reword(q) for _, q, _, _ in QUESTIONS[:2]]
    assert [r.round for r in result.records[-4:]] == ["same", "same", "same-2", "same-2"]
    assert result.rounds.rounds == ["first", "similar", "same", "same-2"]


# -- plans, sets, rewording ---------------------------------------------------------------------
def test_parse_rounds_labels_repeats_and_rejects_bad_specs():
    plans = parse_rounds(DEFAULT_ROUNDS)
    assert plans == [RoundPlan("first", "first", "A", True), RoundPlan("same", "same", "A", True),
                     RoundPlan("different", "different", "B", True),
                     RoundPlan("different-nomem", "different-nomem", "B", False)]
    assert [p.label for p in parse_rounds("first, same,same ,SAME")] == ["first", "same", "same-2", "same-3"]
    assert parse_rounds("first,similar")[1].reworded
    for spec, message in (("first,sideways", "unknown round sideways"), ("same,first", "must start with `first`"),
                          ("first,same,first", "must start with `first`"), ("", "needs round names"),
                          ("first,,same", "unknown round (empty)")):
        with pytest.raises(BenchError, match=message.replace("(", r"\(").replace(")", r"\)")):
            parse_rounds(spec)


def test_sets_split_in_halves_in_order():
    qs = [Question(str(i), f"q{i}?", (), ()) for i in range(5)]
    a, b = split_sets(qs)
    assert [q.id for q in a] == ["0", "1", "2"] and [q.id for q in b] == ["3", "4"]
    assert split_sets(qs[:1]) == (qs[:1], [])


def test_reword_is_deterministic_and_keeps_the_entities():
    assert reword("Where was the director of film Emile The African born?") == \
        "Could you tell me where was the director of film Emile The African born?"
    assert reword("Are  both films from Spain?") == "Please answer this question: Are both films from Spain?"
    q = QUESTIONS[0][1]
    assert reword(q) == "Could you tell me where is the project led by Mira Okafor hosted?" != q


def test_rounds_needing_set_b_need_two_questions(data_set, graph_work, embedder):
    spec = BenchSpec(load_dataset(data_set, limit=1), ["hybrid"], RunOptions(), graph_work, dict(SETTINGS), env={})
    with pytest.raises(BenchError, match="needs set B"):
        run_rounds(spec, parse_rounds("first,different"), embedder=embedder)
    spec.overrides["memory.enabled"] = "false"
    with pytest.raises(BenchError, match="memory.enabled is off"):
        run_rounds(spec, parse_rounds("first,same"), embedder=embedder)


# -- aggregates, hand-checked --------------------------------------------------------------------
def _record(rid: str, rnd: str, recall: tuple[float, float], calls: dict[str, int], tokens: dict[str, int],
            em: float, memory: dict[str, int] | None = None) -> QuestionRecord:
    return QuestionRecord(rid, "?", "neuropath", [1], [1], {"2": recall[0], "5": recall[1]}, round=rnd, em=em,
                          f1=em, llm_calls=sum(calls.values()), prompt_tokens=sum(tokens.values()) - 10,
                          completion_tokens=10, calls_by_phase=calls, tokens_by_phase=tokens, memory=memory or {})


def test_per_round_aggregates_by_hand():
    records = [
        _record("a", "first", (0.5, 1.0), {"ner": 1, "track": 2, "answer": 1}, {"ner": 100, "track": 600, "answer": 300}, 1.0,
                {"recalled_edges": 0, "enhanced": 2}),
        _record("b", "first", (0.0, 0.5), {"ner": 1, "track": 1, "answer": 1}, {"ner": 100, "track": 300, "answer": 600}, 0.0,
                {"recalled_edges": 0, "enhanced": 1}),
        _record("a", "same", (0.5, 1.0), {"ner": 1, "answer": 1}, {"ner": 100, "answer": 300}, 1.0,
                {"recalled_edges": 2, "skipped_rounds": 2}),
        _record("b", "same", (1.0, 1.0), {"ner": 1, "answer": 1}, {"ner": 100, "answer": 500}, 1.0,
                {"recalled_edges": 1, "skipped_rounds": 2}),
    ]
    first, same = summarise(records)
    assert (first.round, first.questions, same.round, same.questions) == ("first", 2, "same", 2)
    assert first.recall == {"2": 0.25, "5": 0.75} and same.recall == {"2": 0.75, "5": 1.0}
    assert first.em == 0.5 and same.em == 1.0 and same.f1 == 1.0
    assert first.llm_calls_per_q == 3.5 and same.llm_calls_per_q == 2.0
    assert first.calls_by_phase_per_q == {"answer": 1.0, "ner": 1.0, "track": 1.5}
    assert first.tokens_per_q == 1000.0 and same.tokens_per_q == 500.0
    assert first.tokens_by_phase_per_q == {"answer": 450.0, "ner": 100.0, "track": 450.0}
    assert same.memory_per_q == {"recalled_edges": 1.5, "skipped_rounds": 2.0}
    assert first.memory_per_q == {"enhanced": 1.5, "recalled_edges": 0.0}
    stats = [RoundStat("neuropath", "first", "A", "on", 2), RoundStat("neuropath", "same", "A", "on", 2)]
    fill_changes(stats, [first, same])
    assert stats[0].tokens_change_vs_first == 0.0 and stats[1].tokens_change_vs_first == -0.5
    assert stats[1].calls_change_vs_first == pytest.approx(2.0 / 3.5 - 1)


# -- report: table and plot ----------------------------------------------------------------------
def test_markdown_table_and_plot(neuropath_run, tmp_path):
    result, _ = neuropath_run
    table = markdown_rounds([result])
    lines = table.splitlines()
    assert lines[0].startswith("| dataset | strategy | round | set | memory | n | recall@2 | recall@5 | EM | F1 |")
    assert "tokens vs first" in lines[0] and len(lines) == 2 + 4
    rows = {r.round: r for r in round_rows([result])}
    assert rows["first"].tokens_change is None
    same = rows["same"]
    assert f"| rounds | neuropath | same | A | on | 2 | {same.recall['2']:.3f} | {same.recall['5']:.3f} | 1.000 | 1.000 |" in table
    assert f"{same.tokens_change * 100:+.1f} %".replace("-", "−") in lines[3]
    assert "| different-nomem | B | off |" in table
    png = plot_rounds([result], tmp_path / "img" / "memory-rounds.png")
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 5000
    with pytest.raises(ValueError, match="no memory rounds"):
        markdown_rounds([])


# -- command line ----------------------------------------------------------------------------------
def _cli(argv: list[str]) -> int:
    parser = argparse.ArgumentParser()
    bench_cmd.register(parser.add_subparsers(), common_parser())
    return run_command(parser.parse_args(argv))


def test_cli_rounds_table_and_plot(tmp_path, embedder, capsys, monkeypatch):
    import localrag.embed

    monkeypatch.setattr(localrag.embed, "_DEFAULT", embedder)
    data = write_set(tmp_path / "rounds")
    out = tmp_path / "res.json"
    assert _cli(["bench", "--data", str(data), "--strategy", "hybrid", "--rounds", "first,same,different",
                 "--limit", "4", "--quiet", "--work", str(tmp_path / "work"), "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "memory rounds" in printed and "vs first" in printed and "note: hybrid read(s) no edge memory" in printed
    assert [line.split("│")[2].strip() for line in printed.splitlines() if line.startswith("│ hybrid")] == [
        "first", "same", "different"]
    saved = json.loads(out.read_text())
    assert [r["round"] for r in saved["records"]] == ["first"] * 2 + ["same"] * 2 + ["different"] * 2
    assert saved["rounds"]["set_a"] == ["qa1", "qa2"] and saved["rounds"]["memory"]["penalty"] == "intended"
    assert any("hybrid read(s) no edge memory" in n for n in saved["notes"])
    assert _cli(["bench", "table", str(out)]) == 0
    both = capsys.readouterr().out
    assert "| rounds | hybrid [same] |" in both and "| rounds | hybrid | different | B | on | 2 |" in both
    assert _cli(["bench", "table", "--rounds", str(out)]) == 0
    only = capsys.readouterr().out
    assert "| rounds | hybrid [same] |" not in only and "| rounds | hybrid | same | A | on | 2 |" in only
    png = tmp_path / "img" / "rounds.png"
    assert _cli(["bench", "plot", "--rounds", str(out), "-o", str(png)]) == 0
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 5000


@pytest.mark.parametrize("argv, message", [
    (["--rounds", "first,sideways"], "unknown round sideways"),
    (["--rounds", "same"], "must start with `first`"),
    (["--rounds", "--no-memory"], "leave out --no-memory"),
    (["--rounds", "--limit", "1"], "needs set B"),
    (["--keep-ner-cache"], "--keep-ner-cache only applies with --rounds"),
])
def test_cli_rounds_errors_are_clear(data_set, tmp_path, capsys, argv, message):
    assert _cli(["bench", "--data", str(data_set), "--strategy", "hybrid", "--work", str(tmp_path / "w"), *argv]) == 1
    assert message in " ".join(capsys.readouterr().err.split())


def test_cli_table_rounds_on_a_plain_result_is_an_error(neuropath_run, tmp_path, capsys):
    result = copy.deepcopy(neuropath_run[0])
    result.rounds = None
    for s in result.summaries:
        s.round = ""
    path = result.write(tmp_path / "plain.json")
    assert _cli(["bench", "table", "--rounds", str(path)]) == 1
    assert "has memory rounds" in " ".join(capsys.readouterr().err.split())
    assert _cli(["bench", "plot", "--rounds", str(path), "-o", str(tmp_path / "x.png")]) == 1
    assert "no memory rounds" in " ".join(capsys.readouterr().err.split())


def test_help_names_the_rounds_and_the_sets(capsys):
    assert bench_cmd.ROUND_NAMES == ROUND_NAMES and bench_cmd.DEFAULT_ROUNDS == DEFAULT_ROUNDS
    with pytest.raises(SystemExit):
        _cli(["bench", "--help"])
    text = capsys.readouterr().out
    assert "--rounds [SPEC]" in text and DEFAULT_ROUNDS in text and "set A = the first ceil(n/2)" in text
    assert "different-nomem  ask B with memory off" in text and "--keep-ner-cache" in text
