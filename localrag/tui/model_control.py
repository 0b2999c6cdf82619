"""The app's model handling: load once in a worker, share it with graph extraction, switch it.

A mixin of ``LocalRagApp`` (it uses the app's settings, assistant, indexer and titles), kept
apart so the app module stays small; Textual finds ``on_model_state`` through the MRO.
"""

from __future__ import annotations

import threading
import time
from typing import TYPE_CHECKING, Callable

from localrag.llm.base import LLMError
from localrag.tui.messages import ModelState
from localrag.tui.models import ModelOption, SharedModel, model_label

if TYPE_CHECKING:
    from localrag.api import Assistant, Index
    from localrag.config import Settings
    from localrag.ingest.watcher import AutoIndexer


class ModelControl:
    settings: "Settings"
    assistant: "Assistant"
    assistant_factory: "Callable[[Index], Assistant]"
    index: "Index"
    indexer: "AutoIndexer"
    answering: bool
    model_ready: bool
    model_name: str
    model_state: str
    stable: bool
    _model_lock: threading.Lock

    def _graph_model(self) -> "SharedModel | None":
        """Extraction borrows the answering model (loaded on its first call) instead of loading a second copy.

        None when the extractor needs no model (the index then decides, as `localrag index` does)."""
        from localrag.kg.builder import resolve_extractor

        if resolve_extractor(self.settings)[0] == "rules":
            return None

        def loaded():
            self._load_model()
            return self.assistant.llm().inner

        return SharedModel(loaded, self.settings.llm, interrupt=self.indexer.interrupting)

    def _load_model(self) -> None:
        """In a worker thread: load the LLM once, reporting the state to the UI."""
        with self._model_lock:
            if self.model_ready:
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
                self.model_ready = True
                self.model_name = llm.model_id
            seconds = time.perf_counter() - started
            self.post_message(ModelState("ready", "loaded" + ("" if self.stable else f" in {seconds:.1f} s")))

    def on_model_state(self, msg: ModelState) -> None:
        self.model_state = msg.detail if msg.state != "failed" else f"failed: {msg.detail}"
        self._update_titles()
        if msg.state == "failed":
            self.notify(msg.detail, title="model", severity="error", timeout=15)
        self._refresh_status_panel()

    def switch_model(self, option: ModelOption) -> None:
        if self.answering:
            self.notify("wait for the current answer before switching the model", severity="warning")
            return
        self.settings.llm.model = str(option.path)
        self.settings.llm.url = ""
        self.assistant = self.assistant_factory(self.index)
        self.model_ready = False
        self.model_name = model_label(self.settings.llm)
        self._update_titles()
        self.notify(f"switching to {option.name}: loading in the background", title="model")
        self.run_worker(self._load_model_quietly, thread=True, group="model", name="load-model")

    def _load_model_quietly(self) -> None:
        try:
            self._load_model()
        except LLMError:
            pass  # reported through ModelState
