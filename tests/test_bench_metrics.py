"""Benchmark metrics and data loading, with hand-computed expectations."""

from __future__ import annotations

import os

import pytest
from bench_helpers import write_data_set

from localrag_bench.data import BenchDataError, CorpusPassage, dataset_name, doc_id_of, load_dataset, materialise
from localrag_bench.metrics import dedupe, exact_match, f1_score, normalize_answer, percentile, recall_at_k
from localrag_bench.reference import BM25, bm25_reference
from localrag_bench.results import QuestionRecord, summarise


# -- recall ----------------------------------------------------------------------
def test_recall_counts_a_document_once_at_its_best_rank():
    retrieved = [7, 7, 3, 9, 4, 1]  # doc 7 was split into two passages
    gold = [3, 1]
    assert dedupe(retrieved) == [7, 3, 9, 4, 1]
    assert recall_at_k(retrieved, gold, 2) == 0.5  # {7, 3}
    assert recall_at_k(retrieved, gold, 5) == 1.0  # without dedupe the top 5 would miss doc 1
    assert recall_at_k(retrieved, gold, 1) == 0.0


def test_recall_ignores_unknown_documents_and_has_no_value_without_gold():
    assert recall_at_k([None, 5, None, 6], [6], 2) == 1.0
    assert recall_at_k([1, 2], [], 2) is None
    assert recall_at_k([], [4, 5], 5) == 0.0


# -- EM / F1 ---------------------------------------------------------------------
def test_squad_normalisation():
    assert normalize_answer("The  Eiffel-Tower!") == "eiffeltower"
    assert normalize_answer("An apple, a pear and THE plum.") == "apple pear and plum"


def test_exact_match_is_the_max_over_aliases():
    assert exact_match("the Paris.", ["Paris, France", "Paris"]) == 1.0
    assert exact_match("Lyon", ["Paris, France", "Paris"]) == 0.0
    assert exact_match("anything", []) == 0.0


def test_f1_token_overlap_max_over_aliases():
    # vs "Paris, France": P 2/3, R 1 -> 0.8; vs "Paris": P 1/3, R 1 -> 0.5
    assert f1_score("Paris France capital", ["Paris, France", "Paris"]) == pytest.approx(0.8)
    assert f1_score("Marseille", ["Paris"]) == 0.0


def test_yes_no_answers_score_only_when_equal():
    assert f1_score("Yes.", ["yes"]) == 1.0
    assert f1_score("yes", ["no"]) == 0.0
    assert f1_score("yes it is", ["yes"]) == 0.0  # gold is yes/no: partial overlap does not count
    assert exact_match("No", ["no"]) == 1.0


def test_percentile_interpolates():
    assert percentile([1.0, 2.0, 3.0, 4.0], 50) == 2.5
    assert percentile([10.0], 95) == 10.0
    assert percentile([], 50) == 0.0


def test_summaries_group_by_strategy_and_round():
    def rec(strategy, rnd, r5, tokens):
        return QuestionRecord("q", "?", strategy, [1], [1], {"2": r5, "5": r5}, round=rnd, prompt_tokens=tokens,
                              llm_calls=1, tokens_by_phase={"answer": tokens}, ms=10.0)

    rows = summarise([rec("dense", "", 1.0, 10), rec("dense", "", 0.0, 30), rec("neuropath", "same", 0.5, 4)])
    assert [(s.strategy, s.round, s.questions) for s in rows] == [("dense", "", 2), ("neuropath", "same", 1)]
    assert rows[0].recall["5"] == 0.5 and rows[0].tokens_per_q == 20 and rows[0].tokens_by_phase_per_q == {"answer": 20}


# -- data sets -------------------------------------------------------------------
CORPUS = [{"doc_id": 1, "title": "Alpha", "text": "Alpha is a town."},
          {"doc_id": 2, "title": "Beta", "text": "Beta is a river\nnear Alpha."},
          {"doc_id": 5, "title": "Gamma", "text": "Gamma is a hill."}]
QUESTIONS = [{"id": "a", "question": "Where is Alpha?", "answers": ["town"], "gold_doc_ids": [1]},
             {"id": "b", "question": "What is Beta?", "answers": ["river"], "gold_doc_ids": [2, 1]},
             {"id": "c", "question": "What is Gamma?", "answers": ["hill"], "gold_doc_ids": [5]}]


def test_load_dataset_selects_ids_in_file_order_then_limit(tmp_path):
    folder = tmp_path / "toy" / "dev"
    write_data_set(folder, CORPUS, QUESTIONS)
    ids = tmp_path / "ids.txt"
    ids.write_text("c\n\n# comment\na\nzzz\n")
    ds = load_dataset(folder, ids)
    assert ds.name == dataset_name(folder) == "toy-dev"
    assert [q.id for q in ds.questions] == ["c", "a"] and ds.missing_ids == ["zzz"]
    assert [q.id for q in load_dataset(folder, ids, limit=1).questions] == ["c"]
    assert [q.id for q in load_dataset(folder, limit=2).questions] == ["a", "b"]
    assert ds.questions[1].gold_doc_ids == (1,) and len(ds.corpus_sha) == 64


@pytest.mark.parametrize("breakage, message", [
    (lambda f: (f / "corpus.jsonl").write_text('{"doc_id": 1, "title": "x", "text": "y"}\n{oops\n'), "corpus.jsonl:2"),
    (lambda f: (f / "questions.jsonl").unlink(), "questions.jsonl not found"),
    (lambda f: (f / "corpus.jsonl").write_text('{"doc_id": "x", "text": "y"}\n'), "integer doc_id"),
    (lambda f: (f / "questions.jsonl").write_text('{"id": "q", "question": "?", "gold_doc_ids": [99]}\n'),
     "gold doc ids [99]"),
])
def test_bad_data_gives_a_clear_error(tmp_path, breakage, message):
    folder = tmp_path / "bad"
    write_data_set(folder, CORPUS, QUESTIONS)
    breakage(folder)
    with pytest.raises(BenchDataError, match=message.replace("[", r"\[").replace("]", r"\]")):
        load_dataset(folder)


def test_unknown_ids_only_is_an_error(tmp_path):
    write_data_set(tmp_path / "s", CORPUS, QUESTIONS)
    (tmp_path / "ids").write_text("nope\n")
    with pytest.raises(BenchDataError, match="none of the 1 ids"):
        load_dataset(tmp_path / "s", tmp_path / "ids")


def test_materialise_writes_once_and_removes_stale_notes(tmp_path):
    notes = tmp_path / "notes"
    corpus = [CorpusPassage(c["doc_id"], c["title"], c["text"]) for c in CORPUS]
    first = materialise(corpus, notes)
    assert (first.written, first.unchanged) == (3, 0)
    assert (notes / "2.md").read_text() == "# Beta\n\nBeta is a river\nnear Alpha.\n"
    mtime = os.stat(notes / "1.md").st_mtime_ns
    (notes / "99.md").write_text("# old\n\nstale")
    (notes / "keep.md").write_text("not ours")
    second = materialise(corpus[:2], notes)
    assert (second.written, second.unchanged, second.removed) == (0, 2, 2)  # 5.md and 99.md go
    assert os.stat(notes / "1.md").st_mtime_ns == mtime  # an unchanged note keeps its mtime: sync costs nothing
    assert (notes / "keep.md").exists() and not (notes / "5.md").exists()
    assert doc_id_of("sub/42.md") == 42 and doc_id_of("keep.md") is None and doc_id_of("42.md.tmp") is None


def test_bm25_reference_ranks_by_term_weight(tmp_path):
    index = BM25([["alpha", "town"], ["beta", "river", "alpha"], ["gamma"]])
    assert index.top(["beta"], 2) == [1]
    assert index.top(["alpha", "town"], 3) == [0, 1]
    write_data_set(tmp_path / "s", CORPUS, QUESTIONS)
    row = bm25_reference(load_dataset(tmp_path / "s"))
    # a: Alpha first (1.0); b: "Beta" then "Alpha" -> both gold in the top 2 (1.0); c: Gamma (1.0)
    assert row.recall == {"2": 1.0, "5": 1.0} and row.questions == 3


# -- hybrid fusion constant -------------------------------------------------------
def test_small_rrf_k_lets_a_passage_first_in_one_list_beat_one_tenth_in_both():
    from localrag.retrieve.fusion import rrf

    dense = [(1, 0.0)] + [(100 + i, 0.0) for i in range(8)] + [(7, 0.0)]  # 7 is 10th in both lists
    lexical = [(2, 0.0)] + [(200 + i, 0.0) for i in range(8)] + [(7, 0.0)]
    # k = 60: 7 scores 2/70 = .029 > 1/61 = .016; k = 5: 2/15 = .133 < 1/6 (ranks 1) and < 1/7 (ranks 2)
    assert [p for p, _ in rrf([dense, lexical], 3, rrf_k=60)] == [7, 1, 2]
    assert [p for p, _ in rrf([dense, lexical], 3, rrf_k=5)] == [1, 2, 100]
