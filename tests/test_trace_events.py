"""Typed trace events: every step a real run records is typed, survives its JSON form, and every
reader copes with a step it does not know (a newer localrag's, a plugin's)."""

from __future__ import annotations

import dataclasses
import json

from localrag.answer.events import StrategyStep, from_trace_event
from localrag.answer.evidence import path_facts
from localrag.api import Assistant, memory_notes
from localrag.config import Settings
from localrag.records import Retrieval, Trace, observe_steps
from localrag.retrieve import strategy_names
from localrag.retrieve.neuropath import events as np_events
from localrag.retrieve.remind import events as remind_events
from localrag.retrieve.ppr import PPRSeedsStep as PprSeeds, Seed
from localrag.trace import TraceEvent, UnknownStep, event_from_json, event_json
from localrag.tui.pathtree import build_path_tree
from localrag_bench.neuropath_replay import completion_input
from localrag_bench.runner import memory_figures, tracking_summary

from scripted_llm import ScriptedLLM
from test_neuropath import QUESTION as NP_QUESTION
from test_neuropath import graph_index, scripted_two_rounds  # noqa: F401  (fixture)
from test_remind import QUESTION as REMIND_QUESTION
from test_remind import kb, navigator  # noqa: F401  (fixture)

NO_LLM = ("dense", "lexical", "hybrid", "ppr", "graph")


def _typed_and_round_trips(trace: Trace) -> None:
    assert trace.steps, f"{trace.strategy} recorded no step"
    for step in trace.steps:
        assert isinstance(step, TraceEvent) and not isinstance(step, UnknownStep), step
        assert dataclasses.is_dataclass(step) and type(step).__dataclass_params__.frozen
    stored = json.loads(json.dumps(trace.to_json()))  # what the query log and `--json` hold
    again = Trace.from_json(stored)
    assert again.strategy == trace.strategy and again.steps == trace.steps
    assert again.to_json()["steps"] == stored["steps"]


def test_every_step_of_a_real_run_is_typed_and_round_trips(kb):
    seen: set[tuple[str, str]] = set()
    for name in NO_LLM:
        trace = Assistant(kb, llm=object()).retrieve(REMIND_QUESTION, name, 5).trace
        _typed_and_round_trips(trace)
        seen |= {(name, s.step) for s in trace.steps}
    remind = Assistant(kb, llm=navigator())
    for _ in range(2):  # the second run recalls what the first taught (expansion, trusted recall)
        trace = remind.retrieve(REMIND_QUESTION, "remind", 5).trace
        _typed_and_round_trips(trace)
        seen |= {("remind", s.step) for s in trace.steps}
    assert {("dense", "knn"), ("lexical", "bm25"), ("hybrid", "rrf"), ("ppr", "graph"), ("ppr", "seeds"),
            ("ppr", "ppr"), ("graph", "fusion")} <= seen
    assert {("remind", k) for k in ("seeds", "config", "expansion", "judge", "move", "stop", "paths", "memory",
                                    "ranking")} <= seen


def test_every_step_of_a_neuropath_run_is_typed_and_round_trips(graph_index):
    trace = Assistant(graph_index, llm=scripted_two_rounds()).retrieve(NP_QUESTION, "neuropath", 5).trace
    _typed_and_round_trips(trace)
    assert {"ner", "query_entities", "seeds", "round", "memory", "completion"} <= {s.step for s in trace.steps}


def test_the_answer_step_and_the_fallbacks_are_typed_too(graph_index):
    def unusable(messages, schema, phase):
        if phase == "ner":
            return {"named_entities": ["Mira Okafor"]}
        return "not json" if phase == "track" else "Mira Okafor leads the Heron project [1]."

    answer = Assistant(graph_index, llm=ScriptedLLM(unusable)).ask(NP_QUESTION, strategy="neuropath")
    _typed_and_round_trips(answer.retrieval.trace)
    assert any(isinstance(s, np_events.MemoryAnswerStep) for s in answer.retrieval.trace.steps)
    nobody = ScriptedLLM(lambda m, s, p: {"named_entities": []})
    trace = Assistant(graph_index, llm=nobody).retrieve("what sells every morning?", "neuropath", 3).trace
    _typed_and_round_trips(trace)
    assert [s.step for s in trace.steps][-1] == "fallback"


def test_progress_events_come_from_the_typed_steps_as_they_happen(graph_index):
    heard: list[tuple[str, TraceEvent]] = []
    with observe_steps(lambda strategy, event: heard.append((strategy, event))):
        r = Assistant(graph_index, llm=scripted_two_rounds()).retrieve(NP_QUESTION, "neuropath", 5)
    assert [e for _, e in heard] == r.trace.steps and {s for s, _ in heard} == {"neuropath"}
    settings = Settings()
    settings.neuropath.max_hop = 2
    progress = [from_trace_event(e, 0.0, settings).to_json() for e in r.trace.steps]
    rounds = [p for p in progress if p["event"] == "tracking_round"]
    assert [(p["round"], p["of"], p["kept"]) for p in rounds] == [(1, 2, 1), (2, 2, 1)]
    assert next(p for p in progress if p["event"] == "seeds")["names"] == ("mira okafor",)
    ppr_seeds = PprSeeds((Seed(7, "vessby", 1.0, "span"),))
    assert from_trace_event(ppr_seeds, 0.0, settings).label() == "1 seed: vessby"
    round_one = next(e for e in r.trace.steps if e.step == "round")
    assert from_trace_event(round_one, 0.0, settings).label() == "tracking round 1 of 2: 1 path kept"


def test_the_stored_shape_is_the_documented_one():
    """docs/trace.md "Trace JSON": {"step": name, **fields}; "continue" keeps its key."""
    step = np_events.RoundStep(round=1, g="q", candidates=(np_events.CandidatePath(0, "a->b; ", 0.5, (3,)),),
                               selected=(0,), cont=0)
    data = event_json(step)
    assert data["step"] == "round" and data["continue"] == 0 and "cont" not in data
    assert data["candidates"] == [{"id": 0, "text": "a->b; ", "sim": 0.5, "docs": [3], "expandable": False,
                                   "recalled": False}]
    assert event_from_json("neuropath", data) == step
    # a step as localrag wrote it before the types (query logs): same keys, so it reads back typed
    old = {"step": "completion", "path_docs": [3, 9], "query": "q", "merge": "fused", "retriever": "hybrid",
           "path_ends": [4], "path_weight": 0.5, "fallback": True, "chain": "c", "requirement": "r",
           "graph": {"retriever": "ppr", "restart": [4, 5], "scored_passages": 2}}
    parsed = event_from_json("neuropath", old)
    assert isinstance(parsed, np_events.CompletionStep) and parsed.graph.restart == (4, 5)
    assert event_json(parsed) == old


def test_readers_do_not_fail_on_an_unknown_or_malformed_step():
    stored = {"strategy": "neuropath", "ms": 3.0, "steps": [
        {"step": "quantum_leap", "hops": [1, 2], "why": "a newer localrag"},
        {"step": "round", "candidates": "not a list"},  # malformed: kept as data, not typed wrongly
        {"step": "memory", "recalled_edges": 1, "enhanced": 2, "penalised": 0},
        {"no_step_key": True},
    ]}
    trace = Trace.from_json(stored)
    unknown, malformed, memory, nameless = trace.steps
    assert isinstance(unknown, UnknownStep) and unknown.name == "quantum_leap" and unknown.fields()["hops"] == [1, 2]
    assert isinstance(malformed, UnknownStep) and malformed.name == "round"
    assert isinstance(memory, np_events.MemoryStep) and memory.enhanced == 2
    assert isinstance(nameless, UnknownStep)
    assert trace.to_json()["steps"][0] == stored["steps"][0]
    tree = "\n".join(build_path_tree(trace).lines())
    assert "quantum_leap: hops=1, 2, why=a newer localrag" in tree
    progress = from_trace_event(unknown, 0.1, Settings())
    assert isinstance(progress, StrategyStep) and progress.label() == "quantum_leap"
    assert progress.to_json() == {"event": "step", "elapsed_s": 0.1, "name": "quantum_leap"}
    assert memory_notes(trace) == ["memory: recalled 1 edges; learned: +2 / −0 edges"]
    assert path_facts(Retrieval("q", [], trace)) == ""
    assert tracking_summary(trace) == {}
    assert memory_figures(trace)["enhanced"] == 2


def test_trace_view_prints_unknown_steps(capsys):
    from types import SimpleNamespace

    from localrag.commands.trace_view import print_trace

    trace = Trace.from_json({"strategy": "x", "steps": [{"step": "quantum_leap", "hops": [{"a": 1}]}]})
    print_trace(SimpleNamespace(retrieval=SimpleNamespace(trace=trace), calls=[]))
    out = capsys.readouterr().out
    assert "quantum_leap" in out and "hops (1)" in out and "a=1" in out


def test_a_result_file_record_reads_back_as_completion_input():
    record = {"seeds": [7221], "path_docs": [824, 689], "path_ends": [6127, 7173], "fallback": True,
              "chain": "c", "requirement": "r"}  # docs/results/2wiki-dev-neuropath-default.json's shape
    inp = completion_input(record)
    assert (inp.docs, inp.ends, inp.seeds, inp.fallback, inp.chain, inp.requirement) == \
        ((824, 689), (6127, 7173), (7221,), True, "c", "r")
    assert completion_input({}) == completion_input({"seeds": []})  # an older record: empty inputs


def test_the_bench_record_reads_each_step_through_its_own_methods():
    """A result record's ``tracking`` and ``memory``, from ``ranking_inputs`` / ``memory_figures``."""
    neuropath = Trace("neuropath")
    neuropath.add(np_events.SeedsStep(seeds=(np_events.SeedLink("Mira", "mira okafor", 12, 0.97),
                                             np_events.SeedLink("x", "y", 5, 0.8))))
    neuropath.add(np_events.MemoryStep(recalled_edges=3, from_knn=2, skipped_rounds=1, tokens_saved_est=1240,
                                       enhanced=4, penalised=1))
    neuropath.add(np_events.CompletionStep(path_docs=(3, 9), path_ends=(4,), fallback=True, chain="c", requirement="r"))
    neuropath.add(np_events.MemoryAnswerStep(cited=(3,), enhanced=2))
    assert tracking_summary(neuropath) == {"seeds": [12, 5], "path_docs": [3, 9], "path_ends": [4], "fallback": True,
                                           "chain": "c", "requirement": "r"}
    assert memory_figures(neuropath) == {"recalled_edges": 3, "from_knn": 2, "skipped_rounds": 1,
                                         "tokens_saved_est": 1240, "enhanced": 6, "penalised": 1}
    remind = Trace("remind")
    remind.add(remind_events.RemindSeedsStep(seeds=(remind_events.NodeSeed("a", 1, "entity", 0.9),)))
    remind.add(remind_events.RemindMemoryStep(recalled_edges=5, enhanced=2, penalised=3))
    remind.add(remind_events.RankingStep(collected=(7, 8), sufficient=True, recalled=(8,), fused=(7,)))
    assert tracking_summary(remind) == {"collected": [7, 8], "sufficient": True, "recalled": [8]}
    assert memory_figures(remind) == {"recalled_edges": 5, "from_knn": 0, "skipped_rounds": 0, "tokens_saved_est": 0,
                                      "enhanced": 2, "penalised": 3}
    answer_only = Trace("neuropath")
    answer_only.add(np_events.MemoryAnswerStep())
    assert memory_figures(answer_only) == dict.fromkeys(memory_figures(remind), 0), "a memory step, learning nothing"
    assert tracking_summary(Trace("dense")) == memory_figures(Trace("dense")) == {}


def test_every_declared_step_kind_has_a_unique_name_per_strategy():
    from localrag.trace import _EVENTS

    strategy_names()  # loads the built-in strategies, and with them their event modules
    for (strategy, step), cls in _EVENTS.items():
        assert cls.step == step and issubclass(cls, TraceEvent)
        fields = {f.metadata.get("json_name", f.name) for f in dataclasses.fields(cls)}
        assert "step" not in fields, f"{cls.__name__}: 'step' is the JSON key of the name"
