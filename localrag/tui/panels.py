"""Side panels that show tables: the cost of the last answer, index status, skipped files."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from rich.table import Table
from rich.text import Text
from textual.containers import VerticalScroll
from textual.widgets import Static

from localrag.answer import Answer
from localrag.api import IndexStatus
from localrag.records import SkippedFile
from localrag.tui.chat import timing_text
from localrag.tui.presentation import Presentation

EXTRA_LABELS = {"entities": "entities", "facts": "facts", "coref_pairs": "alias pairs", "graph_queue": "graph queue",
                "extraction_failures": "extraction failures"}


def _kv(rows: list[tuple[str, str]]) -> Table:
    table = Table.grid(padding=(0, 2))
    table.add_column(style="bold", no_wrap=True)
    table.add_column()
    for key, value in rows:
        table.add_row(key, Text(value))
    return table


@dataclass
class SessionCost:
    questions: int = 0
    calls: int = 0
    tokens: int = 0

    def add(self, answer: Answer) -> None:
        self.questions += 1
        self.calls += len(answer.calls)
        self.tokens += answer.tokens


class TablePanel(VerticalScroll):
    DEFAULT_CSS = """
    TablePanel { padding: 0 1; }
    TablePanel > Static { width: 100%; }
    """

    def __init__(self, placeholder: str, **kw: Any) -> None:
        super().__init__(**kw)
        self.placeholder = placeholder

    def compose(self):
        yield Static(Text(self.placeholder, style="dim"), classes="panel-body")

    def set_body(self, renderable: Any) -> None:
        self.query_one(".panel-body", Static).update(renderable)


class CostPanel(TablePanel):
    def __init__(self, **kw: Any) -> None:
        super().__init__("No answer yet: the cost of each answer (LLM calls, tokens, time, memory) shows here.", **kw)
        self.session = SessionCost()

    def show_answer(self, answer: Answer, shown: Presentation) -> None:
        self.session.add(answer)
        rows = [("strategy", answer.strategy), ("LLM calls", str(len(answer.calls))), ("tokens", f"{answer.tokens:,}")]
        timing = timing_text(answer, shown, " · ")
        if timing is not None:
            rows.append(("time", timing))
        phases = Table(show_edge=False, pad_edge=False, box=None)
        for col in ("phase", "calls", "prompt", "completion", "cached"):
            phases.add_column(col, justify="left" if col == "phase" else "right")
        by_phase: dict[str, list[int]] = {}
        for call in answer.calls:
            row = by_phase.setdefault(call.phase, [0, 0, 0, 0])
            row[0] += 1
            row[1] += call.prompt_tokens
            row[2] += call.completion_tokens
            row[3] += call.cached_tokens
        for phase, (n, prompt, completion, cached) in sorted(by_phase.items()):
            phases.add_row(phase, str(n), f"{prompt:,}", f"{completion:,}", f"{cached:,}")
        memory = answer.notes or ["nothing recalled from memory"]
        n = self.session.questions
        session = f"{n} question{'s' if n != 1 else ''} · {self.session.calls} LLM calls · {self.session.tokens:,} tokens"
        grid = Table.grid()
        grid.add_row(Text("Last answer", style="bold underline"))
        grid.add_row(_kv(rows))
        grid.add_row("")
        grid.add_row(Text("Tokens by phase", style="bold underline"))
        grid.add_row(phases if by_phase else Text("no LLM calls", style="dim"))
        grid.add_row("")
        grid.add_row(Text("Memory", style="bold underline"))
        for note in memory:
            grid.add_row(Text(f"• {note}"))
        grid.add_row("")
        grid.add_row(Text("This session", style="bold underline"))
        grid.add_row(Text(session))
        self.set_body(grid)


class StatusPanel(TablePanel):
    def __init__(self, **kw: Any) -> None:
        super().__init__("Reading the index…", **kw)

    def show_status(self, st: IndexStatus, *, strategy: str, model: str, indexing: str, last_change: str,
                    shown: Presentation) -> None:
        rows = [("folder", shown.folder(st.folder)), ("database", shown.database(st.db_path))]
        size = shown.size(st.db_bytes)
        if size is not None:
            rows.append(("size", size))
        rows += [
            ("documents", f"{st.documents:,}"), ("passages", f"{st.passages:,}"), ("embedded", f"{st.embedded:,}"),
            ("skipped files", str(len(st.skipped))),
        ]
        rows += [(EXTRA_LABELS.get(k, k), f"{v:,}" if isinstance(v, int) else str(v)) for k, v in st.extra.items()]
        rows += [("embedder", st.embedder), ("schema", f"v{st.schema_version}"), ("strategy", strategy),
                 ("model", model)]
        ocr = shown.ocr(st.ocr.summary) if st.ocr else None
        if ocr is not None:
            rows.append(("ocr", ocr))
        rows += [("indexing", indexing), ("last change", last_change or "none since start")]
        self.set_body(_kv(rows))


class SkippedPanel(TablePanel):
    def __init__(self, **kw: Any) -> None:
        super().__init__("No skipped files.", **kw)

    def show_skipped(self, skipped: list[SkippedFile]) -> None:
        if not skipped:
            self.set_body(Text("No skipped files: everything that looks like a note was indexed.", style="dim"))
            return
        table = Table(show_edge=False, box=None, pad_edge=False, expand=True)
        table.add_column("file", style="bold", overflow="fold")
        table.add_column("reason", style="yellow", no_wrap=True)
        table.add_column("detail", overflow="fold")
        for s in skipped:
            table.add_row(Text(s.path), s.reason, Text(s.detail))
        self.set_body(table)
