"""The `remind` strategy (ReMindRAG's pipeline): walk control flow, caps, valid-path rule, memory.

A small real store (real SQLite + sqlite-vec, real MiniLM) with hand-written triples; the
LLM is scripted for control flow, and the last test runs the real bundled SmolLM2.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

from localrag.api import Assistant, Index
from localrag.memory.edges import enhance, readout
from localrag.retrieve.remind.dfs import Step, expand, valid_steps
from localrag.retrieve.remind.graph import Edge, RemindGraph, entity, passage
from localrag.retrieve.remind.strategy import fused_passages
from localrag.trace import event_name

from scripted_llm import ScriptedLLM

NOTES = {
    "mira.md": "# Mira Okafor\n\nMira Okafor leads the Heron project at the institute.\n",
    "heron.md": "# Heron project\n\nThe Heron project is hosted in Vessby, in the old mill.\n",
    "vessby.md": "# Vessby\n\nVessby lies on the river Orle, north of the hills.\n",
    "bakery.md": "# Bakery\n\nThe bakery on Mill Street sells rye bread and plum cake every morning.\n",
    "institute.md": "# The institute\n\nThe institute employs Mira Okafor and runs a choir on Fridays.\n",
}
TRIPLES = {
    "mira.md": [("mira okafor", "leads", "heron project"), ("heron project", "based at", "institute")],
    "heron.md": [("heron project", "hosted in", "vessby"), ("vessby", "has", "old mill")],
    "vessby.md": [("vessby", "lies on", "river orle")],
    "bakery.md": [("bakery", "sells", "rye bread")],
    "institute.md": [("institute", "employs", "mira okafor"), ("institute", "runs", "choir")],
}
QUESTION = "On which river is the town where Mira Okafor's project is hosted?"
USEFUL = ("mira.md", "heron.md", "vessby.md")


@pytest.fixture
def kb(graph_kb):
    return graph_kb(NOTES, TRIPLES, **{"remind.rank": "collected-first"})  # the paper's ranking: walk tests


def pid(idx, name: str) -> int:
    (p,) = idx.store.docs.passages_of(name)
    return p.id


# -- a scripted model that reads the prompts ------------------------------------------------------
def options(messages) -> dict[str, str]:
    """Offered ids -> their line, from a next-node prompt."""
    out = {}
    for line in messages[-1]["content"].splitlines():
        m = re.match(r"^([cb]\d+): (.*)$", line)
        if m:
            out[m.group(1)] = m.group(2)
    return out


def sources(messages) -> dict[str, int]:
    """File name -> passage id of the passages shown in a prompt."""
    return {src.split(":")[0]: int(i) for i, src in re.findall(r'<passage id="(\d+)" source="([^"]+)"', messages[-1]["content"])}


def navigator(policy: str = "smart", judge: str = "smart", label: str = "useful"):
    """policy: smart (heron project, then vessby, else back to mira.md), backtrack, first, invalid."""

    def respond(messages, schema, phase):
        props = (schema or {}).get("properties", {})
        if phase == "memory":
            if label == "garbage":
                return "no idea"
            shown = sources(messages)
            return {"edges": [], "chunks": [shown[n] for n in USEFUL if n in shown]}
        if "sufficient" in props:
            enough = judge == "smart" and {"heron.md", "vessby.md"} <= set(sources(messages))
            return {"reason": "checked", "sufficient": "yes" if enough else "no"}
        if "choice" in props:
            opts = options(messages)
            if policy == "invalid":
                return {"reason": "my pick", "choice": "c99"}
            if policy == "backtrack":
                return {"reason": "again", "choice": next((i for i in opts if i.startswith("b")), "c1" if "c1" in opts else "stop")}
            if policy == "first":
                return {"reason": "first", "choice": "c1" if "c1" in opts else next(iter(opts), "stop")}
            for needle in ('entity "heron project"', 'entity "vessby"'):
                for i, line in opts.items():
                    if i.startswith("c") and line.startswith(needle):
                        return {"reason": "follow the project", "choice": i}
            for i, line in opts.items():
                if i.startswith("b") and "mira.md" in line:
                    return {"reason": "back", "choice": i}
            return {"reason": "done", "choice": "stop"}
        return "summary"

    return ScriptedLLM(respond)


def steps(r, name):
    return [s for s in r.trace.steps if event_name(s) == name]


# -- the walk -------------------------------------------------------------------------------------
def test_walk_uses_shortcut_choice_backtrack_and_stops_when_judged_sufficient(kb):
    llm = navigator()
    r = Assistant(kb, llm=llm).retrieve(QUESTION, "remind", 5)
    moves = steps(r, "move")
    assert [m.kind for m in moves] == ["shortcut", "backtrack", "choice", "shortcut", "choice", "shortcut"]
    assert moves[0].at == 'entity "mira okafor"' and "institute.md" in moves[0].to  # no LLM call for it
    assert "mira.md" in moves[1].to  # back to the seed passage, which still has unexplored neighbours
    assert moves[2].to == 'entity "heron project"'
    assert all(isinstance(c.w, float) for c in moves[2].candidates)
    stop = steps(r, "stop")[0]
    assert stop.reason == "sufficient" and stop.jumps == 5 and stop.iterations == 6
    judged = [j.sufficient for j in steps(r, "judge")]
    assert judged == ["no", "no", "no", "yes"]  # the seeds, then after each collected passage
    # R10: the model sees each candidate's weight
    nexts = [m for p, m in llm.calls if p == "traverse" and "Candidates:" in m[-1]["content"]]
    assert len(nexts) == 3 and re.search(r"\(w \d\.\d\d\)", nexts[0][-1]["content"])
    # phases: traversal calls, then one labelling call; the trace holds every call with tokens
    assert [p for p, _ in llm.calls] == ["traverse"] * 7 + ["memory"]
    assert len(r.trace.calls) == 8 and all(c.prompt_tokens > 0 for c in r.trace.calls)
    ranked = [(sp.passage.path, sp.source) for sp in r.passages]
    assert ranked[:4] == [("mira.md", "seed"), ("institute.md", "path"), ("heron.md", "path"), ("vessby.md", "path")]
    assert ranked[4] == ("bakery.md", "dense") and len(ranked) == 5
    mem = steps(r, "memory")[0]
    # seed passage mira.md -> heron project -> heron.md -> vessby -> vessby.md is valid; the institute branch is not
    assert mem.mode == "labelled" and (mem.valid, mem.invalid, mem.enhanced) == (4, 1, 4)
    assert kb.store.memory.count() == 4


@pytest.mark.parametrize("trust", [True, False])
def test_same_question_again_makes_fewer_calls(kb, trust):
    kb.settings.remind.trust_recall = trust
    first = Assistant(kb, llm=navigator()).retrieve(QUESTION, "remind", 5)
    before = kb.store.memory.stats()
    llm = navigator()
    second = Assistant(kb, llm=llm).retrieve(QUESTION, "remind", 5)
    if trust:  # every recalled edge reads >= memory.skip_above after one enhancement: no judge, no walk
        assert len(second.trace.calls) == 0 < len(first.trace.calls) == 8 and llm.calls == []
        assert "walk skipped" in steps(second, "stop")[0].reason and not steps(second, "judge")
    else:
        assert len(second.trace.calls) == 1 < len(first.trace.calls) == 8
        assert [p for p, _ in llm.calls] == ["traverse"]  # one judge call, yes at once
    exp = steps(second, "expansion")[0]
    assert exp.recalled_edges == 4 and exp.passages == (pid(kb, "heron.md"), pid(kb, "vessby.md"))
    assert all(e.w > kb.settings.memory.lam for e in exp.edges)
    assert {sp.passage.path for sp in second.passages[:3]} == set(USEFUL)
    assert [sp.source for sp in second.passages[:3]] == ["seed", "memory", "memory"]
    assert steps(second, "stop")[0].jumps == 0
    mem = steps(second, "memory")[0]
    if trust:  # nothing new was checked: a memory never confirms itself
        assert mem.enhanced == 0 and "trusted recall" in mem.mode
        assert kb.store.memory.stats() == before
        return
    # R15, default "reinforce": memory alone was judged sufficient, so its edges are enhanced once more
    assert mem.enhanced == 4 and "zero-jump" in mem.mode
    after = kb.store.memory.stats()
    assert min(after.norms) > max(before.norms) and after.updates == before.updates + 4


def test_zero_jump_skip_leaves_memory_alone(kb):
    kb.settings.remind.trust_recall = False  # the judge runs, says yes at once: a zero-jump run
    Assistant(kb, llm=navigator()).retrieve(QUESTION, "remind", 5)
    before = kb.store.memory.stats()
    kb.settings.remind.zero_jump = "skip"
    r = Assistant(kb, llm=navigator()).retrieve(QUESTION, "remind", 5)
    assert len(r.trace.calls) == 1 and steps(r, "memory")[0].enhanced == 0
    assert kb.store.memory.stats() == before


def test_memory_off_neither_reads_nor_writes(kb):
    kb.settings.memory.enabled = False
    r = Assistant(kb, llm=navigator()).retrieve(QUESTION, "remind", 5)
    assert kb.store.memory.count() == 0 and not steps(r, "memory")
    assert [c.phase for c in r.trace.calls] == ["traverse"] * 7  # no labelling call
    kb.settings.memory.enabled = True
    Assistant(kb, llm=navigator()).retrieve(QUESTION, "remind", 5)
    learned = kb.store.memory.stats()
    kb.settings.memory.enabled = False
    again = Assistant(kb, llm=navigator()).retrieve(QUESTION, "remind", 5)
    assert steps(again, "expansion")[0].recalled_edges == 0 and len(again.trace.calls) == 7
    assert kb.store.memory.stats() == learned


def test_expansion_respects_lambda(kb, embedder):
    q = embedder.encode_one(QUESTION)
    seed = entity(kb.store.graph.entities.id("mira okafor"))
    key = ("mention", seed.id, pid(kb, "institute.md"))

    def recalled(lam):
        return [s.edge.key for s in expand(RemindGraph(kb.store, q, 0.1), [seed], lam, {seed}).steps]

    assert recalled(0.5) == []  # cold start: w ≤ α < λ
    with kb.store.transaction():
        kb.store.memory.put(key, 0.3 * q)  # w ≈ 0.1·const + 0.27
    assert recalled(0.5) == [] and recalled(0.25) == [key]
    with kb.store.transaction():
        kb.store.memory.put(key, enhance(np.zeros_like(q), q))  # one reinforcement: w ≈ 0.573 + 0.1·const
    assert recalled(0.5) == [key] and recalled(0.9) == []


def test_memory_off_graph_reads_every_memory_as_zero(kb, embedder):
    """--no-memory must be a clean control: stored memories do not change the weights shown to the model."""
    q = embedder.encode_one(QUESTION)
    seed = entity(kb.store.graph.entities.id("mira okafor"))
    key = ("mention", seed.id, pid(kb, "institute.md"))
    with kb.store.transaction():
        kb.store.memory.put(key, enhance(np.zeros_like(q), q))
    on = expand(RemindGraph(kb.store, q, 0.1), [seed], 0.25, {seed}).steps
    off = expand(RemindGraph(kb.store, q, 0.1, use_memory=False), [seed], 0.25, {seed}).steps
    assert [s.edge.key for s in on] == [key]
    assert off == []


@pytest.mark.parametrize("penalty", ["intended", "off"])
def test_recalled_edge_that_did_not_help_is_penalised(kb, embedder, penalty):
    kb.settings.memory.penalty = penalty
    kb.settings.remind.trust_recall = False  # a recalled edge is judged and walked past, then penalised
    q = embedder.encode_one(QUESTION)
    key = ("mention", kb.store.graph.entities.id("mira okafor"), pid(kb, "institute.md"))
    with kb.store.transaction():
        kb.store.memory.put(key, enhance(np.zeros_like(q), q))  # a memory that points at the wrong note
    r = Assistant(kb, llm=navigator()).retrieve(QUESTION, "remind", 5)
    assert steps(r, "expansion")[0].passages == (pid(kb, "institute.md"),)
    mem = steps(r, "memory")[0]
    v = kb.store.memory.get([key])[key]
    if penalty == "intended":
        assert mem.penalised == 1
        # s = 2/π shrinks by the factor 1 − max(δ(s), s)
        assert float(np.dot(q, v)) == pytest.approx((2 / np.pi) * (1 - 2 / np.pi), abs=1e-3)
        assert readout(0.5, v, q, 0.1) < kb.settings.memory.lam
    else:
        assert mem.penalised == 0 and float(np.dot(q, v)) == pytest.approx(2 / np.pi, abs=1e-4)


def test_long_passages_are_summarised_for_the_query(kb):
    kb.settings.remind.summary_threshold_tokens = 12  # the notes are short: make every one "long"

    def respond(messages, schema, phase):
        if schema is None:  # the summary call: free text
            source = re.findall(r'source="([^":]+)', messages[-1]["content"])[-1]  # the passage to summarise comes last
            return f"SUMMARY OF {source}"
        props = schema["properties"]
        if "sufficient" in props:
            return {"reason": "", "sufficient": "yes" if "SUMMARY OF institute.md" in messages[-1]["content"] else "no"}
        return {"edges": [], "chunks": []}

    llm = ScriptedLLM(respond)
    r = Assistant(kb, llm=llm).retrieve(QUESTION, "remind", 5)
    assert [s.passage for s in steps(r, "summary")] == [pid(kb, "mira.md"), pid(kb, "institute.md")]
    judge_prompts = [m[-1]["content"] for p, m in llm.calls if p == "traverse" and "Are they enough?" in m[-1]["content"]]
    assert "SUMMARY OF mira.md" in judge_prompts[0] and "leads the Heron project" not in judge_prompts[0]
    assert steps(r, "stop")[0].reason == "sufficient"
    # summary, judge, (shortcut) summary, judge, labelling
    assert [c.phase for c in r.trace.calls] == ["traverse"] * 4 + ["memory"]


def test_failed_labelling_changes_no_memory(kb):
    r = Assistant(kb, llm=navigator(label="garbage")).retrieve(QUESTION, "remind", 5)
    mem = steps(r, "memory")[0]
    assert mem.mode.startswith("no update: labelling failed") and mem.enhanced == 0
    assert [c.phase for c in r.trace.calls].count("memory") == 3  # choice_attempts tries, then given up
    assert kb.store.memory.count() == 0


def test_index_without_a_graph_walks_the_passage_chain(tmp_path, settings_for, embedder):
    d = tmp_path / "plain"
    d.mkdir()
    harbour = "The harbour of Kestrel Bay was dredged in the spring. " * 14
    keeper = "The lighthouse keeper of Kestrel Bay is Ansel Voss; he paints the tower every autumn. " * 8
    (d / "kestrel.md").write_text(f"# Kestrel Bay\n\n## Harbour\n\n{harbour}\n\n## Lighthouse\n\n{keeper}\n")
    (d / "bakery.md").write_text(NOTES["bakery.md"])
    idx = Index(settings_for(d), embedder)
    try:
        idx.sync()
        first, second = idx.store.docs.passages_of("kestrel.md")
        assert idx.store.graph.counts().entities == 0

        def respond(messages, schema, phase):
            props = (schema or {}).get("properties", {})
            if "sufficient" in props:
                return {"reason": "", "sufficient": "yes" if "Ansel Voss" in messages[-1]["content"] else "no"}
            if "choice" in props:
                opts = options(messages)
                return {"reason": "", "choice": next(i for i, line in opts.items() if "next passage" in line)}
            return {"edges": [0], "chunks": [second.id]}

        llm = ScriptedLLM(respond)
        r = Assistant(idx, llm=llm).retrieve("When was the harbour of Kestrel Bay dredged?", "remind", 3)
        assert [s.kind for s in steps(r, "seeds")[0].seeds] == ["passage"]
        assert [sp.passage.id for sp in r.passages[:2]] == [first.id, second.id]
        assert steps(r, "stop")[0].reason == "sufficient"
        # the walked "next" edge is the one remembered
        assert idx.store.memory.keys() == [("next", first.id, second.id)]
    finally:
        idx.close()


# -- R5: hard caps ----------------------------------------------------------------------------------
@pytest.mark.parametrize("policy,caps,reason", [
    ("invalid", {}, "no valid choice in 3 attempts"),
    ("invalid", {"max_llm_calls": 4}, "LLM call budget spent"),
    ("backtrack", {"max_llm_calls": 100}, "max_iterations (20) reached"),
    ("backtrack", {}, "LLM call budget spent"),
    ("first", {"max_jumps": 3}, "max_jumps (3) reached"),
])
def test_caps_stop_a_model_that_is_never_satisfied(kb, policy, caps, reason):
    for name, value in caps.items():
        setattr(kb.settings.remind, name, value)
    cfg = kb.settings.remind
    llm = navigator(policy=policy, judge="never")
    r = Assistant(kb, llm=llm).retrieve(QUESTION, "remind", 5)
    stop = steps(r, "stop")[0]
    assert stop.reason.startswith(reason)
    assert len(llm.calls) == len(r.trace.calls) <= cfg.max_llm_calls
    assert stop.jumps <= cfg.max_jumps and stop.iterations <= 2 * cfg.max_jumps
    assert r.passages  # a capped walk still returns its passages (and the back-fill)
    if policy == "invalid" and not caps:
        assert len(llm.calls) == 5  # 2 judges, 3 tries of one choice
        assert steps(r, "memory")[0].mode == "no update: the walk ended on invalid choices"


# -- ranking onto the no-LLM fusion --------------------------------------------------------------------
@pytest.mark.parametrize("confirmed_only", [True, False])
def test_a_walk_never_judged_sufficient_leaves_the_graph_ranking_alone(kb, confirmed_only):
    kb.settings.remind.rank = "graph"
    kb.settings.remind.confirmed_only = confirmed_only
    kb.settings.memory.enabled = False
    r = Assistant(kb, llm=navigator(policy="first", judge="never")).retrieve(QUESTION, "remind", 5)
    ranking = steps(r, "ranking")[0]
    assert not ranking.sufficient and len(ranking.collected) >= 3
    graph = [sp.passage.id for sp in Assistant(kb).retrieve(QUESTION, "graph", 5).passages]
    if confirmed_only:  # exploration the judge never vouched for: set aside, the fusion's list as it is
        assert ranking.fused == () and [sp.passage.id for sp in r.passages] == graph
        assert all(sp.source not in ("path", "seed", "memory") for sp in r.passages)
    else:
        assert ranking.fused == ranking.collected
        assert any(sp.source == "path" for sp in r.passages)


def test_a_walk_judged_sufficient_is_fused_onto_the_graph_ranking(kb):
    kb.settings.remind.rank = "graph"
    r = Assistant(kb, llm=navigator()).retrieve(QUESTION, "remind", 5)
    ranking = steps(r, "ranking")[0]
    assert ranking.sufficient and ranking.fused == ranking.collected
    assert {pid(kb, n) for n in USEFUL} <= set(ranking.fused)
    graph = [sp.passage.id for sp in Assistant(kb).retrieve(QUESTION, "graph", 5).passages]
    keep = kb.settings.remind.keep_top
    assert [sp.passage.id for sp in r.passages[:keep]] == graph[:keep], "the fusion's head stays in place"
    assert set(USEFUL) <= {sp.passage.path for sp in r.passages} and any(sp.source == "path" for sp in r.passages)


def test_an_unconfirmed_walk_keeps_only_what_memory_recalled():
    assert fused_passages([4, 7, 9], [9, 2], sufficient=False, confirmed_only=True) == [9]
    assert fused_passages([4, 7, 9], [9, 2], sufficient=True, confirmed_only=True) == [4, 7, 9]
    assert fused_passages([4, 7, 9], [], sufficient=False, confirmed_only=False) == [4, 7, 9]


# -- the valid-path rule (R6), on a hand-made path list ----------------------------------------------
def _step(key, src, dst) -> Step:
    return Step(Edge(key, src, dst), "choice", 0.0)


def test_valid_path_rule_marks_routes_from_seeds_to_useful_targets():
    s, a, b, c, d = entity(1), entity(2), entity(3), entity(4), entity(5)
    p_useful, p_other = passage(10), passage(11)
    path = [
        _step(("fact", 1, 100), s, a),  # 0: seed -> a
        _step(("fact", 2, 100), a, b),  # 1: a -> b, labelled useful (two hops from the seed)
        _step(("fact", 3, 100), s, c),  # 2: unrelated branch
        _step(("mention", 4, 11), c, p_other),  # 3: unrelated branch into a useless passage
        _step(("fact", 5, 100), d, b),  # 4: labelled useful, but no seed reaches d
    ]
    assert valid_steps([s], path, {1, 4}, set()) == [0, 1]
    # a useful passage three hops away validates the whole route to it, and nothing else
    path2 = path[:2] + [_step(("mention", 3, 10), b, p_useful)] + path[2:4]
    assert valid_steps([s], path2, set(), {10}) == [0, 1, 2]
    # reached from two seeds, an edge is still valid once (enhanced once)
    assert valid_steps([s, a], path2 + [path2[1]], set(), {10}) == [0, 1, 2]
    assert valid_steps([s], path, set(), set()) == []


# -- end to end with the real bundled model ------------------------------------------------------------
def test_remind_end_to_end_with_the_bundled_model(kb, bundled_model):
    kb.settings.llm.model = str(bundled_model)
    kb.settings.remind.max_jumps = 3
    kb.settings.remind.max_llm_calls = 8
    kb.settings.remind.seed_passages = 0  # nothing collected before the walk: at least one move, then the judge
    kb.settings.answer.mode = "free"  # the bundled model writes the answer too (a short one it would not pick)
    answer = Assistant(kb).ask(QUESTION, strategy="remind")
    r = answer.retrieval
    stop = steps(r, "stop")[0]
    assert stop.reason and 1 <= stop.jumps <= 3 and stop.iterations <= 6
    assert steps(r, "move")[0].kind == "shortcut"
    assert len(r.trace.calls) <= 8 and {c.phase for c in r.trace.calls} <= {"traverse", "memory"}
    assert all(c.prompt_tokens > 0 and c.completion_tokens > 0 for c in r.trace.calls)
    assert steps(r, "memory")[0].mode  # labelled, or why memory was not updated
    assert [c.phase for c in answer.calls].count("answer") == 1
    assert len(answer.calls) == len(r.trace.calls) + 1
    assert r.passages and r.passages[0].source == "path"
    assert len({sp.passage.id for sp in r.passages}) == len(r.passages) >= 5
    assert answer.text and answer.citations
