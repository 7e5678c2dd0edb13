"""This home's side of a team database: the remote's settings, the outbox of changes to push, base revisions.

The outbox is filled by SQLite triggers on the store's own tables, in the transaction of the write that
caused it: whatever writes (a CLI command, a hook, the MCP server, adoption of a hand edit), its change is
queued or it did not happen, and nothing waits on the network. The tables and triggers are created by
`cmem sync init postgresql://...` (the migrations of scope ``team``), so a home without a team remote has
none of them and its writes cost what they always did. The triggers fire only while ``team_state`` holds
the ``queue`` key: applying rows pulled from the server removes it inside its own transaction, so what
arrives is not pushed back.

``team_revs`` remembers, per observation or summary, the server revision this home last saw (pulled or
pushed): a push whose base is older than the server's row is a concurrent edit, settled by the same rules
as git sync (docs/team.md).
"""

from __future__ import annotations

from typing import Any, NamedTuple

from cmem_cli.core.db import Database
from cmem_cli.core.migrations import Migrations

OBSERVATION = "observation"
SUMMARY = "summary"
QUEUE = "queue"

_OBS_CONTENT = (
    "type, title, subtitle, narrative, facts, concepts, files_read, files_modified, tools_used, project, "
    "session, agent, prompt_number, key, confidence, created_at, updated_at"
)
_SUMMARY_CONTENT = "session, project, agent, request, investigated, learned, completed, next_steps, notes"
_WHEN = f"WHEN EXISTS (SELECT 1 FROM team_state WHERE key = '{QUEUE}')"
_ENQUEUE = "INSERT OR REPLACE INTO team_outbox (kind, uid)"

SCHEMA = f"""
CREATE TABLE team_state (
    key   TEXT PRIMARY KEY,
    value TEXT
) WITHOUT ROWID;
CREATE TABLE team_outbox (
    seq      INTEGER PRIMARY KEY AUTOINCREMENT,  -- never reused: a push acknowledges exactly what it read
    kind     TEXT NOT NULL,
    uid      TEXT NOT NULL,
    snapshot INTEGER NOT NULL DEFAULT 0,         -- queued by `sync init` (not an edit since the last sync)
    UNIQUE (kind, uid)
);
CREATE TABLE team_revs (
    kind TEXT NOT NULL,
    uid  TEXT NOT NULL,
    rev  INTEGER NOT NULL,
    PRIMARY KEY (kind, uid)
) WITHOUT ROWID;

CREATE TRIGGER team_observation_insert AFTER INSERT ON observations {_WHEN}
BEGIN {_ENQUEUE} VALUES ('{OBSERVATION}', new.uid); END;
CREATE TRIGGER team_observation_update AFTER UPDATE OF {_OBS_CONTENT} ON observations {_WHEN}
BEGIN {_ENQUEUE} VALUES ('{OBSERVATION}', new.uid); END;
CREATE TRIGGER team_observation_delete AFTER DELETE ON observations {_WHEN}
BEGIN {_ENQUEUE} VALUES ('{OBSERVATION}', old.uid); END;

CREATE TRIGGER team_link_insert AFTER INSERT ON observation_links {_WHEN}
BEGIN {_ENQUEUE} SELECT '{OBSERVATION}', uid FROM observations WHERE id = new.from_id; END;
CREATE TRIGGER team_link_delete AFTER DELETE ON observation_links {_WHEN}
BEGIN {_ENQUEUE} SELECT '{OBSERVATION}', uid FROM observations WHERE id = old.from_id; END;

CREATE TRIGGER team_summary_insert AFTER INSERT ON session_summaries {_WHEN}
BEGIN {_ENQUEUE} VALUES ('{SUMMARY}', new.uid); END;
CREATE TRIGGER team_summary_update AFTER UPDATE OF {_SUMMARY_CONTENT} ON session_summaries {_WHEN}
BEGIN {_ENQUEUE} VALUES ('{SUMMARY}', new.uid); END;
CREATE TRIGGER team_summary_delete AFTER DELETE ON session_summaries {_WHEN}
BEGIN {_ENQUEUE} VALUES ('{SUMMARY}', old.uid); END;
"""

TEAM_MIGRATIONS = Migrations("team", guest=True)


@TEAM_MIGRATIONS
def m001_team_outbox(conn: Any) -> None:
    conn.execute(SCHEMA)


class Entry(NamedTuple):
    """One queued change: the observation or summary ``uid`` changed (or was forgotten) locally."""

    seq: int
    kind: str
    uid: str
    snapshot: bool


def is_installed(db: Database) -> bool:
    """Has `cmem sync init` made this home a member of a team database? (No tables: no.)"""
    return bool(db.scalar("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'team_state'"))


def install(db: Database) -> None:
    """Create the team tables and triggers (once) inside the caller's transaction or on their own."""
    if TEAM_MIGRATIONS.pending(db.conn):
        db.migrate(TEAM_MIGRATIONS)


# -- settings -----------------------------------------------------------------------------------------
def settings(db: Database) -> dict[str, str]:
    if not is_installed(db):
        return {}
    return {row["key"]: row["value"] for row in db.query("SELECT key, value FROM team_state")}


def put(db: Database, **values: str | None) -> None:
    for key, value in values.items():
        if value is None:
            db.execute("DELETE FROM team_state WHERE key = ?", (key,))
        else:
            db.execute(
                "INSERT INTO team_state (key, value) VALUES (?, ?) "
                "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                (key, value),
            )


def queue_on(db: Database, on: bool) -> None:
    """Start (or, while applying what was pulled, pause) queueing local writes, in the caller's transaction."""
    put(db, **{QUEUE: "1" if on else None})


# -- the outbox ---------------------------------------------------------------------------------------
def enqueue_all(db: Database) -> int:
    """Queue every observation and summary this home holds (joining a team: its memory travels too)."""
    before = db.scalar("SELECT count(*) FROM team_outbox")
    for kind, table in ((OBSERVATION, "observations"), (SUMMARY, "session_summaries")):
        db.execute(
            f"INSERT OR IGNORE INTO team_outbox (kind, uid, snapshot) SELECT '{kind}', t.uid, 1 FROM {table} t "
            "WHERE NOT EXISTS (SELECT 1 FROM team_revs r WHERE r.kind = ? AND r.uid = t.uid) ORDER BY t.id",
            (kind,),
        )
    return int(db.scalar("SELECT count(*) FROM team_outbox")) - int(before)


def enqueue(db: Database, kind: str, uid: str) -> None:
    db.execute(f"{_ENQUEUE} VALUES (?, ?)", (kind, uid))


def pending(db: Database, *, limit: int) -> list[Entry]:
    rows = db.query("SELECT seq, kind, uid, snapshot FROM team_outbox ORDER BY seq LIMIT ?", (limit,))
    return [Entry(r["seq"], r["kind"], r["uid"], bool(r["snapshot"])) for r in rows]


def pending_count(db: Database) -> int:
    return int(db.scalar("SELECT count(*) FROM team_outbox") or 0) if is_installed(db) else 0


def pending_uids(db: Database, kind: str, uids: list[str]) -> set[str]:
    """Which of ``uids`` have a local change waiting to be pushed (a pull must not overwrite them)."""
    found: set[str] = set()
    for start in range(0, len(uids), 500):
        chunk = uids[start : start + 500]
        marks = ", ".join("?" * len(chunk))
        rows = db.query(f"SELECT uid FROM team_outbox WHERE kind = ? AND uid IN ({marks})", (kind, *chunk))
        found.update(r["uid"] for r in rows)
    return found


def present(db: Database, seqs: list[int]) -> set[int]:
    """Which of these entries are still queued (one queued again meanwhile has a new seq)."""
    found: set[int] = set()
    for start in range(0, len(seqs), 500):
        chunk = seqs[start : start + 500]
        marks = ", ".join("?" * len(chunk))
        found.update(r["seq"] for r in db.query(f"SELECT seq FROM team_outbox WHERE seq IN ({marks})", chunk))
    return found


def acknowledge(db: Database, seqs: list[int]) -> None:
    """Drop exactly the entries a push read: one queued again meanwhile has a new seq and stays."""
    db.conn.executemany("DELETE FROM team_outbox WHERE seq = ?", [(s,) for s in seqs])


# -- base revisions -----------------------------------------------------------------------------------
def revs(db: Database, kind: str, uids: list[str]) -> dict[str, int]:
    found: dict[str, int] = {}
    for start in range(0, len(uids), 500):
        chunk = uids[start : start + 500]
        marks = ", ".join("?" * len(chunk))
        rows = db.query(f"SELECT uid, rev FROM team_revs WHERE kind = ? AND uid IN ({marks})", (kind, *chunk))
        found.update((r["uid"], r["rev"]) for r in rows)
    return found


def set_rev(db: Database, kind: str, uid: str, rev: int | None) -> None:
    if rev is None:
        db.execute("DELETE FROM team_revs WHERE kind = ? AND uid = ?", (kind, uid))
    else:
        db.execute(
            "INSERT INTO team_revs (kind, uid, rev) VALUES (?, ?, ?) "
            "ON CONFLICT (kind, uid) DO UPDATE SET rev = excluded.rev",
            (kind, uid, rev),
        )
