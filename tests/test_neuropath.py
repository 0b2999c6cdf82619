"""NeuroPath: pruning, coreference, ranking and a scripted 2-round trace over a real store."""

from __future__ import annotations

import json

import numpy as np
import pytest

from localrag.api import Assistant
from localrag.records import Triple
from localrag.retrieve.neuropath.events import (CompletionStep, MemoryAnswerStep, NerStep, RoundStep,
                                                SeedsStep)
from localrag.retrieve.neuropath.paths import Path, path_docs, prune, render, with_coref
from localrag.trace import FallbackStep

from scripted_llm import ScriptedLLM, line_id

NOTES = {
    "mira.md": "# Mira Okafor\n\nMira Okafor leads the Heron project at the institute.\n",
    "heron.md": "# Heron project\n\nThe Heron project is hosted in Vessby, in the old mill.\n",
    "vessby.md": "# Vessby\n\nVessby lies on the river Orle, north of the hills.\n",
    "bakery.md": "# Bakery\n\nThe bakery on Mill Street sells rye bread and plum cake every morning.\n",
}
TRIPLES = {
    "mira.md": [("mira okafor", "leads", "heron project")],
    "heron.md": [("heron project", "hosted in", "vessby")],
    "vessby.md": [("vessby", "lies on", "river orle")],
    "bakery.md": [("bakery", "sells", "rye bread")],
}
QUESTION = "On which river is the town where Mira Okafor's project is hosted?"


@pytest.fixture
def graph_index(graph_kb):
    # free-text answers: the scripted model answers with a sentence citing [n], which memory learns from
    return graph_kb(NOTES, TRIPLES, **{"neuropath.ner": "llm", "answer.mode": "free"})


def test_prune_keeps_top_k_by_cosine():
    paths = [Path(f"p{i}; ", (i,), i, (i,)) for i in range(6)]
    sims = np.array([0.1, 0.9, 0.5, 0.7, 0.9, 0.2])
    kept = prune(paths, sims, 3)
    assert [p.text for p in kept] == ["p1; ", "p4; ", "p3; "]  # ties keep generation order
    assert [p.sim for p in kept] == [0.9, 0.9, 0.7]


def test_coref_expansion_excludes_self_and_keeps_order():
    class G:
        def aliases(self, e):
            return {1: [(2, 0.9), (3, 0.85)], 2: [(1, 0.9)]}.get(e, [])

    assert with_coref(G(), [1, 2]) == [1, 2, 3]


def test_store_coref_never_lists_self(graph_index):
    for e, a, _ in graph_index.store.graph.coref.all():
        assert e != a


def test_render_marks_only_expandable():
    lines = render([Path("a->b->c; ", (1,), 7, (1,)), Path("c->d->e; ", (2,), 8, (2,))], {1}, {7: "c", 8: "e"})
    assert lines == ["0: a->b->c;", "1: c->d->e; <expandable>: [e]"]


def test_path_docs_in_llm_order_then_hop_order():
    ps = [Path("x", (1,), 0, (5, 3)), Path("y", (2,), 0, (3, 9))]
    assert path_docs(ps) == [5, 3, 9]


def scripted_two_rounds():
    def respond(messages, schema, phase):
        if phase == "ner":
            return {"named_entities": ["Mira Okafor"]}
        if phase == "track":
            user = messages[-1]["content"]
            if "hosted in" not in user:  # round 1
                i = line_id(messages, "mira okafor->leads->heron project")
                return {"current_chain": "Mira Okafor leads the Heron project.", "valid_ids": [i],
                        "expansion_requirements": "where the heron project is hosted", "need_expand_ids": [i], "continue": 1}
            i = line_id(messages, "heron project->hosted in->vessby")
            return {"current_chain": "Mira leads Heron, hosted in Vessby.", "valid_ids": [i],
                    "expansion_requirements": "which river vessby lies on", "need_expand_ids": [], "continue": 0}
        return "The river Orle [3]."

    return ScriptedLLM(respond)


def test_scripted_two_round_trace(graph_index):
    llm = scripted_two_rounds()
    a = Assistant(graph_index, llm=llm)
    r = a.retrieve(QUESTION, "neuropath", 5)
    rounds = [s for s in r.trace.steps if isinstance(s, RoundStep)]
    assert len(rounds) == 2
    assert rounds[0].g == QUESTION and rounds[1].g == "where the heron project is hosted"
    assert all(c.text.startswith("mira okafor->leads->heron project; ") for c in rounds[1].candidates[1:])
    paths = [sp.passage.path for sp in r.passages]
    # path documents first, in hop order, then completion (which finds the river note)
    assert paths[:2] == ["mira.md", "heron.md"]
    assert [sp.source for sp in r.passages[:2]] == ["path", "path"]
    assert "vessby.md" in paths[:3]
    assert [c[0] for c in llm.calls] == ["ner", "track", "track"]
    assert [c.phase for c in r.trace.calls] == ["ner", "track", "track"]
    assert r.trace.tokens_by_phase()["track"] > 0


def test_ner_is_cached_by_query_text(graph_index):
    llm = scripted_two_rounds()
    a = Assistant(graph_index, llm=llm)
    a.retrieve(QUESTION, "neuropath", 5)
    a.retrieve(QUESTION, "neuropath", 5)
    assert [c[0] for c in llm.calls].count("ner") == 1


def test_useless_model_reply_falls_back_to_embedding_order(graph_index):
    def respond(messages, schema, phase):
        if phase == "ner":
            return {"named_entities": ["Mira Okafor", "Invented Person"]}
        return "this is not json {"

    llm = ScriptedLLM(respond)
    r = Assistant(graph_index, llm=llm).retrieve(QUESTION, "neuropath", 5)
    ner = next(s for s in r.trace.steps if isinstance(s, NerStep))
    assert ner.grounded == ("Mira Okafor",)  # the invented entity is not in the question
    rnd = next(s for s in r.trace.steps if isinstance(s, RoundStep))
    assert rnd.fallback and rnd.selected
    assert r.passages[0].passage.path == "mira.md"
    assert [c[0] for c in llm.calls] == ["ner", "track", "track"]  # one repair retry, then fallback


def test_no_entities_means_dense_without_tracking(graph_index):
    llm = ScriptedLLM(lambda m, s, p: {"named_entities": []})
    graph_index.settings.neuropath.ner = "llm"
    r = Assistant(graph_index, llm=llm).retrieve("what sells every morning?", "neuropath", 3)
    assert any(isinstance(s, FallbackStep) for s in r.trace.steps)
    assert [c[0] for c in llm.calls] == ["ner"]
    assert r.passages[0].passage.path == "bakery.md"


def test_too_broad_selection_is_narrowed_by_similarity(graph_index):
    def respond(messages, schema, phase):
        if phase == "ner":
            return {"named_entities": ["Mira Okafor", "Vessby", "Heron project"]}
        n = sum(1 for line in messages[-1]["content"].splitlines() if line.split(":")[0].isdigit())
        return {"current_chain": "", "valid_ids": list(range(n)), "expansion_requirements": "",
                "need_expand_ids": [], "continue": 0}

    (p,) = graph_index.store.docs.passages_of("mira.md")
    extra = [("mira okafor", "leads", "heron project"), ("mira okafor", "born in", "vessby"),
             ("mira okafor", "works at", "institute"), ("mira okafor", "likes", "rye bread")]
    graph_index.store.graph.write_extraction(p.id, [Triple(*t) for t in extra], [], graph_index.embedder.encode)
    r = Assistant(graph_index, llm=ScriptedLLM(respond)).retrieve(QUESTION, "neuropath", 5)
    rnd = next(s for s in r.trace.steps if isinstance(s, RoundStep))
    assert len(rnd.candidates) == 4  # the four facts of the one grounded seed
    assert "too broad" in rnd.fallback and len(rnd.selected) == 3
    sims = {c.id: c.sim for c in rnd.candidates}
    assert sorted(sims.values(), reverse=True)[:3] == sorted((sims[i] for i in rnd.selected), reverse=True)


# -- completion: fusion weights, the graph list, offline replay ------------------------------------
def completion_step(r):
    return next(s for s in r.trace.steps if isinstance(s, CompletionStep))


def test_unusable_reply_lowers_the_path_list_weight(graph_index):
    graph_index.settings.memory.enabled = False  # the second ask must track again, not recall
    graph_index.settings.neuropath.path_weight, graph_index.settings.neuropath.fallback_weight = 1.0, 0.5
    good = Assistant(graph_index, llm=scripted_two_rounds()).retrieve(QUESTION, "neuropath", 5)
    assert completion_step(good).path_weight == 1.0 and completion_step(good).fallback is False

    def useless(messages, schema, phase):
        return {"named_entities": ["Mira Okafor"]} if phase == "ner" else "not json"

    bad = Assistant(graph_index, llm=ScriptedLLM(useless)).retrieve(QUESTION, "neuropath", 5)
    step = completion_step(bad)
    assert step.fallback is True and step.path_weight == 0.5


def test_graph_list_restarts_at_the_seeds_and_the_path_ends(graph_index):
    graph_index.settings.neuropath.completion = "hybrid"  # the hybrid completion's third list (graph_completion)
    r = Assistant(graph_index, llm=scripted_two_rounds()).retrieve(QUESTION, "neuropath", 5)
    step = completion_step(r)
    ids = graph_index.store.graph.entities.ids(["mira okafor", "vessby"])
    assert step.path_ends == (ids["vessby"],)  # the open end of heron project->hosted in->vessby
    assert {ids["mira okafor"], ids["vessby"]} <= set(step.graph.restart)
    assert step.graph.scored_passages > 0
    # the river note is reached by the walk from the path's end: it ranks right after the path docs
    assert [sp.passage.path for sp in r.passages[:3]] == ["mira.md", "heron.md", "vessby.md"]
    graph_index.settings.neuropath.graph_completion = "none"
    r2 = Assistant(graph_index, llm=scripted_two_rounds()).retrieve(QUESTION, "neuropath", 5)
    assert completion_step(r2).graph is None


def test_a_bench_record_replays_to_the_same_ranking(graph_index):
    from localrag_bench.neuropath_replay import completion_input
    from localrag_bench.runner import tracking_summary
    from localrag.records import Trace
    from localrag.retrieve.neuropath import fuse

    a = Assistant(graph_index, llm=scripted_two_rounds())
    r = a.retrieve(QUESTION, "neuropath", 5)
    t = tracking_summary(r.trace)
    assert t["path_docs"] and t["seeds"] and "chain" in t and t["fallback"] is False
    inp = completion_input(json.loads(json.dumps(t)))  # as a result file holds it
    again = fuse(a.context(), QUESTION, inp, 5, Trace("neuropath"))
    assert [sp.passage.id for sp in again.passages] == [sp.passage.id for sp in r.passages]
    assert tracking_summary(Assistant(graph_index, llm=object()).retrieve(QUESTION, "hybrid", 5).trace) == {}


def test_a_chain_that_says_none_of_the_question_words_adds_nothing(graph_index):
    """SmolLM2 has answered timestamps as its chain: such a run is set aside, the fusion ranks alone."""
    import dataclasses
    from localrag_bench.neuropath_replay import completion_input
    from localrag_bench.runner import tracking_summary
    from localrag.records import Trace
    from localrag.retrieve.graph import graph_ranked
    from localrag.retrieve.neuropath import fuse
    from localrag.retrieve.neuropath.completion import grounded

    a = Assistant(graph_index, llm=scripted_two_rounds())
    inp = completion_input(tracking_summary(a.retrieve(QUESTION, "neuropath", 5).trace))
    assert grounded(QUESTION, inp) and inp.docs
    noise = dataclasses.replace(inp, chain="2018-01-01T00:00:00Z", requirement="2018-01-01T00:00:00Z")
    assert not grounded(QUESTION, noise)
    trace = Trace("neuropath")
    got = fuse(a.context(), QUESTION, noise, 5, trace)
    assert [sp.passage.id for sp in got.passages] == [pid for pid, _ in graph_ranked(a.context(), QUESTION, 5)[0]]
    assert completion_step(got).set_aside and not any(sp.source == "path" for sp in got.passages)


def test_stand_in_paths_cited_by_the_answer_are_learned(graph_index):
    """An unusable tracking reply teaches nothing, but the answer's citations do: the repeat recalls."""
    def respond(messages, schema, phase):
        if phase == "ner":
            return {"named_entities": ["Mira Okafor"]}
        if phase == "track":
            return "not json"
        return "Mira Okafor leads the Heron project [1]."

    a = Assistant(graph_index, llm=ScriptedLLM(respond))
    first = a.ask(QUESTION, strategy="neuropath")
    assert first.retrieval.passages[0].passage.path == "mira.md"
    learned = next(s for s in first.retrieval.trace.steps if isinstance(s, MemoryAnswerStep))
    assert learned.enhanced >= 1 and any("mira okafor->leads" in p for p in learned.paths)
    assert any("learned from the answer" in n for n in first.notes)
    second = a.ask(QUESTION, strategy="neuropath")
    assert [c.phase for c in second.calls] == ["answer"]  # NER cached, tracking replaced by recall
    # nothing cited (or memory off): nothing learned
    graph_index.store.memory.reset()
    silent = Assistant(graph_index, llm=ScriptedLLM(lambda m, s, p: respond(m, s, p) if p != "answer" else "No idea."))
    r = silent.ask(QUESTION, strategy="neuropath")
    assert next(s for s in r.retrieval.trace.steps if isinstance(s, MemoryAnswerStep)).enhanced == 0
    assert graph_index.store.memory.count() == 0


def test_common_nouns_from_ner_are_not_seeds(graph_index):
    """A weak model's NER often returns 'river' or 'film': grounded in the question, but no name."""
    from localrag.retrieve.neuropath import is_named

    def respond(messages, schema, phase):
        if phase == "ner":
            return {"named_entities": ["river", "town", "Mira Okafor"]}
        return scripted_two_rounds().respond(messages, schema, phase)

    r = Assistant(graph_index, llm=ScriptedLLM(respond)).retrieve(QUESTION, "neuropath", 5)
    ner = next(s for s in r.trace.steps if isinstance(s, NerStep))
    assert ner.grounded == ("Mira Okafor",) and ner.generic == ("river", "town")
    assert [s.entity for s in next(s for s in r.trace.steps if isinstance(s, SeedsStep)).seeds] == ["mira okafor"]
    q = "Which film has the director who was born earlier, A Romance Of The Air or How Moscha Came Back?"
    assert [e for e in ("film", "director", "A Romance Of The Air", "Moscha", "Which") if is_named(e, q)] == \
        ["A Romance Of The Air", "Moscha"]
    assert is_named("heron project", "who leads the heron project?")  # no capitals anywhere: no signal
    assert is_named("1984", "Who wrote the novel published in 1984?")


def test_completion_from_the_graph_fusion_keeps_its_top_when_the_model_picks_badly(graph_index):
    """A wrong path choice can add a passage, not push the fusion's leaders out of the top ranks."""
    from localrag.retrieve import get_strategy

    def wrong(messages, schema, phase):
        if phase == "ner":
            return {"named_entities": ["Mira Okafor"]}
        return {"current_chain": "", "valid_ids": [0], "expansion_requirements": "", "need_expand_ids": [],
                "continue": 0}

    assert graph_index.settings.neuropath.completion == "graph"
    fusion = get_strategy("graph").retrieve(Assistant(graph_index).context(), QUESTION, 5)
    r = Assistant(graph_index, llm=ScriptedLLM(wrong)).retrieve(QUESTION, "neuropath", 5)
    top = [sp.passage.path for sp in r.passages[:3]]
    assert [sp.passage.path for sp in fusion.passages[:2]] == top[:2] or set(top[:3]) >= {
        sp.passage.path for sp in fusion.passages[:2]}
    assert completion_step(r).graph.retriever == "graph"
