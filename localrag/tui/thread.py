"""The chat as a conversation thread: earlier turns, "searched for: …", a new conversation, reopening one.

A mixin of the chat column (``ChatColumn``): it keeps one ``Conversation``; Ctrl+N
starts a new one, Ctrl+O lists earlier ones (first question, date, turns) to reopen and
continue; on start it resumes the last conversation of the index.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.message import Message
from textual.screen import ModalScreen
from textual.widgets import Label, Markdown, OptionList
from textual.widgets.option_list import Option

from localrag.conversation import Conversation, Resolution, Session, Turn
from localrag.tui.presentation import Presentation

from localrag.tui.chat import AnswerBlock, ChatLog

if TYPE_CHECKING:
    from localrag.api import Index
    from localrag.config import Settings

NO_CONVERSATIONS = "no earlier conversations in this index yet"


def searched_for_text(resolution_query: str) -> Text:
    return Text(f"searched for: {resolution_query}", style="italic")


class SearchedLabel(Label):
    """"searched for: …" under a follow-up: what retrieval used, so the user can see and correct it."""

    DEFAULT_CSS = """
    SearchedLabel { color: $text-muted; padding: 0 1; width: 100%; }
    """


class SearchedFor(Message):
    """The answer worker resolved a follow-up: show what retrieval searches for."""

    def __init__(self, block_id: int, resolution: Resolution) -> None:
        super().__init__()
        self.block_id = block_id
        self.resolution = resolution


class PastTurn(Vertical):
    """An earlier turn of a reopened conversation: question, what was searched for, answer, sources."""

    DEFAULT_CSS = """
    PastTurn { height: auto; margin: 0 0 1 0; }
    PastTurn > .question { color: $accent; text-style: bold; }
    PastTurn > Markdown { margin: 0; padding: 0 1; }
    PastTurn > .sources { color: $text-muted; padding: 0 1; }
    """

    def __init__(self, turn: Turn, **kw: Any) -> None:
        super().__init__(**kw)
        self.turn = turn

    def compose(self) -> ComposeResult:
        yield Label(Text(f"› {self.turn.question}"), classes="question")
        if self.turn.was_resolved:
            yield SearchedLabel(searched_for_text(self.turn.resolved), classes="searched")
        yield Markdown(self.turn.answer or "_(no answer)_", open_links=False)
        if self.turn.citations:
            yield Label(Text("  ".join(f"[{c.number}] {c.location}" for c in self.turn.citations)), classes="sources")


def session_label(session: Session, shown: Presentation) -> Text:
    label = Text(session.first_question[:80] or "(no question yet)", style="bold")
    turns = f"{session.turns} turn{'s' if session.turns != 1 else ''}"
    when = shown.date(session.created)
    label.append(f"  {turns}" + ("" if when is None else f" · {when}"), style="dim")
    return label


class ConversationsScreen(ModalScreen["int | None"]):
    """Earlier conversations, newest first: Enter reopens one (its id is the result)."""

    BINDINGS = [Binding("escape", "dismiss_none", "Close")]
    DEFAULT_CSS = """
    ConversationsScreen { align: center middle; }
    ConversationsScreen > Vertical { width: 100; max-width: 95%; height: auto; max-height: 80%;
                                     border: thick $primary; background: $surface; padding: 0 1; }
    ConversationsScreen OptionList { height: auto; max-height: 30; border: none; }
    """

    def __init__(self, sessions: list[Session], current: int | None, presentation: Presentation) -> None:
        super().__init__()
        self.sessions = sessions
        self.current = current
        self.presentation = presentation

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Label(Text("Conversations — Enter reopens one, Esc closes", style="bold"))
            options = [Option(self._label(s), id=f"session-{s.id}") for s in self.sessions]
            yield OptionList(*options, id="conversations") if options else Label(NO_CONVERSATIONS)

    def _label(self, s: Session) -> Text:
        label = session_label(s, self.presentation)
        if s.id == self.current:
            label.append("  (open)", style="green")
        return label

    def on_mount(self) -> None:
        if self.query("#conversations"):
            self.query_one("#conversations", OptionList).focus()

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        self.dismiss(int(str(event.option.id).split("-")[1]))

    def action_dismiss_none(self) -> None:
        self.dismiss(None)


class ConversationControl:
    """The chat column's side of conversations (mixed into ChatColumn)."""

    settings: "Settings"
    index: "Index"
    presentation: Presentation
    answering: bool
    conversation: Conversation | None = None

    def resume_last_conversation(self) -> None:
        """On start: the last conversation of the index, if any (a new one starts with the first question)."""
        try:
            latest = self.index.store.sessions.latest()
            if latest is not None:
                self.conversation = Conversation(self.index.store, latest, self.settings)
        except Exception:  # a read-only or damaged index: no thread, questions still work
            self.conversation = None

    def conversation_for_question(self) -> Conversation | None:
        """In the answer worker: the open conversation, created with the first question of a new one."""
        if self.conversation is None:
            try:
                self.conversation = Conversation.open(self.index.store, self.settings)
            except Exception:
                return None
        return self.conversation

    async def show_conversation(self) -> None:
        """Replace the chat's blocks by the open conversation's turns."""
        chat = self.query_one(ChatLog)  # type: ignore[attr-defined]
        await chat.query(f"{AnswerBlock.__name__}, {PastTurn.__name__}").remove()
        if self.conversation is not None and self.conversation.turns:
            await chat.mount_all([PastTurn(t) for t in self.conversation.turns])
        chat.scroll_end(animate=False)

    async def action_new_conversation(self) -> None:
        if self.answering:
            self.notify("still answering: a new conversation starts once this answer is done",  # type: ignore
                        severity="warning", timeout=3)
            return
        self.conversation = None
        await self.show_conversation()
        self.notify("new conversation: the next question starts it", title="conversation", timeout=3)  # type: ignore

    def action_open_conversations(self) -> None:
        try:
            sessions = self.index.store.sessions.recent(50)
        except Exception:
            sessions = []
        current = self.conversation.session.id if self.conversation is not None else None
        self.app.push_screen(ConversationsScreen(sessions, current, self.presentation), self._reopen)  # type: ignore

    async def _reopen(self, session_id: int | None) -> None:
        if session_id is None or self.answering:
            return
        try:
            self.conversation = Conversation.open(self.index.store, self.settings, session_id=session_id)
            self.index.store.sessions.touch(session_id)  # restarting the app resumes this one
        except Exception as exc:
            self.notify(f"cannot reopen the conversation: {exc}", severity="error")  # type: ignore
            return
        await self.show_conversation()

    def on_searched_for(self, msg: SearchedFor) -> None:
        found = self.query(f"#answer-{msg.block_id}")  # type: ignore[attr-defined]
        if not found or not msg.resolution.changed:
            return
        block: AnswerBlock = found.first()
        if not block.query(".searched"):
            label = SearchedLabel(searched_for_text(msg.resolution.query), classes="searched")
            block.mount(label, after=block.query_one(".question"))
