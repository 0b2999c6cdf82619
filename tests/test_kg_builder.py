"""The graph phase on real folders: signals, edit/delete/move cascades, the cache, failures, export."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import networkx as nx
from kg_helpers import NOTES, assert_healthy, snapshot, write_notes
from scripted_llm import ScriptedLLM

from localrag.cli import main as cli_main
from localrag.kg.builder import BATCH
from localrag.store.db import SPAN_RULES_KEY
from localrag.text.spans import find_spans
from localrag.llm.base import LLMError

pytest_plugins = ["conftest_kg"]


def build(kg_index, folder: Path, llm=None, **overrides):
    index = kg_index(folder, **overrides)
    index.sync()
    report = index.extract_graph(llm=llm)
    return index, report


def names_of(index, passage_id: int) -> set[str]:
    g = index.store.graph
    return set(g.entities.names(g.facts.passage_entities(passage_id)).values())


def test_rules_graph_has_titles_links_and_facts(kg_index, tmp_path):
    index, report = build(kg_index, write_notes(tmp_path / "notes"))
    assert report.passages == index.store.docs.passage_count() and report.remaining == 0
    facts = {(f.head_name, f.relation, f.tail_name) for f in index.store.graph.facts.all()}
    assert ("ada lovelace", "links to", "charles babbage") in facts  # [[wikilink]]
    assert ("mary somerville", "links to", "charles babbage") in facts  # Markdown link, resolved to the title
    assert ("charles babbage", "designed the", "difference engine") in facts
    for p in index.store.docs.passages(index.store.docs.all_passage_ids()):
        assert p.title.lower() in names_of(index, p.id)  # every passage mentions its title entity
    extra = index.status().extra
    assert extra["graph_queue"] == 0 and extra["entities"] > 5 and extra["facts"] == len(facts)
    assert {"entities", "facts", "coref_pairs", "mentions", "graph_queue", "extraction_failures"} <= set(extra)
    assert_healthy(index)


def test_edit_leaves_exactly_the_graph_of_a_fresh_index(kg_index, tmp_path):
    folder = write_notes(tmp_path / "a")
    index, _ = build(kg_index, folder)
    before = snapshot(index)
    edited = NOTES["charles-babbage.md"].replace("Cambridge University", "Trinity College")
    (folder / "charles-babbage.md").write_text(edited, encoding="utf-8")
    index.sync()
    assert index.store.graph.queue.length() == 1  # only the changed passage waits for extraction
    index.extract_graph()
    after = snapshot(index)
    assert "cambridge university" in before.entities and "cambridge university" not in after.entities
    assert "trinity college" in after.entities
    fresh, _ = build(kg_index, write_notes(tmp_path / "b", {**NOTES, "charles-babbage.md": edited}))
    assert after == snapshot(fresh)
    assert index.status().extra == fresh.status().extra
    assert_healthy(index)


def test_delete_collects_everything_only_that_file_supported(kg_index, tmp_path):
    folder = write_notes(tmp_path / "a")
    index, _ = build(kg_index, folder)
    (folder / "mary-somerville.md").unlink()
    index.sync()  # no graph phase needed: collection happens in the delete transaction
    got = snapshot(index)
    assert "mary somerville" not in got.entities and "on the connexion of the physical sciences" not in got.entities
    assert "ada lovelace" in got.entities  # still mentioned by its own note
    remaining = {k: v for k, v in NOTES.items() if k != "mary-somerville.md"}
    fresh, _ = build(kg_index, write_notes(tmp_path / "b", remaining))
    assert got == snapshot(fresh)
    assert index.status().extra == fresh.status().extra
    for name in list(NOTES):
        (folder / name).unlink(missing_ok=True)
    index.sync()
    c = index.store.graph.counts()
    assert (c.entities, c.facts, c.coref_pairs, c.mentions, c.queued, c.failed) == (0, 0, 0, 0, 0, 0)
    assert_healthy(index)


def test_move_and_retitle_cost_no_model_call(kg_index, tmp_path):
    folder = write_notes(tmp_path / "a")
    llm = ScriptedLLM(lambda m, s, p: {"triples": [{"head": "Charles Babbage", "relation": "designed",
                                                     "tail": "Difference Engine"}]})
    index, report = build(kg_index, folder, llm=llm, **{"index.extractor": "llm+rules"})
    first_calls = len(llm.calls)
    assert first_calls == report.llm_calls > 0
    shutil.move(folder / "charles-babbage.md", folder / "babbage.md")  # a move keeps passage ids
    index.sync()
    # the note linking to charles-babbage.md is re-queued: its link target disappeared (link facts)
    assert index.store.graph.queue.length() == 1
    text = NOTES["charles-babbage.md"].replace("# Charles Babbage", "# Babbage, Charles")
    (folder / "babbage.md").write_text(text, encoding="utf-8")  # new title, same body passage
    (folder / "copy.md").write_text(NOTES["ada-lovelace.md"], encoding="utf-8")  # same text, new passages
    index.sync()
    again = index.extract_graph(llm=llm)
    # the copy and the re-queued linking passage come from the cache; only the changed heading is new text
    assert (again.passages, again.cached, again.llm_calls) == (3, 2, 1)
    assert len(llm.calls) == first_calls + 1
    entities = snapshot(index).entities
    assert "babbage charles" in entities
    assert_healthy(index)


def test_rejected_model_output_is_recorded_and_rules_step_in(kg_index, tmp_path):
    garbage = ScriptedLLM(lambda m, s, p: {"triples": [{"head": "Zeus", "relation": "Zeus", "tail": "Zeus"}]})
    index, report = build(kg_index, write_notes(tmp_path / "a"), llm=garbage, **{"index.extractor": "llm"})
    n = index.store.docs.passage_count()
    assert report.failed == n and index.status().extra["extraction_failures"] == n
    assert {f.tail_name for f in index.store.graph.facts.all()} <= {"charles babbage"}  # link facts only
    assert len(garbage.calls) == 2 * n  # one repair each, no more
    index2, report2 = build(kg_index, write_notes(tmp_path / "b"), llm=garbage, **{"index.extractor": "llm+rules"})
    assert report2.fallback == n and report2.failed == 0
    assert index2.store.graph.counts().facts > 3
    assert all(fallback for _, _, fallback in index2.store.graph.extractions.failures())
    assert_healthy(index2)


def test_a_model_that_keeps_raising_is_bounded_by_attempts(kg_index, tmp_path):
    def boom(m, s, p):
        raise LLMError("server went away")

    llm = ScriptedLLM(boom)
    index, report = build(kg_index, write_notes(tmp_path / "a"), llm=llm, **{"index.extractor": "llm+rules"})
    n = index.store.docs.passage_count()
    assert len(llm.calls) == 3 * n and report.fallback == n and report.remaining == 0
    assert all("raised 3 times" in reason for _, reason, _ in index.store.graph.extractions.failures())


def test_should_stop_leaves_the_rest_queued(kg_index, tmp_path):
    # more passages than one write batch (a batch is one transaction: a stop lands between batches)
    notes = {f"note-{i:02d}.md": f"# Person {i}\n\nPerson {i} was born in Vienna in {1800 + i}.\n" for i in range(BATCH * 2)}
    index = kg_index(write_notes(tmp_path / "a", notes))
    index.sync()
    seen: list[int] = []
    report = index.extract_graph(progress=lambda p: seen.append(p.done), should_stop=lambda: len(seen) >= 1)
    assert report.stopped and report.remaining == index.store.docs.passage_count() - report.passages > 0
    rest = index.extract_graph()
    assert rest.remaining == 0 and report.passages + rest.passages == index.store.docs.passage_count()


def test_export_graphml_and_json(kg_index, tmp_path, capsys):
    folder = write_notes(tmp_path / "notes")
    index, _ = build(kg_index, folder)
    facts = index.store.graph.counts().facts
    entities = index.store.graph.counts().entities
    index.close()
    out = tmp_path / "g.graphml"
    assert cli_main(["graph", "export", str(folder), "--format", "graphml", "-o", str(out)]) == 0
    g = nx.read_graphml(out)
    assert sum(1 for *_, d in g.edges(data=True) if d["kind"] == "fact") == facts
    assert sum(1 for _, d in g.nodes(data=True) if d["kind"] == "entity") == entities
    capsys.readouterr()
    assert cli_main(["graph", "export", str(folder), "--format", "json", "--passages"]) == 0
    data = json.loads(capsys.readouterr().out)
    kinds = {e["kind"] for e in data["edges"]}
    assert {"fact", "mentions"} <= kinds
    assert any(e.get("relation") == "links to" and "ada-lovelace.md" in e.get("sources", "") for e in data["edges"])
    assert cli_main(["graph", "export", str(tmp_path / "nowhere")]) == 2  # a usage error: no such folder


def test_spans_of_notes_fixture_are_sane():
    spans = [s.text for s in find_spans(NOTES["ada-lovelace.md"].split("\n", 2)[2])]
    assert "Ada Lovelace" in spans and "Analytical Engine" in spans and "1815" in spans


def test_a_move_that_changes_the_title_requeues_and_moves_the_title_mention(kg_index, tmp_path):
    folder = write_notes(tmp_path / "a", {"ada-notes.md": "Ada Lovelace met Charles Babbage in London in 1833.\n"})
    index, _ = build(kg_index, folder)
    assert "ada notes" in snapshot(index).entities  # no heading: the title is the file name
    shutil.move(folder / "ada-notes.md", folder / "lovelace.md")
    index.sync()
    assert index.store.graph.queue.length() == 1  # same passage id, new title: re-extract (rules/cache)
    index.extract_graph()
    got = snapshot(index)
    assert "lovelace" in got.entities and "ada notes" not in got.entities
    fresh, _ = build(kg_index, write_notes(tmp_path / "b", {"lovelace.md": "Ada Lovelace met Charles Babbage in London in 1833.\n"}))
    assert got == snapshot(fresh)
    assert_healthy(index)


def test_an_owner_form_closing_a_name_is_the_name():
    spans = find_spans("If I start Python's built-in web server, which port is it? St. James' Park is near "
                       "Madonna's house; Jesus' Son is a film.")
    assert [s.text for s in spans if s.kind == "name"] == ["Python", "St. James' Park", "Madonna", "Jesus' Son"]


def test_a_graph_read_by_other_span_rules_is_read_again_once(kg_index, tmp_path):
    notes = {**NOTES, "servers.md": "# Servers\n\nBy default Python's built-in server listens on port 8000.\n"}
    index, report = build(kg_index, write_notes(tmp_path / "notes", notes))
    assert report.requeued == 0  # a new index records this code's rules
    assert "python" in snapshot(index).entities and "python s" not in snapshot(index).entities
    before = snapshot(index)
    index.store.set_meta(SPAN_RULES_KEY, "1")  # as an index from before the mark
    again = index.extract_graph()
    passages = index.store.docs.passage_count()
    assert again.requeued == passages and again.passages == passages
    assert snapshot(index) == before  # the same rules read the same graph
    assert index.extract_graph().requeued == 0  # once
