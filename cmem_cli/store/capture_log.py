"""What agent capture has already recorded, so hooks and transcript import never store a thing twice.

Two small tables live in ``cmem.db`` next to the store's own (migration scope ``capture``, created on first
use; they hold bookkeeping only, so losing them costs at most a duplicate, never data):

- ``agent_captures``: one row per (session, key). Keys are ``tool:<tool_use_id>`` for a tool call,
  a repeat key such as ``read:<path>`` for calls merged by the rules, and ``prompt:<hash>:<n>`` for the n-th
  prompt with that text in the session. A tool call's row carries the observation ``uid`` chosen when the
  call was first claimed: whichever path (hook or import) writes it, it is the same observation.
- ``transcript_offsets``: how far each transcript file has been imported.

The keys are capture's (``cmem_cli.capture.hooks.state`` makes them); this module only keeps them. Each
write is its own transaction, or a savepoint of the caller's (the API's ``Memory.transaction``), so a
mark commits with the observation it marks or not at all.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any, NamedTuple

from cmem_cli.core.db import Database
from cmem_cli.core.ids import new_uid
from cmem_cli.core.migrations import Migrations
from cmem_cli.core.timeutil import now_ms

if TYPE_CHECKING:
    from cmem_cli.store.row_types import TranscriptOffset

SCHEMA = """
CREATE TABLE IF NOT EXISTS agent_captures (
    session    TEXT NOT NULL,
    key        TEXT NOT NULL,
    uid        TEXT,
    repeats    INTEGER NOT NULL DEFAULT 0,
    created_at INTEGER NOT NULL,
    PRIMARY KEY (session, key)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS transcript_offsets (
    path       TEXT PRIMARY KEY,
    offset     INTEGER NOT NULL,
    head       TEXT NOT NULL,
    counts     TEXT NOT NULL DEFAULT '{}',
    session    TEXT,
    updated_at INTEGER NOT NULL
) WITHOUT ROWID;
"""


CAPTURE_MIGRATIONS = Migrations("capture")


@CAPTURE_MIGRATIONS
def m001_capture_tables(conn: Any) -> None:
    conn.execute(SCHEMA)  # IF NOT EXISTS: stores from before named migrations already have them


def ensure_tables(db: Database) -> None:
    """Create the bookkeeping tables once; a read-only check first so the common case takes no write lock."""
    if CAPTURE_MIGRATIONS.pending(db.conn):
        db.migrate(CAPTURE_MIGRATIONS)


class Claim(NamedTuple):
    uid: str
    fresh: bool  # True when this call made the claim; False when it was already there


class CaptureLog:
    """The capture bookkeeping of one store (its write connection)."""

    def __init__(self, db: Database):
        self.db = db
        ensure_tables(db)

    def claim(self, session: str, key: str, created_at: int | None = None) -> Claim:
        """Reserve ``key`` for a new observation uid, or return the uid already reserved (counting the repeat)."""
        uid = new_uid(created_at)
        with self.db.transaction():
            self.db.execute(
                "INSERT INTO agent_captures (session, key, uid, created_at) VALUES (?, ?, ?, ?) "
                "ON CONFLICT (session, key) DO UPDATE SET repeats = repeats + 1",
                (session, key, uid, now_ms()),
            )
            row = self.db.query_one(
                "SELECT uid, repeats FROM agent_captures WHERE session = ? AND key = ?", (session, key)
            )
        assert row is not None
        return Claim(uid=row["uid"] or uid, fresh=row["uid"] == uid and row["repeats"] == 0)

    def uid_for(self, session: str, key: str) -> str | None:
        """The uid claimed for ``key`` in ``session``, or None."""
        row = self.db.query_one(
            "SELECT uid FROM agent_captures WHERE session = ? AND key = ?", (session, key)
        )
        return row["uid"] if row else None

    def bump(self, session: str, key: str) -> None:
        """Count one more repeat of ``key`` (a call merged into the first one's observation)."""
        with self.db.transaction():
            self.db.execute(
                "UPDATE agent_captures SET repeats = repeats + 1 WHERE session = ? AND key = ?",
                (session, key),
            )

    def seen(self, session: str, key: str) -> bool:
        """Whether ``key`` was claimed or marked in ``session``."""
        found = self.db.scalar("SELECT 1 FROM agent_captures WHERE session = ? AND key = ?", (session, key))
        return found is not None

    def mark(self, session: str, key: str) -> None:
        """Record that ``key`` was stored in ``session`` (a prompt, a summary, a replayed event)."""
        with self.db.transaction():
            self.db.execute(
                "INSERT INTO agent_captures (session, key, created_at) VALUES (?, ?, ?) "
                "ON CONFLICT (session, key) DO UPDATE SET repeats = repeats + 1",
                (session, key, now_ms()),
            )

    def count_prefix(self, session: str, prefix: str) -> int:
        """How many keys of ``session`` start with ``prefix``."""
        return int(
            self.db.scalar(
                "SELECT count(*) FROM agent_captures WHERE session = ? AND key >= ? AND key < ?",
                (session, prefix, prefix + "\U0010ffff"),
            )
            or 0
        )

    def keys_with_prefix(self, session: str, prefix: str) -> list[str]:
        """The keys of ``session`` that start with ``prefix``, oldest first."""
        rows = self.db.rows(
            "SELECT key FROM agent_captures WHERE session = ? AND key >= ? AND key < ? ORDER BY created_at, key",
            (session, prefix, prefix + "\U0010ffff"),
        )
        return [row[0] for row in rows]

    def forget_older(self, session: str, before_ms: int) -> None:
        """Drop the marks of ``session`` made before ``before_ms`` (the hooks' replayed spool files, whose
        marks are needed only while a file might still be replayed)."""
        with self.db.transaction():
            self.db.execute(
                "DELETE FROM agent_captures WHERE session = ? AND created_at < ?", (session, before_ms)
            )

    # -- transcript offsets ------------------------------------------------------------------------------
    def offset(self, path: str) -> TranscriptOffset | None:
        """Where import of ``path`` resumes: byte offset, first-line fingerprint, prompt counts there."""
        row = self.db.query_one(
            "SELECT offset, head, counts, session FROM transcript_offsets WHERE path = ?", (path,)
        )
        if row is None:
            return None
        try:
            counts = json.loads(row["counts"])
        except ValueError:
            counts = {}
        return {"offset": row["offset"], "head": row["head"], "counts": counts, "session": row["session"]}

    def set_offset(
        self, path: str, offset: int, head: str, counts: dict[str, int], session: str | None
    ) -> None:
        """Record how far ``path`` was imported (``session``: the session it belongs to, kept if None)."""
        with self.db.transaction():
            self.db.execute(
                "INSERT INTO transcript_offsets (path, offset, head, counts, session, updated_at) "
                "VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (path) DO UPDATE SET offset = excluded.offset, "
                "head = excluded.head, counts = excluded.counts, session = coalesce(excluded.session, session), "
                "updated_at = excluded.updated_at",
                (path, offset, head, json.dumps(counts, sort_keys=True), session, now_ms()),
            )
