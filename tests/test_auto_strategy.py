"""`auto` decides by the answer model's size (GGUF metadata, no weights loaded) and the graph's state."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from localrag.api import Assistant, Index
from localrag.llm.model_info import ModelSize, gguf_size

from scripted_llm import ScriptedLLM

NOTES = {
    "mira.md": "# Mira Okafor\n\nMira Okafor leads the Heron project at the institute.\n",
    "heron.md": "# Heron project\n\nThe Heron project is hosted in Vessby, in the old mill.\n",
}


class SizedLLM(ScriptedLLM):
    """A scripted backend that reports a model size, as LlamaCppLLM does from its GGUF."""

    def __init__(self, params: int, label: str):
        super().__init__(lambda messages, schema, phase: "unused")
        self._size = ModelSize(params, label, "scripted-" + label, "scripted metadata")

    def model_size(self) -> ModelSize:
        return self._size


@pytest.fixture
def index_with_graph(graph_kb):
    return graph_kb(NOTES, {"mira.md": [("mira okafor", "leads", "heron project")],
                            "heron.md": [("heron project", "hosted in", "vessby")]})


def test_the_bundled_model_resolves_to_the_fusion_from_its_metadata(index_with_graph, bundled_model):
    size = gguf_size(bundled_model)
    assert 100e6 < size.params < 200e6 and size.label == "135M" and size.source == "GGUF metadata"
    assistant = Assistant(index_with_graph)  # the configured model: discovery finds the bundled SmolLM2
    res = assistant.resolve("auto")
    assert res.strategy == "graph" and "135M" in res.reason and "below" in res.reason
    assert assistant._llm is None  # deciding loaded no model


def test_a_large_model_gets_neuropath_once_the_graph_is_built(index_with_graph, tmp_path, settings_for, embedder):
    big = SizedLLM(14_800_000_000, "14B")
    res = Assistant(index_with_graph, llm=big).resolve("auto")
    assert res.strategy == "neuropath" and "14B" in res.reason
    assert Assistant(index_with_graph, llm=SizedLLM(494_000_000, "0.5B")).resolve("auto").strategy == "graph"
    d = tmp_path / "fresh"
    d.mkdir()
    (d / "a.md").write_text(NOTES["mira.md"])
    fresh = Index(settings_for(d), embedder)
    fresh.sync()  # passages queued for extraction, no facts yet
    res = Assistant(fresh, llm=big).resolve("auto")
    assert res.strategy == "graph" and "still being built" in res.reason
    assert Assistant(fresh, llm=big).resolve("lexical").strategy == "lexical"
    fresh.close()


def test_size_threshold_and_unknown_sizes_are_settings(index_with_graph, tmp_path, settings_for, embedder):
    served = Index(settings_for(index_with_graph.folder, **{"llm.url": "http://127.0.0.1:9", "db": str(tmp_path / "s.db")}),
                   embedder)
    try:
        res = Assistant(served).resolve("auto")
        assert res.strategy == "graph" and "served model" in res.reason  # unknown size: no LLM steps
    finally:
        served.close()
    big_served = Index(settings_for(index_with_graph.folder, **{"llm.url": "http://127.0.0.1:9", "llm.params": 14_800_000_000,
                                                                "db": str(tmp_path / "b.db")}), embedder)
    try:  # a served model never gets copy's thousands of spans by default, whatever its size
        assert Assistant(big_served).resolve_pick() == "model"
    finally:
        big_served.close()
    lowered = SizedLLM(494_000_000, "0.5B")
    index_with_graph.settings.auto_min_params = 400_000_000
    assert Assistant(index_with_graph, llm=lowered).resolve("auto").strategy == "neuropath"


@pytest.mark.parametrize("params,label,pick", [(90_000_000, "90M", "ranking"), (135_000_000, "135M", "model"),
                                               (494_000_000, "0.5B", "copy"), (14_800_000_000, "14B", "copy")])
def test_who_writes_a_short_answer_follows_the_model_size(index_with_graph, params, label, pick):
    assert Assistant(index_with_graph, llm=SizedLLM(params, label)).resolve_pick() == pick
    unknown = ScriptedLLM(lambda m, sch, ph: "unused")  # no model_size: a served or given model
    assert Assistant(index_with_graph, llm=unknown).resolve_pick() == "model"
    index_with_graph.settings.answer.pick = "ranking"  # a pick that is set is kept whatever the size
    assert Assistant(index_with_graph, llm=SizedLLM(params, label)).resolve_pick() == "ranking"


@pytest.mark.slow
def test_ask_on_the_examples_with_auto_makes_no_retrieval_call(notes_dir, bundled_model):
    env_cmd = [sys.executable, "-m", "localrag", "ask", "What spice goes into the rye and plum loaf?",
               "-f", str(notes_dir), "--strategy", "auto", "--json", "--model", str(bundled_model)]
    out = subprocess.run(env_cmd, capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert data["strategy"] == "graph" and "135M" in data["strategy_reason"]
    # the bundled model is below answer.write_min_params: the answer is the quoted evidence, no call at all
    assert data["llm_calls"] == [] and data["picked_by"] == "quote"
    # the first shown item restates the question ("- The rye and plum loaf, obviously."): the quote is the
    # shown unit that says a candidate answer
    assert data["short_answer"] == "cardamom" and "cardamom" in data["answer_sentence"]["text"]
    kinds = [e["event"] for e in data["events"]]
    assert kinds.index("evidence") < kinds.index("answer_started"), "the evidence is shown before the answer"
    assert any(p["path"] == "rye-and-plum-loaf.md" for p in data["passages"][:3])
