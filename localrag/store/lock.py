"""One indexing writer per index: an advisory lock file beside the database.

SQLite already serialises transactions; this lock keeps two indexers (the TUI's
watcher and a CLI `index`, say) from doing the same work twice. Readers never take it.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import time
from pathlib import Path
from typing import Iterator

from localrag.errors import LocalragError
from localrag.store.connection import StoreError, not_writable_message

_NOT_WRITABLE = (errno.EACCES, errno.EPERM, errno.EROFS)


class LockBusy(LocalragError, RuntimeError):
    """Another process is indexing this folder."""


@contextlib.contextmanager
def writer_lock(db_path: Path, *, wait_s: float = 0.0) -> Iterator[None]:
    if str(db_path) == ":memory:":
        yield
        return
    lock_path = Path(str(db_path) + ".lock")
    fd = _open_lock(lock_path, db_path)
    try:
        deadline = time.monotonic() + wait_s
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except OSError as exc:
                if exc.errno not in (errno.EAGAIN, errno.EACCES):
                    raise
                if time.monotonic() >= deadline:
                    holder = _read_holder(lock_path)
                    raise LockBusy(f"another localrag process{holder} is indexing {db_path.parent.parent}") from exc
                time.sleep(0.1)
        os.ftruncate(fd, 0)
        os.write(fd, str(os.getpid()).encode())
        try:
            yield
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


def _open_lock(lock_path: Path, db_path: Path) -> int:
    """The lock file's descriptor; a folder that cannot be written is the documented one-line error."""
    try:
        lock_path.parent.mkdir(parents=True, exist_ok=True)
        return os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError as exc:
        if exc.errno in _NOT_WRITABLE:
            raise StoreError(not_writable_message(str(db_path), exc)) from exc
        raise


def _read_holder(lock_path: Path) -> str:
    try:
        pid = lock_path.read_text().strip()
    except OSError:
        return ""
    return f" (pid {pid})" if pid else ""
