"""The answer step's control flow over a real index (real SQLite, real embedder) with a scripted
model: the constraint is sent, a reply outside it is never shown as an answer, abstention writes
no memory, and the steps arrive as typed events in order."""

from __future__ import annotations

from pathlib import Path

import pytest
from scripted_llm import ScriptedLLM

from localrag.answer.events import AnswerDone, AnswerStarted, EvidenceReady, FirstToken, RetrievalStarted, Retrieved
from localrag.answer.record import answer_record
from localrag.answer.spans import NOT_IN_NOTES
from localrag.api import Assistant, Index
from localrag.llm.base import LLMError, Scored, Usage

NOTES = {
    "loaf.md": "# Rye and Plum Loaf\n\nThe Harebell Oven bakes the loaf.\n\n- The spice in this loaf is cardamom.\n"
               "- It is baked on Saturdays.\n",
    "oven.md": "# The Harebell Oven\n\nThe Harebell Oven is a bakery on Millrace Lane, owned by Rosalind Achterberg.\n",
}
QUESTION = "Which spice goes into the loaf of the bakery owned by Rosalind Achterberg?"


@pytest.fixture
def index(tmp_path: Path, settings_for, embedder):
    folder = tmp_path / "notes"
    folder.mkdir()
    for name, text in NOTES.items():
        (folder / name).write_text(text, encoding="utf-8")
    # no evidence threshold unless a test sets one: every question reaches the scripted model
    idx = Index(settings_for(folder, db=str(tmp_path / "index.db"), **{"answer.abstain_below": 0, "answer.abstain_unnamed_below": 0, "answer.mode": "shape",
                                                                        "answer.pick": "model"}), embedder)
    idx.sync()
    yield idx
    idx.close()


def _spy_memory(assistant: Assistant, monkeypatch) -> list[list[int]]:
    written: list[list[int]] = []
    real = Assistant.retrieve

    def retrieve(self, *a, **kw):
        r = real(self, *a, **kw)
        r.on_answer = written.append  # what a memory strategy does with the cited passages
        return r

    monkeypatch.setattr(Assistant, "retrieve", retrieve)
    return written


def _cardamom_assistant(index: Index, monkeypatch) -> tuple[Assistant, ScriptedLLM, list[list[int]]]:
    """An assistant whose scripted model always says "cardamom", and the memory writes it makes."""
    llm = ScriptedLLM(lambda m, s, p: "cardamom")
    assistant = Assistant(index, llm=llm)
    return assistant, llm, _spy_memory(assistant, monkeypatch)


def test_short_question_is_constrained_and_answered_with_its_sentence(index, monkeypatch):
    llm = ScriptedLLM(lambda m, s, p: "cardamom")
    assistant = Assistant(index, llm=llm)
    written = _spy_memory(assistant, monkeypatch)
    events = []
    answer = assistant.ask(QUESTION, strategy="hybrid", on_event=events.append, on_token=lambda t: None)
    (choices,) = llm.choices
    assert "cardamom" in choices and NOT_IN_NOTES in choices and "Harebell Oven" in " ".join(choices)
    assert answer.mode == "short" and answer.span == "cardamom" and not answer.abstained
    assert "cardamom" in answer.span_sentence.plain and answer.span_sentence.location.startswith("loaf.md:")
    cited = [c for c in answer.citations if c.cited]
    assert [c.passage.path for c in cited] == ["loaf.md"] and answer.text == f"cardamom [{cited[0].number}]"
    assert written == [[cited[0].passage.id]], "an answer that stands is learned from"
    kinds = [type(e) for e in events]
    assert kinds[0] is RetrievalStarted and kinds[-1] is AnswerDone
    order = [kinds.index(k) for k in (Retrieved, EvidenceReady, AnswerStarted, FirstToken, AnswerDone)]
    assert order == sorted(order), "evidence comes before the answer starts"
    assert all(a.elapsed_s <= b.elapsed_s for a, b in zip(events, events[1:]))
    assert answer.evidence_ms is not None and answer.first_token_ms >= answer.evidence_ms
    data = answer_record(answer)
    assert data["short_answer"] == "cardamom" and data["answer_sentence"]["path"] == "loaf.md"
    assert data["evidence"] and data["events"][0]["event"] == "retrieval"


def test_copy_mode_admits_any_run_of_the_passages_words_and_cites_its_sentence(index):
    index.settings.answer.pick = "copy"
    llm = ScriptedLLM(lambda m, s, p: "a bakery on Millrace Lane")
    answer = Assistant(index, llm=llm).ask("Where is the Harebell Oven?", strategy="hybrid")
    (choices,) = llm.choices
    assert "a bakery on Millrace Lane" in choices and "Millrace" in choices and choices[-1] == NOT_IN_NOTES
    assert "Millrace Lane, owned" in choices, "outer punctuation is stripped, inner kept"
    assert not any("cinnamon" in c for c in choices)
    (messages,) = [m for _, m in llm.calls]
    assert "<passage>" in messages[-1]["content"], "the model reads the passages, not a list of spans"
    assert answer.picked_by == "model" and answer.span == "a bakery on Millrace Lane" and not answer.abstained
    assert any("answer.pick = copy" in n for n in answer.notes)
    assert answer.span_sentence.location.startswith("oven.md:")
    assert [c.passage.path for c in answer.citations if c.cited] == ["oven.md"]


def test_model_choosing_not_in_your_notes_abstains_and_writes_no_memory(index, monkeypatch):
    assistant = Assistant(index, llm=ScriptedLLM(lambda m, s, p: NOT_IN_NOTES))
    written = _spy_memory(assistant, monkeypatch)
    answer = assistant.ask(QUESTION, strategy="hybrid")
    assert answer.abstained and "not in your notes" in answer.abstain_reason
    assert answer.text.startswith("Not in your notes")
    assert answer.citations and not any(c.cited for c in answer.citations), "closest passages, none cited"
    assert written == [], "an abstention writes no memory"


def test_reply_outside_the_constraint_is_never_shown_as_an_answer(index):
    answer = Assistant(index, llm=ScriptedLLM(lambda m, s, p: "cinnamon, obviously")).ask(QUESTION, strategy="hybrid")
    assert answer.abstained and answer.span == NOT_IN_NOTES
    assert any("none of the" in n for n in answer.notes)


def test_a_question_about_something_no_note_is_about_abstains(index, monkeypatch):
    index.settings.answer.abstain_unnamed_below = 0.99  # whatever the cosine: the rule decides
    assistant, llm, written = _cardamom_assistant(index, monkeypatch)
    answer = assistant.ask("Which spice did Zebulon Quarrington put in his loaf?", strategy="hybrid")
    assert answer.abstained and "Zebulon Quarrington" in answer.abstain_reason
    assert llm.calls == [] and written == []
    # the same rule keeps a question whose named thing has its note
    answered = assistant.ask("Which spice goes into the Rye and Plum Loaf?", strategy="hybrid")
    assert not answered.abstained and answered.span == "cardamom"


def test_weak_evidence_abstains_without_asking_the_model(index, settings_for, monkeypatch):
    index.settings.answer.abstain_below = 0.99
    index.settings.answer.abstain_unmentioned = False  # the folder never says "Pell": that rule would abstain first
    assistant, llm, written = _cardamom_assistant(index, monkeypatch)
    answer = assistant.ask("What colour is the lighthouse on Pell Island?", strategy="hybrid")
    assert answer.abstained and "abstain_below" in answer.abstain_reason
    assert llm.calls == [] and written == []


def test_open_question_is_free_text_with_unsupported_sentences_listed(index):
    llm = ScriptedLLM(lambda m, s, p: "The loaf uses cardamom [1]. Bakers love it.")
    answer = Assistant(index, llm=llm).ask("Why is the loaf baked on Saturdays?", strategy="hybrid")
    assert llm.choices == [None] and answer.mode == "open"
    assert answer.unsupported == ["Bakers love it."]


def test_free_mode_keeps_the_old_generation(index):
    llm = ScriptedLLM(lambda m, s, p: "Cardamom [1].")
    answer = Assistant(index, llm=llm).ask(QUESTION, strategy="hybrid", mode="free")
    assert llm.choices == [None] and answer.mode == "free" and answer.text == "Cardamom [1]."


class ScoringLLM(ScriptedLLM):
    """Scores the reply ``best`` highest; ``fail`` makes scoring raise instead."""

    def __init__(self, best: str, fail: bool = False):
        super().__init__(lambda m, s, p: "Harebell Oven")  # what the grammar fallback answers
        self.best, self.fail = best, fail
        self.scored: list[tuple[list, list[str]]] = []

    def score_replies(self, messages, replies):
        self.scored.append((list(messages), list(replies)))
        if self.fail:
            raise LLMError("scripted: cannot score")
        return Scored([0.0 if r == self.best else -5.0 for r in replies], Usage(10, len(replies)), 1.0, "scripted")


def test_the_likeliest_allowed_span_is_the_answer_and_not_in_your_notes_is_not_offered(index):
    index.settings.answer.pick = "likelihood"
    llm = ScoringLLM("cardamom")
    first: list[str] = []
    answer = Assistant(index, llm=llm).ask(QUESTION, strategy="hybrid", on_token=first.append)
    ((messages, replies),) = llm.scored
    assert "cardamom" in replies and NOT_IN_NOTES not in replies
    assert "Possible answers" not in messages[-1]["content"], "the quotes and the question, no list of spans"
    assert llm.calls == [], "no text generated"
    assert answer.span == "cardamom" and answer.picked_by == "model" and not answer.abstained
    assert first == ["cardamom"] and answer.first_token_ms is not None
    assert [c.phase for c in answer.calls] == ["answer"], "the scoring call is recorded"
    assert [c.passage.path for c in answer.citations if c.cited] == ["loaf.md"]
    assert any("answer.pick = likelihood" in n for n in answer.notes)


@pytest.mark.parametrize("llm", [ScriptedLLM(lambda m, s, p: "Harebell Oven"), ScoringLLM("cardamom", fail=True)],
                         ids=["cannot score", "scoring fails"])
def test_a_backend_that_cannot_score_picks_under_the_grammar(index, llm):
    index.settings.answer.pick = "likelihood"
    answer = Assistant(index, llm=llm).ask(QUESTION, strategy="hybrid")
    (choices,) = llm.choices
    assert "Harebell Oven" in choices and answer.span == "Harebell Oven"
    assert any("picks under the grammar instead" in n for n in answer.notes)
