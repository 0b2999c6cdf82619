"""End to end with the real bundled GGUF model: index examples/notes, ask, check the citation."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from localrag.answer import build_citations, cited_numbers, short_answer, strip_invalid_citations
from localrag.api import Assistant, Index
from localrag.llm.discovery import discover


def test_answer_cites_the_right_note_with_the_real_model(notes_dir, settings_for, embedder, bundled_model):
    # free text (open questions, `ask --free`): the real model writes, cites and is logged
    settings = settings_for(notes_dir, **{"llm.model": str(bundled_model), "answer.mode": "free"})
    idx = Index(settings, embedder)
    idx.sync()
    assistant = Assistant(idx)
    streamed: list[str] = []
    answer = assistant.ask("What spice goes into the rye and plum loaf?",
                           strategy="hybrid", on_token=streamed.append)
    assert answer.text and "".join(streamed).strip() == answer.text.strip()
    assert answer.citations, "an answer always comes with its sources"
    first = answer.citations[0]
    assert first.passage.path == "rye-and-plum-loaf.md"
    assert first.location.startswith("rye-and-plum-loaf.md:")
    lines = (notes_dir / first.passage.path).read_text().split("\n")
    assert first.passage.text.strip().splitlines()[0] in lines[first.passage.start_line - 1]
    # the call was logged with its phase, tokens and time
    assert [c.phase for c in answer.calls] == ["answer"]
    assert answer.calls[0].prompt_tokens > 50 and answer.calls[0].ms > 0
    logged = idx.store.calls.totals_by_phase()
    assert logged["answer"][0] == 1
    assert idx.store.calls.recent_queries(1)[0].answer == answer.text
    idx.close()


def test_ask_json_has_everything(notes_dir, bundled_model):
    r = subprocess.run(
        [sys.executable, "-m", "localrag", "ask", "Which river runs through Orlinsford?", "-f", str(notes_dir),
         "--json", "--strategy", "hybrid", "--model", str(bundled_model), "--free"],
        capture_output=True, text=True, timeout=600,
    )
    assert r.returncode == 0, r.stderr
    data = json.loads(r.stdout)
    assert set(data) >= {"answer", "citations", "passages", "llm_calls", "tokens", "timings_ms", "trace"}
    assert data["passages"][0]["path"] == "orlinsford.md"
    assert all(":" in c["location"] for c in data["citations"])
    assert data["tokens"]["total"] == sum(c["total_tokens"] for c in data["llm_calls"]) > 0


def test_citation_parsing():
    assert cited_numbers("A [2] and [1][2] and [9]", 3) == [2, 1]
    assert strip_invalid_citations("x [7] y [1]", 3) == "x  y [1]"
    assert short_answer("Thought: blah.\nAnswer: Velkra [1].") == "Velkra"
    # a small model cites by location and announces its answer: neither is part of it (scored fairly)
    assert short_answer("Sandra Miju Oh (505.md:1-3)") == "Sandra Miju Oh"
    assert short_answer("The answer is: Yasue Sato (812.md:3-3)") == "Yasue Sato"
    assert short_answer("Rye (the grain) is used") == "Rye (the grain) is used"
    assert short_answer("(505.md:1-3)") == "" and short_answer("Answer: [2]") == ""


def test_inferred_citation_when_model_gives_no_marker():
    from localrag.records import Passage

    ps = [Passage(i, i, f"n{i}.md", f"T{i}", 0, "", t, "h", 1, 2) for i, t in
          enumerate(["Bread needs flour.", "The Velkra river flows past Orlinsford mill."], start=1)]
    cites = build_citations("Orlinsford lies on the Velkra river.", ps)
    assert cites[0].passage.path == "n2.md" and cites[0].inferred and cites[0].cited
    assert not cites[1].cited


def test_model_discovery_prefers_config_then_models_dir(tmp_path, monkeypatch, bundled_model):
    monkeypatch.chdir(tmp_path)
    assert discover("").path == bundled_model or discover("").source == "models/"
    (tmp_path / "models").mkdir()
    small, big = tmp_path / "models" / "a.gguf", tmp_path / "models" / "b.gguf"
    small.write_bytes(b"GGUF" + b"\0" * 10)
    big.write_bytes(b"GGUF" + b"\0" * 100)
    assert discover("").path == big and discover("").source == "models/"
    assert discover(str(small)).source == "config"


@pytest.mark.parametrize("pick", ["model", "likelihood"])
def test_real_model_short_answer_is_a_span_of_the_cited_note(notes_dir, settings_for, embedder, bundled_model, pick):
    from localrag.text.spans import clean_markup

    settings = settings_for(notes_dir, **{"llm.model": str(bundled_model), "llm.n_threads": 1,
                                          "answer.abstain_below": 0, "answer.abstain_unnamed_below": 0, "answer.mode": "shape", "answer.pick": pick})
    idx = Index(settings, embedder)
    idx.sync()
    try:
        answer = Assistant(idx).ask("Which river runs through Orlinsford?", strategy="hybrid")
    finally:
        idx.close()
    assert answer.mode == "short" and answer.shape.qtype == "where" and answer.picked_by == "model"
    assert [c.phase for c in answer.calls] == ["answer"], "the real model made the pick"
    assert answer.evidence and answer.evidence_ms is not None
    assert not answer.abstained, answer.notes
    cited = [c for c in answer.citations if c.cited]
    assert len(cited) == 1 and answer.span_sentence.passage == cited[0].passage
    assert answer.span in " ".join(clean_markup(cited[0].passage.text).split()), "a span copied from the cited note"
    assert answer.span in answer.span_sentence.plain
