"""Feedback on answers: "wrong" unlearns a planted wrong path and the repeat tracks again; "right" reinforces;
failed or empty answers write no memory. Real store, embedder and memory; a scripted model for control flow."""

from __future__ import annotations

import subprocess
import sys

import pytest

from localrag.api import Assistant
from localrag.llm.base import LLMError
from localrag.memory.feedback import FeedbackError, mark
from localrag.trace import FeedbackStep

from scripted_llm import ScriptedLLM, line_id

NOTES = {
    "mira.md": "# Mira Okafor\n\nMira Okafor leads the Heron project at the institute.\n",
    "heron.md": "# Heron project\n\nThe Heron project is hosted in Vessby, on the river Orle.\n",
    "bakery.md": "# Bakery\n\nThe bakery on Mill Street sells rye bread and plum cake every morning.\n",
}
TRIPLES = {
    "mira.md": [("mira okafor", "leads", "heron project")],
    "heron.md": [("heron project", "hosted in", "vessby")],
    "bakery.md": [("mira okafor", "buys bread at", "bakery")],  # the planted wrong path
}
QUESTION = "Which river flows past the town where Mira Okafor's project is hosted?"


class Tracker:
    """Scripted NeuroPath: tracking picks the path containing ``pick``; answers cite passage 1."""

    def __init__(self, pick: str, fail_answer: bool = False, empty_answer: bool = False):
        self.pick, self.fail_answer, self.empty_answer = pick, fail_answer, empty_answer
        self.llm = ScriptedLLM(self.respond)

    def respond(self, messages, schema, phase):
        if phase == "ner":
            return {"named_entities": ["Mira Okafor"]}
        if phase == "track":
            return {"current_chain": "", "valid_ids": [line_id(messages, self.pick)], "expansion_requirements": "",
                    "need_expand_ids": [], "continue": 0}
        if self.fail_answer:
            raise LLMError("the model crashed mid-answer")
        return "" if self.empty_answer else "The river Orle [1]."

    def phases(self, since: int = 0) -> list[str]:
        return [phase for phase, _ in self.llm.calls[since:]]


@pytest.fixture
def kb(graph_kb):
    # free answers: these tests script the answer text (the constrained span is tested in test_answer_flow.py)
    return graph_kb(NOTES, TRIPLES, **{"neuropath.ner": "llm", "neuropath.merge": "paths-first", "answer.mode": "free"})


def test_a_wrong_answer_marked_wrong_is_unlearned_and_the_repeat_runs_full_retrieval(kb):
    bot = Tracker(pick="bakery")
    assistant = Assistant(kb, llm=bot.llm)
    first = assistant.ask(QUESTION, strategy="neuropath")
    assert first.retrieval.passages[0].passage.path == "bakery.md"  # the planted wrong answer
    assert kb.store.memory.written_by(first.query_id)
    n = len(bot.llm.calls)
    repeat = assistant.ask(QUESTION, strategy="neuropath")
    assert "track" not in bot.phases(n)  # memory skipped tracking: as fast as it is wrong
    assert repeat.retrieval.passages[0].passage.path == "bakery.md"

    result = mark(kb, "wrong")  # the last answered question
    assert result.query_id == repeat.query_id and result.verdict == "wrong"
    result = mark(kb, "wrong", first.query_id)
    assert result.edges >= 1 and "full retrieval" in result.note

    bot.pick = "heron project"  # tracking, when it runs, now finds the right path
    n = len(bot.llm.calls)
    again = assistant.ask(QUESTION, strategy="neuropath")
    assert "track" in bot.phases(n)
    assert again.retrieval.passages[0].passage.path in {"mira.md", "heron.md"}
    assert "bakery.md" != again.retrieval.passages[0].passage.path
    assert any(isinstance(s, FeedbackStep) for s in again.retrieval.trace.steps)


def test_right_reinforces_the_edges_the_answer_wrote(kb):
    assistant = Assistant(kb, llm=Tracker(pick="heron project").llm)
    got = assistant.ask(QUESTION, strategy="neuropath")
    keys = kb.store.memory.written_by(got.query_id)
    assert keys
    before = {k: float(v @ v) for k, v in kb.store.memory.get(keys).items()}
    result = mark(kb, "right", got.query_id)
    after = kb.store.memory.get(keys)
    assert result.edges == len(before)
    assert all(float(after[k] @ after[k]) > before[k] for k in before)
    assert kb.store.memory.verdict_for(QUESTION) == "right"


@pytest.mark.parametrize("how", ["fail", "empty"])
def test_failed_or_empty_answers_write_no_memory(kb, how):
    bot = Tracker(pick="heron project", fail_answer=how == "fail", empty_answer=how == "empty")
    assistant = Assistant(kb, llm=bot.llm)
    if how == "fail":
        with pytest.raises(LLMError):
            assistant.ask(QUESTION, strategy="neuropath")
    else:
        assistant.ask(QUESTION, strategy="neuropath")
    assert "track" in bot.phases()  # tracking ran and its replay wrote memory, which was then undone
    assert kb.store.memory.count() == 0


def test_feedback_errors_are_one_line(kb, tmp_path):
    with pytest.raises(FeedbackError, match="no answered question"):
        mark(kb, "right")
    with pytest.raises(FeedbackError, match="no query 999"):
        mark(kb, "wrong", 999)
    out = subprocess.run([sys.executable, "-m", "localrag", "feedback", "--wrong", "-f", str(kb.folder),
                          "--db", str(kb.settings.db_path)], capture_output=True, text=True, timeout=300)
    assert out.returncode == 1 and "no answered question" in out.stderr and "Traceback" not in out.stderr
