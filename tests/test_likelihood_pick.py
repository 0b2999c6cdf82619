"""``answer.pick = likelihood``: the model's likeliest allowed answer, scored by the real bundled
model in process, and the flow around it (scripted scorer for the control flow)."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from scripted_llm import ScriptedLLM

from localrag.answer.spans import NOT_IN_NOTES
from localrag.api import Assistant, Index
from localrag.config import LLMSettings
from localrag.llm.base import LLMError, Scored, Usage
from localrag.llm.llamacpp import LlamaCppLLM
from localrag.llm.prompts import short_span_messages

NOTES = {
    "loaf.md": "# Rye and Plum Loaf\n\nThe Harebell Oven bakes the loaf.\n\n- The spice in this loaf is cardamom.\n",
    "oven.md": "# The Harebell Oven\n\nThe Harebell Oven is a bakery on Millrace Lane, owned by Rosalind Achterberg.\n",
}
QUESTION = "Which spice goes into the loaf of the bakery owned by Rosalind Achterberg?"


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


@pytest.fixture
def index(tmp_path: Path, settings_for, embedder):
    folder = tmp_path / "notes"
    folder.mkdir()
    for name, text in NOTES.items():
        (folder / name).write_text(text, encoding="utf-8")
    idx = Index(settings_for(folder, db=str(tmp_path / "index.db"), **{
        "answer.abstain_below": 0, "answer.abstain_unnamed_below": 0, "answer.pick": "likelihood"}), embedder)
    idx.sync()
    yield idx
    idx.close()


def test_the_likeliest_allowed_span_is_the_answer_and_not_in_your_notes_is_not_offered(index):
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
    answer = Assistant(index, llm=llm).ask(QUESTION, strategy="hybrid")
    (choices,) = llm.choices
    assert "Harebell Oven" in choices and answer.span == "Harebell Oven"
    assert any("picks under the grammar instead" in n for n in answer.notes)


@pytest.fixture(scope="module")
def smollm(bundled_model):
    return LlamaCppLLM(bundled_model, LLMSettings(n_threads=1))


def test_the_real_model_scores_each_reply_after_one_shared_prompt(smollm):
    messages = short_span_messages("Which spice goes into the rye and plum loaf?",
                                   ["The spice in the rye and plum loaf is cardamom.", "The bakery is on Millrace Lane."])
    replies = ["cardamom", "Millrace Lane", "zebra crossing"]
    first = smollm.score_replies(messages, replies)
    assert len(first.logprobs) == 3 and all(math.isfinite(x) and x < 0 for x in first.logprobs)
    assert first.logprobs[0] > first.logprobs[2], "the quoted answer is likelier than words no quote says"
    again = smollm.score_replies(messages, replies)
    assert again.usage.cached_tokens == again.usage.prompt_tokens - 1, "the shared prompt comes from the KV cache"
    assert again.logprobs == pytest.approx(first.logprobs, abs=1e-6)
    # generation after scoring still starts from a consistent cache
    reply = smollm.chat(messages, choices=replies, max_tokens=8)
    assert reply.text in replies


def test_a_model_without_a_chat_template_cannot_score_and_says_so(smollm, monkeypatch):
    monkeypatch.setitem(smollm._llm.metadata, "tokenizer.chat_template", "")
    with pytest.raises(LLMError, match="no chat template"):
        smollm.score_replies(short_span_messages("Which spice?", ["cardamom"]), ["cardamom"])
