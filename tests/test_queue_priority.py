"""Passages a question retrieves jump the graph queue (LazyGraphRAG's insight, kept incremental)."""

from __future__ import annotations

from kg_helpers import NOTES, write_notes

from localrag.api import Assistant

pytest_plugins = ["conftest_kg"]

MANY = NOTES | {f"filler-{i}.md": f"# Filler {i}\n\nThe filler note {i} is about gardening in spring.\n" for i in range(8)}


def test_retrieved_passages_are_extracted_first(kg_index, tmp_path):
    index = kg_index(write_notes(tmp_path / "notes", MANY))
    index.sync()
    before = [q.passage for q in index.store.graph.queue.next_batch(100)]
    retrieval = Assistant(index).retrieve("Who tutored Ada Lovelace?", "dense", 3)
    asked = [sp.passage.id for sp in retrieval.passages]
    after = [q.passage for q in index.store.graph.queue.next_batch(100)]
    assert sorted(after) == sorted(before)  # the same queue, reordered
    assert after[: len(asked)] == asked != before[: len(asked)]
    # a later question's passages go ahead of the earlier ones'
    later = [sp.passage.id for sp in Assistant(index).retrieve("gardening in spring", "dense", 2).passages]
    assert [q.passage for q in index.store.graph.queue.next_batch(2)] == later
    report = index.extract_graph()  # extracted passages leave the queue as usual
    assert report.remaining == 0 and index.store.graph.queue.prioritise(asked) == 0


def test_the_order_can_be_turned_off(kg_index, tmp_path):
    index = kg_index(write_notes(tmp_path / "notes", MANY), **{"index.queue_asked_first": False})
    index.sync()
    before = [q.passage for q in index.store.graph.queue.next_batch(100)]
    Assistant(index).retrieve("Who tutored Ada Lovelace?", "dense", 3)
    assert [q.passage for q in index.store.graph.queue.next_batch(100)] == before


def test_enqueue_puts_given_passages_first_in_their_order(kg_index, tmp_path):
    index = kg_index(write_notes(tmp_path / "notes", MANY))
    index.sync()
    index.extract_graph()
    assert index.store.graph.queue.length() == 0
    ids = index.store.docs.all_passage_ids()[:4]
    wanted = [ids[2], ids[0], ids[3]]
    assert index.store.graph.queue.enqueue(wanted + [ids[0]]) == 3
    assert [q.passage for q in index.store.graph.queue.next_batch(10)] == wanted
    assert index.extract_graph().passages == 3 and index.store.graph.queue.length() == 0
