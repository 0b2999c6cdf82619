"""Benchmark loaders: a real notes folder with gold note paths, and LooGLE long documents -> passages."""

from __future__ import annotations

import json

import pytest

from localrag_bench.data import BenchDataError
from localrag_bench.loogle import gold_passages, load_loogle, split_passages, _tokens
from localrag_bench.notes_set import load_notes_dataset, mirror_notes

from conftest import REPO, SHARED_DATA


def test_notes_questions_map_to_note_ids_and_the_folder_is_mirrored(tmp_path):
    notes = tmp_path / "vault"
    (notes / "sub").mkdir(parents=True)
    (notes / "a.md").write_text("# A\n\nalpha\n")
    (notes / "sub" / "b.md").write_text("# B\n\nbeta\n")
    (notes / ".hidden").mkdir()
    (notes / ".hidden" / "x.md").write_text("no")
    qfile = tmp_path / "q.jsonl"
    qfile.write_text(json.dumps({"id": "q1", "question": "beta?", "gold_notes": ["sub/b.md"]}) + "\n")
    ds = load_notes_dataset(notes, qfile)
    assert ds.note_ids == {"a.md": 1, "sub/b.md": 2} and ds.questions[0].gold_doc_ids == (2,)
    assert ds.doc_of("sub/b.md") == 2 and ds.doc_of("1.md") is None
    target = tmp_path / "work" / "notes"
    assert mirror_notes(notes, target).written == 2 and (target / "sub" / "b.md").read_text() == "# B\n\nbeta\n"
    (notes / "a.md").unlink()
    again = mirror_notes(notes, target)
    assert (again.written, again.unchanged, again.removed) == (0, 1, 1)
    qfile.write_text(json.dumps({"id": "q1", "question": "?", "gold_notes": ["nope.md"]}) + "\n")
    with pytest.raises(BenchDataError, match="nope.md"):
        load_notes_dataset(notes, qfile)


def test_the_sample_questions_load_with_their_gold_files():
    """examples/questions.jsonl names its gold notes gold_files: the bench reads it as it is."""
    ds = load_notes_dataset(REPO / "examples" / "notes", REPO / "examples" / "questions.jsonl")
    assert len(ds.questions) >= 20 and all(q.gold_doc_ids for q in ds.questions)
    assert set(ds.questions[0].gold_titles) <= set(ds.note_ids)


def test_the_dendron_question_set_names_real_notes():
    vault = SHARED_DATA / "dendron-vault" / "notes"
    if not vault.is_dir():
        pytest.skip("shared data not present")
    ds = load_notes_dataset(vault, REPO / "bench_data" / "dendron-vault" / "questions.jsonl")
    assert len(ds.questions) >= 30
    hops = [len(q.gold_doc_ids) for q in ds.questions]
    assert hops.count(1) >= 10 and hops.count(2) >= 10


def test_loogle_passages_and_gold_by_evidence_overlap():
    parts = split_passages("One two three. Four five six seven. Eight nine.", words=6)
    assert parts == ["One two three.", "Four five six seven. Eight nine."]
    passages = [(1, _tokens("The river Orle flows past Vessby.")), (2, _tokens("Bread is sold at the bakery."))]
    assert gold_passages(["Vessby lies on the river Orle"], passages) == [1]
    loogle = SHARED_DATA / "loogle"
    if not loogle.is_dir():
        pytest.skip("shared data not present")
    ds = load_loogle(loogle, limit=5)
    assert len(ds.questions) == 5 and all(q.gold_doc_ids for q in ds.questions)
    by_id = {p.doc_id: p for p in ds.corpus}
    first = ds.questions[0]
    assert "Jerez de la Frontera" in by_id[first.gold_doc_ids[0]].text
    assert len({p.title for p in ds.corpus}) == 1  # only the selected questions' document is indexed
