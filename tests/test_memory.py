"""Edge memories with NeuroPath: recall respects λ, memories die with their edges, repeats get cheaper."""

from __future__ import annotations

import numpy as np
import pytest

from localrag.api import Assistant, Index
from localrag.memory.settings import MemorySettings
from localrag.memory.edges import enhance
from localrag.retrieve.neuropath.recall import recall_paths

from scripted_llm import ScriptedLLM
from test_neuropath import QUESTION, graph_index, scripted_two_rounds  # noqa: F401  (fixture)


def fact_key(idx, name, head):
    (p,) = idx.store.docs.passages_of(name)
    (f,) = [f for f in idx.store.graph.facts.in_passage(p.id) if f.head_name == head]
    return ("fact", f.id, p.id), f


def test_recall_dfs_respects_lambda(graph_index, embedder):
    idx = graph_index
    q = embedder.encode_one(QUESTION)
    key, f = fact_key(idx, "mira.md", "mira okafor")
    seed = f.head
    cfg = MemorySettings(lam=0.5, knn_recall=False)
    assert recall_paths(idx.store, q, [seed], cfg).paths == []  # zero memory: w ≤ α < λ
    with idx.store.transaction():
        idx.store.memory.put(key, 0.3 * q)  # w ≈ 0.1·const + 0.27 < 0.5
    assert recall_paths(idx.store, q, [seed], cfg).paths == []
    with idx.store.transaction():
        idx.store.memory.put(key, enhance(np.zeros_like(q), q))  # w ≈ 0.573 + 0.1·const > 0.5
    got = recall_paths(idx.store, q, [seed], cfg)
    assert [p.text for p in got.paths] == ["mira okafor->leads->heron project; "]
    assert got.paths[0].recalled and got.strongest > 0.5
    cfg.lam = 0.9  # the same memory under a stricter λ is not followed
    assert recall_paths(idx.store, q, [seed], cfg).paths == []


def test_memories_vanish_with_their_edges(graph_index, embedder):
    idx = graph_index
    q = embedder.encode_one(QUESTION)
    key, _ = fact_key(idx, "heron.md", "heron project")
    with idx.store.transaction():
        idx.store.memory.put(key, enhance(np.zeros_like(q), q))
    assert idx.store.memory.count() == 1 and idx.store.one("SELECT COUNT(*) FROM edge_memory")[0] == 1
    (idx.folder / "heron.md").unlink()
    idx.sync()
    assert idx.store.memory.count() == 0
    assert idx.store.one("SELECT COUNT(*) FROM edge_memory")[0] == 0


def test_updates_only_touch_existing_edges(graph_index, embedder):
    from localrag.memory.edges import Feedback, apply

    q = embedder.encode_one(QUESTION)
    fb = Feedback(kept=[("fact", 99999, 1)], rejected=[])
    res = apply(graph_index.store, QUESTION, "neuropath", q, fb, MemorySettings())
    assert res.enhanced == 0 and res.skipped_missing == 1 and graph_index.store.memory.count() == 0


def test_second_ask_of_the_same_question_costs_fewer_calls(graph_index):
    llm = scripted_two_rounds()
    a = Assistant(graph_index, llm=llm)
    first = a.ask(QUESTION, strategy="neuropath")
    phases1 = [c.phase for c in first.calls]
    assert phases1 == ["ner", "track", "track", "answer"]
    stats = graph_index.store.memory.stats()
    assert stats.reinforced >= 2 and stats.queries_learned == 1
    second = a.ask(QUESTION, strategy="neuropath")
    phases2 = [c.phase for c in second.calls]
    assert phases2 == ["answer"]  # NER cached, tracking replaced by recall
    assert second.tokens < first.tokens / 2
    assert [sp.passage.path for sp in second.retrieval.passages[:2]] == ["mira.md", "heron.md"]
    assert any("skipped 2 rounds" in n for n in second.notes)
    # with memory off the same question pays for tracking again
    graph_index.settings.memory.enabled = False
    third = a.ask(QUESTION, strategy="neuropath")
    assert [c.phase for c in third.calls].count("track") == 2


def test_memory_survives_restart(graph_index, settings_for, embedder):
    llm = scripted_two_rounds()
    Assistant(graph_index, llm=llm).ask(QUESTION, strategy="neuropath")
    before = graph_index.store.memory.stats()
    settings = graph_index.settings
    graph_index.close()
    again = Index(settings, embedder)
    try:
        assert again.store.memory.stats() == before
        llm2 = scripted_two_rounds()
        ans = Assistant(again, llm=llm2).ask(QUESTION, strategy="neuropath")
        assert [c[0] for c in llm2.calls] == ["answer"]
    finally:
        again.close()


def test_memory_cli_stats_and_reset(graph_index):
    import subprocess
    import sys

    Assistant(graph_index, llm=scripted_two_rounds()).ask(QUESTION, strategy="neuropath")
    n = graph_index.store.memory.count()
    assert n > 0
    args = ["--db", str(graph_index.settings.db_path), str(graph_index.folder)]
    run = lambda *a: subprocess.run([sys.executable, "-m", "localrag", "memory", *a], capture_output=True, text=True, timeout=300)
    r = run("stats", *args)
    assert r.returncode == 0, r.stderr
    assert f"reinforced edges: {n}" in r.stdout and "queries learned:  1" in r.stdout
    r = run("reset", "--yes", *args)
    assert r.returncode == 0 and f"forgot {n} edge memories" in r.stdout
    assert graph_index.store.memory.count() == 0
