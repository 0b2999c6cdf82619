"""Pilot tests: the real app on a temporary copy of examples/notes, real index, real watcher.

The answering LLM is scripted (tests/conftest_tui.py); everything else is real: SQLite +
sqlite-vec, MiniLM, the sync, the watchdog observer, the rules graph extractor.
"""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path

from rich.console import Console
from textual.widgets import Markdown, OptionList, TabbedContent

from conftest_tui import StreamingScriptedLLM, ask, wait_indexed, wait_until
from conftest_tui import indexed_notes, prebuilt_notes, tui_app  # noqa: F401  (fixtures)
from localrag.api import Assistant
from localrag.retrieve.neuropath.events import RoundStep
from localrag.tui.chat import QuestionInput
from localrag.tui.help import HelpScreen
from localrag.tui.panels import CostPanel, SkippedPanel, StatusPanel
from localrag.tui.pathtree import PathTree
from localrag.tui.presentation import Presentation
from localrag.tui.source import SourcePanel

SIZE = (150, 45)


def text_of(renderable) -> str:
    console = Console(width=200, record=True, file=open("/dev/null", "w"))
    console.print(renderable)
    return console.export_text()


def panel_text(app, panel_type) -> str:
    return text_of(app.query_one(panel_type).query_one(".panel-body").content)


def run(coro) -> None:
    asyncio.run(coro)


def test_index_ask_stream_and_open_citations(tui_app, notes_dir: Path) -> None:
    app = tui_app(notes_dir)  # not indexed yet: the app indexes it from scratch

    async def scenario() -> None:
        async with app.run_test(size=SIZE) as pilot:
            await wait_indexed(pilot)
            st = app.indexing.last_status
            assert st.passages > 0 and st.embedded == st.passages and st.documents == 25
            rows = text_of(app.query_one("#row-passages").query_one(".phase-detail").content)
            assert f"{st.embedded}/{st.passages} passages embedded" in rows

            # typed for real, key by key
            await pilot.click("#question")
            await pilot.press(*"Where does Ilse Varnhagen live?")
            await pilot.press("enter")
            await wait_until(pilot, lambda: not app.chat.answering and app.query("AnswerBlock"), 60, "the answer")
            await pilot.pause()
            block = app.query_one("AnswerBlock")
            answer = block.answer
            assert answer is not None and answer.strategy == "hybrid"
            assert block._streamed.strip() == answer.text.strip()  # it arrived through the token stream
            md = block.query_one(Markdown)
            assert "[[1]](cite:1)" in md.source  # citation markers are links
            options = block.query_one(OptionList)
            assert options.option_count == len(answer.citations) >= 2

            # F2 focuses the citations; Enter opens the highlighted one in the side panel
            await pilot.press("f2")
            await pilot.press("enter")
            await pilot.pause()
            source = app.query_one(SourcePanel)
            assert app.query_one(TabbedContent).active == "source"
            first = answer.citations[0]
            assert source.citation.number == first.number
            body = text_of(app.query_one("#source-body").content)
            cited_line = next(ln for ln in first.passage.text.splitlines() if ln.strip())
            assert cited_line.strip() in body
            assert f"lines {first.passage.start_line}–{first.passage.end_line}" in str(app.query_one("#source-meta").content)

            # clicking a [2] link in the answer opens citation 2
            md.post_message(Markdown.LinkClicked(md, "cite:2"))
            await pilot.pause()
            assert source.citation.number == 2

            # cost panel and path tree for a strategy without paths
            cost = panel_text(app, CostPanel)
            assert "LLM calls" in cost and "answer" in cost and f"{answer.tokens:,}" in cost
            tree = app.query_one(PathTree)
            assert "No reasoning path (strategy hybrid)" in str(tree.root.label)

    run(scenario())


def test_history_walks_back_and_forth(tui_app) -> None:
    app = tui_app()

    async def scenario() -> None:
        async with app.run_test(size=SIZE) as pilot:
            await wait_indexed(pilot)
            await ask(pilot, "How high is Mount Skelda?")
            await ask(pilot, "Who founded Kelpwright Systems?")
            box = app.query_one(QuestionInput)
            await pilot.press(*"draft")
            await pilot.press("up")
            assert box.value == "Who founded Kelpwright Systems?"
            await pilot.press("up")
            assert box.value == "How high is Mount Skelda?"
            await pilot.press("up")
            assert box.value == "How high is Mount Skelda?"
            await pilot.press("down", "down")
            assert box.value == "draft"

    run(scenario())


def test_edited_note_is_picked_up_by_the_watcher(tui_app, indexed_notes: Path) -> None:
    app = tui_app()

    async def scenario() -> None:
        async with app.run_test(size=SIZE) as pilot:
            await wait_indexed(pilot)
            block = await ask(pilot, "What is the name of Wenna Strake's pet heron?")
            assert "Bartholomew" not in block.answer.text

            note = indexed_notes / "people" / "wenna-strake.md"
            note.write_text(note.read_text() + "\nWenna Strake's pet heron is called Bartholomew Quillfeather.\n")
            done = app.indexing.cycles_done
            await wait_until(pilot, lambda: app.indexing.cycles_done > done and app.indexing.last_cycle.trigger is not None,
                             30, "the watcher's sync")
            assert "people/wenna-strake.md" in app.indexing.last_cycle.trigger.paths
            assert app.indexing.last_cycle.sync.updated == 1
            assert "last change" in str(app.query_one("#index-state").content)

            block = await ask(pilot, "What is the name of Wenna Strake's pet heron?")
            top = block.answer.citations[0] if block.answer.citations[0].cited else None
            assert top is not None and top.passage.path == "people/wenna-strake.md"
            assert "Bartholomew Quillfeather" in top.passage.text
            app.chat.open_citation(block, top.number)
            await pilot.pause()
            assert "Bartholomew Quillfeather" in text_of(app.query_one("#source-body").content)

    run(scenario())


def test_deleted_note_is_gone_from_results(tui_app, indexed_notes: Path) -> None:
    app = tui_app()
    question = "How high is Mount Skelda?"

    async def scenario() -> None:
        async with app.run_test(size=SIZE) as pilot:
            await wait_indexed(pilot)
            before = await ask(pilot, question)
            assert "trip-brannoch-vale-2023.md" in [c.passage.path for c in before.answer.citations]

            (indexed_notes / "trip-brannoch-vale-2023.md").unlink()
            done = app.indexing.cycles_done
            await wait_until(pilot, lambda: app.indexing.cycles_done > done and app.indexing.last_cycle.trigger is not None,
                             30, "the watcher's sync")
            assert app.indexing.last_cycle.sync.removed == 1 and app.indexing.last_status.documents == 24

            after = await ask(pilot, question)
            assert "trip-brannoch-vale-2023.md" not in [c.passage.path for c in after.answer.citations]
            # the old answer's citation now says the file is gone, and shows the indexed text
            old = next(c for c in before.answer.citations if c.passage.path == "trip-brannoch-vale-2023.md")
            app.chat.open_citation(before, old.number)
            await pilot.pause()
            assert "no longer on disk" in str(app.query_one("#source-note").content)

    run(scenario())


def test_neuropath_answer_shows_hops_in_the_path_tree(tui_app) -> None:
    app = tui_app(graph=True, strategy="neuropath", **{"index.extractor": "rules"})

    async def scenario() -> None:
        async with app.run_test(size=SIZE) as pilot:
            await wait_until(pilot, lambda: app.indexing.last_cycle is not None
                             and app.indexing.last_cycle.phase == "graph", 180, "the graph phase")
            assert not app.indexing.last_cycle.error and app.indexing.last_status.extra["facts"] > 0
            graph_row = text_of(app.query_one("#row-graph").query_one(".phase-detail").content)
            assert f"{app.indexing.last_status.extra['facts']} facts" in graph_row

            block = await ask(pilot, "Who is the guild mentor of Wenna Strake?")
            assert block.answer.strategy == "neuropath"
            await pilot.press("f3")
            tree = app.query_one(PathTree)
            assert app.query_one(TabbedContent).active == "path"
            assert str(tree.root.label).startswith("Reasoning path — neuropath, 1 hop")
            labels = [str(n.label) for n in tree.root.children]
            assert "Hop 1" in labels
            hop = tree.root.children[labels.index("Hop 1")]
            kept = next(n for n in hop.children if str(n.label).startswith("kept (1)"))
            round_step = next(s for s in block.answer.retrieval.trace.steps if isinstance(s, RoundStep))
            fact = next(c for c in round_step.candidates if c.id == round_step.selected[0])
            assert str(kept.children[0].label).startswith(fact.text.strip().rstrip(";").strip()[:40])
            assert any("stop" in str(n.label) for n in hop.children)
            assert "ner" in panel_text(app, CostPanel) and "track" in panel_text(app, CostPanel)

    run(scenario())


def test_strategy_switch_by_key_and_palette(tui_app) -> None:
    app = tui_app()

    async def scenario() -> None:
        async with app.run_test(size=SIZE) as pilot:
            await wait_indexed(pilot)
            names = app.strategies()
            await pilot.press("ctrl+t")
            assert app.strategy == names[(names.index("hybrid") + 1) % len(names)]
            assert f"strategy {app.strategy}" in app.sub_title

            await pilot.press("ctrl+p")
            await pilot.pause(0.3)
            await pilot.press(*"Strategy: lexical")
            await pilot.pause(0.5)
            await pilot.press("enter")
            await wait_until(pilot, lambda: app.strategy == "lexical", 10, "the palette command")
            block = await ask(pilot, "Who founded Kelpwright Systems?")
            assert block.answer.strategy == "lexical"

    run(scenario())


def assistants_made():
    """(the Assistants built so far, an assistant factory on the scripted model that records them)."""
    made: list[Assistant] = []

    def factory(index):
        made.append(Assistant(index, llm=StreamingScriptedLLM()))
        return made[-1]

    return made, factory


def test_model_switch_from_the_palette_rebuilds_the_assistant(tui_app) -> None:
    from localrag.tui.models import available_models

    made, factory = assistants_made()
    app = tui_app(assistant_factory=factory)

    async def scenario() -> None:
        async with app.run_test(size=SIZE) as pilot:
            await wait_indexed(pilot)
            options = available_models(app.settings.llm)
            assert options, "the bundled model should be found"
            app.switch_model(options[-1])
            await wait_until(pilot, lambda: app.models.ready, 10, "the new model")
            assert len(made) == 2 and app.models.assistant is made[-1]
            assert app.settings.llm.model == options[-1].spec
            assert app.models.state == "loaded"
            block = await ask(pilot, "How high is Mount Skelda?")
            assert block.answer.calls and made[-1].llm().inner.phases == ["answer"]

    run(scenario())


def test_first_question_shows_the_model_loading(tui_app) -> None:
    release = threading.Event()

    class SlowToLoad(Assistant):
        loads = 0

        def llm(self):
            if not SlowToLoad.loads:
                SlowToLoad.loads += 1
                release.wait(10)
            return super().llm()

    app = tui_app(assistant_factory=lambda index: SlowToLoad(index, llm=StreamingScriptedLLM()))

    async def scenario() -> None:
        async with app.run_test(size=SIZE) as pilot:
            await wait_indexed(pilot)
            assert "not loaded yet" in app.models.state
            app.query_one("#question").value = "How high is Mount Skelda?"
            await pilot.press("enter")
            await wait_until(pilot, lambda: any("loading the model" in str(w.content) for w in app.query(".stage")), 10,
                             "the loading stage")
            assert app.models.state == "loading…"
            await pilot.press(*"typing stays live")  # the UI is not blocked by the load
            assert app.query_one(QuestionInput).value == "typing stays live"
            release.set()
            await wait_until(pilot, lambda: not app.chat.answering, 30, "the answer")
            assert app.models.state == "loaded" and app.query_one("AnswerBlock").answer is not None

    run(scenario())


def test_model_errors_are_shown_in_the_chat_not_raised(tui_app) -> None:
    app = tui_app(llm=StreamingScriptedLLM(fail_answer="llama.cpp could not load x.gguf: bad magic"))

    async def scenario() -> None:
        async with app.run_test(size=SIZE) as pilot:
            await wait_indexed(pilot)
            block = await ask(pilot, "How high is Mount Skelda?")
            stage = block.query_one(".stage")
            assert "model error: llama.cpp could not load x.gguf" in str(stage.content)
            assert stage.has_class("error") and block.answer is None
            await pilot.press("enter")  # an empty question does nothing
            assert len(app.query("AnswerBlock")) == 1

    run(scenario())


def test_stop_and_resume_indexing(tui_app, indexed_notes: Path) -> None:
    app = tui_app()

    async def scenario() -> None:
        async with app.run_test(size=SIZE) as pilot:
            await wait_indexed(pilot)
            await pilot.press("f7")
            assert app.indexing.indexer.paused and "paused" in str(app.query_one("#index-state").content)
            done = app.indexing.cycles_done
            (indexed_notes / "saltreach.md").write_text("# Saltreach\n\nRewritten while indexing was stopped.\n")
            await pilot.pause(1.5)
            assert app.indexing.cycles_done == done
            await pilot.press("f7")
            await wait_until(pilot, lambda: app.indexing.cycles_done > done, 30, "the catch-up sync")
            assert not app.indexing.indexer.paused and app.indexing.last_cycle.sync.updated == 1

    run(scenario())


def test_skipped_files_are_notified_and_listed(tui_app, indexed_notes: Path) -> None:
    (indexed_notes / "scan.md").write_bytes(b"\x00\x01binary\x00" * 10)
    app = tui_app()

    async def scenario() -> None:
        async with app.run_test(size=SIZE) as pilot:
            await wait_indexed(pilot)
            messages = [n.message for n in app._notifications]
            assert any("1 file(s) could not be indexed" in m for m in messages)
            await pilot.press("f6")
            assert app.query_one(TabbedContent).active == "skipped"
            listed = panel_text(app, SkippedPanel)
            assert "scan.md" in listed and "binary" in listed

            done = app.indexing.cycles_done
            (indexed_notes / "empty.md").write_text("")
            await wait_until(pilot, lambda: app.indexing.cycles_done > done, 30, "the watcher's sync")
            messages = [n.message for n in app._notifications]
            assert any(m.startswith("empty.md: empty") for m in messages)
            assert "empty.md" in panel_text(app, SkippedPanel)

    run(scenario())


def test_status_panel_and_help_screen(tui_app) -> None:
    app = tui_app()

    async def scenario() -> None:
        async with app.run_test(size=SIZE) as pilot:
            await wait_indexed(pilot)
            await pilot.press("f5")
            assert app.query_one(TabbedContent).active == "status"
            status = panel_text(app, StatusPanel)
            st = app.indexing.last_status
            assert any(line.split()[:2] == ["passages", str(st.passages)] for line in status.splitlines())
            for word in ("documents", "embedded", "watching for changes", "hybrid", "notes"):
                assert word in status
            await pilot.press("f1")
            assert isinstance(app.screen, HelpScreen)
            await pilot.press("escape")
            assert not isinstance(app.screen, HelpScreen)

    run(scenario())


def test_typing_stays_responsive_while_indexing(notes_dir: Path, embedder) -> None:
    from conftest_tui import make_tui_app

    gate = threading.Event()

    class SlowEmbedder:
        id, dim = embedder.id, embedder.dim

        def encode(self, texts, batch_size=32):
            gate.wait(20)  # indexing is stuck until the test has typed
            return embedder.encode(texts, batch_size)

        def encode_one(self, text):
            return embedder.encode_one(text)

    app = make_tui_app(notes_dir, SlowEmbedder())

    async def scenario() -> None:
        async with app.run_test(size=SIZE) as pilot:
            await wait_until(pilot, lambda: app.indexing.indexer.busy, 10, "indexing to start")
            await pilot.press(*"still typing")
            assert app.query_one(QuestionInput).value == "still typing"
            assert app.indexing.indexer.busy and app.indexing.cycles_done == 0
            assert "indexing" in str(app.query_one("#index-state").content)
            gate.set()
            await wait_indexed(pilot)

    try:
        run(scenario())
    finally:
        gate.set()
        app.index.close()


def test_quitting_stops_the_background_threads(tui_app) -> None:
    app = tui_app()

    async def scenario() -> None:
        async with app.run_test(size=SIZE) as pilot:
            await wait_indexed(pilot)
            await pilot.press("ctrl+q")

    run(scenario())
    assert app._stop.is_set() and not app.indexing.indexer.watching
    assert not [t for t in threading.enumerate() if t.name.startswith("localrag-watch")]


def test_inline_filters_in_the_question_line(tui_app) -> None:
    app = tui_app()

    async def scenario() -> None:
        async with app.run_test(size=SIZE) as pilot:
            await wait_indexed(pilot)
            block = await ask(pilot, "/path:people/ Who leads the Lanternfish project?")
            assert block.answer is not None and block.answer.question == "Who leads the Lanternfish project?"
            assert block.answer.retrieval.passages
            assert all(sp.passage.path.startswith("people/") for sp in block.answer.retrieval.passages)
            bad = await ask(pilot, "/colour:red anything")  # not a filter key: asked as written
            assert bad.answer is not None
            wrong = await ask(pilot, "/tag:# anything")  # a filter that names no tag: refused, shown in the chat
            assert wrong.answer is None

    run(scenario())


def test_short_answer_shows_steps_evidence_and_its_sentence(tui_app) -> None:
    """Answers by question shape: the steps and the evidence appear before the span and its sentence."""
    async def run() -> None:
        app = tui_app(presentation=Presentation(), **{"answer.mode": "shape", "answer.abstain_below": 0, "answer.abstain_unnamed_below": 0})
        async with app.run_test(size=SIZE) as pilot:
            await wait_indexed(pilot)
            block = await ask(pilot, "How high is Mount Skelda?")
            answer = block.answer
            assert answer.mode == "short" and answer.span and answer.span_sentence is not None
            kinds = [e.kind for e in block.steps]
            assert kinds[0] == "retrieval" and kinds.index("evidence") < kinds.index("answer_started")
            evidence = str(block.query_one(".evidence").render())
            assert "Evidence" in evidence and answer.evidence[0].location in evidence
            outcome = str(block.query_one(".outcome").render())
            assert answer.span_sentence.location in outcome
            assert "s " in str(block.query_one(".steps").render())

    asyncio.run(run())


def test_the_model_list_shows_the_columns_and_switches(tui_app, tmp_path: Path, monkeypatch, bundled_model) -> None:
    from textual.widgets import DataTable

    from localrag.llm.gpu import llama_backend
    from localrag.tui.model_list import ModelsScreen

    home = tmp_path / "home"
    folder = home / ".lmstudio" / "models" / "lmstudio-community" / "SmolLM2-GGUF"
    folder.mkdir(parents=True)
    (folder / "SmolLM2-135M-Instruct-Q4_1.gguf").symlink_to(bundled_model)
    (folder / "broken-Q4_0.gguf").write_bytes(b"GGUF" + b"\xff" * 40)
    monkeypatch.setenv("HOME", str(home))
    for name in ("OLLAMA_MODELS", "HF_HOME", "HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE", "XDG_CACHE_HOME"):
        monkeypatch.delenv(name, raising=False)
    made, factory = assistants_made()
    app = tui_app(assistant_factory=factory)

    async def scenario() -> None:
        async with app.run_test(size=SIZE) as pilot:
            await wait_indexed(pilot)
            expected = "CPU" if not llama_backend().gpus else llama_backend().name
            await wait_until(pilot, lambda: app.models.offload_shown.startswith(expected), 10, "the offload")
            assert app.sub_title.endswith(app.models.offload_shown)
            app.action_models()
            await wait_until(pilot, lambda: isinstance(app.screen, ModelsScreen) and app.screen.found is not None,
                             20, "the model list")
            screen = app.screen
            table = screen.query_one(DataTable)
            rows = {str(table.get_row_at(i)[1]): [str(c) for c in table.get_row_at(i)] for i in range(table.row_count)}
            name = "lmstudio-community/SmolLM2-GGUF/SmolLM2-135M-Instruct-Q4_1"
            assert rows[name][2:] == ["LM Studio", "98 MB", "135M", "Q4_1", "8,192", "yes", "graph"]
            assert rows["lmstudio-community/SmolLM2-GGUF/broken-Q4_0"][4].startswith("unreadable")
            broken = [i for i in range(table.row_count) if "broken" in str(table.get_row_at(i)[1])][0]
            table.move_cursor(row=broken)
            await pilot.press("enter")
            await pilot.pause(0.2)
            assert isinstance(app.screen, ModelsScreen)  # an unreadable model is not switched to
            table.move_cursor(row=[i for i in range(table.row_count) if str(table.get_row_at(i)[1]) == name][0])
            await pilot.press("enter")
            await wait_until(pilot, lambda: app.models.ready and len(made) == 2, 10, "the switched model")
            assert app.settings.llm.model == str(folder / "SmolLM2-135M-Instruct-Q4_1.gguf")

    run(scenario())
