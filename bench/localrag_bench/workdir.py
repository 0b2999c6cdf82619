"""The benchmarks' work folders: the cache root, index copies, notes written only when they changed."""

from __future__ import annotations

import os
import resource
import shutil
from pathlib import Path

DB_SUFFIXES = ("", "-wal", "-shm", ".lock")  # an index file and what SQLite and the index lock write beside it


def bench_cache_root() -> Path:
    """``~/.cache/localrag/bench`` (or under ``$XDG_CACHE_HOME``): generated corpora and their indexes."""
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "localrag" / "bench"


def remove_db(path: Path) -> None:
    for suffix in DB_SUFFIXES:
        Path(str(path) + suffix).unlink(missing_ok=True)


def copy_index(source: Path, target: Path) -> Path:
    """A fresh copy of the index ``source`` at ``target`` (an older copy and its WAL removed first)."""
    remove_db(target)
    shutil.copyfile(source, target)
    return target


def write_if_changed(path: Path, data: bytes) -> bool:
    """Write ``data`` to ``path`` (through a temporary file) unless it already holds it; True when written."""
    try:
        if path.stat().st_size == len(data) and path.read_bytes() == data:
            return False
    except FileNotFoundError:
        pass
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_bytes(data)
    tmp.replace(path)
    return True


def rss_mb() -> float:
    """Peak resident memory of this process so far, MB."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
