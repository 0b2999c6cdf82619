"""The asking flow: the chat column, its answer worker, the conversation thread and feedback.

``ChatColumn`` takes a submitted question, answers it in a thread worker (which posts the
Answer* messages to this widget), streams the answer into its block and keeps the open
conversation. What it cannot show itself bubbles up to the app: ``AnswerFinished`` (the
path tree, the cost panel, the title) and ``CitationChosen`` (the source panel).
"""

from __future__ import annotations

import threading
import time
from functools import partial
from typing import Any, Callable

from textual import on
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.message import Message
from textual.widgets import Markdown, OptionList

from localrag.answer import Citation
from localrag.api import EmptyIndexError, Index
from localrag.config import Settings
from localrag.errors import LocalragError
from localrag.llm.base import LLMError
from localrag.memory.feedback import mark
from localrag.retrieve.filters import FilterError, parse_where, split_inline_filters
from localrag.tui.chat import AnswerBlock, ChatLog, QuestionInput
from localrag.tui.indexing import IndexingRows
from localrag.tui.messages import AnswerFailed, AnswerFinished, AnswerStage, AnswerStep, AnswerTokens
from localrag.tui.model_control import ModelControl
from localrag.tui.presentation import Presentation
from localrag.tui.thread import ConversationControl, SearchedFor

PLACEHOLDER = "Ask about your notes… (Enter sends, ↑ history, F1 help)"


class Closing(LocalragError):
    """Raised in the answer thread's token callback to stop generation when the app exits."""

    internal = True


class CitationChosen(Message):
    """The user picked a citation of an answer (a click on [n], or Enter in the list): show its passage."""

    def __init__(self, citation: Citation) -> None:
        super().__init__()
        self.citation = citation


class ChatColumn(ConversationControl, Vertical):
    def __init__(self, index: Index, settings: Settings, *, models: ModelControl, indexing: IndexingRows,
                 current_strategy: Callable[[], str], stopping: threading.Event, presentation: Presentation,
                 **kw: Any) -> None:
        super().__init__(**kw)
        self.index = index
        self.settings = settings
        self.models = models
        self.indexing = indexing
        self.current_strategy = current_strategy
        self.stopping = stopping
        self.presentation = presentation
        self.answering = False
        self.last_query_id: int | None = None
        self._block_seq = 0

    def compose(self) -> ComposeResult:
        yield ChatLog(id="chat")
        yield QuestionInput(self._history(), id="question", placeholder=PLACEHOLDER)

    def on_mount(self) -> None:
        box = self.query_one(QuestionInput)
        box.cursor_blink = self.presentation.cursor_blink
        box.focus()
        self.resume_last_conversation()
        self.call_later(self.show_conversation)

    def _history(self) -> list[str]:
        try:
            return [q.text for q in reversed(self.index.store.calls.recent_queries(100))]
        except Exception:  # an old index without the query log: no history
            return []

    # -- asking ------------------------------------------------------------------------
    @on(QuestionInput.Submitted, "#question")
    async def ask_question(self, event: QuestionInput.Submitted) -> None:
        question = event.value.strip()
        if not question:
            return
        if self.answering:
            self.notify("still answering the previous question…", severity="warning", timeout=3)
            return
        box = self.query_one(QuestionInput)
        box.remember(question)
        box.value = ""
        self._block_seq += 1
        block = await self.query_one(ChatLog).add_block(self._block_seq, question, self.presentation)
        self.answering = True
        self.run_worker(partial(self._answer, block.block_id, question, block, self.current_strategy()),
                        thread=True, group="answer", name=f"answer-{block.block_id}")

    def _answer(self, block_id: int, question: str, block: AnswerBlock, strategy: str) -> None:
        """In a worker thread: load the model if needed, retrieve, stream the answer."""
        indexer = self.indexing.indexer
        indexer.hold()  # graph extraction shares the model: keep it free while the user waits
        try:
            if not self.models.ready:
                self.post_message(AnswerStage(block_id, f"loading the model {self.models.name_shown} "
                                              "(first question only; the next ones start at once)…"))
                self.models.load()
            waited = False
            while self.index.store.docs.passage_count() == 0 and (self.indexing.cycles_done == 0 or indexer.busy):
                if self.stopping.is_set():
                    return
                if not waited:
                    self.post_message(AnswerStage(block_id, "waiting for the first passages to be indexed…"))
                    waited = True
                time.sleep(0.2)
            assistant = self.models.assistant
            resolved = assistant.resolve(strategy)
            self.post_message(AnswerStage(block_id, f"retrieving and answering ({resolved.strategy}: "
                                                    f"{resolved.reason})…"))

            def on_token(token: str) -> None:
                if self.stopping.is_set():
                    raise Closing()
                if block.buffer.push(token):
                    self.post_message(AnswerTokens(block_id))

            conversation = self.conversation_for_question()
            if conversation is not None:
                conversation.on_resolved = lambda r: self.post_message(SearchedFor(block_id, r))
            question, terms = split_inline_filters(question)  # "/tag:project /path:work/ who …"
            answer = assistant.ask(question, strategy=strategy, on_token=on_token, where=parse_where(terms),
                                   conversation=conversation,
                                   on_event=lambda ev: self.post_message(AnswerStep(block_id, ev)))
        except Closing:
            return
        except EmptyIndexError:
            self.post_message(AnswerFailed(block_id, "nothing is indexed yet: wait for the Passages row to fill, "
                                                     "then ask again"))
        except LLMError as exc:
            self.post_message(AnswerFailed(block_id, f"model error: {exc}"))
        except FilterError as exc:
            self.post_message(AnswerFailed(block_id, str(exc)))
        except Exception as exc:  # never crash the app on one bad question
            self.post_message(AnswerFailed(block_id, f"{type(exc).__name__}: {exc}"))
        else:
            self.post_message(AnswerFinished(block_id, answer))
        finally:
            indexer.release()

    def _block(self, block_id: int) -> AnswerBlock | None:
        found = self.query(f"#answer-{block_id}")
        return found.first(AnswerBlock) if found else None

    async def on_answer_stage(self, msg: AnswerStage) -> None:
        block = self._block(msg.block_id)
        if block is not None:
            block.set_stage(msg.text)

    async def on_answer_step(self, msg: AnswerStep) -> None:
        block = self._block(msg.block_id)
        if block is not None:
            block.add_step(msg.event)

    async def on_answer_tokens(self, msg: AnswerTokens) -> None:
        block = self._block(msg.block_id)
        if block is not None:
            block.set_stage("")
            await block.stream_tokens()
            self.query_one(ChatLog).scroll_end(animate=False)

    async def on_answer_finished(self, msg: AnswerFinished) -> None:
        """Show the answer in its block; the message bubbles on to the app for the side panels."""
        self.answering = False
        block = self._block(msg.block_id)
        if block is None:
            msg.stop()
            return
        await block.finish(msg.answer)
        self.last_query_id = msg.answer.query_id
        chat = self.query_one(ChatLog)
        self.call_after_refresh(chat.scroll_end, animate=False)  # after the final Markdown has its height

    async def on_answer_failed(self, msg: AnswerFailed) -> None:
        self.answering = False
        block = self._block(msg.block_id)
        if block is not None:
            await block.fail(msg.error)

    def feedback(self, verdict: str) -> None:
        """F8 / F9: the last answer was wrong (memory unlearns it, its repeat retrieves afresh) / right."""
        try:
            result = mark(self.index, verdict, self.last_query_id)
        except Exception as exc:  # feedback never crashes the app (FeedbackError: nothing to mark)
            self.notify(str(exc), title="feedback", severity="warning", timeout=4)
            return
        self.notify(result.note, title=f"marked {verdict}", timeout=4)

    # -- citations -----------------------------------------------------------------------
    def open_citation(self, block: AnswerBlock, number: int) -> bool:
        citation = block.citation(number)
        if citation is None:
            return False
        self.post_message(CitationChosen(citation))
        return True

    @on(OptionList.OptionSelected, ".citations")
    def citation_selected(self, event: OptionList.OptionSelected) -> None:
        block = event.option_list.parent
        if isinstance(block, AnswerBlock) and event.option.id:
            self.open_citation(block, int(event.option.id.split("-")[1]))

    @on(Markdown.LinkClicked)
    def link_clicked(self, event: Markdown.LinkClicked) -> None:
        block = next((a for a in event.markdown.ancestors if isinstance(a, AnswerBlock)), None)
        if block is not None and event.href.startswith("cite:") and event.href[5:].isdigit():
            self.open_citation(block, int(event.href[5:]))

    def focus_citations(self) -> bool:
        """F2: focus the latest answer's citation list; False (and a notice) when there is none."""
        block = self.query_one(ChatLog).latest()
        if block is None or block.answer is None or not block.answer.citations:
            self.notify("no citations yet: ask a question first", timeout=3)
            return False
        options = block.query_one(OptionList)
        options.focus()
        options.highlighted = 0
        return True

    def focus_question(self) -> None:
        self.query_one(QuestionInput).focus()
