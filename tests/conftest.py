"""Shared fixtures: one real embedder per session, temp copies of the sample notes."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Mapping, Sequence

import pytest
from kg_helpers import write_notes, write_triples

from localrag.api import Index
from localrag.config import Settings, load_settings
from localrag.embed import MiniLMEmbedder

REPO = Path(__file__).resolve().parents[1]
EXAMPLES = REPO / "examples" / "notes"
SHARED_DATA = REPO.parent / "shared" / "data"


@pytest.fixture(scope="session")
def embedder() -> MiniLMEmbedder:
    return MiniLMEmbedder()


@pytest.fixture
def notes_dir(tmp_path: Path) -> Path:
    """A writable copy of examples/notes (without any index)."""
    dst = tmp_path / "notes"
    shutil.copytree(EXAMPLES, dst, ignore=shutil.ignore_patterns(".localrag"))
    return dst


@pytest.fixture
def settings_for(tmp_path: Path):
    def make(folder: Path, **overrides) -> Settings:
        env = {}  # ignore the developer's LOCALRAG_* variables
        s = load_settings(folder, overrides, env=env)
        return s

    return make


@pytest.fixture
def graph_kb(tmp_path: Path, settings_for, embedder):
    """graph_kb(notes, triples, **settings): an index of ``notes`` written to tmp_path/kb, synced, with each
    note's hand-written ``triples`` as its extraction (the session embedder); closed at teardown."""
    opened: list[Index] = []

    def make(notes: Mapping[str, str], triples: Mapping[str, Sequence[tuple[str, str, str]]], **overrides) -> Index:
        index = Index(settings_for(write_notes(tmp_path / "kb", dict(notes)), **overrides), embedder)
        opened.append(index)
        index.sync()
        write_triples(index, triples)
        return index

    yield make
    for index in opened:
        index.close()


@pytest.fixture(scope="session")
def bundled_model() -> Path:
    from localrag.llm.discovery import bundled_model as find

    path = find()
    if path is None:
        pytest.fail("the bundled SmolLM2 model is not installed (run `make install`)")
    return path
