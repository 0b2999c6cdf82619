"""Pilot tests of the conversation thread: follow-ups, a new conversation, reopening one, resuming on start.

Real index of examples/notes, real SQLite sessions; the answering LLM is the streaming scripted one.
"""

from __future__ import annotations

import asyncio

from rich.console import Console

from conftest_tui import StreamingScriptedLLM, ask, wait_indexed, wait_until
from conftest_tui import indexed_notes, prebuilt_notes, tui_app  # noqa: F401  (fixtures)
from localrag.tui.chat import AnswerBlock, ChatLog
from localrag.tui.thread import ConversationsScreen, PastTurn

SIZE = (150, 45)
FIRST = "Who leads the Lanternfish project?"
FOLLOW_UP = "When did it have its first public release?"
RESOLVED = "When did Lanternfish have its first public release?"


class RecordingStreamingLLM(StreamingScriptedLLM):
    def __init__(self) -> None:
        super().__init__()
        self.prompts: list[list[dict]] = []

    def chat(self, messages, **kw):
        if kw.get("phase", "answer") == "answer":
            self.prompts.append(list(messages))
        return super().chat(messages, **kw)


def text_of(renderable) -> str:
    console = Console(width=200, record=True, file=open("/dev/null", "w"))
    console.print(renderable)
    return console.export_text()


def searched_line(block) -> str:
    found = block.query(".searched")
    return text_of(found.first().content) if found else ""


def test_follow_up_in_the_thread_and_the_new_conversation_key(tui_app) -> None:
    llm = RecordingStreamingLLM()
    app = tui_app(llm=llm)

    async def scenario() -> None:
        async with app.run_test(size=SIZE) as pilot:
            await wait_indexed(pilot)
            await ask(pilot, FIRST)
            second = await ask(pilot, FOLLOW_UP)
            await pilot.pause()
            assert second.answer.resolved_query == RESOLVED
            assert f"searched for: {RESOLVED}" in searched_line(second)
            # the answer prompt carried the first turn, before the passages of the second
            roles = [m["role"] for m in llm.prompts[-1]]
            assert roles == ["system", "user", "assistant", "user"] and llm.prompts[-1][1]["content"] == FIRST
            session = app.chat.conversation.session
            turns = app.index.store.sessions.turns(session.id)
            assert [t.question for t in turns] == [FIRST, FOLLOW_UP] and turns[1].resolved == RESOLVED

            await pilot.press("ctrl+n")  # a new conversation: the thread is empty, the follow-up stands alone
            await pilot.pause()
            assert not app.query(AnswerBlock) and app.chat.conversation is None
            alone = await ask(pilot, FOLLOW_UP)
            assert alone.answer.resolved_query == FOLLOW_UP and searched_line(alone) == ""
            assert app.chat.conversation.session.id != session.id
            assert len(app.index.store.sessions.recent()) == 2

    asyncio.run(scenario())


def test_restart_resumes_the_last_conversation_and_earlier_ones_reopen(tui_app, indexed_notes) -> None:
    first_app = tui_app()

    async def first_run() -> None:
        async with first_app.run_test(size=SIZE) as pilot:
            await wait_indexed(pilot)
            await ask(pilot, FIRST)
            await ask(pilot, FOLLOW_UP)
            await pilot.press("ctrl+n")
            await ask(pilot, "Where does Ilse Varnhagen live?")

    asyncio.run(first_run())
    first_app.index.close()

    app = tui_app()

    async def second_run() -> None:
        async with app.run_test(size=SIZE) as pilot:
            await wait_indexed(pilot)
            await wait_until(pilot, lambda: len(app.query(PastTurn)) == 1, 10, "the resumed conversation")
            assert app.query_one(PastTurn).turn.question == "Where does Ilse Varnhagen live?"

            await pilot.press("ctrl+o")
            await wait_until(pilot, lambda: isinstance(app.screen, ConversationsScreen), 10, "the conversation list")
            listed = [s.first_question for s in app.screen.sessions]
            assert listed == ["Where does Ilse Varnhagen live?", FIRST]
            await pilot.press("down", "enter")  # the older conversation
            await wait_until(pilot, lambda: len(app.query(PastTurn)) == 2, 10, "the reopened conversation")
            past = list(app.query(PastTurn))
            assert [p.turn.question for p in past] == [FIRST, FOLLOW_UP]
            assert RESOLVED in searched_line(past[1])

            block = await ask(pilot, "What about Cobblebell?")  # continues the reopened conversation
            assert block.answer.resolved_query == "When did Cobblebell have its first public release?"
            assert app.query_one(ChatLog).latest() is block
            turns = app.index.store.sessions.turns(app.chat.conversation.session.id)
            assert [t.question for t in turns] == [FIRST, FOLLOW_UP, "What about Cobblebell?"]
            assert app.index.store.sessions.latest().id == app.chat.conversation.session.id

    asyncio.run(second_run())
