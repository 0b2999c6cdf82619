"""Knowledge-graph fixtures; loaded by the graph test modules with ``pytest_plugins = ["conftest_kg"]``."""

from __future__ import annotations

from pathlib import Path

import pytest
from kg_helpers import kg_settings

from localrag.api import Index


@pytest.fixture
def kg_index(embedder):
    """Index(folder, **settings overrides) with the session embedder; closed at teardown."""
    opened: list[Index] = []

    def make(folder: Path, **overrides) -> Index:
        index = Index(kg_settings(folder, **overrides), embedder=embedder)
        opened.append(index)
        return index

    yield make
    for index in opened:
        index.close()
