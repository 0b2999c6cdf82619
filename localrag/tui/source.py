"""The citation panel: the cited passage in its file, cited lines highlighted; a document's passage
(PDF, Word, deck, e-book) as its indexed text, under its locator ("p. 12", "slide 3")."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.widgets import Label, Static

from localrag.answer import Citation
from localrag.ingest.walker import fs_name

CONTEXT_LINES = 6  # lines shown above and below the cited range
MAX_SOURCE_BYTES = 2_000_000
_TEXT_KINDS = {".md", ".markdown", ".txt", ".rst", ".org", ".html", ".htm"}


def read_lines(folder: Path, rel: str) -> tuple[list[str] | None, str]:
    """The file's lines, or None and why not (gone, binary kind, unreadable)."""
    path = folder / fs_name(rel)  # an undecodable name is indexed under its display form
    if path.suffix.lower() not in _TEXT_KINDS:
        return None, f"a {path.suffix} document is shown as its indexed text"
    try:
        data = path.read_bytes()[:MAX_SOURCE_BYTES]
    except FileNotFoundError:
        return None, "the file is no longer on disk; showing the indexed text"
    except OSError as exc:
        return None, f"cannot read the file ({exc.strerror or exc}); showing the indexed text"
    return data.decode("utf-8", errors="replace").lstrip("\ufeff").splitlines(), ""


CITED_STYLE = "on #2b3a1f"


def _grid() -> Table:
    table = Table.grid(padding=(0, 1))
    table.add_column(justify="right", no_wrap=True)  # line number
    table.add_column(no_wrap=True, width=1)  # the cited-line bar
    table.add_column(overflow="fold", ratio=1)  # text: wraps under itself, not under the numbers
    return table


def render_source(citation: Citation, folder: Path, context: int = CONTEXT_LINES) -> tuple[Table, str]:
    """The lines around the cited range with line numbers; and a note (empty when all is well)."""
    p = citation.passage
    lines, note = read_lines(folder, p.path)
    out = _grid()
    if lines is None:
        for line in p.text.splitlines():
            out.add_row("", Text("▌", style="yellow"), Text(line, style=CITED_STYLE))
        return out, note
    start, end = max(1, p.start_line), max(p.start_line, p.end_line)
    first = max(1, start - context)
    last = min(len(lines), end + context)
    for n in range(first, last + 1):
        cited = start <= n <= end
        out.add_row(Text(str(n), style="bold yellow" if cited else "dim"), Text("▌" if cited else " ", style="yellow"),
                    Text(lines[n - 1], style=CITED_STYLE if cited else ""))
    first_text = next((ln.strip() for ln in p.text.splitlines() if ln.strip()), "")
    shown = "\n".join(lines[start - 1:end])
    if first_text and first_text[:40] not in shown:
        note = "the file changed since it was indexed: the highlighted lines may have moved"
    return out, note


class SourcePanel(VerticalScroll):
    DEFAULT_CSS = """
    SourcePanel { padding: 0 1; }
    SourcePanel > Label { width: 100%; }
    SourcePanel > #source-title { text-style: bold; color: $accent; }
    SourcePanel > #source-meta { color: $text-muted; }
    SourcePanel > #source-note { color: $warning; }
    """

    def __init__(self, folder: Path, **kw: Any) -> None:
        super().__init__(**kw)
        self.folder = folder
        self.citation: Citation | None = None

    def compose(self) -> ComposeResult:
        yield Label(Text("No citation open"), id="source-title")
        yield Label(Text("Pick a numbered citation under an answer (F2, or click [n] in the text)."), id="source-meta")
        yield Label("", id="source-note")
        yield Static("", id="source-body")

    def show(self, citation: Citation) -> None:
        self.citation = citation
        p = citation.passage
        body, note = render_source(citation, self.folder)
        self.query_one("#source-title", Label).update(Text(f"[{citation.number}] {p.path}"))
        where = p.locator or f"lines {p.start_line}–{p.end_line}"  # a document's page / slide / heading
        meta = where + (f" · {p.heading}" if p.heading else "")
        meta += " · cited in the answer" if citation.cited else " · given to the model as context"
        self.query_one("#source-meta", Label).update(Text(meta))
        self.query_one("#source-note", Label).update(Text(note))
        self.query_one("#source-note", Label).display = bool(note)
        self.query_one("#source-body", Static).update(body)
        self.scroll_home(animate=False)
