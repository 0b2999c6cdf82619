"""Benchmark test helpers: data set folders in the ../shared/data/README.md format."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Iterable


def write_data_set(folder: Path, corpus: Iterable[dict], questions: Iterable[dict]) -> Path:
    """``corpus.jsonl`` and ``questions.jsonl`` in ``folder`` (created), one JSON object a line."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "corpus.jsonl").write_text("".join(json.dumps(c) + "\n" for c in corpus))
    (folder / "questions.jsonl").write_text("".join(json.dumps(q) + "\n" for q in questions))
    return folder
