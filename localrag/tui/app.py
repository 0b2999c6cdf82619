"""The localrag terminal app: chat over a watched, continuously indexed folder.

The app composes three components and routes between them and the side panels:
``IndexingRows`` (runs the AutoIndexer, shows its cycles), ``ChatColumn`` (the asking flow:
question, answer worker, conversation, feedback) and ``ModelControl`` (loads, shares and
switches the model). Everything slow runs in their thread workers; they only talk to the
core API (Index, Assistant), like the CLI. How volatile figures show is a ``Presentation``.
"""

from __future__ import annotations

import threading
from functools import partial
from typing import Callable, Iterable

from textual.app import App, ComposeResult, SystemCommand
from textual.binding import Binding
from textual.containers import Horizontal
from textual.screen import Screen
from textual.widgets import Footer, Header, TabbedContent, TabPane

from localrag.api import Assistant, Index
from localrag.config import Settings
from localrag.embed import Embedder
from localrag.retrieve import strategy_names
from localrag.tui.asking import ChatColumn, CitationChosen
from localrag.tui.help import HelpScreen
from localrag.tui.indexing import IndexingChanged, IndexingRows
from localrag.llm.model_stores import FoundModel
from localrag.tui.messages import AnswerFinished, ModelOffload, ModelState
from localrag.tui.model_control import ModelControl
from localrag.tui.model_list import ModelsScreen
from localrag.tui.models import available_models
from localrag.tui.panels import CostPanel, SkippedPanel, StatusPanel
from localrag.tui.pathtree import PathTree
from localrag.tui.presentation import Presentation
from localrag.tui.source import SourcePanel

AssistantFactory = Callable[[Index], Assistant]


class LocalRagApp(App[None]):
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
                 presentation: Presentation | None = None) -> None:
        """``presentation`` formats times, durations, rates, sizes and paths (tests pass a frozen one)."""
        super().__init__()
        self.settings = settings
        self.index = Index(settings, embedder)
        self.strategy = strategy or settings.strategy
        self.presentation = presentation or Presentation()
        self.last_ran = ""  # " → dense" when `auto` chose another strategy for the last answer
        self._stop = threading.Event()
        self.models = ModelControl(self.index, settings, assistant_factory or (lambda index: Assistant(index)),
                                   self.presentation)
        self.indexing = IndexingRows(self.index, graph=graph and settings.index.extractor != "none", watch=watch,
                                     graph_model=None if settings.llm.index_model else self.models.graph_model,
                                     stopping=self._stop, presentation=self.presentation)
        self.chat = ChatColumn(self.index, settings, models=self.models, indexing=self.indexing,
                               current_strategy=lambda: self.strategy, stopping=self._stop,
                               presentation=self.presentation, id="chat-column")

    def compose(self) -> ComposeResult:
        yield Header(show_clock=False)
        yield self.indexing
        yield self.models
        with Horizontal(id="main"):
            yield self.chat
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

    def on_unmount(self) -> None:
        self.indexing.stop()

    async def action_quit(self) -> None:
        self.indexing.stop()
        self.exit()

    def _update_titles(self) -> None:
        folder = self.presentation.folder(self.index.folder)
        offload = f" · {self.models.offload_shown}" if self.models.offload_shown else ""
        self.sub_title = f"{folder} · strategy {self.strategy}{self.last_ran} · model {self.models.name_shown}{offload}"

    def _refresh_status_panel(self) -> None:
        status = self.indexing.last_status
        if status is not None and self.query(StatusPanel):
            self.query_one(StatusPanel).show_status(
                status, strategy=self.strategy, model=f"{self.models.name_shown} — {self.models.state}",
                indexing=self.indexing.state_text(), last_change=self.indexing.last_change,
                shown=self.presentation)

    # -- routing between the components and the side panels ------------------------------
    def on_indexing_changed(self, msg: IndexingChanged) -> None:
        if msg.status is not None and self.query(SkippedPanel):
            self.query_one(SkippedPanel).show_skipped(msg.status.skipped)
        self._refresh_status_panel()

    def on_model_state(self, msg: ModelState) -> None:
        self._update_titles()
        self._refresh_status_panel()

    def on_model_offload(self, msg: ModelOffload) -> None:
        self._update_titles()

    def on_answer_finished(self, msg: AnswerFinished) -> None:
        answer = msg.answer
        self.last_ran = "" if answer.strategy == self.strategy else f" → {answer.strategy}"
        self._update_titles()
        if self.last_ran:  # `auto` chose: say why (an explicitly chosen strategy needs no notice)
            self.notify(answer.strategy_reason, title=f"ran {answer.strategy}", timeout=4)
        self.query_one(PathTree).show_trace(answer.retrieval.trace)
        self.query_one(CostPanel).show_answer(answer, self.presentation)

    def on_citation_chosen(self, msg: CitationChosen) -> None:
        self.query_one(SourcePanel).show(msg.citation)
        self.query_one(TabbedContent).active = "source"

    def switch_model(self, option: FoundModel | None) -> None:
        if option is None:
            return
        self.models.switch(option, answering=self.chat.answering)
        self._update_titles()

    def action_models(self) -> None:
        """The model list: every model found, with its header's figures; Enter switches."""
        self.push_screen(ModelsScreen(self.settings), self.switch_model)

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

    # -- key bindings: each one routes to the component that does it ------------------------
    def action_toggle_indexing(self) -> None:
        self.indexing.toggle()

    def action_feedback(self, verdict: str) -> None:
        self.chat.feedback(verdict)

    async def action_new_conversation(self) -> None:
        await self.chat.action_new_conversation()

    def action_open_conversations(self) -> None:
        self.chat.action_open_conversations()

    def action_citations(self) -> None:
        if self.chat.focus_citations():
            self.query_one(TabbedContent).active = "source"

    def action_panel(self, name: str) -> None:
        if name == "status":
            self._refresh_status_panel()
        self.query_one(TabbedContent).active = name

    def action_focus_input(self) -> None:
        self.chat.focus_question()

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
        yield SystemCommand("Models: list and switch", "every GGUF model found (models/, Hugging Face cache, LM "
                            "Studio, Ollama) with size, parameters, quantisation, context, chat template",
                            self.action_models)
        for option in available_models(self.settings.llm):
            yield SystemCommand(f"Model: {option.name} ({option.source})",
                                f"switch the answering model to {option.path} ({option.size_bytes / 1e6:.0f} MB)",
                                partial(self.switch_model, option))
        if self.indexing.indexer.paused:
            yield SystemCommand("Indexing: resume", "catch up with every change in the folder", self.indexing.toggle)
        else:
            yield SystemCommand("Indexing: stop", "pause syncing and graph extraction", self.indexing.toggle)
        yield SystemCommand("Indexing: re-scan now", "sync the folder now", self.indexing.indexer.request_sync)
        for name, text in (("status", "index status"), ("skipped", "skipped files and reasons"),
                           ("path", "reasoning path of the last answer"), ("cost", "cost of the last answer")):
            yield SystemCommand(f"Show {text}", f"open the {name} panel", partial(self.action_panel, name))
        yield SystemCommand("Conversation: new", "start a new conversation (Ctrl+N)",
                            self.chat.action_new_conversation)
        yield SystemCommand("Conversation: open an earlier one", "list conversations to reopen and continue (Ctrl+O)",
                            self.chat.action_open_conversations)
        yield SystemCommand("Help", "key bindings and what the panels mean", self.action_help)
