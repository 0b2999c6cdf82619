"""`graph`'s note spread (retrieve/fusion.py spread_notes): past the passages the answer reads, a note's
later passages give way to other notes, and the answer's passages never move."""

from __future__ import annotations

from localrag.records import Passage, ScoredPassage
from localrag.retrieve.fusion import spread_notes


def _sp(pid: int, doc: int, score: float) -> ScoredPassage:
    return ScoredPassage(Passage(pid, doc, f"{doc}.md", f"Note {doc}", pid, "", "text", "sha", 1, 1), score)


def test_a_long_note_gives_way_to_other_notes_after_the_answers_passages():
    # one chapter's passages hold the first six places; two other notes follow
    ranked = [_sp(i, 1, 1.0 - i * 0.01) for i in range(6)] + [_sp(10, 2, 0.90), _sp(11, 3, 0.80)]
    spread = spread_notes(ranked, k=6, keep=2, decay=0.7)
    assert [sp.passage.id for sp in spread[:2]] == [0, 1]  # what the answer reads stays first
    assert {sp.passage.doc_id for sp in spread} == {1, 2, 3}  # the other notes come into the list
    assert all(sp.score == orig.score for sp in spread for orig in ranked if orig.passage.id == sp.passage.id)


def test_no_spread_is_the_ranking_cut_to_k():
    ranked = [_sp(i, 1, 1.0 - i * 0.01) for i in range(6)] + [_sp(10, 2, 0.9)]
    assert spread_notes(ranked, k=4, keep=2, decay=1.0) == ranked[:4]
    assert spread_notes(ranked[:2], k=4, keep=2, decay=0.5) == ranked[:2]
