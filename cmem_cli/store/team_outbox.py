"""This home's side of a team database: the remote's settings, the outbox of changes to push, base revisions.

The team remote (``cmem_cli.team``) owns its PostgreSQL and talks to it itself; what it keeps in this home's
SQLite file lives here, in the store, like every other table of that file: one owner for the file's schema,
migrations and transactions, and the outbox's triggers fire in the same transaction as the store's writes.

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

import json
from typing import TYPE_CHECKING, Any, NamedTuple

from cmem_cli.core.batches import batches
from cmem_cli.core.migrations import Migrations
from cmem_cli.store.rows import Repository

if TYPE_CHECKING:
    from collections.abc import Mapping

    from cmem_cli.core.sync_report import Direction, SyncReport

OBSERVATION = "observation"
SUMMARY = "summary"
SESSION = "session"  # its uid in the outbox and team_revs: the session id
PROMPT = "prompt"
QUEUE = "queue"
URL_KEY = "url"
SEED_BASES = "seed_bases"  # team_state: a home that joined before bases were kept; its next sync seeds them
SNAPSHOT = 1  # team_outbox.snapshot: queued by `sync init` (what this home held when it joined)
RESTORED = 2  # queued again because the server went back in time (cmem_cli.team.restore)

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

# A session is queued when its state changes (a start, an end, a label), not on every write in it: its
# activity times and prompt counter ride along with the next push, and each side merges them.
_SESSION_STATE = ("agent", "project", "label", "status", "completed_at", "goal", "outcome", "next_steps")
_SESSION_CHANGED = " OR ".join(f"old.{c} IS NOT new.{c}" for c in _SESSION_STATE)
SESSIONS_SCHEMA = f"""
CREATE TRIGGER team_session_insert AFTER INSERT ON sessions {_WHEN}
BEGIN {_ENQUEUE} VALUES ('{SESSION}', new.session_id); END;
CREATE TRIGGER team_session_update AFTER UPDATE ON sessions {_WHEN} AND ({_SESSION_CHANGED})
BEGIN {_ENQUEUE} VALUES ('{SESSION}', new.session_id); END;
CREATE TRIGGER team_prompt_insert AFTER INSERT ON user_prompts {_WHEN}
BEGIN {_ENQUEUE} VALUES ('{PROMPT}', new.uid); END;
"""

# A code anchor travels with its observation: a change of it (a `cmem verify`, an edit that cites other
# files) queues the observation, though its row did not change.
_ANCHOR_COLUMNS = (
    "repo, branch, commit_id, files, anchored_at, verified_at"  # not root: a folder of this machine
)
_ANCHORED = f"{_ENQUEUE} SELECT '{OBSERVATION}', uid FROM observations WHERE id ="
ANCHORS_SCHEMA = f"""
CREATE TRIGGER team_anchor_insert AFTER INSERT ON observation_anchors {_WHEN}
BEGIN {_ANCHORED} new.observation_id; END;
CREATE TRIGGER team_anchor_update AFTER UPDATE OF {_ANCHOR_COLUMNS} ON observation_anchors {_WHEN}
BEGIN {_ANCHORED} new.observation_id; END;
CREATE TRIGGER team_anchor_delete AFTER DELETE ON observation_anchors {_WHEN}
BEGIN {_ANCHORED} old.observation_id; END;
"""

# What enqueue_all queues, kind by kind: (kind, table, its uid column)
_TABLES = (
    (SESSION, "sessions", "session_id"),
    (PROMPT, "user_prompts", "uid"),
    (OBSERVATION, "observations", "uid"),
    (SUMMARY, "session_summaries", "uid"),
)

TEAM_MIGRATIONS = Migrations("team", guest=True)


@TEAM_MIGRATIONS
def m001_team_outbox(conn: Any) -> None:
    conn.execute(SCHEMA)


@TEAM_MIGRATIONS
def m002_sessions_prompts(conn: Any) -> None:
    """Sessions and prompts travel too; a home that joined before queues those it holds."""
    conn.execute(SESSIONS_SCHEMA)
    if conn.execute(f"SELECT 1 FROM team_state WHERE key = '{URL_KEY}'").fetchone():
        for kind, table, column in _TABLES[:2]:
            conn.execute(_enqueue_all_sql(kind, table, column))


@TEAM_MIGRATIONS
def m003_anchor_triggers(conn: Any) -> None:
    """Code anchors travel too; a home that joined before queues its anchored observations."""
    conn.execute(ANCHORS_SCHEMA)
    if conn.execute(f"SELECT 1 FROM team_state WHERE key = '{URL_KEY}'").fetchone():
        conn.execute(
            f"INSERT OR IGNORE INTO team_outbox (kind, uid, snapshot) SELECT '{OBSERVATION}', o.uid, 1 "
            "FROM observations o JOIN observation_anchors a ON a.observation_id = o.id "
            "WHERE a.repo IS NOT NULL ORDER BY o.id"
        )


@TEAM_MIGRATIONS
def m004_skipped_and_forgotten(conn: Any) -> None:
    """Rows of the team database this home refused (cmem_cli.team.inbound), for `cmem doctor`; and what
    this home forgot in step with the server, so that a server restored from before a forget does not
    bring it back (cmem_cli.team.restore)."""
    conn.execute(
        "CREATE TABLE team_skipped (kind TEXT NOT NULL, uid TEXT NOT NULL, machine TEXT NOT NULL, "
        "reason TEXT NOT NULL, rev INTEGER, PRIMARY KEY (kind, uid)) WITHOUT ROWID"
    )
    conn.execute(
        "CREATE TABLE team_forgotten (kind TEXT NOT NULL, uid TEXT NOT NULL, at INTEGER NOT NULL, "
        "PRIMARY KEY (kind, uid)) WITHOUT ROWID"
    )


@TEAM_MIGRATIONS
def m005_base_rows(conn: Any) -> None:
    """The server's row as this home last saw it (pulled, or pushed) beside its revision: the base the
    merge rule compares both sides' edits against (cmem_cli.services.inbound.reconcile.rule), as git has its
    merge base. A home that joined before gets them at its next sync (:func:`m006_seed_bases`)."""
    conn.execute("ALTER TABLE team_revs ADD COLUMN base TEXT")


@TEAM_MIGRATIONS
def m006_seed_bases(conn: Any) -> None:
    """A home that joined before bases were kept has revisions without them: marked here, its next sync
    seeds them (``cmem_cli.team.bases``, which renders a base as the server's row; the store cannot)."""
    if conn.execute(f"SELECT 1 FROM team_state WHERE key = '{URL_KEY}'").fetchone():
        conn.execute(f"INSERT OR REPLACE INTO team_state (key, value) VALUES ('{SEED_BASES}', '1')")


class Entry(NamedTuple):
    """One queued change: the observation or summary ``uid`` changed (or was forgotten) locally."""

    seq: int
    kind: str
    uid: str
    snapshot: (
        int  # 0: a local change; SNAPSHOT: queued by `sync init`; RESTORED: queued again after a restore
    )


def count(report: SyncReport, kind: str, direction: Direction) -> None:
    """One row of ``kind`` pushed or pulled: memories count at the top, sessions and prompts apart."""
    if kind == SESSION:
        report.sessions[direction] += 1
    elif kind == PROMPT:
        report.prompts[direction] += 1
    elif direction == "pushed":
        report.pushed += 1
    else:
        report.pulled += 1


def _enqueue_all_sql(kind: str, table: str, column: str) -> str:
    return (
        f"INSERT OR IGNORE INTO team_outbox (kind, uid, snapshot) SELECT '{kind}', t.{column}, 1 FROM {table} t "
        f"WHERE NOT EXISTS (SELECT 1 FROM team_revs r WHERE r.kind = '{kind}' AND r.uid = t.{column}) "
        "ORDER BY t.id"
    )


class Skipped(NamedTuple):
    kind: str
    uid: str
    machine: str
    reason: str


class TeamOutbox(Repository):
    """This home's side of a team database (``store.team_outbox``): settings, the outbox, base revisions."""

    def is_installed(self) -> bool:
        """Has `cmem sync init` made this home a member of a team database? (No tables: no.)"""
        return bool(
            self.db.scalar("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'team_state'")
        )

    def install(self) -> None:
        """Create the team tables and triggers (once) inside the caller's transaction or on their own."""
        if TEAM_MIGRATIONS.pending(self.db.conn):
            self.db.migrate(TEAM_MIGRATIONS)

    def settings(self) -> dict[str, str]:
        if not self.is_installed():
            return {}
        return {row["key"]: row["value"] for row in self.db.query("SELECT key, value FROM team_state")}

    def put(self, **values: str | None) -> None:
        for key, value in values.items():
            if value is None:
                self.db.execute("DELETE FROM team_state WHERE key = ?", (key,))
            else:
                self.db.execute(
                    "INSERT INTO team_state (key, value) VALUES (?, ?) "
                    "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                    (key, value),
                )

    def queue_on(self, on: bool) -> None:
        """Start (or, while applying what was pulled, pause) queueing local writes, in the caller's transaction."""
        self.put(**{QUEUE: "1" if on else None})

    def enqueue_all(self) -> int:
        """Queue every session, prompt, observation and summary this home holds (joining a team: its memory
        travels too)."""
        before = self.db.scalar("SELECT count(*) FROM team_outbox")
        for kind, table, column in _TABLES:
            self.db.execute(_enqueue_all_sql(kind, table, column))
        return int(self.db.scalar("SELECT count(*) FROM team_outbox")) - int(before)

    def enqueue(self, kind: str, uid: str) -> None:
        self.db.execute(f"{_ENQUEUE} VALUES (?, ?)", (kind, uid))

    def pending(self, *, limit: int) -> list[Entry]:
        rows = self.db.query(
            "SELECT seq, kind, uid, snapshot FROM team_outbox ORDER BY seq LIMIT ?", (limit,)
        )
        return [Entry(r["seq"], r["kind"], r["uid"], int(r["snapshot"])) for r in rows]

    def pending_count(self) -> int:
        return int(self.db.scalar("SELECT count(*) FROM team_outbox") or 0) if self.is_installed() else 0

    def pending_uids(self, kind: str, uids: list[str]) -> set[str]:
        """Which of ``uids`` have a local change waiting to be pushed (a pull must not overwrite them)."""
        found: set[str] = set()
        for chunk, marks in batches(uids):
            rows = self.db.query(
                f"SELECT uid FROM team_outbox WHERE kind = ? AND uid IN ({marks})", (kind, *chunk)
            )
            found.update(r["uid"] for r in rows)
        return found

    def present(self, seqs: list[int]) -> set[int]:
        """Which of these entries are still queued (one queued again meanwhile has a new seq)."""
        found: set[int] = set()
        for chunk, marks in batches(seqs):
            found.update(
                r["seq"] for r in self.db.query(f"SELECT seq FROM team_outbox WHERE seq IN ({marks})", chunk)
            )
        return found

    def acknowledge(self, seqs: list[int]) -> None:
        """Drop exactly the entries a push read: one queued again meanwhile has a new seq and stays."""
        self.db.conn.executemany("DELETE FROM team_outbox WHERE seq = ?", [(s,) for s in seqs])

    def revs(self, kind: str, uids: list[str]) -> dict[str, int]:
        found: dict[str, int] = {}
        for chunk, marks in batches(uids):
            rows = self.db.query(
                f"SELECT uid, rev FROM team_revs WHERE kind = ? AND uid IN ({marks})", (kind, *chunk)
            )
            found.update((r["uid"], r["rev"]) for r in rows)
        return found

    def bases(self, kind: str, uids: list[str]) -> dict[str, dict[str, Any]]:
        """The server's row (as :meth:`set_rev` was given it) at the revision this home last saw, by uid;
        a uid without one (never seen, or seen before bases were kept) is left out."""
        found: dict[str, dict[str, Any]] = {}
        for chunk, marks in batches(uids):
            rows = self.db.query(
                f"SELECT uid, base FROM team_revs WHERE kind = ? AND base IS NOT NULL AND uid IN ({marks})",
                (kind, *chunk),
            )
            found.update((r["uid"], json.loads(r["base"])) for r in rows)
        return found

    def without_base(self, kind: str) -> dict[str, int]:
        """uid -> revision of each ``kind`` this home has seen but keeps no base for, leaving out those
        with a local change queued (their row is no longer what this home last pulled or pushed)."""
        rows = self.db.query(
            "SELECT r.uid, r.rev FROM team_revs r WHERE r.kind = ? AND r.base IS NULL AND NOT EXISTS "
            "(SELECT 1 FROM team_outbox o WHERE o.kind = r.kind AND o.uid = r.uid)",
            (kind,),
        )
        return {r["uid"]: int(r["rev"]) for r in rows}

    def set_rev(self, kind: str, uid: str, rev: int | None, base: Mapping[str, Any] | None = None) -> None:
        """Remember the server's revision of ``uid`` this home has now seen, and its row there (``base``,
        a JSON-able server row: what the next concurrent edit is merged against; None keeps none)."""
        if rev is None:
            self.db.execute("DELETE FROM team_revs WHERE kind = ? AND uid = ?", (kind, uid))
        else:
            text = None
            if base is not None:
                text = json.dumps({k: v for k, v in base.items() if k != "rev"}, sort_keys=True, default=list)
            self.db.execute(
                "INSERT INTO team_revs (kind, uid, rev, base) VALUES (?, ?, ?, ?) "
                "ON CONFLICT (kind, uid) DO UPDATE SET rev = excluded.rev, base = excluded.base",
                (kind, uid, rev, text),
            )

    def note_skipped(self, kind: str, uid: str, machine: str, reason: str, rev: int | None) -> None:
        """Remember a refused row until a later version of it is taken (or forgotten): `cmem doctor` lists it."""
        self.db.execute(
            "INSERT INTO team_skipped (kind, uid, machine, reason, rev) VALUES (?, ?, ?, ?, ?) "
            "ON CONFLICT (kind, uid) DO UPDATE SET machine = excluded.machine, reason = excluded.reason, "
            "rev = excluded.rev",
            (kind, uid, machine, reason, rev),
        )

    def clear_skipped(self, kind: str, uids: list[str]) -> None:
        """These rows were taken (or forgotten) since: no longer a problem."""
        for chunk, marks in batches(uids):
            self.db.execute(f"DELETE FROM team_skipped WHERE kind = ? AND uid IN ({marks})", (kind, *chunk))

    def skipped(self) -> list[Skipped]:
        """Every row of the team database this home refused and has not taken since."""
        if not self.is_installed() or not self.db.scalar(
            "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'team_skipped'"
        ):
            return []
        rows = self.db.query("SELECT kind, uid, machine, reason FROM team_skipped ORDER BY kind, uid")
        return [Skipped(r["kind"], r["uid"], r["machine"], r["reason"]) for r in rows]

    def high_water(self, pulled: int) -> int:
        """The highest server revision this home has seen: pulled up to ``pulled``, or pushed since."""
        return max(pulled, int(self.db.scalar("SELECT max(rev) FROM team_revs") or 0))

    def start_again(self) -> int:
        """After a restore: forget every base revision (the server reissues revisions this home has seen) and
        queue everything this home holds again, marked RESTORED, in the caller's transaction. Returns how many
        entries are queued now."""
        self.db.execute("DELETE FROM team_revs")
        for kind, table, column in _TABLES:
            self.db.execute(
                f"INSERT INTO team_outbox (kind, uid, snapshot) SELECT '{kind}', t.{column}, {RESTORED} "
                f"FROM {table} t WHERE true ORDER BY t.id "
                f"ON CONFLICT (kind, uid) DO UPDATE SET snapshot = {RESTORED}"
            )
        return int(self.db.scalar("SELECT count(*) FROM team_outbox"))

    def remember_forgotten(self, kind: str, uids: list[str], at: int) -> None:
        """These memories were forgotten here and on the server (at ``at``, epoch ms)."""
        self.db.conn.executemany(
            "INSERT INTO team_forgotten (kind, uid, at) VALUES (?, ?, ?) "
            "ON CONFLICT (kind, uid) DO UPDATE SET at = excluded.at",
            [(kind, uid, at) for uid in uids],
        )

    def unforget(self, kind: str, uids: list[str]) -> None:
        """These came back (an edit beat the forget): no longer forgotten here."""
        for chunk, marks in batches(uids):
            self.db.execute(f"DELETE FROM team_forgotten WHERE kind = ? AND uid IN ({marks})", (kind, *chunk))

    def forgotten_at(self, kind: str, uids: list[str]) -> dict[str, int]:
        """When each of ``uids`` this home forgot was forgotten (those it did not forget are left out)."""
        found: dict[str, int] = {}
        for chunk, marks in batches(uids):
            rows = self.db.query(
                f"SELECT uid, at FROM team_forgotten WHERE kind = ? AND uid IN ({marks})", (kind, *chunk)
            )
            found.update((r["uid"], r["at"]) for r in rows)
        return found
