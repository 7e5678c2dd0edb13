"""The sessions table: a session's row, its activity and status, and the numbering of its prompts."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, cast

from cmem_cli.core.batches import batches
from cmem_cli.core.errors import InvalidInput, NotFound
from cmem_cli.core.timeutil import now_ms
from cmem_cli.store.rows import Repository

if TYPE_CHECKING:
    from collections.abc import Mapping

    from cmem_cli.store.row_types import ListedSession, SessionRow

# The machine a session ran on: the one that wrote its first prompt, else its first memory (a session row
# itself records none; NULL for sessions from before cmem recorded machines).
_MACHINE = (
    "COALESCE((SELECT p.machine FROM user_prompts p WHERE p.session = s.session_id AND p.machine IS NOT NULL "
    "ORDER BY p.prompt_number LIMIT 1), (SELECT o.machine FROM observations o WHERE o.session = s.session_id "
    "AND o.machine IS NOT NULL ORDER BY o.created_at LIMIT 1)) AS machine"
)


class SessionRepository(Repository):
    """Sessions: create, mark activity, end, resolve a prefix, prompt numbering."""

    def ensure(
        self,
        session_id: str,
        *,
        agent: str,
        project: str,
        label: str | None = None,
        goal: str | None = None,
        at: int | None = None,
    ) -> SessionRow:
        """Create the session if new, else mark activity; inside the caller's transaction."""
        when = at or now_ms()
        self.db.execute(
            "INSERT INTO sessions (session_id, agent, project, label, goal, started_at, last_activity_at) "
            "VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (session_id) DO UPDATE SET "
            "last_activity_at = max(last_activity_at, excluded.last_activity_at), "
            # an import names when a session really began; the earliest time anyone gave is its start
            "started_at = min(started_at, excluded.started_at), "
            "label = coalesce(excluded.label, label), goal = coalesce(excluded.goal, goal)",
            (session_id, agent, project, label, goal, when, when),
        )
        return self.get(session_id)

    def reopen(self, session_id: str) -> None:
        """Mark an ended session active again (`cmem session start ID` on it); inside the caller's
        transaction. A session that does not exist or is active is left alone."""
        self.db.execute(
            "UPDATE sessions SET status = 'active', completed_at = NULL WHERE session_id = ? AND status != 'active'",
            (session_id,),
        )

    def label(self, session_id: str, label: str | None) -> None:
        """Set a session's label if it has none; neither creates the session nor bumps its last activity."""
        self.db.execute(
            "UPDATE sessions SET label = ? WHERE session_id = ? AND label IS NULL", (label, session_id)
        )

    def end(self, session_id: str, *, status: str, outcome: str | None, next_steps: str | None) -> SessionRow:
        self.get(session_id)  # NotFound for an unknown id
        now = now_ms()
        self.db.execute(
            "UPDATE sessions SET status = ?, completed_at = ?, last_activity_at = ?, "
            "outcome = coalesce(?, outcome), next_steps = coalesce(?, next_steps) WHERE session_id = ?",
            (status, now, now, outcome, next_steps, session_id),
        )
        return self.get(session_id)

    def get(self, session_id: str) -> SessionRow:
        """The session with exactly this id (a person's prefix goes through :meth:`resolve` first)."""
        row = self.db.query_one("SELECT * FROM sessions WHERE session_id = ?", (session_id,))
        if row is None:
            raise NotFound(f"no session {session_id!r}")
        return cast("SessionRow", row)

    def machine(self, session_id: str) -> str | None:
        """The machine the session ran on (None: not recorded)."""
        value = self.db.scalar(f"SELECT {_MACHINE} FROM sessions s WHERE session_id = ?", (session_id,))
        return str(value) if value is not None else None

    def resolve(self, text: str) -> str | None:
        """The full id of the one session whose id is ``text`` or starts with it; None when none does.

        An exact id always wins, so a session named like another's prefix stays reachable; a prefix shared
        by several sessions is an error that lists a few of them."""
        if self.db.scalar("SELECT 1 FROM sessions WHERE session_id = ?", (text,)):
            return text
        matches = [
            r["session_id"]
            for r in self.db.query(
                "SELECT session_id FROM sessions WHERE session_id >= ? AND session_id < ? "
                "ORDER BY session_id LIMIT 4",
                (text, text + "\U0010ffff"),
            )
        ]
        if len(matches) > 1:
            shown = ", ".join(matches[:3]) + (", ..." if len(matches) > 3 else "")
            raise InvalidInput(f"session prefix {text!r} is ambiguous: {shown}")
        return matches[0] if matches else None

    def find(self, session_id: str) -> SessionRow | None:
        return cast(
            "SessionRow | None",
            self.db.query_one("SELECT * FROM sessions WHERE session_id = ?", (session_id,)),
        )

    def by_ids(self, session_ids: list[str]) -> dict[str, SessionRow]:
        found: dict[str, SessionRow] = {}
        for chunk, marks in batches(session_ids):
            for row in self.db.query(f"SELECT * FROM sessions WHERE session_id IN ({marks})", chunk):
                found[row["session_id"]] = cast("SessionRow", row)
        return found

    def put(self, values: Mapping[str, Any]) -> None:
        """Write a whole session row (one that arrived from another machine, merged with this one's)."""
        columns = (
            "session_id", "agent", "project", "label", "status", "prompt_counter", "started_at",
            "completed_at", "last_activity_at", "goal", "outcome", "next_steps",
        )  # fmt: skip
        names = ", ".join(columns)
        marks = ", ".join(f":{c}" for c in columns)
        sets = ", ".join(f"{c} = excluded.{c}" for c in columns if c != "session_id")
        self.db.execute(
            f"INSERT INTO sessions ({names}) VALUES ({marks}) ON CONFLICT (session_id) DO UPDATE SET {sets}",
            {c: values.get(c) for c in columns},
        )

    def ids(self) -> list[str]:
        return [r["session_id"] for r in self.db.query("SELECT session_id FROM sessions")]

    def recent(
        self,
        *,
        project: str | None = None,
        status: str | None = None,
        machine: str | None = None,
        limit: int = 20,
    ) -> list[ListedSession]:
        """The most recently active sessions; ``machine``: only those that ran on it (its first prompt's
        machine, else its first memory's)."""
        clauses, params = [], []
        if project:
            clauses.append("project = ?")
            params.append(project)
        if status:
            clauses.append("status = ?")
            params.append(status)
        where = " AND ".join(clauses) or "1"
        sql = (
            "SELECT s.*, (SELECT count(*) FROM observations o WHERE o.session = s.session_id) AS observations, "
            f"{_MACHINE} FROM sessions s WHERE {where}"
        )
        if machine is not None:
            sql = f"SELECT * FROM ({sql}) WHERE machine = ?"
            params.append(machine)
        rows = self.db.query(f"{sql} ORDER BY last_activity_at DESC LIMIT ?", [*params, limit])
        return cast("list[ListedSession]", rows)

    def next_prompt_number(self, session_id: str) -> int:
        self.db.execute(
            "UPDATE sessions SET prompt_counter = prompt_counter + 1, last_activity_at = ? WHERE session_id = ?",
            (now_ms(), session_id),
        )
        return int(self.db.scalar("SELECT prompt_counter FROM sessions WHERE session_id = ?", (session_id,)))

    def raise_prompt_counter(self, session_id: str, number: int) -> None:
        """A prompt numbered ``number`` arrived: the session's next prompt here is numbered after it."""
        self.db.execute(
            "UPDATE sessions SET prompt_counter = max(prompt_counter, ?) WHERE session_id = ?",
            (number, session_id),
        )
