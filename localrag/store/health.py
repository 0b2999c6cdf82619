"""Noticing damage where it is cheap: SQLite's quick_check when there is a reason to suspect it.

A check is due when
- a process that had the index open did not close it cleanly (killed, crashed, power cut): each
  open Store holds an exclusive ``flock`` on its own file in ``index.db.sessions/``, removed on a
  clean close; a file whose lock can be taken belongs to a process that is gone;
- the database file changed since localrag last closed it (size or mtime differ from what the
  last clean close recorded in ``index.db.health.json``) while no other localrag process had it
  open: something else wrote into it (a sync tool, a disk error handled by the OS, a stray ``dd``);
- the last check is older than ``CHECK_INTERVAL_S`` (bit rot changes no mtime), or there is no
  record of one, or the clock went back past it.

Nothing here reads the database; the check itself is ``Store.quick_check`` (all SQL stays in
``store/``). Any failure to keep these records (a read-only folder) only means a check is due.
"""

from __future__ import annotations

import errno
import fcntl
import json
import os
import re
import secrets
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable

from localrag.store.connection import StoreError

CHECK_INTERVAL_S = 24 * 3600
DAMAGED = "damaged: "  # how a summary of SQLite's check lines starts when they name a problem
CLOCK_SLACK_S = 60  # a recorded check this far in the future means the clock went back


@dataclass(frozen=True)
class HealthCheck:
    """What a (possibly skipped) quick_check found."""

    due: str  # why it ran; "" when it was not due
    result: str  # "ok", what is wrong, or "" when it did not run
    seconds: float = 0.0

    @property
    def ran(self) -> bool:
        return bool(self.result)

    @property
    def ok(self) -> bool:
        return self.result in ("", "ok")

    def raise_if_damaged(self, db_path: Path) -> None:
        if not self.ok:
            found = self.result.removeprefix(DAMAGED)
            found = found if len(found) <= 160 else found[:157] + "..."
            raise StoreError(f"the index database {db_path} is damaged (quick_check: {found}; checked "
                             f"because {self.due}); run `localrag doctor --repair` to rebuild it from your documents "
                             "(cached model extractions are kept)")

    def describe(self) -> str:
        if not self.ran:
            return "not due"
        return f"{self.result} ({self.seconds:.2f} s; checked because {self.due})"


_NEVER_USED = re.compile(r"^Page (\d+): never used$")


def summarise_problems(rows: Iterable[str]) -> str:
    """quick_check's or integrity_check's rows as one line: 'ok', or "damaged: " and the problems, the
    'Page N: never used' lines (free pages a damaged tree no longer reaches) counted instead of listed."""
    lines = [line.strip() for row in rows for line in row.splitlines()]
    lines = [line for line in lines if line and line != "*** in database main ***"]
    if not lines or lines == ["ok"]:
        return "ok"
    unused = [int(m.group(1)) for m in map(_NEVER_USED.match, lines) if m]
    rest = [line for line in lines if not _NEVER_USED.match(line)]
    if unused:
        span = f"{min(unused)}-{max(unused)}" if len(unused) > 1 else str(unused[0])
        rest.append(f"{len(unused)} page{'s' if len(unused) > 1 else ''} never used (page {span})")
    shown = rest[:3] + ([f"and {len(rest) - 3} more"] if len(rest) > 3 else [])
    return DAMAGED + "; ".join(shown)


def _sessions_dir(db_path: Path) -> Path:
    return Path(str(db_path) + ".sessions")


def state_path(db_path: Path) -> Path:
    """Where the damage check keeps when it last ran and on what file (beside the index)."""
    return Path(str(db_path) + ".health.json")


def _file_stat(db_path: Path) -> tuple[int, int] | None:
    try:
        st = db_path.stat()
    except OSError:
        return None
    return st.st_size, st.st_mtime_ns


def _read_state(db_path: Path) -> dict:
    try:
        state = json.loads(state_path(db_path).read_text())
    except (OSError, ValueError):
        return {}
    return state if isinstance(state, dict) else {}


def _write_state(db_path: Path, **changes: object) -> None:
    state = _read_state(db_path)
    state.update(changes)
    target = state_path(db_path)
    tmp = target.with_name(f"{target.name}.{os.getpid()}.tmp")
    try:
        tmp.write_text(json.dumps(state))
        os.replace(tmp, target)
    except OSError:
        tmp.unlink(missing_ok=True)


class IndexClaim:
    """This process's claim on an open index: its lock file exists exactly while it is open.

    Opening also looks at the other claims and the records of the last close, so the reason a
    check is due is known before this process touches the file.
    """

    def __init__(self, db_path: Path) -> None:
        self.db_path = db_path
        self.stale: list[Path] = []
        self.others_live = 0
        self._file: Path | None = None
        self._fd: int | None = None
        existed = _file_stat(db_path)
        self._new = existed is None
        self._scan()
        self._due = self._reason_due(existed)
        self._claim()

    def _scan(self) -> None:
        try:
            entries = sorted(_sessions_dir(self.db_path).iterdir())
        except OSError:
            return
        for entry in entries:
            try:
                fd = os.open(entry, os.O_RDWR)
            except OSError:
                continue
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError as exc:
                if exc.errno in (errno.EAGAIN, errno.EACCES):
                    self.others_live += 1
                continue
            finally:
                os.close(fd)  # closing drops a lock taken just now
            self.stale.append(entry)

    def _reason_due(self, existed: tuple[int, int] | None) -> str:
        if existed is None:
            return ""  # a new index: nothing to check yet
        if self.stale:
            pids = ", ".join(p.name.split("-")[0] for p in self.stale[:3])
            return f"a process that had the index open did not close it cleanly (pid {pids})"
        state = _read_state(self.db_path)
        if state.get("damaged"):
            return "the last check found damage"
        checked_at = state.get("checked_at")
        if not isinstance(checked_at, (int, float)):
            return "no record of an earlier check"
        closed = state.get("closed")
        if not self.others_live and isinstance(closed, list) and tuple(closed) != existed:
            return "the index file changed since localrag last closed it"
        age = time.time() - checked_at
        if age < -CLOCK_SLACK_S:
            return "the clock is earlier than the last check"
        if age > CHECK_INTERVAL_S:
            return f"periodic check (the last one was {age / 3600:.0f} h ago)"
        return ""

    def _claim(self) -> None:
        folder = _sessions_dir(self.db_path)
        try:
            folder.mkdir(parents=True, exist_ok=True)
            path = folder / f"{os.getpid()}-{secrets.token_hex(4)}"
            fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o644)
        except OSError:
            return  # a read-only folder: no claim, so the next opener checks
        fcntl.flock(fd, fcntl.LOCK_EX)
        self._file, self._fd = path, fd

    @property
    def due(self) -> str:
        return self._due

    def checked(self, result: str) -> None:
        """Record a check: a passing one clears the claims of processes that are gone; a failing one
        is remembered, so every later open checks again until the index is repaired."""
        if result != "ok":
            _write_state(self.db_path, damaged=result[:200])
            return
        for entry in self.stale:
            entry.unlink(missing_ok=True)
        self.stale = []
        self._due = ""
        _write_state(self.db_path, checked_at=time.time(), damaged="")

    def close(self, *, record: bool = True) -> None:
        """A clean close, after the connections are closed: record the file as this process leaves it
        (``record=False``: an open that failed, which vouches for nothing)."""
        if self._fd is None:
            return
        # a check still due (nobody ran it) keeps the old record, so the reason survives this close
        closed = _file_stat(self.db_path) if record and not self._due else None
        if closed is not None:
            # an index created by this process is as checked as it gets
            fresh = {"checked_at": time.time()} if self._new and "checked_at" not in _read_state(self.db_path) else {}
            _write_state(self.db_path, closed=list(closed), **fresh)
        assert self._file is not None
        self._file.unlink(missing_ok=True)
        os.close(self._fd)  # releases the lock
        self._fd = None
