"""Conversations in the index: sessions and their turns (migration 7, ``sessions``)."""

from __future__ import annotations

import json
import time
from typing import TYPE_CHECKING

from localrag.records import Session, Turn, TurnCitation

if TYPE_CHECKING:
    from localrag.store.db import Store

_SESSION_COLUMNS = (
    "s.id, s.name, s.created, s.updated, "
    "(SELECT COUNT(*) FROM turns t WHERE t.session = s.id), "
    "COALESCE((SELECT t.question FROM turns t WHERE t.session = s.id ORDER BY t.ordinal LIMIT 1), '')"
)
_TURN_COLUMNS = "id, session, ordinal, question, resolved, resolver, answer, citations_json, strategy, query_id, created"


def _session(row: tuple) -> Session:
    return Session(int(row[0]), row[1], float(row[2]), float(row[3]), int(row[4]), str(row[5]))


def _turn(row: tuple) -> Turn:
    cites = tuple(TurnCitation(int(c["n"]), str(c["location"]), str(c.get("title", "")))
                  for c in json.loads(row[7] or "[]"))
    return Turn(session_id=int(row[1]), ordinal=int(row[2]), question=row[3], resolved=row[4], resolver=row[5],
                answer=row[6], citations=cites, strategy=row[8], query_id=row[9], created=float(row[10]),
                id=int(row[0]))


class Sessions:
    def __init__(self, store: "Store"):
        self.s = store

    def create(self, name: str | None = None) -> Session:
        now = time.time()
        with self.s.transaction():
            cur = self.s.execute("INSERT INTO sessions(name, created, updated) VALUES(?,?,?)", (name, now, now))
        return Session(int(cur.lastrowid), name, now, now)

    def get(self, session_id: int) -> Session | None:
        row = self.s.one(f"SELECT {_SESSION_COLUMNS} FROM sessions s WHERE s.id = ?", (session_id,))
        return _session(row) if row else None

    def by_name(self, name: str) -> Session | None:
        row = self.s.one(f"SELECT {_SESSION_COLUMNS} FROM sessions s WHERE s.name = ?", (name,))
        return _session(row) if row else None

    def latest(self) -> Session | None:
        row = self.s.one(f"SELECT {_SESSION_COLUMNS} FROM sessions s ORDER BY s.updated DESC, s.id DESC LIMIT 1")
        return _session(row) if row else None

    def recent(self, limit: int = 50) -> list[Session]:
        rows = self.s.query(f"SELECT {_SESSION_COLUMNS} FROM sessions s ORDER BY s.updated DESC, s.id DESC LIMIT ?",
                            (limit,))
        return [_session(r) for r in rows]

    def turns(self, session_id: int) -> list[Turn]:
        rows = self.s.query(f"SELECT {_TURN_COLUMNS} FROM turns WHERE session = ? ORDER BY ordinal", (session_id,))
        return [_turn(r) for r in rows]

    def add_turn(self, turn: Turn) -> Turn:
        """Append a turn (its ordinal is the next free one) and mark the session as just used."""
        cites = json.dumps([{"n": c.number, "location": c.location, "title": c.title} for c in turn.citations])
        now = turn.created or time.time()
        with self.s.transaction():
            row = self.s.one("SELECT COALESCE(MAX(ordinal), 0) + 1 FROM turns WHERE session = ?", (turn.session_id,))
            ordinal = int(row[0])
            cur = self.s.execute(
                f"INSERT INTO turns({_TURN_COLUMNS.split(', ', 1)[1]}) VALUES(?,?,?,?,?,?,?,?,?,?)",
                (turn.session_id, ordinal, turn.question, turn.resolved, turn.resolver, turn.answer, cites,
                 turn.strategy, turn.query_id, now),
            )
            self.s.execute("UPDATE sessions SET updated = ? WHERE id = ?", (now, turn.session_id))
        return Turn(turn.session_id, ordinal, turn.question, turn.resolved, turn.answer, turn.citations,
                    turn.strategy, turn.query_id, turn.resolver, now, int(cur.lastrowid))

    def touch(self, session_id: int) -> None:
        """Mark a reopened session as the latest (restarting the app resumes it)."""
        self.s.execute("UPDATE sessions SET updated = ? WHERE id = ?", (time.time(), session_id))

    def delete(self, session_id: int) -> None:
        self.s.execute("DELETE FROM sessions WHERE id = ?", (session_id,))
