"""The app's components on their own: each handles its own messages, hosted by a bare App.

IndexingRows, ModelControl and ChatColumn are mounted in a host App that has no handler of
theirs, so what they show comes from their own handlers; a fixed clock injected through
the Presentation shows its time. Real index (warm examples/notes), real embedder, scripted LLM.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import threading
from pathlib import Path

import pytest
from rich.console import Console
from textual.app import App, ComposeResult
from textual.message import Message
from textual.widget import Widget

from conftest_tui import FrozenPresentation, StreamingScriptedLLM, ask, wait_indexed, wait_until
from conftest_tui import indexed_notes, prebuilt_notes, tui_app  # noqa: F401  (fixtures)
from localrag.api import Assistant, Index, IndexStatus
from localrag.config import load_settings
from localrag.ingest.documents.ocr import OcrAvailability
from localrag.ingest.watcher import ChangeBatch, IndexCycle
from localrag.records import SkippedFile
from localrag.tui.app import LocalRagApp
from localrag.tui.asking import ChatColumn
from localrag.tui.indexing import IndexingChanged, IndexingRows
from localrag.tui.messages import AnswerFinished, IndexCycleDone, ModelState
from localrag.tui.model_control import ModelControl
from localrag.tui.panels import StatusPanel
from localrag.tui.presentation import Presentation

SIZE = (140, 40)
FIXED = dt.datetime(2026, 1, 2, 3, 4, 5).timestamp()


def text_of(renderable) -> str:
    console = Console(width=200, record=True, file=open("/dev/null", "w"))
    console.print(renderable)
    return console.export_text()


class Host(App[None]):
    """Mounts the given widgets and records what bubbles up to it; handles nothing itself."""

    def __init__(self, *widgets: Widget) -> None:
        super().__init__()
        self.widgets = widgets
        self.bubbled: list[Message] = []

    def compose(self) -> ComposeResult:
        yield from self.widgets

    def on_indexing_changed(self, msg: IndexingChanged) -> None:
        self.bubbled.append(msg)

    def on_answer_finished(self, msg: AnswerFinished) -> None:
        self.bubbled.append(msg)


def status_of(folder: Path) -> IndexStatus:
    return IndexStatus(folder=str(folder), db_path=str(folder / ".localrag" / "index.db"), db_bytes=123_456,
                       documents=7, passages=40, embedded=40,
                       skipped=[SkippedFile("big.pdf", "too large", "12 MB")], embedder="minilm", schema_version=1,
                       ocr=OcrAvailability("auto", "tesseract", "tesseract: PDF pages without a text layer are read by OCR"))


def edited(path: str) -> IndexCycle:
    return IndexCycle(trigger=ChangeBatch(paths={path}, modified=1))


@pytest.fixture
def index(indexed_notes: Path, embedder):  # noqa: F811  (fixture)
    opened = Index(load_settings(indexed_notes, {"answer.mode": "free"}, env={}), embedder)
    yield opened
    opened.close()


def test_indexing_rows_show_a_cycle_by_themselves_with_the_injected_clock(index: Index) -> None:
    rows = IndexingRows(index, graph=False, watch=False, graph_model=None, stopping=threading.Event(),
                        presentation=Presentation(clock=lambda: FIXED))
    host = Host(rows)

    async def scenario() -> None:
        async with host.run_test(size=SIZE) as pilot:
            await wait_until(pilot, lambda: rows.cycles_done >= 1 and not rows.indexer.busy, 60, "the start-up sync")
            done = rows.cycles_done
            rows.post_message(IndexCycleDone(edited("people/wenna-strake.md"), status_of(index.folder)))
            await wait_until(pilot, lambda: rows.cycles_done > done, 10, "the cycle message")
            await pilot.pause()
            assert rows.last_cycle.trigger.paths == {"people/wenna-strake.md"}
            state = str(rows.query_one("#index-state").content)
            assert "last change: 03:04:05 1 modified: people/wenna-strake.md" in state
            detail = text_of(rows.query_one("#row-passages").query_one(".phase-detail").content)
            assert "40/40 passages embedded · 7 files" in detail
            assert any("big.pdf" in n.message for n in host._notifications)  # a newly skipped file
            changed = [m for m in host.bubbled if isinstance(m, IndexingChanged)]
            assert changed and changed[-1].status.documents == 7  # told the host, which did nothing for it
        rows.stop()

    asyncio.run(scenario())


def test_model_control_keeps_its_state_from_its_messages(index: Index) -> None:
    models = ModelControl(index, index.settings, lambda ix: Assistant(ix, llm=StreamingScriptedLLM()),
                          FrozenPresentation())
    host = Host(models)

    async def scenario() -> None:
        async with host.run_test(size=SIZE) as pilot:
            assert "not loaded yet" in models.state
            models.post_message(ModelState("failed", "bad magic"))
            await pilot.pause()
            assert models.state == "failed: bad magic"
            await asyncio.to_thread(models.load)  # a worker's load: the scripted model, "loaded" (no seconds)
            await wait_until(pilot, lambda: models.state == "loaded", 10, "the ready state")
            assert models.ready and models.name_shown == "scripted-llm"

    asyncio.run(scenario())


def test_chat_column_answers_without_the_app(index: Index) -> None:
    stopping = threading.Event()
    shown = Presentation(clock=lambda: FIXED)
    models = ModelControl(index, index.settings, lambda ix: Assistant(ix, llm=StreamingScriptedLLM()), shown)
    rows = IndexingRows(index, graph=False, watch=False, graph_model=None, stopping=stopping, presentation=shown)
    chat = ChatColumn(index, index.settings, models=models, indexing=rows, current_strategy=lambda: "hybrid",
                      stopping=stopping, presentation=shown)
    host = Host(rows, models, chat)

    async def scenario() -> None:
        async with host.run_test(size=SIZE) as pilot:
            pilot.app.indexing, pilot.app.chat = rows, chat  # what conftest_tui's helpers read
            await wait_indexed(pilot)
            block = await ask(pilot, "Where does Ilse Varnhagen live?")
            assert block.answer is not None and block.answer.citations and block.answer.strategy == "hybrid"
            assert block._streamed.strip() == block.answer.text.strip()
            assert " s " in str(block.query_one(".cost").render())  # the real presentation shows seconds
            assert chat.last_query_id == block.answer.query_id
            assert any(isinstance(m, AnswerFinished) for m in host.bubbled)  # bubbled on for the side panels
        rows.stop()

    asyncio.run(scenario())


def test_the_app_routes_but_leaves_the_components_messages_to_them(tui_app) -> None:
    for handler in ("on_index_cycle_done", "on_answer_stage", "on_answer_step", "on_answer_tokens",
                    "on_answer_failed", "on_searched_for", "ask_question"):
        assert not hasattr(LocalRagApp, handler), handler
    app = tui_app(presentation=Presentation(clock=lambda: FIXED))

    async def scenario() -> None:
        async with app.run_test(size=SIZE) as pilot:
            await wait_indexed(pilot)
            assert str(app.index.folder) in app.sub_title  # the real presentation: the absolute path
            app.indexing.post_message(IndexCycleDone(edited("saltreach.md"), status_of(app.index.folder)))
            await wait_until(pilot, lambda: app.indexing.last_change.startswith("03:04:05"), 10, "the cycle")
            await pilot.pause()
            status = text_of(app.query_one(StatusPanel).query_one(".panel-body").content)
            assert "03:04:05 1 modified: saltreach.md" in status and "120.6 KB" in status  # routed to the panel
            assert "tesseract: PDF pages without a text layer are read by OCR" in status  # the machine's OCR engine

    asyncio.run(scenario())
