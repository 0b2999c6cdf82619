"""Extraction without the store: normalisation, spans, rules, grounding, the LLM control flow."""

from __future__ import annotations

import json

from scripted_llm import ScriptedLLM

from localrag.kg.extract import ExtractorOptions, candidate_spans, extract_passage
from localrag.kg.grounding import ground, raw_triples
from localrag.text.normalise import normalise_phrase
from localrag.kg.rules import rules_triples
from localrag.kg.signals import link_triples
from localrag.text.spans import clean_markup, find_spans
from localrag.llm.prompts_kg import kg_messages, kg_schema

PASSAGE = (
    "Teutberga\nTeutberga (died 11 November 875) was a queen of Lotharingia by marriage to Lothair II. "
    "She was a daughter of Bosonid Boso the Elder and sister of Hucbert, the lay-abbot of St. Maurice's Abbey."
)


def test_normalise_phrase_as_neuropath_with_collapsed_spaces():
    assert normalise_phrase("  St. Maurice's   Abbey!! ") == "st maurice s abbey"
    assert normalise_phrase("Hip-Hop/R&B") == "hip hop r b"
    assert normalise_phrase("Württemberg") == "wurttemberg"
    assert normalise_phrase("???") == ""


def test_spans_find_names_dates_numbers_and_quoted_titles():
    text = clean_markup('"I Like Control" was released on February 13, 1999 by DJ Clue. After Lothair II. died, Hucbert fled.')
    found = {(s.text, s.kind) for s in find_spans(text)}
    assert ("I Like Control", "quoted") in found
    assert ("February 13, 1999", "date") in found
    assert ("DJ Clue", "name") in found
    assert ("Lothair II", "name") in found  # "After" dropped, not across the sentence end
    assert not any(s.startswith("After") for s, _ in found)


def test_spans_see_link_text_not_link_targets():
    text = clean_markup("Owned by [The Harebell Oven](../the-harebell-oven.md) and [[Ilse Varnhagen|Ilse]].")
    assert [s.text for s in find_spans(text)] == ["The Harebell Oven", "Ilse"]


def test_rules_star_from_subject_and_pronoun_sentences_are_about_the_title():
    triples = {(t.head, t.relation, t.tail) for t in rules_triples(PASSAGE, "Teutberga")}
    assert ("teutberga", "was a queen of", "lotharingia") in triples
    assert ("teutberga", "by marriage to", "lothair ii") in triples
    # "She was a daughter of …": the pronoun resolves to the title, and the relation drops it
    assert ("teutberga", "was a daughter of", "bosonid boso the elder") in triples
    assert all(t[0] != t[2] and t[1] not in (t[0], t[2]) for t in triples)


def test_link_triples_from_wikilinks_and_markdown_links():
    text = "See [[Charles Babbage]] and [the engine](notes/analytical-engine.md) and [web](https://x.org/a.md)."
    titles = {"people/notes/analytical-engine.md": "The Analytical Engine"}
    got = link_triples(text, "Ada Lovelace", "people/ada.md", titles.get)
    assert [(t.head, t.relation, t.tail, t.origin) for t in got] == [
        ("ada lovelace", "links to", "charles babbage", "link"),
        ("ada lovelace", "links to", "the analytical engine", "link"),
    ]


def test_grounding_rejects_each_kind_of_bad_triple_with_its_reason():
    reply = {"triples": [
        {"head": "Teutberga", "relation": "queen of", "tail": "Lotharingia"},  # fine
        {"head": "Teutberga", "relation": "queen of", "tail": "Lotharingia"},  # duplicate
        {"head": "teutberga!", "relation": "Queen  of", "tail": "LOTHARINGIA"},  # duplicate after normalisation
        {"head": "Teutberga", "relation": "Teutberga", "tail": "Hucbert"},  # relation == subject
        {"head": "Hucbert", "relation": "brother of", "tail": "Hucbert"},  # head == tail
        {"head": "Charlemagne", "relation": "grandfather of", "tail": "Teutberga"},  # invented name
        {"head": "Teutberga", "relation": "married", "tail": "Lothair III"},  # tail not in passage
        {"head": "", "relation": "x", "tail": "Hucbert"},  # empty part
        ["Hucbert", "abbot of", "St. Maurice's Abbey"],  # NeuroPath's list form is accepted
        "garbage",
    ]}
    g = ground(raw_triples(reply), PASSAGE)
    assert [(t.head, t.relation, t.tail) for t in g.accepted] == [
        ("teutberga", "queen of", "lotharingia"), ("hucbert", "abbot of", "st maurice s abbey")]
    assert g.reasons() == {"duplicate": 2, "relation equals an entity": 1, "head equals tail": 1,
                           "head not in passage": 1, "tail not in passage": 1, "empty part": 2}
    assert raw_triples({"named_entities": []}) is None


def test_span_schema_makes_head_equal_tail_and_invented_names_unsayable():
    spans = candidate_spans(PASSAGE, "Teutberga", 40)
    assert spans[0] == "Teutberga" and "Lotharingia" in spans
    schema = kg_schema(6, spans)
    alternatives = schema["properties"]["triples"]["items"]["anyOf"]
    assert len(alternatives) == len(spans)
    for alt in alternatives:
        head = alt["properties"]["head"]["enum"]
        tails = alt["properties"]["tail"]["enum"]
        assert len(head) == 1 and head[0] not in tails and set(tails) <= set(spans)
        assert alt["additionalProperties"] is False
    assert schema["properties"]["triples"]["maxItems"] == 6


def test_fixed_prefix_comes_first_so_the_kv_cache_is_reused():
    a = kg_messages("Passage one about Ada Lovelace.", "Ada", ["Ada Lovelace"])
    b = kg_messages("Passage two about Charles Babbage.", "Babbage", ["Charles Babbage"])
    assert a[:3] == b[:3] and a[-1] != b[-1]


def _reply(*triples):
    return {"triples": [{"head": h, "relation": r, "tail": t} for h, r, t in triples]}


def test_a_model_s_owner_form_names_the_entity_the_spans_name():
    """A reply copies "Python's" as the passage writes it; the spans (and a question) name Python."""
    g = ground([("Python's", "alternative to", "Go")], "A Go alternative to Python's `http.server`.")
    assert [(t.head, t.relation, t.tail) for t in g.accepted] == [("python", "alternative to", "go")]


def test_llm_reply_grounded_on_first_try():
    llm = ScriptedLLM(lambda m, s, p: _reply(("Teutberga", "queen of", "Lotharingia"), ("Teutberga", "queen of", "Lotharingia")))
    ex = extract_passage(PASSAGE, "Teutberga", ExtractorOptions("llm"), llm=llm)
    assert ex.status == "llm" and ex.calls == 1 and [t.tail for t in ex.triples] == ["lotharingia"]
    assert ex.payload["data"] is not None and llm.calls[0][0] == "index"


def test_rejected_reply_gets_one_repair_then_a_recorded_failure_or_the_rules_fallback():
    bad = _reply(("Charlemagne", "ruled", "Francia"))
    llm = ScriptedLLM(lambda m, s, p: bad)
    failed = extract_passage(PASSAGE, "Teutberga", ExtractorOptions("llm", constrain=False), llm=llm)
    assert failed.status == "failed" and failed.triples == [] and failed.calls == 2
    assert "head not in passage" in failed.reason
    assert "invalid" in llm.calls[1][1][-1]["content"]  # the repair turn says what was wrong
    fallback = extract_passage(PASSAGE, "Teutberga", ExtractorOptions("llm+rules", constrain=False), llm=llm)
    assert fallback.status == "fallback" and fallback.triples
    assert {t.origin for t in fallback.triples} == {"rules"}


def test_repair_that_succeeds_is_used():
    replies = iter(["not json at all", json.dumps(_reply(("Hucbert", "abbot of", "St. Maurice's Abbey")))])
    llm = ScriptedLLM(lambda m, s, p: next(replies))
    ex = extract_passage(PASSAGE, "Teutberga", ExtractorOptions("llm"), llm=llm)
    assert ex.status == "llm" and ex.calls == 2 and ex.triples[0].head == "hucbert"


def test_cached_reply_replays_without_a_model():
    llm = ScriptedLLM(lambda m, s, p: _reply(("Teutberga", "queen of", "Lotharingia")))
    first = extract_passage(PASSAGE, "Teutberga", ExtractorOptions("llm"), llm=llm)
    again = extract_passage(PASSAGE, "Teutberga", ExtractorOptions("llm"), llm=None, cached=first.payload)
    assert again.from_cache and again.calls == 0 and again.triples == first.triples
    failed = extract_passage(PASSAGE, "Teutberga", ExtractorOptions("llm"), cached={"data": None, "error": "cut"})
    assert failed.status == "failed" and failed.reason == "cut"


def test_empty_passage_needs_no_call():
    llm = ScriptedLLM(lambda m, s, p: _reply())
    assert extract_passage("  \n--- ", "t", ExtractorOptions("llm"), llm=llm).status == "empty"
    assert llm.calls == []
