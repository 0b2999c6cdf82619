"""answer.writer = quote: the answer is the evidence unit that answers, quoted and cited, no model call;
whatever the question, a short answer shown is a span of the cited sentence shown with it (property test)."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings as hsettings, strategies as st
from scripted_llm import ScriptedLLM

from localrag.answer.evidence import split_units
from localrag.api import Assistant, Index

NOTES = {
    "kiln.md": "# Kiln\n\nThe kiln is fired on Thursdays by Mira Oduya.\n\n- Set the peak temperature with:\n\n"
               "`kiln --peak 1240`\n\n- The cooling rate defaults to 80 degrees an hour.\n",
    "glaze.md": "# Glaze\n\nCeladon glaze needs a reduction atmosphere.\n\n- Mix it with 40 percent feldspar.\n",
}
WORDS = ["kiln", "glaze", "peak", "temperature", "cooling", "feldspar", "Thursdays", "who", "how", "when",
         "what", "fired", "percent", "Mira", "studio", "rate", "set"]


@pytest.fixture(scope="module")
def assistant(tmp_path_factory, embedder):
    from localrag.config import load_settings

    folder = tmp_path_factory.mktemp("quote") / "notes"
    folder.mkdir()
    for name, text in NOTES.items():
        (folder / name).write_text(text, encoding="utf-8")
    settings = load_settings(folder, {"db": str(folder.parent / "index.db"), "answer.writer": "quote",
                                      "answer.abstain_below": 0, "answer.abstain_unnamed_below": 0}, env={})
    index = Index(settings, embedder)
    index.sync()
    yield Assistant(index, llm=ScriptedLLM(lambda m, s, p: pytest.fail("quote makes no model call")))
    index.close()


def test_a_lead_in_and_its_code_line_are_one_unit():
    units = split_units(NOTES["kiln.md"])
    assert any(u.kind == "item" and "kiln --peak 1240" in u.text and u.text.startswith("- Set") for u in units)


def test_a_chinese_lead_in_with_its_full_width_colon_and_its_code_line_are_one_unit():
    page = "# tar\n\n> 归档实用程序。\n\n- 创建存档并将其写入文件：\n\n`tar cf {{目标文件.tar}} {{路径/到/文件1}}`\n"
    units = split_units(page)
    assert any(u.kind == "item" and u.text.startswith("- 创建存档") and "tar cf" in u.text for u in units)


def test_open_and_short_questions_are_answered_by_a_quote(assistant):
    howto = assistant.ask("How do I set the kiln's peak temperature?", strategy="hybrid")
    assert howto.picked_by == "quote" and "kiln --peak 1240" in howto.text and not howto.calls
    assert howto.citations[0].cited and howto.citations[0].passage.path == "kiln.md"
    fact = assistant.ask("Who fires the kiln?", strategy="hybrid")
    assert fact.picked_by == "quote" and fact.span and fact.span in fact.span_sentence.plain


@hsettings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.sampled_from(WORDS), min_size=1, max_size=6))
def test_an_answer_is_always_a_span_of_a_cited_sentence(assistant, words):
    answer = assistant.ask(" ".join(words) + "?", strategy="hybrid")
    if answer.abstained:
        return
    sentence = answer.span_sentence
    assert sentence is not None
    cited = [c.passage for c in answer.citations if c.cited]
    assert cited and cited[0].id == sentence.passage.id
    assert sentence.text in sentence.passage.text or sentence.text.split("\n")[0] in sentence.passage.text
    if answer.span:
        assert answer.span.lower() in sentence.plain.lower()


def test_a_quoting_writer_never_loads_the_model(tmp_path, embedder):
    from localrag.config import load_settings

    folder = tmp_path / "notes"
    folder.mkdir()
    (folder / "kiln.md").write_text(NOTES["kiln.md"], encoding="utf-8")
    missing = tmp_path / "no-such-model.gguf"  # loading it would fail: the answer must not need it
    settings = load_settings(folder, {"db": str(tmp_path / "index.db"), "answer.writer": "quote",
                                      "llm.model": str(missing), "answer.abstain_below": 0,
                                      "answer.abstain_unnamed_below": 0}, env={})
    index = Index(settings, embedder)
    try:
        index.sync()
        answer = Assistant(index).ask("How do I set the kiln's peak temperature?", strategy="hybrid")
        assert answer.picked_by == "quote" and "kiln --peak 1240" in answer.text
    finally:
        index.close()


SHOWCASE = "Which spice goes into the signature loaf of the bakery owned by Rosalind Achterberg?"


@pytest.fixture
def sample_index(tmp_path, embedder):
    """The sample notes indexed, graph phase included (rules extractor), answers quoted."""
    import shutil

    from localrag.config import load_settings

    folder = tmp_path / "notes"
    shutil.copytree(Path(__file__).parent.parent / "examples" / "notes", folder)
    settings = load_settings(folder, {"db": str(tmp_path / "index.db"), "answer.writer": "quote",
                                      "index.extractor": "rules"}, env={})
    index = Index(settings, embedder)
    try:
        index.sync()
        index.extract_graph()
        yield index
    finally:
        index.close()


def test_a_link_in_the_best_evidence_brings_its_note_into_the_evidence(sample_index):
    """The showcase question: Rosalind Achterberg -> her bakery's note -> its signature loaf, linked
    from the bakery's note and never named by the question; the spice is in the loaf's note."""
    assistant = Assistant(sample_index)
    given = [sp.passage.path for sp in assistant.retrieve(SHOWCASE, "graph", 5).passages]
    assert "the-harebell-oven.md" in given and "rye-and-plum-loaf.md" not in given
    answer = assistant.ask(SHOWCASE, strategy="graph")
    assert answer.span == "cardamom" and "cardamom" in answer.span_sentence.plain
    assert [c.passage.path for c in answer.citations if c.cited] == ["rye-and-plum-loaf.md"]


def test_the_showcase_follow_up_is_answered_from_what_it_was_resolved_to(sample_index):
    """"And what is the spice in that loaf?" after the showcase question: the candidates come from the
    resolved question, not from the follow-up's words with its resolution appended (which made "bake"
    the answer)."""
    from localrag.conversation.session import Conversation

    assistant = Assistant(sample_index)
    talk = Conversation.open(sample_index.store, sample_index.settings, name="showcase")
    assert assistant.ask(SHOWCASE, strategy="graph", conversation=talk).span == "cardamom"
    follow_up = assistant.ask("And what is the spice in that loaf?", strategy="graph", conversation=talk)
    assert follow_up.resolved_query == "And what is the spice in the Rye and Plum Loaf?"
    assert follow_up.span == "cardamom" and "cardamom" in follow_up.span_sentence.plain
