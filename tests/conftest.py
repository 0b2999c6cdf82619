"""Shared fixtures: one real embedder per session, temp copies of the sample notes."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

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


@pytest.fixture(scope="session")
def bundled_model() -> Path:
    from localrag.llm.discovery import bundled_model as find

    path = find()
    if path is None:
        pytest.fail("the bundled SmolLM2 model is not installed (run `make install`)")
    return path
