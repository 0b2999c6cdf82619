"""The generated vault for `bench scale --graph`: recurring entities, links that resolve, passages in the window."""

from __future__ import annotations

import re
from collections import Counter

from localrag_bench.graph_corpus import MAX_TOKENS, MIN_TOKENS, generate_graph_corpus, write_graph_corpus
from localrag_bench.instant_llm import InstantLLM
from localrag.ingest.chunker import chunk_text, count_tokens

LINK = re.compile(r"\[([^\]]+)\]\(([^)]+)\)|\[\[([^\]]+)\]\]")


def test_corpus_is_deterministic_with_recurring_names_and_resolving_links(tmp_path):
    notes = generate_graph_corpus(400, seed=3)
    assert [n.text() for n in notes] == [n.text() for n in generate_graph_corpus(400, seed=3)]
    assert sum(len(n.passages) for n in notes) == 400
    write_graph_corpus(tmp_path, notes)
    titles = {n.title for n in notes}
    text = "\n".join(n.text() for n in notes)
    markdown, wiki = 0, 0
    for m in LINK.finditer(text):
        if m.group(2):
            markdown += 1
            assert m.group(1) in titles
        else:
            wiki += 1
            assert m.group(3) in titles
    assert markdown > 50 and wiki > 50
    # a few entities recur across many files, and most notes mention some of them
    files_per_title = Counter(t for n in notes for t in titles if t != n.title and t in n.text())
    assert max(files_per_title.values()) > len(notes) // 4


def test_passages_have_realistic_length_and_chunk_one_to_one():
    notes = generate_graph_corpus(200, seed=5)
    lengths = [count_tokens(p.text) for n in notes for p in n.passages]
    assert min(lengths) >= MIN_TOKENS * 0.8 and max(lengths) <= MAX_TOKENS
    note = notes[0]
    chunks = chunk_text(note.text(), "markdown", note.title, 100, 300)
    assert len(chunks) == len(note.passages)


def test_instant_model_answers_the_neuropath_schemas():
    llm = InstantLLM()
    ner = llm.chat([{"role": "user", "content": "Question: What did Ada Lovelace do in Upper Glenrock?\nOutput:"}], phase="ner")
    assert "Ada Lovelace" in ner.text
    lines = "Query: q\nPaths:\n0: a->b->c\n1: d->e-><expandable> [f]\n2: g->h->i\nOutput:"
    track = llm.chat([{"role": "user", "content": lines}], phase="track")
    assert '"valid_ids": [0, 1]' in track.text and '"need_expand_ids": [1]' in track.text and '"continue": 1' in track.text


def test_graph_scale_smoke_run_then_queries_only(tmp_path, embedder):
    from localrag_bench.scale_graph import run_graph_latency, run_graph_scale

    work = tmp_path / "g"
    result = run_graph_scale(60, 3, work, embedder=embedder)
    assert result.graph.passages == result.indexed_passages >= 60
    assert result.graph_counts["entities"] > 0 and result.graph_counts["graph_queue"] == 0
    assert result.edit.graph_passages == 1  # the edited file's changed passage only
    assert result.cold_ask_graph_loaded in {"saved", "updated"}
    assert {x.name.split(",")[0].split(" ")[0] for x in result.latency} >= {"ppr", "neuropath"}
    again = run_graph_latency(60, 3, work, neuropath_queries=1, cold_asks=1, embedder=embedder)
    assert len(again.cold_ask_seconds) == 1 and again.indexed_passages == result.indexed_passages
    assert next(x for x in again.latency if x.name.startswith("neuropath")).queries == 1


def test_folder_scale_indexes_real_notes_in_both_phases(tmp_path, embedder):
    from conftest import EXAMPLES

    from localrag_bench.scale_graph import run_folder_scale

    result = run_folder_scale(EXAMPLES, tmp_path / "work", embedder=embedder)
    assert result.fast.passages == result.graph.passages > 0 and result.fast.tokens > result.fast.passages
    assert result.files == len([p for p in EXAMPLES.rglob("*.md")])
    assert result.graph_counts["facts"] > 0 and set(result.graph_steps) >= {"extract", "write"}


def test_queries_only_refuses_a_real_folder_in_one_line(tmp_path, capsys):
    from localrag.cli import main  # the command line, in process

    code = main(["bench", "scale", "--graph", "--notes", str(tmp_path), "--work", str(tmp_path / "w"), "--queries-only"])
    err = capsys.readouterr().err
    assert code == 2 and "--queries-only" in err and "--notes" in err and "Traceback" not in err
    assert not (tmp_path / "w").exists(), "nothing written"
