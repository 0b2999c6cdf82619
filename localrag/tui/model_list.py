"""The model list: every GGUF `localrag models` finds, with the same columns; Enter switches to one."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import DataTable, Label

from localrag.config import Settings
from localrag.llm.catalog import HEADERS, Catalog, catalog, columns
from localrag.llm.model_stores import FoundModel

READING = "reading the models' headers…"


class ModelsScreen(ModalScreen["FoundModel | None"]):
    """The models found, the current one marked; the result is the model chosen (None: Esc)."""

    BINDINGS = [Binding("escape", "dismiss_none", "Close")]
    DEFAULT_CSS = """
    ModelsScreen { align: center middle; }
    ModelsScreen > Vertical { width: 130; max-width: 98%; height: auto; max-height: 85%;
                              border: thick $primary; background: $surface; padding: 0 1; }
    ModelsScreen DataTable { height: auto; max-height: 30; }
    ModelsScreen #models-note { color: $text-muted; }
    """

    def __init__(self, settings: Settings) -> None:
        super().__init__()
        self.settings = settings
        self.found: Catalog | None = None

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Label(Text("Models — Enter switches to one (loaded in the background), Esc closes", style="bold"))
            table: DataTable = DataTable(id="models", cursor_type="row", zebra_stripes=True)
            table.add_columns("", *HEADERS)
            yield table
            yield Label(READING, id="models-note")

    def on_mount(self) -> None:
        self.query_one(DataTable).focus()
        self.run_worker(self._read, thread=True, group="models", name="read-model-headers")

    def _read(self) -> None:
        found = catalog(self.settings.llm)
        self.app.call_from_thread(self.show, found)

    def show(self, found: Catalog) -> None:
        self.found = found
        table = self.query_one(DataTable)
        table.clear()
        for i, entry in enumerate(found.entries):
            mark = "•" if entry.default and not self.settings.llm.url else ""
            style = "" if entry.usable else "red"
            table.add_row(mark, *(Text(c, style=style) for c in columns(entry, self.settings.auto_min_params)),
                          key=str(i))
        note = f"{len(found.entries)} models" if found.entries else "no GGUF model found"
        self.query_one("#models-note", Label).update(f"{note} · • the model in use · `auto runs`: what "
                                                      "`auto` retrieves with once the graph is built")

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        if self.found is None or event.row_key.value is None:
            return
        entry = self.found.entries[int(event.row_key.value)]
        if not entry.usable:
            self.notify(f"{entry.model.name}: {entry.problem}", title="model", severity="error", timeout=8)
            return
        self.dismiss(entry.model)

    def action_dismiss_none(self) -> None:
        self.dismiss(None)
