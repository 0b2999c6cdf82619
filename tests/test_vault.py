"""Obsidian vault semantics on tests/fixtures/vault: front matter, aliases, tags, properties,
wikilinks (shortest path, aliases, headings, blocks), embeds, ignore rules and filters."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from kg_helpers import assert_healthy, snapshot

from localrag.api import Assistant
from localrag.ingest.chunker import chunk_text
from localrag.ingest.frontmatter import parse_front_matter
from localrag.ingest.markdown import inline_tags, note_links, split_wikilink
from localrag.retrieve import get_strategy
from localrag.retrieve.ppr import PPRSeedsStep
from localrag.retrieve.filters import FilterError, parse_where, split_inline_filters

pytest_plugins = ["conftest_kg"]

VAULT = Path(__file__).parent / "fixtures" / "vault"


@pytest.fixture
def vault(tmp_path: Path) -> Path:
    dst = tmp_path / "vault"
    shutil.copytree(VAULT, dst)
    return dst


@pytest.fixture
def built(kg_index, vault):
    index = kg_index(vault)
    index.sync()
    index.extract_graph()
    return index


def facts(index, relation: str | None = None) -> set[tuple[str, str, str]]:
    return {(f.head_name, f.relation, f.tail_name) for f in index.store.graph.facts.all()
            if relation is None or f.relation == relation}


def test_ignored_folders_and_patterns_are_not_indexed(built):
    paths = set(built.store.docs.all())
    assert paths == {"projects/lanternfish.md", "people/mira-tolland.md", "archive/people/mira-tolland.md",
                     "archive/old-plan.md", "specs/glow-spec.md", "work/budget.md", "broken.md", "drafts/keep.md"}
    text = " ".join(p.text for path in paths for p in built.store.docs.passages_of(path))
    assert "zephyrine" not in text and "marmalade" not in text and "quasar" not in text


def test_front_matter_is_not_passage_text_and_line_ranges_are_exact(built, vault):
    passages = built.store.docs.passages_of("projects/lanternfish.md")
    lines = (vault / "projects/lanternfish.md").read_text().split("\n")
    assert passages[0].start_line == 13  # the heading, after 11 lines of front matter and a blank line
    assert all("aliases:" not in p.text and "7f2c9a" not in p.text for p in passages)
    for p in passages:
        assert p.text.split("\n")[0] == lines[p.start_line - 1]
        assert p.text.split("\n")[-1] == lines[p.end_line - 1]
    assert passages[0].title == "Lanternfish"
    # the table, the footnote, the callout and the code fence each stay whole inside passages
    body = "\n".join(p.text for p in passages)
    assert "| Sea trial | August |" in body and "[^1]: The harbour master approves each dive." in body
    assert "```python" in body and 'print("[[still-not-a-link]]")' in body


def test_aliases_tags_and_properties_are_recorded(built):
    doc = built.store.docs.get("projects/lanternfish.md")
    meta = built.store.vault.meta(doc.id)
    assert meta.title == "Lanternfish" and meta.aliases == ("LF-7", "Project Glowfin")
    assert meta.tags == ("project", "work/active")
    assert ("status", "active") in meta.properties and ("owner", "Mira Tolland") in meta.properties
    # inline #milestone joins the front-matter tags; #notatag in the code fence does not
    assert built.store.vault.tags(doc.id) == ["milestone", "project", "work/active"]
    assert built.store.vault.tags(built.store.docs.get("work/budget.md").id) == ["project"]


def test_graph_facts_for_aliases_tags_properties_links_and_embeds(built):
    got = facts(built)
    assert ("lanternfish", "is also called", "lf 7") in got
    assert ("lanternfish", "is also called", "project glowfin") in got
    assert {("lanternfish", "has tag", t) for t in ("project", "work active", "milestone")} <= got
    assert ("lanternfish", "status", "active") in got and ("lanternfish", "owner", "mira tolland") in got
    assert not {f for f in got if f[1] in ("id", "updated")}  # bookkeeping properties are not facts
    links = facts(built, "links to")
    # [[mira-tolland|Mira]], #heading and ^block links: the shortest path wins over archive/people/
    assert ("lanternfish", "links to", "mira tolland") in links
    assert ("lanternfish", "links to", "mira tolland 2019") in links  # [[archive/people/mira-tolland]]
    assert ("lanternfish", "links to", "budget") in links  # relative Markdown link
    assert ("lanternfish", "links to", "nowhere note") in links  # unresolved: its own name
    assert ("budget", "links to", "lanternfish") in links  # [[Project Glowfin]] resolved through the alias
    assert not {t for _, _, t in links if "not a link" in t}  # code is not prose
    assert ("lanternfish", "embeds", "glow spec") in facts(built, "embeds")
    assert_healthy(built)


def test_an_embed_makes_the_embedded_text_one_hop_away_without_duplicating_it(built):
    g = built.store.graph
    glow = g.entities.id("glow spec")
    lantern_passages = {p.id for p in built.store.docs.passages_of("projects/lanternfish.md")}
    glow_passages = {p.id for p in built.store.docs.passages_of("specs/glow-spec.md")}
    mentioning = set(g.facts.passages_mentioning(glow))
    assert glow_passages <= mentioning and mentioning & lantern_passages
    all_text = [p.text for pid in built.store.docs.all_passage_ids() for p in built.store.docs.passages([pid])]
    assert sum("470 nanometres" in t for t in all_text) == 1


def test_aliases_are_certain_coreference(built):
    g = built.store.graph
    lantern, alias = g.entities.id("lanternfish"), g.entities.id("lf 7")
    assert (alias, 1.0) in g.aliases(lantern) and (lantern, 1.0) in g.aliases(alias)


def test_a_question_through_an_alias_reaches_the_note(built):
    assistant = Assistant(built)
    got = assistant.retrieve("Who owns LF-7?", "ppr", 3)
    seeds = next(s for s in got.trace.steps if isinstance(s, PPRSeedsStep)).seeds
    assert "lf 7" in {s.name for s in seeds}
    assert got.passages[0].passage.path == "projects/lanternfish.md"


def test_the_answer_through_an_alias_with_the_real_model(kg_index, vault, bundled_model):
    index = kg_index(vault, **{"llm.model": str(bundled_model)})
    index.sync()
    index.extract_graph()
    answer = Assistant(index).ask("Who runs LF-7?", strategy="ppr")
    assert answer.text
    # the note is reached only through its alias (the body never says LF-7) and is given to the model first
    assert answer.retrieval.passages[0].passage.path == "projects/lanternfish.md"
    assert next(c for c in answer.citations if c.number == 1).passage.path == "projects/lanternfish.md"


def test_malformed_front_matter_indexes_the_note_and_warns(built):
    passages = built.store.docs.passages_of("broken.md")
    assert passages and "kestrel survey" in passages[-1].text
    assert passages[0].title == "Broken"  # the YAML title could not be read: the heading stands
    warnings = dict(built.status().warnings)
    assert "not valid YAML" in warnings["broken.md"]
    assert built.status().extra["note_warnings"] == 1


def test_status_command_shows_the_warning(built, vault):
    import subprocess
    import sys

    r = subprocess.run([sys.executable, "-m", "localrag", "status", str(vault)], capture_output=True, text=True,
                       timeout=300, env={**__import__("os").environ, "COLUMNS": "200"})
    assert r.returncode == 0, r.stderr
    assert "broken.md" in r.stdout and "not valid YAML" in r.stdout


@pytest.mark.parametrize("strategy", ["dense", "lexical", "hybrid", "ppr"])
def test_filters_apply_inside_each_strategy(built, strategy):
    assistant = Assistant(built)
    query = "Which plan used sodium vapour lamps for the project?"
    everything = assistant.retrieve(query, strategy, 10)
    assert any(sp.passage.path.startswith("archive/") for sp in everything.passages)
    no_archive = assistant.retrieve(query, strategy, 10, where=parse_where(["-path:archive/"]))
    assert no_archive.passages and not any(sp.passage.path.startswith("archive/") for sp in no_archive.passages)
    tagged = assistant.retrieve(query, strategy, 10, where=parse_where(["tag:project", "path:work/"]))
    assert tagged.passages and {sp.passage.path for sp in tagged.passages} == {"work/budget.md"}
    nested = assistant.retrieve(query, strategy, 10, where=parse_where(["tag:work"]))  # #work/active
    assert {sp.passage.path for sp in nested.passages} == {"projects/lanternfish.md"}


@pytest.mark.parametrize("strategy", ["neuropath", "remind"])
def test_filters_apply_inside_the_model_strategies(kg_index, vault, bundled_model, strategy):
    index = kg_index(vault, **{"llm.model": str(bundled_model), "memory.enabled": False})
    index.sync()
    index.extract_graph()
    got = Assistant(index).retrieve("Who runs the lamp programme Lanternfish?", strategy, 5,
                                    where=parse_where(["path:people/"]))
    assert got.passages and all(sp.passage.path.startswith("people/") for sp in got.passages)


def test_a_renamed_alias_follows_in_the_graph_like_a_fresh_index(kg_index, built, vault, tmp_path):
    note = vault / "projects/lanternfish.md"
    note.write_text(note.read_text().replace("Project Glowfin", "Project Brightfin"), encoding="utf-8")
    built.sync()
    built.extract_graph()
    fresh_dir = tmp_path / "fresh"
    shutil.copytree(vault, fresh_dir, ignore=shutil.ignore_patterns(".localrag"))
    fresh = kg_index(fresh_dir)
    fresh.sync()
    fresh.extract_graph()
    assert snapshot(built) == snapshot(fresh)
    assert ("budget", "links to", "project glowfin") in facts(built, "links to")  # no note is called that now


# -- units -------------------------------------------------------------------------------------


def test_wikilink_forms():
    assert split_wikilink("note|shown") == ("note", "", "", "shown")
    assert split_wikilink("Shown text|dendron.topic.x#sec") == ("dendron.topic.x", "sec", "", "Shown text")
    assert split_wikilink("note#Heading^blk") == ("note", "Heading", "blk", "")
    assert split_wikilink("note^blk|b") == ("note", "", "blk", "b")
    links = note_links("![[a]] [[b|B]] `[[c]]` [x](d.md#h) [w](https://e.org/f.md) [[dendron://v/g.h]]")
    assert [(n.target, n.embed, n.markdown) for n in links] == [
        ("a", True, False), ("b", False, False), ("g.h", False, False), ("d.md", False, True)]


def test_inline_tags_skip_code_numbers_and_urls():
    text = "A #tag, #nested/deep and #2024 in https://x.org/#frag `#code` word#inner\n\n    #indented-code\n"
    assert inline_tags(text) == ["tag", "nested/deep"]


def test_front_matter_parsing():
    meta = parse_front_matter("---\naliases: One\ntags: a, B/c\nn: 3\nd: 2024-01-05\nlist: [1, 2]\n---\nbody\n")
    assert meta.aliases == ("One",) and meta.tags == ("a", "b/c") and meta.lines == 7
    assert ("n", "3") in meta.properties and ("d", "2024-01-05") in meta.properties
    assert not any(k == "list" for k, _ in meta.properties)  # not a scalar
    bad = parse_front_matter("---\n: : :\n  - x\n---\n")
    assert bad.warning.startswith("front matter is not valid YAML")
    assert parse_front_matter("---\n- a list\n---\n").warning.startswith("front matter is a YAML list")
    assert parse_front_matter("no front matter\n---\n") .empty


def test_chunker_leaves_front_matter_out_and_keeps_lines():
    text = "---\ntitle: T\n---\n# Head\n\nBody line one\nline two\n\n- a\n- b\n\nAfter.\n"
    chunks = chunk_text(text, "markdown", "T", 1, 300)
    assert chunks[0].start_line == 4 and "title:" not in chunks[0].text
    assert chunks[-1].end_line == 12


def test_filter_parsing():
    f = parse_where(["tag:#Project", "path:./work/", "-path:archive/"])
    assert (f.tags, f.paths, f.exclude_paths) == (("project",), ("work/",), ("archive/",))
    assert parse_where([]) is None
    with pytest.raises(FilterError, match="cannot read the filter"):
        parse_where(["colour:red"])
    with pytest.raises(FilterError, match="has no value"):
        parse_where(["tag:"])
    assert split_inline_filters("/tag:project who leads /path:work/ it?") == ("who leads it?", ["tag:project", "path:work/"])



def test_the_front_matter_description_is_embedded_with_the_first_passage_only():
    from dataclasses import replace

    text = "---\ndesc: Find notes by name\n---\n# Lookup\n\nType part of a name.\n"
    meta = parse_front_matter(text)
    first = chunk_text(text, "markdown", "Lookup", 1, 300)[0]
    with_context = replace(first, note_context=meta.description)
    assert meta.description == "Find notes by name" and "Find notes by name" not in first.text
    assert "Find notes by name" in with_context.embed_text and with_context.sha256 != first.sha256
