"""A model that answers at once, for timing what NeuroPath does besides waiting for its model.

Benchmark only (``bench scale --graph``): its replies are fixed rules, not judgements.
NER returns the question's name spans (the rules span finder); path tracking keeps the
first two paths shown and asks to expand the first expandable one until the tracker's
hop limit, so every hop, the pruning and the completion all run.
"""

from __future__ import annotations

import json
import re

from localrag.text.spans import clean_markup, find_spans
from localrag.llm.base import Message, Reply, Usage

_LINE = re.compile(r"^(\d+): (.*)$")


class InstantLLM:
    model_id = "instant-bench"

    def __init__(self) -> None:
        self.calls = 0

    def chat(self, messages: list[Message], *, schema=None, max_tokens: int = 512, phase: str = "answer",
             on_token=None) -> Reply:
        self.calls += 1
        text = json.dumps(self._reply(messages, phase))
        if on_token:
            on_token(text)
        return Reply(text=text, usage=Usage(0, 0), ms=0.0, model=self.model_id, finish_reason="stop")

    @staticmethod
    def _reply(messages: list[Message], phase: str) -> dict | str:
        last = messages[-1]["content"]
        if phase == "ner":
            question = last.split("Question:", 1)[-1].rsplit("Output:", 1)[0]
            return {"named_entities": list(dict.fromkeys(s.text for s in find_spans(clean_markup(question))))[:6]}
        if phase == "track":
            ids, expandable = [], []
            for line in last.splitlines():
                m = _LINE.match(line)
                if m:
                    ids.append(int(m.group(1)))
                    if "<expandable>" in m.group(2):
                        expandable.append(int(m.group(1)))
            go_on = bool(expandable)  # the tracker stops at neuropath.max_hop itself
            return {"current_chain": "", "valid_ids": ids[:2], "expansion_requirements": "more" if go_on else "",
                    "need_expand_ids": expandable[:1], "continue": int(go_on)}
        return "instant"
