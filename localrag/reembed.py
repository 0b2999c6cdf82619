"""Embedding an index again with another embedder: a fresh index file, the old one moved aside.

Vectors of two embedders are never mixed (localrag/store/db.py refuses to open an index with
another embedder's id), and every other table is keyed by passage ids that a rebuild changes, so
the notes are synced into a new file; the content-keyed caches (LLM extractions, query entities)
are carried over, so the graph phase afterwards costs no model call for passages seen before.
The old file stays beside the new one until the new one holds every note (``finish``).
"""

from __future__ import annotations

from pathlib import Path

from localrag.embed import Embedder
from localrag.store import Store
from localrag.store.lock import writer_lock
from localrag.store.repair import DB_FILES, move_aside, salvage_caches

LABEL = "old-embedder"


def start(db_path: Path, embedder: Embedder) -> tuple[Store, Path]:
    """The index at ``db_path`` moved aside and a new, empty one for ``embedder`` there with the old
    one's caches; returns the new store and where the old file went."""
    # both writers (the fast phase and the graph phase) are kept out while the file moves
    with writer_lock(db_path, wait_s=30), writer_lock(Path(str(db_path) + "-graph"), wait_s=30):
        moved = move_aside(db_path, LABEL)
    store = Store(db_path, dim=embedder.dim, embedder_id=embedder.id)
    salvage_caches(moved, store)
    return store, moved


def finish(moved: Path) -> None:
    """The old index removed: the new one is complete."""
    for suffix in DB_FILES:
        Path(str(moved) + suffix).unlink(missing_ok=True)
