"""The follow-up benchmark: conversations built from question decompositions, and the long-session check."""

from __future__ import annotations

from pathlib import Path

from bench_helpers import write_data_set

from localrag.api import Assistant
from localrag_bench.data import load_dataset
from localrag_bench.followup import (
    _refer, answer_type, build_followups, open_bench_index, read_raw_questions, render_kb, run_followup,
    run_session_check, summarise,
)

CORPUS = [
    (0, "The Collegian", "The Collegian is the student newspaper owned by Harlow Baptist University."),
    (1, "Harlow Baptist University", "Harlow Baptist University was founded in 1960 in Vessby."),
    (2, "Jan Brisk", "Jan Brisk is a painter born in Tolvenmark."),
    (3, "Tolvenmark", "Tolvenmark is a town in the country of Estmark, on Lake Tiravel."),
    (4, "Vessby", "Vessby is a river town; its mill was founded in 1711."),
    (5, "Orle", "The Orle is a river that was founded as a canal in 1802."),
]
QUESTIONS = [
    {"id": "2hop__1_2", "question": "When was the owner of The Collegian founded?", "answers": ["1960"],
     "gold_doc_ids": [0, 1], "hops": "2hop",
     "question_decomposition": [{"question": "The Collegian >> owned by", "answer": "Harlow Baptist University"},
                                {"question": "When was #1 founded?", "answer": "1960"}]},
    {"id": "2hop__3_4", "question": "In which country was Jan Brisk born?", "answers": ["Estmark"],
     "gold_doc_ids": [2, 3], "hops": "2hop",
     "question_decomposition": [{"question": "Jan Brisk >> place of birth", "answer": "Tolvenmark"},
                                {"question": "#1 >> country", "answer": "Estmark"}]},
]


def make_set(folder: Path) -> Path:
    return write_data_set(folder, [{"doc_id": i, "title": t, "text": x} for i, t, x in CORPUS], QUESTIONS)


def test_referring_words_and_question_forms() -> None:
    assert render_kb("The Collegian >> owned by") == "What is The Collegian owned by?"
    assert render_kb("#1 >> country") == "What country is #1 in?"
    assert answer_type("Who directed Baldevins bryllup?") == "person"
    assert answer_type("Jan Brisk >> place of birth") == "place"
    assert answer_type("Crux >> publisher") == "thing"
    assert _refer("When was #1 founded?", "thing") == "When was it founded?"
    assert _refer("What is the country of citizenship of #1?", "person") == "What is the country of citizenship of them?"
    assert _refer("what was #1 's currency", "place") == "what was that place's currency"


def test_followups_and_their_recall(tmp_path: Path, embedder) -> None:
    data = make_set(tmp_path / "set")
    dataset = load_dataset(data)
    followups = build_followups(dataset, read_raw_questions(data))
    assert [(f.turn2, f.oracle, f.gold_doc) for f in followups] == [
        ("When was it founded?", "When was Harlow Baptist University founded?", 1),
        ("What country is that place in?", "What country is Tolvenmark in?", 3),
    ]
    index = open_bench_index(dataset, tmp_path / "work", {})
    index.embedder = embedder
    try:
        records = run_followup(Assistant(index), followups, strategy="hybrid", resolver="rules", depth=4)
        assert all(not r.error for r in records)
        assert [r.queries["conversation"] for r in records] == [f.oracle for f in followups]
        means = summarise(records)
        assert means["conversation"]["2"] == means["oracle"]["2"] == 1.0
        assert means["alone"]["2"] <= means["conversation"]["2"]
        check = run_session_check(Assistant(index), dataset, strategy="hybrid", resolver="rules", depth=4)
        assert check.changed == 0 and check.session == check.separate
    finally:
        index.close()
