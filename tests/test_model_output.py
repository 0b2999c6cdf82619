"""Bad model output never crashes: it is recorded, repaired once, then replaced by a fallback.

Faults: malformed JSON, an empty reply, out-of-range ids, endless repetition, a reply cut
at max_tokens (finish_reason "length"), and a backend that raises. Each is tried on the
four model calls: NeuroPath path tracking, query NER, the answer and graph extraction.
Scripted models drive the control flow; the last test runs the real bundled model with
max_tokens so small that every JSON reply is cut.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from localrag.answer import EMPTY_ANSWER
from localrag.api import Assistant, Index
from localrag.config import load_settings
from localrag.llm.base import LLMError
from localrag.llm.jsoncall import call_json
from localrag.retrieve.neuropath.events import RoundStep
from localrag.text.spans import find_spans
from localrag.trace import TraceEvent, event_name

from kg_helpers import indexed_folder, write_triples
from scripted_llm import Cut, ScriptedLLM, line_id

NOTES = {
    "mira.md": "# Mira Okafor\n\nMira Okafor leads the Heron project at the Lund institute.\n",
    "heron.md": "# Heron project\n\nThe Heron project is hosted in Vessby, in the old mill.\n",
    "vessby.md": "# Vessby\n\nVessby lies on the river Orle, north of the Tarn hills.\n",
}
TRIPLES = {
    "mira.md": [("mira okafor", "leads", "heron project")],
    "heron.md": [("heron project", "hosted in", "vessby")],
    "vessby.md": [("vessby", "lies on", "river orle")],
}
QUESTION = "On which river is the town where Mira Okafor's project is hosted?"


REPEATED = "the river orle the river orle " * 200

# the same faults for every JSON call
JSON_FAULTS = {
    "malformed": '{"valid_ids": [0, "current_chain": ',
    "empty": "",
    "prose": "I think the answer is the river Orle.",
    "repetition-cut": Cut('{"current_chain": "' + REPEATED),
    "cut": Cut('{"current_chain": "Mira leads'),
    "not-an-object": "[1, 2, 3]",
}


@pytest.fixture(scope="module")
def built_folder(tmp_path_factory, embedder) -> Path:
    """The notes, indexed once (fast phase only); tests work on copies."""
    return indexed_folder(tmp_path_factory.mktemp("model-output") / "kb", NOTES, embedder)


@pytest.fixture
def copy_index(built_folder, tmp_path, embedder):
    opened: list[Index] = []

    def make(name: str = "kb", **overrides) -> Index:
        d = tmp_path / name
        shutil.copytree(built_folder, d)
        # free text: what a model's reply can be (empty, cut, repeating) is what these tests check
        idx = Index(load_settings(d, {"answer.mode": "free", **overrides}, env={}), embedder)
        opened.append(idx)
        return idx

    yield make
    for idx in opened:
        idx.close()


@pytest.fixture
def graph_index(copy_index):
    idx = copy_index(**{"neuropath.ner": "llm+rules", "memory.enabled": False})
    write_triples(idx, TRIPLES)
    return idx


def _phases(llm: ScriptedLLM) -> list[str]:
    return [phase for phase, _ in llm.calls]


def _step(retrieval, name: str) -> TraceEvent:
    return next(s for s in retrieval.trace.steps if event_name(s) == name)


def _retrieve(index: Index, llm, strategy: str = "neuropath"):
    """Retrieval only (no answer call); the Answer carries the trace and the LLM call records."""
    answer = Assistant(index, llm=llm).ask(QUESTION, strategy=strategy, answer=False)
    return answer.retrieval, answer.calls


# -- the shared JSON call ---------------------------------------------------------------------------

@pytest.mark.parametrize("fault", sorted(JSON_FAULTS))
def test_call_json_records_each_fault_and_retries_once(fault):
    llm = ScriptedLLM(lambda m, s, p: JSON_FAULTS[fault])
    result = call_json(llm, [{"role": "user", "content": "q"}], {"type": "object"}, phase="track", max_tokens=8)
    assert not result.ok and result.data is None
    assert len(llm.calls) == 2 and len(result.errors) == 2  # one repair retry, then a recorded failure
    if isinstance(JSON_FAULTS[fault], Cut):
        assert result.errors[0] == "reply cut at max_tokens before the JSON ended"
    # the retry shows the model its bad reply and the reason
    retry = llm.calls[1][1]
    assert retry[-1]["role"] == "user" and result.errors[0] in retry[-1]["content"]


def test_call_json_repair_retry_recovers():
    replies = iter(['{"named_entities": "Mira"', {"named_entities": ["Mira Okafor"]}])
    llm = ScriptedLLM(lambda m, s, p: next(replies))
    result = call_json(llm, [{"role": "user", "content": "q"}], {"type": "object"}, phase="ner", max_tokens=50)
    assert result.ok and result.data == {"named_entities": ["Mira Okafor"]}
    assert len(result.errors) == 1 and len(result.replies) == 2


# -- NeuroPath path tracking --------------------------------------------------------------------------

TRACK_FAULTS = dict(JSON_FAULTS) | {
    "out-of-range": {"current_chain": "x", "valid_ids": [99, -1], "expansion_requirements": "",
                     "need_expand_ids": [], "continue": 0},
    "wrong-types": {"current_chain": 3, "valid_ids": "0", "expansion_requirements": None,
                    "need_expand_ids": {}, "continue": "yes"},
    "missing-keys": {"valid_ids": [0]},
}


@pytest.mark.parametrize("fault", sorted(TRACK_FAULTS))
def test_tracking_fault_falls_back_to_embedding_order(graph_index, fault):
    def respond(messages, schema, phase):
        if phase == "ner":
            return {"named_entities": ["Mira Okafor"]}
        return TRACK_FAULTS[fault]

    llm = ScriptedLLM(respond)
    r, calls = _retrieve(graph_index, llm)
    rnd = _step(r, "round")
    assert rnd.fallback, "the fallback is recorded in the trace"
    assert len(rnd.errors) == 2 and all(rnd.errors), "both rejected replies say why"
    assert rnd.selected, "paths were still chosen (by embedding order)"
    assert r.passages and r.passages[0].passage.path == "mira.md"
    assert _phases(llm) == ["ner", "track", "track"]
    assert [c.phase for c in calls] == ["ner", "track", "track"], "each call is recorded with its phase"


def test_tracking_repeated_ids_are_deduplicated(graph_index):
    def respond(messages, schema, phase):
        if phase == "ner":
            return {"named_entities": ["Mira Okafor"]}
        i = line_id(messages, "mira okafor->leads->heron project")
        return {"current_chain": "Mira leads Heron.", "valid_ids": [i] * 40, "expansion_requirements": "",
                "need_expand_ids": [i] * 40, "continue": 0}

    llm = ScriptedLLM(respond)
    r, _ = _retrieve(graph_index, llm)
    rnd = _step(r, "round")
    assert not rnd.fallback and rnd.errors == ()
    assert len(rnd.selected) == 1 and len(rnd.expand) == 1
    assert [sp.source for sp in r.passages].count("path") == 1


def test_tracking_repaired_on_retry_uses_the_model_choice(graph_index):
    attempts = []

    def respond(messages, schema, phase):
        if phase == "ner":
            return {"named_entities": ["Mira Okafor"]}
        attempts.append(1)
        if len(attempts) == 1:
            return Cut('{"current_chain": "Mira')
        i = line_id(messages[:2], "mira okafor->leads->heron project")  # the retry ends with the repair request
        return {"current_chain": "Mira leads Heron.", "valid_ids": [i], "expansion_requirements": "",
                "need_expand_ids": [], "continue": 0}

    r, _ = _retrieve(graph_index, ScriptedLLM(respond))
    rnd = _step(r, "round")
    assert not rnd.fallback
    assert rnd.errors == ("reply cut at max_tokens before the JSON ended",)
    assert rnd.chain == "Mira leads Heron."


# -- query NER ----------------------------------------------------------------------------------------

NER_FAULTS = dict(JSON_FAULTS) | {
    "not-a-list": {"named_entities": "Mira Okafor"},
    "list-of-junk": {"named_entities": [1, None, {"x": 1}]},
}


@pytest.mark.parametrize("fault", sorted(NER_FAULTS))
def test_ner_fault_falls_back_to_spans_and_is_not_cached(graph_index, fault):
    def respond(messages, schema, phase):
        if phase == "ner":
            return NER_FAULTS[fault]
        return {"current_chain": "", "valid_ids": [0], "expansion_requirements": "", "need_expand_ids": [], "continue": 0}

    llm = ScriptedLLM(respond)
    assistant = Assistant(graph_index, llm=llm)
    r = assistant.retrieve(QUESTION, "neuropath", 5)
    ner = _step(r, "ner")
    assert ner.error and ner.grounded == ()
    entities = _step(r, "query_entities")
    assert entities.source == "rules" and any("Mira Okafor" in e for e in entities.entities)
    assert r.passages[0].passage.path == "mira.md"
    assistant.retrieve(QUESTION, "neuropath", 5)
    assert _phases(llm).count("ner") == 4, "a failed NER reply is retried on the next question, not cached"


def test_ner_good_reply_is_cached(graph_index):
    llm = ScriptedLLM(lambda m, s, p: {"named_entities": ["Mira Okafor"]} if p == "ner" else JSON_FAULTS["empty"])
    assistant = Assistant(graph_index, llm=llm)
    assistant.retrieve(QUESTION, "neuropath", 5)
    assistant.retrieve(QUESTION, "neuropath", 5)
    assert _phases(llm).count("ner") == 1


def test_a_named_owner_form_is_the_entity_it_names(graph_index):
    """The question says "Mira Okafor's project": the model's entity and the spans' are Mira Okafor."""
    llm = ScriptedLLM(lambda m, s, p: {"named_entities": ["Mira Okafor's"]} if p == "ner" else JSON_FAULTS["empty"])
    r = Assistant(graph_index, llm=llm).retrieve(QUESTION, "neuropath", 5)
    assert _step(r, "query_entities").entities == ("Mira Okafor",)
    assert [s.text for s in find_spans(QUESTION)] == ["Mira Okafor"]


# -- the answer -----------------------------------------------------------------------------------------

def _ask(index, reply):
    """The free-text answer's checks (short answers are grammar-constrained: tests/test_answer_flow.py)."""
    llm = ScriptedLLM(lambda m, s, p: reply)
    return Assistant(index, llm=llm).ask(QUESTION, strategy="hybrid", mode="free"), llm


def test_empty_answer_is_replaced_and_noted(graph_index):
    answer, _ = _ask(graph_index, "")
    assert answer.text == EMPTY_ANSWER
    assert "answer: the model's reply was empty" in answer.notes
    assert answer.citations and not any(c.cited for c in answer.citations), "sources shown as context only"


def test_cut_answer_is_kept_and_noted(graph_index):
    answer, _ = _ask(graph_index, Cut("Vessby lies on the river Orle [1], which"))
    assert answer.text.startswith("Vessby lies on the river Orle [1]")
    assert any("cut at" in n for n in answer.notes)
    assert answer.citations[0].cited


def test_repeating_answer_is_collapsed(graph_index):
    answer, _ = _ask(graph_index, Cut("The river Orle [1]. " * 60))
    assert answer.text.count("The river Orle") == 1
    assert any("repeated" in n for n in answer.notes)


def test_answer_citing_passages_it_was_not_given(graph_index):
    answer, _ = _ask(graph_index, "The Orle [1][9][0][-1][123].")
    assert "[9]" not in answer.text and "[0]" not in answer.text and "[123]" not in answer.text
    assert all(1 <= c.number <= len(answer.citations) for c in answer.citations)
    assert [c.number for c in answer.citations if c.cited] == [1]
    assert any("not given" in n for n in answer.notes)
    # the stored query has the cleaned text
    assert graph_index.store.calls.recent_queries(1)[0].answer == answer.text


def test_malformed_answer_text_is_just_text(graph_index):
    answer, _ = _ask(graph_index, '{"answer": [1, 2')
    assert answer.text == '{"answer": [1, 2'
    assert answer.citations


def test_backend_error_in_answer_is_a_clear_llm_error(graph_index, monkeypatch):
    llm = ScriptedLLM(lambda m, s, p: LLMError("server at http://127.0.0.1:9 refused the connection"))
    monkeypatch.setattr("localrag.llm.factory.make_llm", lambda settings, role="main": (llm, "scripted"))
    with pytest.raises(LLMError, match="refused"):
        Assistant(graph_index).ask(QUESTION, strategy="hybrid", mode="free")
    rows = graph_index.store.query("SELECT phase, ok, error FROM llm_calls")
    assert rows == [("answer", 0, "server at http://127.0.0.1:9 refused the connection")]


# -- graph extraction -------------------------------------------------------------------------------------

@pytest.fixture
def plain_index(copy_index):
    def make(extractor: str) -> Index:
        return copy_index(f"plain-{extractor}", **{"index.extractor": extractor})

    return make


EXTRACT_FAULTS = dict(JSON_FAULTS) | {
    "invented-names": {"triples": [{"head": "Gandalf", "relation": "visits", "tail": "Mordor"}]},
    "head-equals-tail": {"triples": [{"head": "Vessby", "relation": "is", "tail": "Vessby"}]},
    "wrong-shape": {"triples": "Mira leads Heron"},
}


@pytest.mark.parametrize("fault", sorted(EXTRACT_FAULTS))
def test_extraction_fault_is_recorded_and_rules_fill_in(plain_index, fault):
    idx = plain_index("llm+rules")
    llm = ScriptedLLM(lambda m, s, p: EXTRACT_FAULTS[fault])
    report = idx.extract_graph(llm=llm)
    n = idx.store.docs.passage_count()
    assert report.passages == n and report.fallback == n and report.remaining == 0
    assert report.llm_calls == 2 * n  # one repair retry per passage
    failures = idx.store.graph.extractions.failures()
    assert len(failures) == n and all(reason and fallback for _, reason, fallback in failures)
    assert idx.store.graph.counts().facts > 0, "the rules extractor filled the graph"
    assert idx.store.graph.queue.length() == 0


def test_extraction_fault_without_fallback_is_recorded_as_failed(plain_index):
    idx = plain_index("llm")
    report = idx.extract_graph(llm=ScriptedLLM(lambda m, s, p: JSON_FAULTS["cut"]))
    n = idx.store.docs.passage_count()
    assert report.failed == n and report.remaining == 0
    reasons = {r for _, r, fb in idx.store.graph.extractions.failures() if not fb}
    assert reasons == {"reply cut at max_tokens before the JSON ended"}


def test_extraction_repetition_is_deduplicated(plain_index):
    idx = plain_index("llm")

    def respond(messages, schema, phase):
        text = messages[-1]["content"]
        if "Vessby lies on" in text:
            return {"triples": [{"head": "Vessby", "relation": "lies on", "tail": "river Orle"}] * 50}
        return {"triples": []}

    report = idx.extract_graph(llm=ScriptedLLM(respond))
    assert report.rejected.get("duplicate") == 49
    names = {(f.head_name, f.relation, f.tail_name) for f in idx.store.graph.facts.all()}
    assert ("vessby", "lies on", "river orle") in names


def test_extraction_backend_errors_give_up_after_max_attempts(plain_index):
    idx = plain_index("llm+rules")
    llm = ScriptedLLM(lambda m, s, p: LLMError("connection refused"))
    report = idx.extract_graph(llm=llm)
    n = idx.store.docs.passage_count()
    attempts = idx.settings.index.extract_max_attempts
    assert len(llm.calls) == n * attempts and report.remaining == 0
    assert report.fallback == n
    assert all("connection refused" in r for _, r, _ in idx.store.graph.extractions.failures())
    failed_calls = idx.store.one("SELECT COUNT(*) FROM llm_calls WHERE ok = 0")[0]
    assert failed_calls == n * attempts


# -- the real model, starved of tokens --------------------------------------------------------------------

def test_real_model_with_tiny_max_tokens_records_failures_and_falls_back(bundled_model, copy_index):
    idx = copy_index("real", **{
        "llm.model": str(bundled_model), "llm.json_max_tokens": 8, "llm.answer_max_tokens": 8,
        "index.extract_max_tokens": 8, "index.extractor": "llm+rules", "neuropath.ner": "rules",
        "llm.n_threads": 1,  # llama.cpp spinning on every core is many times slower on a busy machine
    })
    report = idx.extract_graph()
    n = idx.store.docs.passage_count()
    assert report.passages == n and report.remaining == 0
    failures = idx.store.graph.extractions.failures()
    assert len(failures) == n and all(fb for _, _, fb in failures)
    assert {r for _, r, _ in failures} == {"reply cut at max_tokens before the JSON ended"}
    assert idx.store.graph.counts().facts > 0, "the rules fallback filled the graph"
    answer = Assistant(idx).ask(QUESTION, strategy="neuropath")
    rounds = [s for s in answer.retrieval.trace.steps if isinstance(s, RoundStep)]
    assert rounds and rounds[0].fallback
    assert "reply cut at max_tokens before the JSON ended" in rounds[0].errors
    assert answer.retrieval.passages
    assert any("cut at 8 tokens" in n for n in answer.notes)
    assert answer.text and answer.citations
    logged = idx.store.calls.totals_by_phase()
    assert logged["index"][0] == 2 * n and logged["track"][0] >= 2 and logged["answer"][0] == 1
