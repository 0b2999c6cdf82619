"""What the graph index guarantees: link facts follow their targets' titles, cut extractions are
retried under a larger token budget, and the served schema cannot open or close a data block.

Link facts are checked end to end: an index updated incrementally must end with
the same graph as a fresh index of the final folder, after each kind of change to a link target
(retitled, created, deleted, renamed) and to the linking note itself (moved to another folder).
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
from kg_helpers import assert_healthy, snapshot
from scripted_llm import ScriptedLLM, cut_below

from localrag.llm.prompts_served import with_schema_instruction
from localrag.store import schema

pytest_plugins = ["conftest_kg"]

LINKED = {
    "alpha.md": "# Alpha\n\nAlpha points at [the beta note](beta.md) and at [delta](delta.md).\n",
    "sub/gamma.md": "# Gamma\n\nGamma depends on [beta](../beta.md) for its figures.\n",
    "beta.md": "# Beta\n\nBeta holds the figures for the spring survey.\n",
    "wiki.md": "# Wiki\n\nThe wiki page links [[Beta]] by name.\n",
    "plain.md": "# Plain\n\nA note that links to nothing at all.\n",
}


def write_notes(folder: Path, notes: dict[str, str]) -> Path:
    for name, text in notes.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(text, encoding="utf-8")
    return folder


def build(kg_index, folder: Path, **overrides):
    index = kg_index(folder, **overrides)
    index.sync()
    index.extract_graph()
    return index


def link_facts(index) -> set[tuple[str, str]]:
    return {(f.head_name, f.tail_name) for f in index.store.graph.facts.all() if f.relation == "links to"}


def queued_paths(index) -> set[str]:
    ids = [q.passage for q in index.store.graph.queue.next_batch(1000)]
    return {p.path for p in index.store.docs.passages(ids)}


def assert_same_as_fresh(kg_index, index, folder: Path, tmp_path: Path, name: str) -> None:
    index.extract_graph()
    fresh_folder = tmp_path / f"fresh-{name}"
    shutil.copytree(folder, fresh_folder, ignore=shutil.ignore_patterns(".localrag"))
    fresh = build(kg_index, fresh_folder)
    assert link_facts(index) == link_facts(fresh)
    assert snapshot(index) == snapshot(fresh)
    assert_healthy(index)


def test_retitled_link_target_requeues_exactly_the_linking_passages(kg_index, tmp_path):
    folder = write_notes(tmp_path / "notes", LINKED)
    index = build(kg_index, folder)
    assert {("alpha", "beta"), ("gamma", "beta"), ("alpha", "delta"), ("wiki", "beta")} <= link_facts(index)
    (folder / "beta.md").write_text(LINKED["beta.md"].replace("# Beta", "# Beta Survey"), encoding="utf-8")
    index.sync()
    # beta's own passage (new title), the two passages whose Markdown links resolve to beta.md and
    # the one whose [[Beta]] resolves to it by file name (Obsidian's rule, kg/vault.py)
    assert queued_paths(index) == {"beta.md", "alpha.md", "sub/gamma.md", "wiki.md"}
    assert_same_as_fresh(kg_index, index, folder, tmp_path, "retitled")
    facts = link_facts(index)
    assert ("alpha", "beta survey") in facts and ("gamma", "beta survey") in facts
    assert ("alpha", "beta") not in facts and ("wiki", "beta survey") in facts


def test_created_deleted_and_renamed_targets_and_a_moved_linking_note(kg_index, tmp_path):
    folder = write_notes(tmp_path / "notes", LINKED)
    index = build(kg_index, folder)
    assert ("alpha", "delta") in link_facts(index)  # not there yet: the file name stands in

    (folder / "delta.md").write_text("# Delta Force\n\nDelta is new.\n", encoding="utf-8")
    index.sync()
    assert queued_paths(index) == {"delta.md", "alpha.md"}
    assert_same_as_fresh(kg_index, index, folder, tmp_path, "created")
    assert ("alpha", "delta force") in link_facts(index)

    (folder / "delta.md").unlink()
    index.sync()
    assert queued_paths(index) == {"alpha.md"}
    assert_same_as_fresh(kg_index, index, folder, tmp_path, "deleted")
    assert ("alpha", "delta force") not in link_facts(index)
    assert "delta force" not in snapshot(index).entities  # collected with its last source

    shutil.move(folder / "beta.md", folder / "beta-moved.md")  # same text: a move keeping passage ids
    index.sync()
    assert queued_paths(index) == {"alpha.md", "sub/gamma.md", "wiki.md"}  # [[Beta]] names no note now
    assert_same_as_fresh(kg_index, index, folder, tmp_path, "renamed-target")

    (folder / "beta.md").write_text("# Beta Again\n\nA new beta note.\n", encoding="utf-8")
    (folder / "deep").mkdir()
    shutil.move(folder / "alpha.md", folder / "deep" / "alpha.md")  # its links now resolve under deep/
    index.sync()
    assert {"beta.md", "deep/alpha.md", "sub/gamma.md"} <= queued_paths(index)
    assert_same_as_fresh(kg_index, index, folder, tmp_path, "moved-linker")
    assert ("gamma", "beta again") in link_facts(index)
    assert ("alpha", "beta again") not in link_facts(index)  # deep/beta.md does not exist


def test_link_rows_follow_passages_and_the_lookup_uses_an_index(kg_index, tmp_path):
    folder = write_notes(tmp_path / "notes", LINKED)
    index = kg_index(folder)
    index.sync()
    rows = set(index.store.query(
        "SELECT d.path, l.href, l.target FROM passage_links l JOIN passages p ON p.id = l.passage "
        "JOIN documents d ON d.id = p.doc_id"))
    assert rows == {("alpha.md", "beta.md", "beta.md"), ("alpha.md", "delta.md", "delta.md"),
                    ("sub/gamma.md", "../beta.md", "beta.md"), ("wiki.md", "[[beta]]", "name:beta")}
    beta_linkers = index.store.docs.linking_passages("beta.md")
    assert {p.path for p in index.store.docs.passages(beta_linkers)} == {"alpha.md", "sub/gamma.md"}
    plan = " ".join(str(r[-1]) for r in index.store.query(
        "EXPLAIN QUERY PLAN SELECT passage FROM passage_links WHERE target = ?", ("beta.md",)))
    assert "USING" in plan and "INDEX" in plan.upper(), plan  # a store lookup, not a scan of passages
    (folder / "alpha.md").write_text("# Alpha\n\nNo links any more.\n", encoding="utf-8")
    index.sync()
    assert index.store.one("SELECT COUNT(*) FROM passage_links")[0] == 2  # gone with the passage


def test_an_index_from_before_the_link_table_is_made_exact_by_its_next_sync(kg_index, tmp_path):
    folder = write_notes(tmp_path / "notes", LINKED)
    index = build(kg_index, folder)
    store = index.store
    with store.transaction():  # back to schema 5: none of the tables and triggers of migrations 6 and later
        for (name,) in store.query("SELECT name FROM sqlite_master WHERE type = 'trigger' AND "
                                   "(name LIKE 'links_%' OR name LIKE 'note_%' OR name LIKE 'matrix_%' "
                                   "OR name = 'passages_gone_cjk')"):
            store.execute(f"DROP TRIGGER {name}")
        for table in ("passage_links", "note_meta", "note_names", "note_tags", "graph_matrix",
                      "graph_matrix_dirty", "turns", "sessions", "memory_writes", "query_feedback", "passages_cjk"):
            store.execute(f"DROP TABLE {table}")
        store.execute("ALTER TABLE passages DROP COLUMN locator")  # migration 12's column
        store.execute("DELETE FROM schema_migrations WHERE version >= 6")
    index.close()
    (folder / "beta.md").write_text(LINKED["beta.md"].replace("# Beta", "# Beta Survey"), encoding="utf-8")
    upgraded = kg_index(folder)
    assert upgraded.store.schema_version() == max(m.version for m in schema.MIGRATIONS)
    # every passage: its links resolve to notes now and its front matter adds facts (schema._vault)
    assert queued_paths(upgraded) == set(LINKED)
    upgraded.sync()
    assert upgraded.store.one("SELECT COUNT(*) FROM passage_links")[0] == 4
    assert_same_as_fresh(kg_index, upgraded, folder, tmp_path, "upgraded")
    assert ("alpha", "beta survey") in link_facts(upgraded)


# -- cut extractions ----------------------------------------------------------------------------------------

GOOD = {"triples": [{"head": "Beta", "relation": "holds", "tail": "spring survey"}]}


def test_a_cut_extraction_is_retried_when_the_budget_is_raised(kg_index, tmp_path):
    folder = write_notes(tmp_path / "notes", {"beta.md": LINKED["beta.md"]})
    llm = cut_below(64, GOOD, '{"triples": [{"head": "Be')
    small = kg_index(folder, **{"index.extractor": "llm", "index.extract_max_tokens": 16})
    small.sync()
    report = small.extract_graph(llm=llm)
    assert report.failed == 1 and len(llm.calls) == 2  # the cut reply and its repair, both cut
    assert [r for _, r, _ in small.store.graph.extractions.failures()] == ["reply cut at max_tokens before the JSON ended"]
    small.store.graph.queue.enqueue_all()
    again = small.extract_graph(llm=llm)  # same budget: the recorded failure stands, no model call
    assert (again.cached, len(llm.calls)) == (1, 2)
    small.store.graph.queue.enqueue_all()
    small.close()

    large = kg_index(folder, **{"index.extractor": "llm", "index.extract_max_tokens": 128})
    report = large.extract_graph(llm=llm)
    assert (report.failed, report.cached, report.llm_calls) == (0, 0, 1) and llm.budgets[-1] == 128
    assert ("beta", "holds", "spring survey") in {(f.head_name, f.relation, f.tail_name)
                                                  for f in large.store.graph.facts.all()}
    assert large.store.graph.extractions.failures() == []
    large.store.graph.queue.enqueue_all()
    replay = large.extract_graph(llm=llm)  # the good reply replaced the failure in the cache
    assert (replay.cached, len(llm.calls)) == (1, 3)


def test_cut_failures_carry_their_budget_in_the_cache(kg_index, tmp_path):
    from localrag.kg.extract import ExtractorOptions, extract_passage

    llm = cut_below(64, GOOD, '{"triples": [{"head": "Be')
    cut = extract_passage("Beta holds the spring survey.", "Beta", ExtractorOptions("llm", max_tokens=16), llm=llm)
    assert cut.status == "failed" and cut.payload == {"data": None, "error": cut.reason, "cut_at": 16}
    other = ScriptedLLM(lambda m, s, p: "not json at all")
    bad = extract_passage("Beta holds the spring survey.", "Beta", ExtractorOptions("llm", max_tokens=16), llm=other)
    assert bad.status == "failed" and "cut_at" not in bad.payload  # not the budget's fault: final

    index = kg_index(write_notes(tmp_path / "notes", {"beta.md": LINKED["beta.md"]}))
    graph = index.store.graph
    index.sync()
    pid = index.store.docs.all_passage_ids()[0]
    from localrag.store.extractions import CachedExtraction

    graph.write_extraction(pid, [], [], index.embedder.encode, cache=CachedExtraction("sha", "m", "v", cut.payload))
    graph.write_extraction(pid, [], [], index.embedder.encode, cache=CachedExtraction("sha2", "m", "v", bad.payload))
    assert graph.extractions.cached("sha", "m", "v", max_tokens=16) == cut.payload
    assert graph.extractions.cached("sha", "m", "v", max_tokens=8) == cut.payload
    assert graph.extractions.cached("sha", "m", "v", max_tokens=17) is None
    assert graph.extractions.cached("sha2", "m", "v", max_tokens=4096) == bad.payload


# -- the served schema ---------------------------------------------------------------------------------------

TAG = re.compile(r"<\s*/?\s*passage", re.I)


@pytest.mark.parametrize("spelling", ["</passage>", "</PASSAGE>", "</ passage >", "< /Passage\t>", "<passage n=\"9\">",
                                      "<\n/ pAsSaGe>"])
def test_schema_in_the_prompt_cannot_open_or_close_a_passage(spelling):
    schema = {"type": "object", "properties": {"head": {"type": "string", "enum": [f"x {spelling} y", "Ada"]}}}
    messages = [{"role": "system", "content": "You extract facts."}, {"role": "user", "content": "<passage>t</passage>"}]
    out = with_schema_instruction(messages, schema)
    system = out[0]["content"]
    assert system.startswith("You extract facts.") and not TAG.search(system)
    assert json.loads(system[system.index("{"):]) == schema  # the same schema for a JSON reader
    assert out[1] == messages[1] and messages[0]["content"] == "You extract facts."  # the input is not changed


def test_a_passages_signals_are_read_again_once_another_process_committed(kg_index, tmp_path):
    from localrag.kg.builder import GraphBuilder  # the graph phase's own object, for its signals

    folder = write_notes(tmp_path / "notes", {"wiki.md": LINKED["wiki.md"]})
    index = kg_index(folder)
    index.sync()
    builder = GraphBuilder(index.store, index.embedder, index.settings)
    passage = index.store.docs.passages_of("wiki.md")[0]
    first = builder.signals(passage)
    assert builder.signals(passage)[0] is first[0], "read once between the extraction and the write"
    write_notes(folder, {"beta.md": LINKED["beta.md"]})
    other = kg_index(folder)  # another connection, as a sync in another process
    other.sync()
    again = builder.signals(passage)
    assert again[0] is not first[0] and again[0] == first[0], "read again; the same link to beta"
    assert builder.signals(passage)[0] is again[0]


def test_the_graph_phase_embeds_every_new_name_ahead_of_the_writes_link_names_included(kg_index, tmp_path):
    from localrag.kg.builder import GraphBuilder  # the graph phase's own object, for its embedding calls

    index = kg_index(write_notes(tmp_path / "notes", LINKED))
    index.sync()
    builder = GraphBuilder(index.store, index.embedder, index.settings)
    calls: list[list[str]] = []
    embed = builder.encode_names
    builder.encode_names = lambda names: (calls.append(list(names)), embed(names))[1]
    builder.run()
    names = set(index.store.graph.entities.all().values())
    assert {"alpha", "beta"} <= names  # a link's names: from the passage's signals, not its extraction
    assert len(calls) == 1 and set(calls[0]) == names, "one call, ahead of the writes, for every name"
