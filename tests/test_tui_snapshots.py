"""Snapshot tests (pytest-textual-snapshot): how the main screen and the panels look.

Deterministic by construction: the scripted LLM, a warm index of examples/notes, a fixed
terminal size, and conftest_tui.FrozenPresentation (injected by ``tui_app``), which leaves
out rates, ETAs, seconds, sizes and absolute paths. Update after an intended change with
``pytest tests/test_tui_snapshots.py --snapshot-update`` and look at the SVGs in tests/__snapshots__/.
"""

from __future__ import annotations

import pytest

from conftest_tui import ask, wait_indexed
from conftest_tui import indexed_notes, prebuilt_notes, tui_app  # noqa: F401  (fixtures)
from localrag.records import Retrieval, Trace
from localrag.retrieve import base as strategies

SIZE = (140, 40)
QUESTION = "Where does Ilse Varnhagen live?"


@pytest.fixture
def fixed_trace_strategy():
    """A strategy whose trace is a fixed two-hop NeuroPath-style trace (over hybrid's passages),
    so the path-tree snapshot does not move when the graph extractor changes."""
    from localrag.retrieve.hybrid import Hybrid

    class FixedTrace:
        name = "fixed-trace"

        def retrieve(self, ctx, query: str, k: int) -> Retrieval:
            found = Hybrid().retrieve(ctx, query, k)
            trace = Trace(self.name)
            trace.step("query_entities", entities=["Ilse Varnhagen"], source="llm")
            trace.step("seeds", seeds=[{"query": "Ilse Varnhagen", "entity": "ilse varnhagen", "id": 1, "sim": 1.0}])
            trace.step("memory", recalled_edges=0)
            trace.step("round", round=1, g=query,
                       candidates=[{"id": 0, "text": "ilse varnhagen->lives in->quillhaven; ", "sim": 0.74, "docs": [1]},
                                   {"id": 1, "text": "ilse varnhagen->mentors->wenna strake; ", "sim": 0.52, "docs": [2]}],
                       selected=[0], expand=[0], chain="Ilse Varnhagen lives in Quillhaven",
                       requirement="what Quillhaven is known for", **{"continue": 1})
            trace.step("round", round=2, g="what Quillhaven is known for",
                       candidates=[{"id": 0, "text": "quillhaven->has lighthouse->tessaly light; ", "sim": 0.69,
                                    "docs": [3]}],
                       selected=[0], expand=[], chain="She lives in Quillhaven, home of the Tessaly Light",
                       requirement="", **{"continue": 0})
            return Retrieval(query, found.passages, trace)

    strategies.strategy_names()  # load the built-ins first: the registry loads them only when empty
    strategies.register("fixed-trace", FixedTrace)
    yield "fixed-trace"
    strategies._REGISTRY.pop("fixed-trace", None)


def test_main_screen_after_an_answer(tui_app, snap_compare) -> None:
    async def run_before(pilot) -> None:
        await wait_indexed(pilot)
        await ask(pilot, QUESTION)

    assert snap_compare(tui_app(), terminal_size=SIZE, run_before=run_before)


def test_citation_panel(tui_app, snap_compare) -> None:
    async def run_before(pilot) -> None:
        await wait_indexed(pilot)
        await ask(pilot, QUESTION)
        await pilot.press("f2", "down", "enter")  # the second citation

    assert snap_compare(tui_app(), terminal_size=SIZE, run_before=run_before)


def test_path_tree(tui_app, snap_compare, fixed_trace_strategy) -> None:
    async def run_before(pilot) -> None:
        await wait_indexed(pilot)
        await ask(pilot, QUESTION)
        await pilot.press("f3")

    assert snap_compare(tui_app(strategy=fixed_trace_strategy), terminal_size=SIZE, run_before=run_before)


def test_status_panel(tui_app, snap_compare) -> None:
    async def run_before(pilot) -> None:
        await wait_indexed(pilot)
        await ask(pilot, QUESTION)  # the model line then names the scripted model, not whatever GGUF is installed
        await pilot.press("f5")

    assert snap_compare(tui_app(), terminal_size=SIZE, run_before=run_before)
