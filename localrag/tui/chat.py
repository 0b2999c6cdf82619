"""The chat column: the question input (with history), and one block per answer."""

from __future__ import annotations

import re
import threading
from typing import Any

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.widgets import Input, Label, Markdown, OptionList, Static
from textual.widgets.option_list import Option

from localrag.answer import Answer, Citation
from localrag.answer.events import AskEvent, EvidenceReady, FirstToken
from localrag.tui.presentation import Presentation

_CITE = re.compile(r"\[(\d{1,3})\]")


def link_citations(text: str, limit: int) -> str:
    """[n] markers become links the Markdown widget reports as ``cite:n`` clicks."""
    return _CITE.sub(lambda m: f"[[{m.group(1)}]](cite:{m.group(1)})" if 1 <= int(m.group(1)) <= limit else m.group(0), text)


def citation_label(c: Citation) -> Text:
    p = c.passage
    label = Text(f"[{c.number}] ", style="bold")
    label.append("cited  " if c.cited else "context", style="green" if c.cited else "dim")
    label.append(f"  {p.path}", style="bold")
    label.append(f" {p.locator}" if p.locator else f":{p.start_line}-{p.end_line}")
    if p.heading:
        label.append(f"  {p.heading}", style="italic dim")
    return label


def timing_text(answer: Answer, shown: Presentation, joiner: str) -> str | None:
    """"retrieve 0.12 s + answer 1.30 s" (``joiner`` between them), None where the presentation leaves seconds out."""
    retrieve, generate = shown.seconds(answer.retrieve_ms / 1000), shown.seconds(answer.answer_ms / 1000)
    if retrieve is None or generate is None:
        return None
    return f"retrieve {retrieve}{joiner}answer {generate}"


def cost_line(answer: Answer, shown: Presentation) -> str:
    phases = ", ".join(f"{phase} {n:,}" for phase, n in sorted(answer.tokens_by_phase().items()))
    calls = len(answer.calls)
    parts = [answer.strategy, f"{calls} LLM call{'s' if calls != 1 else ''}",
             f"{answer.tokens:,} tokens" + (f" ({phases})" if phases else "")]
    timing = timing_text(answer, shown, " + ")
    if timing is not None:
        parts.append(timing)
    return " · ".join(parts)


def steps_text(steps: list[AskEvent], shown: Presentation) -> Text:
    """"0.12 s retrieving (hybrid) › 0.31 s evidence: 3 sentences › …" (the last six steps)."""
    text = Text()
    for i, event in enumerate(steps[-6:]):
        if i:
            text.append("  ›  ", style="dim")
        elapsed = shown.seconds(event.elapsed_s)
        if elapsed is not None:
            text.append(f"{elapsed} ", style="dim")
        text.append(event.label())
    return text


def evidence_text(quotes: tuple[str, ...]) -> Text:
    text = Text("Evidence\n", style="bold")
    for i, quote in enumerate(quotes, start=1):
        location, _, body = quote.partition("  ")
        text.append(f"{i}. ", style="bold")
        text.append(f"“{' '.join(body.split())}” ")
        text.append(location + ("\n" if i < len(quotes) else ""), style="cyan")
    return text


def outcome_text(answer: Answer) -> Text:
    """The short answer's sentence, an abstention's reason, open-answer sentences without a citation."""
    text = Text()
    if answer.overridden:
        text.append("the model's reply followed an instruction found in the notes: the evidence is shown instead\n",
                    style="yellow")
    if answer.abstained:
        text.append("not in your notes", style="bold yellow")
        text.append(f" ({answer.abstain_reason}); the closest passages are below", style="dim")
    elif answer.span_sentence is not None and not answer.span:  # the quote is the answer
        text.append("quoted from ", style="dim")
        text.append(answer.span_sentence.location, style="cyan")
    elif answer.span_sentence is not None:
        s = answer.span_sentence
        text.append("from ", style="dim")
        text.append(f"“{' '.join(s.text.split())}” ")
        text.append(s.location, style="cyan")
    for sentence in answer.unsupported:
        text.append(("\n" if text.plain else "") + "unsupported (no citation): ", style="yellow")
        text.append(sentence)
    return text


class TokenBuffer:
    """Tokens from the answer thread, drained by the UI: one message per burst, not per token."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._parts: list[str] = []
        self._signalled = False

    def push(self, token: str) -> bool:
        """Add a token; True when the UI must be told (nothing is waiting to be drained)."""
        with self._lock:
            self._parts.append(token)
            signal, self._signalled = not self._signalled, True
            return signal

    def drain(self) -> str:
        with self._lock:
            text = "".join(self._parts)
            self._parts.clear()
            self._signalled = False
            return text


class QuestionInput(Input):
    """An Input with shell-like history on up/down."""

    BINDINGS = [
        Binding("up", "history(-1)", "Previous question", show=False),
        Binding("down", "history(1)", "Next question", show=False),
    ]

    def __init__(self, history: list[str] | None = None, **kw: Any) -> None:
        super().__init__(**kw)
        self.history: list[str] = list(history or [])
        self._pos = len(self.history)
        self._draft = ""

    def remember(self, question: str) -> None:
        if question and (not self.history or self.history[-1] != question):
            self.history.append(question)
        self._pos = len(self.history)
        self._draft = ""

    def action_history(self, step: int) -> None:
        if not self.history:
            return
        if self._pos == len(self.history):
            self._draft = self.value
        self._pos = max(0, min(len(self.history), self._pos + step))
        self.value = self.history[self._pos] if self._pos < len(self.history) else self._draft
        self.cursor_position = len(self.value)


class AnswerBlock(Vertical):
    """A question, its streamed answer, the numbered citations and the cost line."""

    DEFAULT_CSS = """
    AnswerBlock { height: auto; margin: 0 0 1 0; }
    AnswerBlock > .question { color: $accent; text-style: bold; }
    AnswerBlock > .stage { color: $text-muted; text-style: italic; }
    AnswerBlock > .stage.error { color: $error; text-style: bold; }
    AnswerBlock > Markdown { margin: 0; padding: 0 1; }
    AnswerBlock > OptionList { height: auto; max-height: 8; border: none; padding: 0 1; }
    AnswerBlock > .cost { color: $text-muted; padding: 0 1; width: 100%; }
    AnswerBlock > .stage { width: 100%; }
    AnswerBlock > .steps { color: $text-muted; padding: 0 1; width: 100%; }
    AnswerBlock > .evidence { padding: 0 1; width: 100%; border-left: tall $accent; margin: 0 0 0 1; }
    AnswerBlock > .outcome { padding: 0 1; width: 100%; }
    """

    def __init__(self, block_id: int, question: str, presentation: Presentation, **kw: Any) -> None:
        super().__init__(id=f"answer-{block_id}", **kw)
        self.block_id = block_id
        self.question = question
        self.presentation = presentation
        self.buffer = TokenBuffer()
        self.answer: Answer | None = None
        self._stream: Any = None
        self._streamed = ""
        self.steps: list[AskEvent] = []

    def compose(self) -> ComposeResult:
        yield Label(Text(f"› {self.question}"), classes="question")
        yield Label("retrieving…", classes="stage")
        steps = Label("", classes="steps")
        steps.display = False
        yield steps
        evidence = Static("", classes="evidence")
        evidence.display = False
        yield evidence
        yield Markdown("", open_links=False)
        outcome = Static("", classes="outcome")
        outcome.display = False
        yield outcome
        options = OptionList(classes="citations")
        options.display = False
        yield options
        cost = Label("", classes="cost")
        cost.display = False
        yield cost

    def set_stage(self, text: str, error: bool = False) -> None:
        stage = self.query_one(".stage", Label)
        stage.set_class(error, "error")
        stage.display = bool(text)
        stage.update(Text(text))

    def add_step(self, event: AskEvent) -> None:
        """A step of the question as it happens: the last steps with their elapsed time; evidence at once."""
        if isinstance(event, FirstToken):
            return
        self.steps.append(event)
        self.set_stage("")
        line = steps_text(self.steps, self.presentation)
        steps = self.query_one(".steps", Label)
        steps.update(line)
        steps.display = True
        if isinstance(event, EvidenceReady):
            evidence = self.query_one(".evidence", Static)
            evidence.update(evidence_text(event.quotes))
            evidence.display = bool(event.quotes)

    async def stream_tokens(self) -> None:
        text = self.buffer.drain()
        if not text:
            return
        if self._stream is None:
            self._stream = Markdown.get_stream(self.query_one(Markdown))
        self._streamed += text
        await self._stream.write(text)

    async def finish(self, answer: Answer) -> None:
        self.answer = answer
        if self._stream is not None:
            await self._stream.stop()
            self._stream = None
        text = answer.text or "_(the model gave an empty answer)_"
        if answer.span and not answer.abstained:
            text = f"**{answer.span}**" + text[len(answer.span):]
        await self.query_one(Markdown).update(link_citations(text, len(answer.citations)))
        self.set_stage("")
        outcome = self.query_one(".outcome", Static)
        outcome.update(outcome_text(answer))
        outcome.display = bool(outcome_text(answer).plain)
        options = self.query_one(OptionList)
        options.clear_options()
        options.add_options([Option(citation_label(c), id=f"cite-{c.number}") for c in answer.citations])
        options.display = bool(answer.citations)
        cost = self.query_one(".cost", Label)
        notes = " · ".join(answer.notes)
        cost.update(Text(cost_line(answer, self.presentation) + (f" · {notes}" if notes else "")))
        cost.display = True

    async def fail(self, error: str) -> None:
        if self._stream is not None:
            await self._stream.stop()
            self._stream = None
        self.set_stage(error, error=True)

    def citation(self, number: int) -> Citation | None:
        if self.answer is None:
            return None
        return next((c for c in self.answer.citations if c.number == number), None)


class ChatLog(VerticalScroll):
    DEFAULT_CSS = """
    ChatLog { height: 1fr; padding: 0 1; }
    ChatLog > .welcome { color: $text-muted; margin: 1 0; }
    """

    def compose(self) -> ComposeResult:
        yield Static(Text(
            "Ask a question about your notes and press Enter. Answers cite passages as [1], [2] …: "
            "click a number, or press F2 and pick one, to read it beside the chat. "
            "F1 help · Ctrl+P commands (strategy, model, indexing)."),
            classes="welcome",
        )

    async def add_block(self, block_id: int, question: str, presentation: Presentation) -> AnswerBlock:
        block = AnswerBlock(block_id, question, presentation)
        await self.mount(block)
        self.scroll_end(animate=False)
        return block

    def latest(self) -> AnswerBlock | None:
        blocks = list(self.query(AnswerBlock))
        return blocks[-1] if blocks else None
