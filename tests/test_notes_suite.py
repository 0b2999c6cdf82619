"""The notes suite: its question sets, halves and metrics on a small fixture vault, run end to end
(real store, embedder and pipeline), and the committed question sets of the three real corpora."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from localrag.cli import main as cli_main
from localrag_bench.data import BenchDataError
from localrag_bench.notes_metrics import contains_answer
from localrag_bench.notes_set import load_notes_dataset
from localrag_bench.notes_suite import (
    SUITE, SuiteCorpus, SuiteSpec, corpora_named, load_corpus, load_suite_result, run_suite, split_questions,
)
from localrag_bench.runner import RunOptions

from conftest import REPO, SHARED_DATA

VAULT = {
    "kiln.md": "# Kiln\n\nThe kiln is fired on Thursdays.\n\n## Settings\n\n- Set the peak temperature with:\n\n"
               "`kiln --peak 1240`\n\n- The cooling rate defaults to 80 degrees an hour.\n",
    "glaze.md": "# Glaze\n\nCeladon glaze needs a reduction atmosphere.\n\n- Mix it with 40 percent feldspar.\n",
    "studio.md": "# Studio\n\nThe studio opens at nine and closes at six.\n\n- Lockers are in the back room.\n",
}
QUESTIONS = [
    {"id": "k1", "question": "How hot does the kiln get at its peak?", "kind": "howto", "answers": ["kiln --peak"],
     "gold_notes": ["kiln.md"], "hops": 1},
    {"id": "k2", "question": "How fast does it cool down by default?", "kind": "fact", "answers": ["80 degrees"],
     "gold_notes": ["kiln.md"], "hops": 1},
    {"id": "k3", "question": "How much feldspar goes into the green glaze?", "kind": "fact",
     "answers": ["40 percent"], "gold_notes": ["glaze.md"], "hops": 1},
    {"id": "k4", "question": "When does the studio open, and which day is the kiln fired?", "kind": "two-notes",
     "answers": ["nine", "Thursdays"], "gold_notes": ["studio.md", "kiln.md"], "hops": 2},
    {"id": "k5", "question": "What is the wifi password of the studio?", "kind": "unanswerable", "answers": [],
     "gold_notes": [], "hops": 0},
]


def _write_set(root: Path, name: str = "dendron-vault") -> tuple[Path, Path]:
    """A data root with ``name``'s notes folder and a questions root with its set (halves: k1, k3, k5 tuning)."""
    data_root, questions_root = root / "data", root / "bench_data"
    notes = data_root / dict((c.name, c.notes) for c in SUITE)[name]
    notes.mkdir(parents=True)
    for path, text in VAULT.items():
        (notes / path).write_text(text, encoding="utf-8")
    folder = questions_root / name
    folder.mkdir(parents=True)
    (folder / "questions.jsonl").write_text("".join(json.dumps(q) + "\n" for q in QUESTIONS), encoding="utf-8")
    (folder / "dev_ids.txt").write_text("# tuning half\nk1\nk3\nk5\n", encoding="utf-8")
    return data_root, questions_root


def test_kinds_unanswerable_questions_and_the_halves(tmp_path):
    data_root, questions_root = _write_set(tmp_path)
    corpus = corpora_named("dendron-vault")[0]
    tuning = load_corpus(corpus, data_root, questions_root, "tuning")
    untouched = load_corpus(corpus, data_root, questions_root, "untouched")
    assert [q.id for q in tuning.questions] == ["k1", "k3", "k5"]
    assert [q.id for q in untouched.questions] == ["k2", "k4"]
    assert {q.id: q.kind for q in tuning.questions}["k5"] == "unanswerable"
    assert tuning.questions[2].gold_doc_ids == () and len(untouched.questions[1].gold_doc_ids) == 2
    with pytest.raises(BenchDataError, match="--split"):
        split_questions(tuning.questions, [], "dev")
    with pytest.raises(BenchDataError, match="unknown corpus"):
        corpora_named("dendron-vault,nope")


def test_a_question_without_gold_must_be_unanswerable_and_the_other_way_round(tmp_path):
    data_root, questions_root = _write_set(tmp_path)
    notes = data_root / "dendron-vault" / "notes"
    qfile = tmp_path / "q.jsonl"
    qfile.write_text(json.dumps({"id": "x", "question": "?", "kind": "fact", "gold_notes": []}) + "\n")
    with pytest.raises(BenchDataError, match="unanswerable"):
        load_notes_dataset(notes, qfile)
    qfile.write_text(json.dumps({"id": "x", "question": "?", "kind": "unanswerable", "gold_notes": ["kiln.md"]}) + "\n")
    with pytest.raises(BenchDataError, match="no gold notes"):
        load_notes_dataset(notes, qfile)


@pytest.mark.parametrize("text, answers, hit", [
    ("Run `tar xf archive.tar` to extract.", ["tar xf"], True),
    ("Lookups are 30x faster with SQLite.", ["30x"], True),
    ("The **prioritySymbols** setting", ["prioritySymbols"], True),
    ("It runs on Thursday evenings.", ["Thursdays"], False),
    ("nothing here", ["kiln --peak"], False),
    ("anything", [], None),
])
def test_an_answer_hit_is_the_gold_string_inside_the_text(text, answers, hit):
    assert contains_answer(text, answers) is hit


@pytest.fixture(scope="module")
def suite_run(tmp_path_factory, embedder):
    root = tmp_path_factory.mktemp("suite")
    data_root, questions_root = _write_set(root)
    spec = SuiteSpec(data_root, questions_root, [corpora_named("dendron-vault")[0]], "all",
                     ["dense", "lexical", "hybrid"], RunOptions(k=5, answer=True, free_too=False),
                     {"answer.writer": "quote"}, work_root=root / "work")
    return run_suite(spec, embedder=embedder)


def test_the_suite_scores_recall_evidence_answers_and_abstention_per_kind(suite_run):
    rows = {(r.strategy, r.kind): r for r in suite_run.rows}
    assert set(k for _, k in rows) == {"all", "fact", "howto", "two-notes", "unanswerable"}
    every = rows[("hybrid", "all")]
    assert every.questions == 5 and every.answerable == 4
    assert every.recall5 == 1.0  # three notes: every gold note is among the top five
    assert rows[("hybrid", "unanswerable")].recall5 is None and rows[("hybrid", "unanswerable")].answer_hit is None
    records = {r.id: r for r in suite_run.runs[0].records if r.strategy == "hybrid"}
    # the lead-in and the code it introduces are one unit: the evidence holds the command
    assert records["k1"].evidence_hit3 and "kiln --peak 1240" in records["k1"].answer_shown
    assert records["k3"].answer_hit and records["k3"].kind == "fact"
    for r in records.values():
        assert r.answer_grounded in (True, None)  # never a short answer the sentence shown does not say
    assert set(suite_run.gaps()["dendron-vault"]) == {"dense", "lexical", "hybrid"}
    assert max(suite_run.gaps()["dendron-vault"].values()) == 0.0


def test_cli_runs_the_suite_and_writes_one_result(tmp_path, capsys):
    data_root, questions_root = _write_set(tmp_path, "rust-book")
    out = tmp_path / "suite.json"
    code = cli_main(["bench", "notes", "--data-root", str(data_root), "--questions-root", str(questions_root),
                     "--corpus", "rust-book", "--split", "tuning", "--strategy", "hybrid", "--answer", "--set", "answer.writer=quote",
                     "--work-root", str(tmp_path / "work"), "--out", str(out), "--quiet"])
    printed = capsys.readouterr().out
    assert code == 0 and "rust-book" in printed and "ev@1" in printed
    data = load_suite_result(out)
    assert data["split"] == "tuning" and data["corpora"] == ["rust-book"] and data["runs"][0]["questions"] == 3
    assert cli_main(["bench", "notes", "--data-root", str(tmp_path / "missing")]) == 2
    assert "--data-root" in capsys.readouterr().err


@pytest.mark.parametrize("corpus", SUITE, ids=lambda c: c.name)
def test_the_committed_question_sets_hold_what_the_suite_needs(corpus: SuiteCorpus):
    notes = SHARED_DATA / corpus.notes
    if not notes.is_dir():
        pytest.skip("shared data not present")
    folder = REPO / "bench_data" / corpus.name
    tuning = load_corpus(corpus, SHARED_DATA, REPO / "bench_data", "tuning").questions
    untouched = load_corpus(corpus, SHARED_DATA, REPO / "bench_data", "untouched").questions
    every = tuning + untouched
    assert len(every) >= 60 and not {q.id for q in tuning} & {q.id for q in untouched}
    kinds = [q.kind for q in every]
    assert kinds.count("unanswerable") >= 0.15 * len(every)
    for kind in ("fact", "howto", "two-notes"):
        assert kind in kinds and kind in [q.kind for q in tuning] and kind in [q.kind for q in untouched]
    for q in every:
        if q.kind == "unanswerable":
            continue
        texts = [(notes / g).read_text(encoding="utf-8", errors="replace") for g in q.gold_titles]
        assert q.answers and all(any(contains_answer(t, [a]) for t in texts) for a in q.answers), q.id
    assert (folder / "README.md").is_file()
