"""The model control: load the answering model once in a worker, share it with graph extraction, switch it.

A component of the app's screen with nothing to show (the header and the status panel
show its state): it owns the Assistant, handles ``ModelState`` from the load worker, and
lets the message bubble on so the app can refresh what shows the model.
"""

from __future__ import annotations

import threading
import time
from typing import Callable

from textual.widget import Widget

from localrag.api import Assistant, Index
from localrag.config import Settings
from localrag.kg.builder import resolve_extractor
from localrag.llm.base import LLMError
from localrag.llm.model_stores import FoundModel
from localrag.tui.messages import ModelOffload, ModelState
from localrag.tui.models import SharedModel, model_label, offload_label
from localrag.tui.presentation import Presentation


class ModelControl(Widget):
    DEFAULT_CSS = "ModelControl { display: none; }"

    def __init__(self, index: Index, settings: Settings, assistant_factory: Callable[[Index], Assistant],
                 presentation: Presentation, **kw: object) -> None:
        super().__init__(**kw)  # type: ignore[arg-type]
        self.index = index
        self.settings = settings
        self.assistant_factory = assistant_factory
        self.assistant = assistant_factory(index)
        self.presentation = presentation
        self.ready = False
        self.state = "not loaded yet (loads with the first question)"
        self.name_shown = model_label(settings.llm)
        self.offload_shown = ""  # "CPU" / "CUDA 29/29 layers", planned in a worker (llama.cpp loads in 0.3 s)
        self._lock = threading.Lock()

    def on_mount(self) -> None:
        self.run_worker(self._plan_offload, thread=True, group="offload", name="plan-offload")

    def _plan_offload(self) -> None:
        self.post_message(ModelOffload(offload_label(self.settings.llm)))

    def graph_model(self, interrupting: Callable[[], bool]) -> SharedModel | None:
        """Extraction borrows the answering model (loaded on its first call) instead of loading a second copy.

        None when the extractor needs no model (the index then decides, as `localrag index` does)."""
        if resolve_extractor(self.settings)[0] == "rules":
            return None

        def loaded():
            self.load()
            return self.assistant.llm().inner

        return SharedModel(loaded, self.settings.llm, interrupt=interrupting)

    def load(self) -> None:
        """In a worker thread: load the LLM once, reporting the state to the UI."""
        with self._lock:
            if self.ready:
                return
            assistant = self.assistant
            self.post_message(ModelState("loading", "loading…"))
            started = time.perf_counter()
            try:
                llm = assistant.llm()
            except LLMError as exc:
                self.post_message(ModelState("failed", str(exc)))
                raise
            if assistant is self.assistant:
                self.ready = True
                self.name_shown = llm.model_id
                self.offload_shown = offload_label(self.settings.llm, llm.inner)
            took = self.presentation.seconds(time.perf_counter() - started, digits=1)
            self.post_message(ModelState("ready", "loaded" + ("" if took is None else f" in {took}")))

    def on_model_state(self, msg: ModelState) -> None:
        self.state = msg.detail if msg.state != "failed" else f"failed: {msg.detail}"
        if msg.state == "failed":
            self.notify(msg.detail, title="model", severity="error", timeout=15)

    def on_model_offload(self, msg: ModelOffload) -> None:
        if not self.ready:  # a loaded model reports its own
            self.offload_shown = msg.text

    def switch(self, option: FoundModel, *, answering: bool) -> None:
        """Rebuild the Assistant on ``option`` and load it in the background (not while a question is answered)."""
        if answering:
            self.notify("wait for the current answer before switching the model", severity="warning")
            return
        self.settings.llm.model = option.spec
        self.settings.llm.url = ""
        self.assistant = self.assistant_factory(self.index)
        self.ready = False
        self.name_shown = model_label(self.settings.llm)
        self.run_worker(self._plan_offload, thread=True, group="offload", name="plan-offload")
        self.notify(f"switching to {option.name}: loading in the background", title="model")
        self.run_worker(self._load_quietly, thread=True, group="model", name="load-model")

    def _load_quietly(self) -> None:
        try:
            self.load()
        except LLMError:
            pass  # reported through ModelState
