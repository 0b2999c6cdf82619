"""Snapshot (pytest-textual-snapshot): a two-turn conversation, the follow-up with its "searched for" line.

Deterministic as tests/test_tui_snapshots.py: scripted LLM, warm index, fixed size, FrozenPresentation.
Update with ``pytest tests/test_tui_conversation_snapshot.py --snapshot-update`` and look at the SVG.
"""

from __future__ import annotations

from conftest_tui import ask, wait_indexed
from conftest_tui import indexed_notes, prebuilt_notes, tui_app  # noqa: F401  (fixtures)

SIZE = (140, 40)


def test_two_turn_conversation(tui_app, snap_compare) -> None:
    async def run_before(pilot) -> None:
        await wait_indexed(pilot)
        await ask(pilot, "Who leads the Lanternfish project?")
        await ask(pilot, "When did it have its first public release?")
        await pilot.pause()

    assert snap_compare(tui_app(), terminal_size=SIZE, run_before=run_before)
