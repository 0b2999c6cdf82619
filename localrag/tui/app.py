"""The localrag terminal app: chat over a watched, continuously indexed folder.

Everything slow runs in thread workers: the AutoIndexer loop (sync, graph, watcher),
model loading, and answering (tokens stream back through a TokenBuffer, one message
per burst). The app only talks to the core API (Index, Assistant), like the CLI.
"""

from __future__ import annotations

import threading
import time
from functools import partial
from typing import Callable, Iterable

from textual import on
from textual.app import App, ComposeResult, SystemCommand
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.css.query import NoMatches
from textual.screen import Screen
from textual.widgets import Footer, Header, Markdown, OptionList, TabbedContent, TabPane

from localrag.api import Assistant, EmptyIndexError, Index, IndexStatus
from localrag.config import Settings
from localrag.embed import Embedder
from localrag.ingest.watcher import AutoIndexer, IndexCycle
from localrag.llm.base import LLMError
from localrag.retrieve import strategy_names
from localrag.retrieve.filters import FilterError, parse_where, split_inline_filters
from localrag.tui.chat import AnswerBlock, ChatLog, QuestionInput
from localrag.tui.help import HelpScreen
from localrag.tui.messages import AnswerFailed, AnswerFinished, AnswerStage, AnswerStep, AnswerTokens, IndexCycleDone
from localrag.tui.model_control import ModelControl
from localrag.tui.models import available_models, model_label
from localrag.tui.panels import CostPanel, SkippedPanel, StatusPanel
from localrag.tui.pathtree import PathTree
from localrag.tui.progress import IndexProgress, ProgressFeed
from localrag.tui.source import SourcePanel
from localrag.tui.thread import ConversationControl, SearchedFor

AssistantFactory = Callable[[Index], Assistant]
PANELS = ("source", "path", "cost", "status", "skipped")


class Closing(Exception):
    """Raised in the answer thread's token callback to stop generation when the app exits."""


class LocalRagApp(ConversationControl, ModelControl, App[None]):
    TITLE = "localrag"
    CSS = """
    #main { height: 1fr; }
    #chat-column { width: 1fr; min-width: 40; }
    #question { margin: 0 1; }
    #side { width: 46%; border-left: solid $primary-background; }
    """
    BINDINGS = [
        Binding("f1", "help", "Help"),
        Binding("f2", "citations", "Citations"),
        Binding("f3", "panel('path')", "Path"),
        Binding("f4", "panel('cost')", "Cost"),
        Binding("f5", "panel('status')", "Status"),
        Binding("f6", "panel('skipped')", "Skipped"),
        Binding("f7", "toggle_indexing", "Stop/resume indexing"),
        Binding("ctrl+t", "next_strategy", "Strategy"),
        Binding("ctrl+n", "new_conversation", "New conversation", show=False),
        Binding("ctrl+o", "open_conversations", "Conversations", show=False),
        Binding("f8", "feedback('wrong')", "Wrong", show=False),
        Binding("f9", "feedback('right')", "Right", show=False),
        Binding("escape", "focus_input", "Question", show=False),
        Binding("ctrl+q", "quit", "Quit", priority=True),
    ]

    def __init__(self, settings: Settings, *, strategy: str | None = None, embedder: Embedder | None = None,
                 assistant_factory: AssistantFactory | None = None, graph: bool = True, watch: bool = True,
                 stable: bool = False) -> None:
        """``stable`` hides volatile figures (rates, ETAs, seconds, sizes, absolute paths): for snapshots."""
        super().__init__()
        self.settings = settings
        self.index = Index(settings, embedder)
        self.assistant_factory = assistant_factory or (lambda index: Assistant(index))
        self.assistant = self.assistant_factory(self.index)
        self.strategy = strategy or settings.strategy
        self.stable = stable
        self.feed = ProgressFeed()
        self.indexer = AutoIndexer(self.index, on_result=self._cycle_finished, on_sync_progress=self.feed.on_sync,
                                   on_graph_progress=self.feed.on_graph, watch=watch,
                                   graph=graph and settings.index.extractor != "none",
                                   graph_llm=None if settings.llm.index_model else self._graph_model)
        self._stop = threading.Event()
        self._model_lock = threading.Lock()
        self.model_ready = False
        self.model_state = "not loaded yet (loads with the first question)"
        self.model_name = model_label(settings.llm)
        self.answering = False
        self.cycles_done = 0
        self.last_cycle: IndexCycle | None = None
        self.last_status: IndexStatus | None = None
        self._known_skipped: set[str] | None = None
        self._last_change = ""
        self._block_seq = 0

    # -- layout ------------------------------------------------------------------------
    def compose(self) -> ComposeResult:
        yield Header(show_clock=False)
        yield IndexProgress(self.feed, graph_available=self.indexer.has_graph_phase, stable=self.stable)
        with Horizontal(id="main"):
            with Vertical(id="chat-column"):
                yield ChatLog(id="chat")
                yield QuestionInput(self._history(), id="question",
                                    placeholder="Ask about your notes… (Enter sends, ↑ history, F1 help)")
            with TabbedContent(id="side", initial="source"):
                with TabPane("Source", id="source"):
                    yield SourcePanel(self.index.folder, id="source-panel")
                with TabPane("Path", id="path"):
                    yield PathTree(id="path-tree")
                with TabPane("Cost", id="cost"):
                    yield CostPanel(id="cost-panel")
                with TabPane("Status", id="status"):
                    yield StatusPanel(id="status-panel")
                with TabPane("Skipped", id="skipped"):
                    yield SkippedPanel(id="skipped-panel")
        yield Footer()

    def on_mount(self) -> None:
        self._update_titles()
        box = self.query_one(QuestionInput)
        box.cursor_blink = not self.stable  # a blinking cursor would make snapshots flip
        box.focus()
        self.run_worker(partial(self.indexer.run, self._stop), thread=True, group="index", name="indexer")
        self.set_interval(0.5, self._refresh_state)
        self._refresh_state()
        self.resume_last_conversation()
        self.call_later(self.show_conversation)

    def on_unmount(self) -> None:
        self._stop_background()

    async def action_quit(self) -> None:
        self._stop_background()
        self.exit()

    def _stop_background(self) -> None:
        self._stop.set()
        self.indexer.stop()

    def _history(self) -> list[str]:
        try:
            return [q.text for q in reversed(self.index.store.calls.recent_queries(100))]
        except Exception:  # an old index without the query log: no history
            return []

    def _update_titles(self) -> None:
        folder = self.index.folder.name if self.stable else str(self.index.folder)
        ran = getattr(self, "last_ran", "")
        self.sub_title = f"{folder} · strategy {self.strategy}{ran} · model {self.model_name}"

    def _indexing_state(self) -> str:
        if self.indexer.paused:
            return "paused (F7 resumes)"
        if self.indexer.busy or self.cycles_done == 0:
            return "indexing: building the graph" if self.indexer.phase == "graph" else "indexing: reading and embedding files"
        return "watching for changes" if self.indexer.watching else "idle (not watching)"

    def _refresh_state(self) -> None:
        if not self.query(IndexProgress):
            return  # shutting down
        state = self._indexing_state()
        icon = "⏸" if self.indexer.paused else ("↻" if state.startswith("indexing") else "●")
        line = f"{icon} {state}"
        if self._last_change:
            line += f" · last change: {self._last_change}"
        progress = self.query_one(IndexProgress)
        progress.graph_running = self.indexer.phase == "graph"
        progress.set_state(line)

    def _refresh_status_panel(self) -> None:
        if self.last_status is not None and self.query(StatusPanel):
            self.query_one(StatusPanel).show_status(
                self.last_status, strategy=self.strategy, model=f"{self.model_name} — {self.model_state}",
                indexing=self._indexing_state(), last_change=self._last_change, stable=self.stable)

    # -- indexing (messages from the indexer thread) -------------------------------------
    def _cycle_finished(self, cycle: IndexCycle) -> None:
        try:
            status = self.index.status()
        except Exception:
            status = None
        self.post_message(IndexCycleDone(cycle, status))

    def on_index_cycle_done(self, msg: IndexCycleDone) -> None:
        try:
            self._show_cycle(msg)
        except NoMatches:
            pass  # the app is closing: its widgets are gone

    def _show_cycle(self, msg: IndexCycleDone) -> None:
        self.cycles_done += 1
        self.last_cycle = msg.cycle
        if msg.cycle.phase == "graph":
            self.feed.graph_finished()
        if msg.cycle.error:
            self.notify(msg.cycle.error, title="indexing", severity="error", timeout=10)
        if msg.cycle.trigger is not None:
            when = "" if self.stable else time.strftime("%H:%M:%S ")
            self._last_change = f"{when}{msg.cycle.trigger.describe(limit=2)}"
        if msg.status is not None:
            self.last_status = msg.status
            self.query_one(IndexProgress).set_status(msg.status)
            self.query_one(SkippedPanel).show_skipped(msg.status.skipped)
            self._notify_skipped(msg.status)
        self._refresh_state()
        self._refresh_status_panel()

    def _notify_skipped(self, status: IndexStatus) -> None:
        paths = {s.path for s in status.skipped}
        if self._known_skipped is None:
            if status.skipped:
                self.notify(f"{len(status.skipped)} file(s) could not be indexed: F6 shows which and why",
                            title="skipped files", severity="warning")
        else:
            for s in status.skipped:
                if s.path not in self._known_skipped:
                    self.notify(f"{s.path}: {s.reason} — {s.detail}", title="skipped", severity="warning")
        self._known_skipped = paths

    def action_toggle_indexing(self) -> None:
        if self.indexer.paused:
            self.indexer.resume()
            self.notify("indexing resumed: catching up with the folder", title="indexing")
        else:
            self.indexer.pause()
            self.notify("indexing stopped: answers use the index as it is (F7 resumes)", title="indexing")
        self._refresh_state()
        self._refresh_status_panel()

    # -- strategy ----------------------------------------------------------------------
    def strategies(self) -> list[str]:
        return ["auto", *strategy_names()]

    def set_strategy(self, name: str) -> None:
        self.strategy = name
        self._update_titles()
        self._refresh_status_panel()
        self.notify(f"strategy: {name}", title="strategy", timeout=2)

    def action_next_strategy(self) -> None:
        names = self.strategies()
        nxt = names[(names.index(self.strategy) + 1) % len(names)] if self.strategy in names else names[0]
        self.set_strategy(nxt)

    def action_feedback(self, verdict: str) -> None:
        """F8 / F9: the last answer was wrong (memory unlearns it, its repeat retrieves afresh) / right."""
        from localrag.memory.feedback import mark

        try:
            result = mark(self.index, verdict, getattr(self, "last_query_id", None))
        except Exception as exc:  # feedback never crashes the app (FeedbackError: nothing to mark)
            self.notify(str(exc), title="feedback", severity="warning", timeout=4)
            return
        self.notify(result.note, title=f"marked {verdict}", timeout=4)

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
        block = await self.query_one(ChatLog).add_block(self._block_seq, question)
        self.answering = True
        self.run_worker(partial(self._answer, block.block_id, question, block, self.strategy),
                        thread=True, group="answer", name=f"answer-{block.block_id}")

    def _answer(self, block_id: int, question: str, block: AnswerBlock, strategy: str) -> None:
        """In a worker thread: load the model if needed, retrieve, stream the answer."""
        self.indexer.hold()  # graph extraction shares the model: keep it free while the user waits
        try:
            if not self.model_ready:
                self.post_message(AnswerStage(block_id, f"loading the model {self.model_name} "
                                              "(first question only; the next ones start at once)…"))
                self._load_model()
            waited = False
            while self.index.store.docs.passage_count() == 0 and (self.cycles_done == 0 or self.indexer.busy):
                if self._stop.is_set():
                    return
                if not waited:
                    self.post_message(AnswerStage(block_id, "waiting for the first passages to be indexed…"))
                    waited = True
                time.sleep(0.2)
            resolved = self.assistant.resolve(strategy)
            self.post_message(AnswerStage(block_id, f"retrieving and answering ({resolved.strategy}: "
                                                    f"{resolved.reason})…"))

            def on_token(token: str) -> None:
                if self._stop.is_set():
                    raise Closing()
                if block.buffer.push(token):
                    self.post_message(AnswerTokens(block_id))

            conversation = self.conversation_for_question()
            if conversation is not None:
                conversation.on_resolved = lambda r: self.post_message(SearchedFor(block_id, r))
            question, terms = split_inline_filters(question)  # "/tag:project /path:work/ who …"
            answer = self.assistant.ask(question, strategy=strategy, on_token=on_token, where=parse_where(terms),
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
            self.indexer.release()

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
            block.add_step(msg.event, self.stable)

    async def on_answer_tokens(self, msg: AnswerTokens) -> None:
        block = self._block(msg.block_id)
        if block is not None:
            block.set_stage("")
            await block.stream_tokens()
            self.query_one(ChatLog).scroll_end(animate=False)

    async def on_answer_finished(self, msg: AnswerFinished) -> None:
        self.answering = False
        block = self._block(msg.block_id)
        if block is None:
            return
        await block.finish(msg.answer, self.stable)
        self.last_query_id = msg.answer.query_id
        self.last_ran = "" if msg.answer.strategy == self.strategy else f" → {msg.answer.strategy}"
        self._update_titles()
        if self.last_ran:  # `auto` chose: say why (an explicitly chosen strategy needs no notice)
            self.notify(msg.answer.strategy_reason, title=f"ran {msg.answer.strategy}", timeout=4)
        self.query_one(PathTree).show_trace(msg.answer.retrieval.trace)
        self.query_one(CostPanel).show_answer(msg.answer, self.stable)
        chat = self.query_one(ChatLog)
        self.call_after_refresh(chat.scroll_end, animate=False)  # after the final Markdown has its height

    async def on_answer_failed(self, msg: AnswerFailed) -> None:
        self.answering = False
        block = self._block(msg.block_id)
        if block is not None:
            await block.fail(msg.error)

    # -- citations and panels ------------------------------------------------------------
    def open_citation(self, block: AnswerBlock, number: int) -> bool:
        citation = block.citation(number)
        if citation is None:
            return False
        self.query_one(SourcePanel).show(citation)
        self.query_one(TabbedContent).active = "source"
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

    def action_citations(self) -> None:
        block = self.query_one(ChatLog).latest()
        if block is None or block.answer is None or not block.answer.citations:
            self.notify("no citations yet: ask a question first", timeout=3)
            return
        options = block.query_one(OptionList)
        options.focus()
        options.highlighted = 0
        self.query_one(TabbedContent).active = "source"

    def action_panel(self, name: str) -> None:
        if name == "status":
            self._refresh_status_panel()
        self.query_one(TabbedContent).active = name

    def action_focus_input(self) -> None:
        self.query_one(QuestionInput).focus()

    def action_help(self) -> None:
        if not isinstance(self.screen, HelpScreen):
            self.push_screen(HelpScreen())

    # -- command palette -------------------------------------------------------------------
    def get_system_commands(self, screen: Screen) -> Iterable[SystemCommand]:
        yield from super().get_system_commands(screen)
        for name in self.strategies():
            mark = " (current)" if name == self.strategy else ""
            yield SystemCommand(f"Strategy: {name}{mark}", f"answer with the {name} retrieval strategy",
                                partial(self.set_strategy, name))
        for option in available_models(self.settings.llm.model if self.settings.llm.model else ""):
            yield SystemCommand(f"Model: {option.name} ({option.source})",
                                f"switch the answering model to {option.path} ({option.size_bytes / 1e6:.0f} MB)",
                                partial(self.switch_model, option))
        if self.indexer.paused:
            yield SystemCommand("Indexing: resume", "catch up with every change in the folder", self.action_toggle_indexing)
        else:
            yield SystemCommand("Indexing: stop", "pause syncing and graph extraction", self.action_toggle_indexing)
        yield SystemCommand("Indexing: re-scan now", "sync the folder now", self.indexer.request_sync)
        for name, text in (("status", "index status"), ("skipped", "skipped files and reasons"),
                           ("path", "reasoning path of the last answer"), ("cost", "cost of the last answer")):
            yield SystemCommand(f"Show {text}", f"open the {name} panel", partial(self.action_panel, name))
        yield SystemCommand("Conversation: new", "start a new conversation (Ctrl+N)", self.action_new_conversation)
        yield SystemCommand("Conversation: open an earlier one", "list conversations to reopen and continue (Ctrl+O)",
                            self.action_open_conversations)
        yield SystemCommand("Help", "key bindings and what the panels mean", self.action_help)
