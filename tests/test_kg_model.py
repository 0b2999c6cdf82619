"""Graph extraction with the real bundled SmolLM2: whatever it says, only grounded facts are stored."""

from __future__ import annotations

import pytest
from kg_helpers import assert_healthy, write_notes

from localrag.config import LLMSettings
from localrag.kg.extract import ExtractorOptions, extract_passage
from localrag.text.normalise import normalise_phrase, occurs_in
from localrag.llm.llamacpp import LlamaCppLLM

pytest_plugins = ["conftest_kg"]

NOTES = {
    "teutberga.md": "# Teutberga\n\nTeutberga (died 11 November 875) was a queen of Lotharingia by marriage to Lothair II.\n",
    "kallendar.md": "# Kallendar Workshop\n\nThe Kallendar Workshop is owned by Otto Kallendar and sits in [[Orlinsford]].\n",
}


@pytest.fixture(scope="module")
def smollm(bundled_model):
    return LlamaCppLLM(bundled_model, LLMSettings(n_threads=1))


@pytest.mark.slow
def test_bundled_model_facts_are_grounded_and_the_prefix_is_reused(smollm):
    opts = ExtractorOptions("llm", max_triples=4)
    results = []
    for name, text in NOTES.items():
        title = text.splitlines()[0].lstrip("# ")
        ex = extract_passage(text, title, opts, llm=smollm)
        results.append(ex)
        norm = normalise_phrase(text)
        for t in ex.triples:
            assert occurs_in(t.head, norm) and occurs_in(t.tail, norm), (name, t)
            assert t.head != t.tail and t.relation not in (t.head, t.tail)
        assert ex.status in ("llm", "failed") and ex.calls >= 1
    assert any(ex.triples for ex in results)  # the span grammar gets at least something through
    # the fixed system prompt + example is evaluated once: later calls reuse it from the KV cache
    assert results[1].cached_tokens >= 100


@pytest.mark.slow
def test_graph_phase_with_the_bundled_model(kg_index, tmp_path, smollm):
    index = kg_index(write_notes(tmp_path / "notes", NOTES), **{"index.extractor": "llm+rules", "index.extract_max_triples": 4})
    index.sync()
    report = index.extract_graph(llm=smollm)
    assert report.remaining == 0 and report.llm_calls >= report.passages - report.cached
    by_id = {p.id: p for p in index.store.docs.passages(index.store.docs.all_passage_ids())}
    facts = {f.id: f for f in index.store.graph.facts.all()}
    for fact_id, passage_id, origin in index.store.graph.facts.all_sources():
        if origin in ("llm", "rules"):
            text = normalise_phrase(by_id[passage_id].title + " " + by_id[passage_id].text)
            f = facts[fact_id]
            assert occurs_in(f.head_name, text) and occurs_in(f.tail_name, text), f
    calls = index.store.calls.totals_by_phase()
    assert calls["index"][0] == report.llm_calls  # every model call is logged with phase "index"
    assert_healthy(index)
