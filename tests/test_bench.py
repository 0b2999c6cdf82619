"""The benchmark end to end on a tiny slice of 2Wiki dev (real store, embedder, pipeline) and a tiny scale run."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest

from localrag_bench.data import load_dataset
from localrag_bench.report import markdown_table, plot_recall
from localrag_bench.results import load_result
from localrag_bench.runner import BenchSpec, RunOptions, run_bench, run_questions
from localrag_bench.scale import run_scale
from localrag.cli import common_parser
from localrag_bench import cli as bench_cmd
from localrag.commands.common import run_command

from bench_helpers import write_data_set
from scripted_llm import answers_by_question

DATA = Path(__file__).parents[1].parent / "shared" / "data"
TWOWIKI_DEV = DATA / "2wiki" / "dev"
N_QUESTIONS = 5
N_DISTRACTORS = 12
STRATEGIES = ["dense", "lexical", "hybrid"]


@pytest.fixture(scope="module")
def tiny_set(tmp_path_factory) -> Path:
    """5 dev questions with their gold passages and a few distractors, written as a data set folder."""
    if not (TWOWIKI_DEV / "corpus.jsonl").is_file():
        pytest.skip(f"benchmark data not found at {TWOWIKI_DEV} (shared/data is beside the repository)")
    questions = [json.loads(l) for l in (TWOWIKI_DEV / "questions.jsonl").read_text().splitlines()[:N_QUESTIONS]]
    corpus = [json.loads(l) for l in (TWOWIKI_DEV / "corpus.jsonl").read_text().splitlines() if l.strip()]
    gold = {d for q in questions for d in q["gold_doc_ids"]}
    others = [c for c in corpus if c["doc_id"] not in gold][:N_DISTRACTORS]
    folder = write_data_set(tmp_path_factory.mktemp("data") / "tiny", [c for c in corpus if c["doc_id"] in gold] + others,
                            questions)
    (folder / "dev_ids.txt").write_text("\n".join(q["id"] for q in questions[::-1]) + "\n")
    return folder


@pytest.fixture(scope="module")
def first_run(tiny_set, tmp_path_factory, embedder):
    work = tmp_path_factory.mktemp("work")
    spec = BenchSpec(load_dataset(tiny_set, tiny_set / "dev_ids.txt"), STRATEGIES, RunOptions(k=5), work, env={})
    return run_bench(spec, embedder=embedder), spec


def test_bench_records_every_question_and_strategy(first_run):
    result, spec = first_run
    assert result.strategies == STRATEGIES and result.questions == N_QUESTIONS
    assert [s.strategy for s in result.summaries] == STRATEGIES
    assert len(result.records) == N_QUESTIONS * len(STRATEGIES)
    assert [r.id for r in result.records[:N_QUESTIONS]] == [q.id for q in spec.dataset.questions]  # ids-file order
    for r in result.records:
        assert not r.error
        assert set(r.recall) == {"2", "5"} and all(0.0 <= v <= 1.0 for v in r.recall.values())
        assert r.recall["2"] <= r.recall["5"]
        assert len(r.retrieved_doc_ids) == len(set(r.retrieved_doc_ids)) > 0
        assert r.llm_calls == 0 and r.tokens == 0 and r.em is None  # no LLM without --answer
    for s in result.summaries:
        found = [r for r in result.records if r.strategy == s.strategy and r.recall["5"] > 0]
        assert found, f"{s.strategy} found no gold passage in a 5-question corpus"
        mine = [r.recall["5"] for r in result.records if r.strategy == s.strategy]
        assert s.recall["5"] == pytest.approx(sum(mine) / len(mine))
    assert result.index.documents == result.corpus_passages and result.index.sync_changed
    assert [r.name for r in result.reference] == ["bm25 (reference)"]


def test_recall_is_computed_from_the_retrieved_doc_ids(first_run):
    result, _ = first_run
    for r in result.records:
        top5 = set(r.retrieved_doc_ids[:5])
        assert r.recall["5"] == pytest.approx(len(top5 & set(r.gold_doc_ids)) / len(r.gold_doc_ids))


def test_rerun_reuses_the_index_and_result_round_trips(first_run, embedder, tmp_path):
    result, spec = first_run
    again = run_bench(spec, embedder=embedder)
    assert not again.index.sync_changed and again.index.notes_written == 0
    assert [s.recall for s in again.summaries] == [s.recall for s in result.summaries]
    path = result.write(tmp_path / "r.json")
    loaded = load_result(path)
    assert loaded.summaries == result.summaries and loaded.records[0] == result.records[0]
    table = markdown_table([loaded])
    assert table.count("\n| tiny |") == len(STRATEGIES) + 1  # + the BM25 reference row
    png = plot_recall([loaded], tmp_path / "img" / "recall.png")
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_answer_mode_scores_em_f1_and_counts_calls(first_run):
    result, spec = first_run
    from localrag.api import Assistant, Index
    from localrag.config import load_settings

    qs = spec.dataset.questions[:3]
    script = {qs[0].question: f"Answer: {qs[0].answers[0]} [1]", qs[1].question: "Answer: certainly not that [2]"}
    # no evidence threshold: every question reaches the (scripted) model
    # comparisons left to the model here: this counts the model's calls (decided ones make none, below)
    index = Index(load_settings(Path(result.index.notes_dir), {"db": result.index.db_path, "answer.abstain_below": 0, "answer.abstain_unnamed_below": 0,
                                                               "answer.mode": "shape", "answer.decide_comparisons": False,
                                                               "answer.pick": "model"},
                                env={}))
    try:
        records = run_questions(Assistant(index, llm=answers_by_question(script)), qs, "hybrid", RunOptions(answer=True),
                                round_label="round-1")
        index.settings.answer.decide_comparisons = True
        decided = run_questions(Assistant(index, llm=answers_by_question(script)), qs[:1], "hybrid",
                                RunOptions(answer=True, free_too=False))[0]
    finally:
        index.close()
    # "Are both Cupid The Cowpuncher and Hashimura Togo from the same country?": both notes say American
    assert decided.decided and decided.llm_calls == 0 and decided.prediction == "yes" and decided.em == 1.0
    right, wrong, failed = records
    # the old free generation, side by side on the same retrieval
    assert right.free_prediction == qs[0].answers[0] and right.free_em == 1.0 and right.free_f1 == 1.0
    assert wrong.free_em == 0.0 and wrong.free_f1 == 0.0
    # the answer by question shape: a span the grammar admitted (or "not in your notes"), its baseline, evidence
    assert right.question_type and right.answer_mode in ("short", "open")
    if right.answer_mode == "short":
        assert right.prediction in (qs[0].answers[0], "not in your notes") and right.choices > 0
        assert right.random_prediction and right.random_em in (0.0, 1.0)
    assert right.evidence and right.evidence_ms is not None and right.first_token_ms is not None
    assert right.gold_in_evidence in (True, False, None)
    assert right.llm_calls == 1 and right.calls_by_phase == {"answer": 1} and right.tokens > 5
    assert right.tokens_by_phase["answer"] == right.tokens and right.round == "round-1"
    assert failed.error.startswith("LLMError") and failed.em == 0.0 and failed.recall["5"] == 0.0


def test_hybrid_fusion_constant_comes_from_settings(first_run, embedder):
    from localrag.api import Assistant, Index
    from localrag.config import load_settings

    result, spec = first_run
    question = spec.dataset.questions[0].question
    for overrides, expected in (({}, 8), ({"hybrid_rrf_k": 60}, 60)):
        settings = load_settings(Path(result.index.notes_dir), {"db": result.index.db_path, **overrides}, env={})
        index = Index(settings, embedder)
        try:
            trace = Assistant(index, llm=object()).retrieve(question, "hybrid", 10).trace
        finally:
            index.close()
        assert trace.steps[0].rrf_k == expected


def _cli(argv: list[str]) -> int:
    parser = argparse.ArgumentParser()
    bench_cmd.register(parser.add_subparsers(), common_parser())
    return run_command(parser.parse_args(argv))


def test_cli_runs_plots_and_tabulates(tiny_set, first_run, embedder, tmp_path, capsys, monkeypatch):
    import localrag.embed

    monkeypatch.setattr(localrag.embed, "_DEFAULT", embedder)
    result, _ = first_run
    out = tmp_path / "res.json"
    assert _cli(["bench", "--data", str(tiny_set), "--strategy", "lexical", "--limit", "2", "--quiet",
                 "--work", result.index.work_dir, "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "R@2" in printed and "R@5" in printed and "lexical" in printed and "tokens/q" in printed
    saved = json.loads(out.read_text())
    assert saved["questions"] == 2 and saved["strategies"] == ["lexical"] and len(saved["records"]) == 2
    assert _cli(["bench", "plot", str(out), "-o", str(tmp_path / "p.png")]) == 0
    assert (tmp_path / "p.png").stat().st_size > 1000
    assert _cli(["bench", "table", str(out)]) == 0
    assert "| tiny | lexical |" in capsys.readouterr().out


def _model_facts(notes: str, db: Path, embedder) -> set[int]:
    """The passages of an index with facts the model produced."""
    from localrag.api import Index
    from localrag.config import load_settings

    index = Index(load_settings(Path(notes), {"db": str(db)}, env={}), embedder)
    try:
        return {p for _, p, origin in index.store.graph.facts.all_sources() if origin == "llm"}
    finally:
        index.close()


def test_extract_asked_runs_graph_on_the_models_graph_of_the_asked_passages(tiny_set, embedder, bundled_model,
                                                                            tmp_path, capsys, monkeypatch):
    import localrag.embed

    monkeypatch.setattr(localrag.embed, "_DEFAULT", embedder)
    out, work = tmp_path / "asked.json", tmp_path / "work"
    assert _cli(["bench", "--data", str(tiny_set), "--limit", "2", "--extract-asked", "1", "--quiet",
                 "--model", str(bundled_model), "--work", str(work), "--out", str(out)]) == 0
    assert "asked passages extracted by" in " ".join(capsys.readouterr().out.split())
    result = load_result(out)
    assert result.strategies == ["graph", "graph+asked"] and [s.strategy for s in result.summaries] == result.strategies
    assert [r.id for r in result.records[:2]] == [r.id for r in result.records[2:]]
    x = result.asked_extraction
    assert 1 <= x.passages <= 2 and x.extracted == x.passages and x.extractor.startswith("llm+rules")
    assert x.llm_calls >= x.passages - x.cached and x.prompt_tokens > 0 and x.seconds > 0
    notes = result.index.notes_dir
    assert _model_facts(notes, work / "index.db", embedder) == set()  # the bench's own index keeps the rules graph
    assert _model_facts(notes, work / "asked-llm-1.db", embedder) or x.fallback == x.passages
    assert _cli(["bench", "--data", str(tiny_set), "--extract-asked", "1", "--rounds"]) == 1
    assert _cli(["bench", "--data", str(tiny_set), "--extract-asked", "0"]) == 1
    assert "N ≥ 1" in capsys.readouterr().err


@pytest.mark.parametrize("argv, message", [
    (["bench", "--data", "{set}", "--strategy", "nonsense"], "unknown strategy nonsense"),
    (["bench", "--strategy", "dense"], "--data DIR is required"),
    (["bench", "--data", "{set}/missing"], "not found"),
    (["bench", "plot", "{set}/corpus.jsonl"], "not a"),
    (["bench", "--data", "{set}", "--set", "nonsense=1", "--work", "{set}/w"], "unknown setting nonsense"),
    (["bench", "--data", "{set}", "--set", "novalue"], "--set expects KEY=VALUE"),
])
def test_cli_errors_are_clear(tiny_set, capsys, argv, message):
    assert _cli([a.replace("{set}", str(tiny_set)) for a in argv]) == 1
    assert message in " ".join(capsys.readouterr().err.split())  # rich wraps long lines


# -- scale -----------------------------------------------------------------------
@pytest.fixture(scope="module")
def scale_run(tmp_path_factory, embedder):
    work = tmp_path_factory.mktemp("scale")
    return run_scale(300, 8, work, embedder=embedder, env={}), work


def test_scale_reports_throughput_latency_and_knn_recall(scale_run):
    result, _ = scale_run
    assert result.files == 3 and result.indexed_passages == 300  # 100 sections per file, one passage each
    assert result.passages_per_s > 0 and result.index_seconds > 0
    assert result.resync_seconds >= 0 and result.resync_process_seconds > result.resync_seconds
    assert [r.strategy for r in result.retrievers] == ["dense", "lexical", "hybrid"]
    for r in result.retrievers:
        for lat in (r.with_embedding, r.without_embedding):
            assert lat.queries == 8 and 0 < lat.p50_ms <= lat.p95_ms
    dense = result.retrievers[0]
    assert dense.source_hit_at_10 >= 0.5  # generated questions are answerable: the corpus is not degenerate
    assert 0.0 <= result.knn_fast_recall_at_10 <= 1.0 and result.knn_path == "exact"
    assert result.knn_exact.queries == result.knn_fast.queries == 8


def test_scale_cli_reuses_the_index_and_prints_figures(scale_run, embedder, tmp_path, capsys, monkeypatch):
    import localrag.embed

    monkeypatch.setattr(localrag.embed, "_DEFAULT", embedder)
    first, work = scale_run
    out = tmp_path / "scale.json"
    assert _cli(["bench", "scale", "--passages", "300", "--queries", "5", "--work", str(work), "--quiet",
                 "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "passages/s" in printed and "knn_fast recall@10" in printed and "hybrid without query embedding" in printed
    saved = json.loads(out.read_text())
    assert saved["indexed_passages"] == 300 and saved["passages_per_s"] == first.passages_per_s  # reused, not re-measured
    assert "index reused" in saved["index_measured"]


def test_bench_without_its_distribution_says_how_to_install_it(monkeypatch, capsys):
    import importlib.util

    from localrag.cli import main
    from localrag.commands import bench as bench_shim

    real = importlib.util.find_spec
    monkeypatch.setattr(bench_shim.importlib.util, "find_spec",
                        lambda name, *a: None if name == "matplotlib" else real(name, *a))
    assert main(["bench", "--data", "x"]) != 0
    err = capsys.readouterr().err
    assert "localrag-bench" in err and "pip install -e ./bench" in err and "Traceback" not in err
