"""TUI test support: a streaming scripted LLM, an app factory and wait helpers.

Loaded by the TUI test modules with ``pytest_plugins = ["conftest_tui"]``.
"""

from __future__ import annotations

import json
import re
import shutil
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import pytest

from localrag.api import Assistant
from localrag.llm.base import LLMError, Reply, Usage
from localrag.tui.presentation import Presentation

EXAMPLES = Path(__file__).resolve().parents[1] / "examples" / "notes"

_PASSAGE = re.compile(r'^\[(\d+)\] [^\n]* \(([^()\n]*)\)\n<passage>\n(.*?)\n</passage>', re.S | re.M)
_QUESTION = re.compile(r"Question: (.*?)\n", re.S)


def first_sentence(text: str) -> str:
    body = " ".join(line for line in text.splitlines() if line.strip() and not line.startswith("#"))
    return re.split(r"(?<=[.!?])\s", body.strip(), maxsplit=1)[0][:160]


class StreamingScriptedLLM:
    """Answers from the prompt it is given, word by word through ``on_token``.

    - answer: quotes the first sentence of passage 1 and cites [1], then names passage 2 [2];
    - ner: the capitalised words of the question;
    - track: keeps path 0 and stops (so NeuroPath runs one real round);
    - any other schema call: an empty object (the caller's validation decides).
    """

    model_id = "scripted-llm"

    def __init__(self, fail_answer: str = ""):
        self.fail_answer = fail_answer
        self.phases: list[str] = []

    def chat(self, messages, *, schema=None, max_tokens=512, phase="answer", on_token=None, choices=None) -> Reply:
        self.phases.append(phase)
        user = messages[-1]["content"]
        if phase == "answer":
            if self.fail_answer:
                raise LLMError(self.fail_answer)
            # constrained: the first span offered (the grammar's choices come from the best evidence first)
            text = choices[0] if choices else self._answer(user)
        elif phase == "ner":
            question = user.split("Question:", 1)[-1]
            names = [w.strip("?,.") for w in question.split() if w[:1].isupper() and len(w) > 3][:6]
            text = json.dumps({"named_entities": names})
        elif phase == "track":
            chain = "the first path answers the question"
            text = json.dumps({"current_chain": chain, "valid_ids": [0], "expansion_requirements": "",
                               "need_expand_ids": [], "continue": 0})
        else:
            text = "{}"
        if on_token is not None:
            for word in re.findall(r"\S+\s*", text):
                on_token(word)
        return Reply(text=text, usage=Usage(len(user.split()), len(text.split())), ms=1.0, model=self.model_id,
                     finish_reason="stop")

    @staticmethod
    def _answer(user: str) -> str:
        passages = _PASSAGE.findall(user)
        if not passages:
            return "The notes do not say."
        first = first_sentence(passages[0][2])
        text = f"From the notes: {first} [1]"
        if len(passages) > 1:
            text += f" See also {passages[1][1].split(':')[0]} [2]."
        return text


@dataclass(frozen=True)
class FrozenPresentation(Presentation):
    """What snapshots can repeat: no time of day, dates, seconds, rates, ETAs or sizes; folder names
    instead of absolute paths; a cursor that does not blink; no OCR engine line."""

    cursor_blink: bool = False

    def time_of_day(self) -> str:
        return ""

    def date(self, timestamp: float) -> str | None:
        return None

    def seconds(self, seconds: float, digits: int = 2) -> str | None:
        return None

    def rate(self, rate: float | None, eta_s: float | None, unit: str) -> str | None:
        return None

    def size(self, n_bytes: int) -> str | None:
        return None

    def folder(self, folder: str | Path) -> str:
        return Path(folder).name

    def database(self, db_path: str) -> str:
        return ".localrag/index.db"

    def ocr(self, summary: str) -> str | None:
        return None  # whether this machine has an OCR engine is no part of a snapshot


def make_tui_app(notes: Path, embedder, *, llm=None, assistant_factory=None, graph: bool = False,
                 strategy: str = "hybrid", watch: bool = True, presentation: Presentation | None = None,
                 **overrides):
    """A LocalRagApp on ``notes`` with the scripted LLM; ``presentation`` defaults to FrozenPresentation."""
    from localrag.config import load_settings
    from localrag.tui.app import LocalRagApp

    # free-text answers unless a test asks for answers by question shape (test_tui_pilot: short answers)
    settings = load_settings(notes, {"index.watch_debounce_ms": 200, "answer.mode": "free", **overrides}, env={})
    scripted = llm or StreamingScriptedLLM()
    factory = assistant_factory or (lambda index: Assistant(index, llm=scripted))
    return LocalRagApp(settings, strategy=strategy, embedder=embedder, assistant_factory=factory, graph=graph,
                       watch=watch, presentation=presentation or FrozenPresentation())


async def wait_until(pilot, condition: Callable[[], bool], timeout: float = 60.0, what: str = "condition") -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if not pilot.app.is_running:
            raise AssertionError(f"the app stopped while waiting for {what}")
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}")
        await pilot.pause(0.05)


async def wait_indexed(pilot, cycles: int = 1, timeout: float = 120.0) -> None:
    app = pilot.app
    await wait_until(pilot, lambda: app.indexing.cycles_done >= cycles and not app.indexing.indexer.busy, timeout,
                     f"{cycles} index cycle(s)")
    await pilot.pause()


async def ask(pilot, question: str, timeout: float = 60.0):
    """Type a question, press Enter, wait for the answer block to finish; returns the block."""
    from localrag.tui.chat import ChatLog

    app = pilot.app
    before = len(app.query(ChatLog).first().children)
    app.query_one("#question").value = question
    await pilot.press("enter")
    await wait_until(pilot, lambda: len(app.query(ChatLog).first().children) > before, timeout, "the answer block")
    await wait_until(pilot, lambda: not app.chat.answering, timeout, "the answer")
    await pilot.pause()
    return app.query(ChatLog).first().latest()


@pytest.fixture(scope="session")
def prebuilt_notes(tmp_path_factory, embedder) -> Path:
    """examples/notes indexed once per session (fast phase only), so each test starts from a warm index."""
    from localrag.api import Index
    from localrag.config import load_settings

    folder = tmp_path_factory.mktemp("prebuilt") / "notes"
    shutil.copytree(EXAMPLES, folder, ignore=shutil.ignore_patterns(".localrag"))
    index = Index(load_settings(folder, {}, env={}), embedder)
    try:
        index.sync()
    finally:
        index.close()
    return folder


@pytest.fixture
def indexed_notes(prebuilt_notes: Path, tmp_path: Path) -> Path:
    """A writable copy of the prebuilt folder and its index (mtimes kept: the start-up sync finds nothing to do)."""
    dst = tmp_path / "warm" / "notes"
    shutil.copytree(prebuilt_notes, dst, copy_function=shutil.copy2)
    return dst


@pytest.fixture
def tui_app(indexed_notes: Path, embedder):
    """A factory: tui_app(**options) -> LocalRagApp on ``indexed_notes``; ``folder=`` picks another folder."""
    apps = []

    def make(folder: Path | None = None, **options):
        app = make_tui_app(folder or indexed_notes, embedder, **options)
        apps.append(app)
        return app

    yield make
    for app in apps:
        app.index.close()


__all__ = ["StreamingScriptedLLM", "FrozenPresentation", "make_tui_app", "wait_until", "wait_indexed", "ask", "first_sentence"]
