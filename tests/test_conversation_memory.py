"""Memory replay per turn: a follow-up, once resolved, recalls and reinforces memories like a single question."""

from __future__ import annotations

from localrag.api import Assistant
from localrag.conversation import Conversation

from test_neuropath import QUESTION, graph_index, scripted_two_rounds  # noqa: F401  (fixture)

FOLLOW_UP = "On which river is the town where her project is hosted?"


def test_a_resolved_follow_up_replays_memory_like_a_single_question(graph_index) -> None:
    graph_index.settings.answer.mode = "free"  # the scripted answers are free text (spans: test_answer_flow.py)
    llm = scripted_two_rounds()
    assistant = Assistant(graph_index, llm=llm)
    convo = Conversation.open(graph_index.store, graph_index.settings, name="heron")
    first = assistant.ask("Which project does Mira Okafor lead?", strategy="neuropath", conversation=convo)
    assert first.resolved_query == "Which project does Mira Okafor lead?"
    learned = graph_index.store.query("SELECT query FROM memory_log ORDER BY id")
    assert learned == [("Which project does Mira Okafor lead?",)]

    second = assistant.ask(FOLLOW_UP, strategy="neuropath", conversation=convo)
    assert second.resolved_query == QUESTION  # "her project" -> "Mira Okafor's project"
    third = assistant.ask(FOLLOW_UP, strategy="neuropath", conversation=convo)
    # the follow-up's memories were learned under its resolved query, so asking it again recalls them
    assert [c.phase for c in third.calls] == ["answer"] and any("recalled" in n for n in third.notes)
    logged = [q for (q,) in graph_index.store.query("SELECT query FROM memory_log ORDER BY id")]
    assert logged[1:] == [QUESTION, QUESTION]
    assert [t.resolved for t in graph_index.store.sessions.turns(convo.session.id)][1:] == [QUESTION, QUESTION]
