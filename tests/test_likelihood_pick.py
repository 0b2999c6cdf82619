"""``answer.pick = likelihood``'s scoring: each reply's likelihood from the real bundled model in
process (the flow around it: tests/test_answer_flow.py)."""

from __future__ import annotations

import math

import pytest

from localrag.config import LLMSettings
from localrag.llm.base import LLMError
from localrag.llm.llamacpp import LlamaCppLLM
from localrag.llm.prompts import short_span_messages


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
