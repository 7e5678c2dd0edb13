"""The session_summaries table (and its full-text rows, refreshed by hand on an edit)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, cast

from cmem_cli.core.errors import NotFound
from cmem_cli.core.fields import SUMMARY_FIELDS
from cmem_cli.core.ids import new_uid
from cmem_cli.core.timeutil import now_ms
from cmem_cli.store.rows import MAX_ROWID, NEXT_ID, SUMMARY, Repository, id_free

if TYPE_CHECKING:
    from collections.abc import Mapping

    from cmem_cli.store.row_types import SummaryRow


class SummaryRepository(Repository):
    """Session summaries."""

    def insert(self, record: Mapping[str, Any], *, summary_id: int | None = None) -> SummaryRow:
        """Insert a summary; ``summary_id`` (one read back from its file) is kept when it is free."""
        when = record.get("created_at") or now_ms()
        values = {f: record.get(f) for f in SUMMARY_FIELDS}
        if not (
            isinstance(summary_id, int)
            and 0 < summary_id < MAX_ROWID
            and id_free(self.db, SUMMARY, summary_id)
        ):
            summary_id = None
        self.db.execute(
            "INSERT INTO session_summaries (id, uid, session, project, agent, request, investigated, learned, "
            f"completed, next_steps, notes, created_at, updated_at, machine, author) VALUES (coalesce(:id, "
            f"{NEXT_ID[SUMMARY]}), :uid, :session, :project, :agent, :request, :investigated, :learned, :completed, "
            ":next_steps, :notes, :created_at, :updated_at, :machine, :author)",
            {
                **values,
                **self._store.authorship(record),
                "id": summary_id,
                "uid": record.get("uid") or new_uid(when),
                "session": record["session"],
                "project": record["project"],
                "agent": record["agent"],
                "created_at": when,
                "updated_at": record.get("updated_at") or when,
            },
        )
        return self.get(self.db.conn.last_insert_rowid())

    def update(self, summary_id: int, values: Mapping[str, Any]) -> SummaryRow:
        """Replace a summary's text fields (and project/agent when given), keeping id, uid and creation; its
        ``updated_at`` is ``values``' (the time of the edit, when known) or now."""
        current = self.get(summary_id)
        fields = {f: values.get(f) for f in SUMMARY_FIELDS}
        fields["project"] = values.get("project") or current["project"]
        fields["agent"] = values.get("agent") or current["agent"]
        fields["updated_at"] = values.get("updated_at") or now_ms()
        assignments = ", ".join(f"{c} = :{c}" for c in fields)
        self.db.execute(
            f"UPDATE session_summaries SET {assignments} WHERE id = :id", {**fields, "id": summary_id}
        )
        # summaries_fts has no update trigger (summaries were write-once): refresh its row by hand
        self.db.execute("DELETE FROM summaries_fts WHERE rowid = ?", (summary_id,))
        self.db.execute(
            "INSERT INTO summaries_fts (rowid, request, investigated, learned, completed, next_steps, notes) "
            "VALUES (?, ?, ?, ?, ?, ?, ?)",
            (summary_id, *(fields[f] for f in SUMMARY_FIELDS)),
        )
        return self.get(summary_id)

    def by_uid(self, uid: str) -> SummaryRow | None:
        return cast(
            "SummaryRow | None", self.db.query_one("SELECT * FROM session_summaries WHERE uid = ?", (uid,))
        )

    def by_path(self, relpath: str) -> SummaryRow | None:
        """The summary whose export file is ``relpath`` (what the index found), or None."""
        row = self.db.query_one("SELECT * FROM session_summaries WHERE path = ?", (relpath,))
        return cast("SummaryRow | None", row)

    def set_path(self, summary_id: int, relpath: str) -> None:
        self.db.execute("UPDATE session_summaries SET path = ? WHERE id = ?", (relpath, summary_id))

    def get(self, summary_id: int) -> SummaryRow:
        row = self.db.query_one("SELECT * FROM session_summaries WHERE id = ?", (summary_id,))
        if row is None:
            raise NotFound(f"no summary S{summary_id}")
        return cast("SummaryRow", row)

    def recent(
        self, *, session: str | None = None, project: str | None = None, limit: int = 100
    ) -> list[SummaryRow]:
        clauses, params = [], []
        if session:
            clauses.append("session = ?")
            params.append(session)
        if project:
            clauses.append("project = ?")
            params.append(project)
        where = " AND ".join(clauses) or "1"
        rows = self.db.query(
            f"SELECT * FROM session_summaries WHERE {where} ORDER BY created_at DESC, id DESC LIMIT ?",
            [*params, limit],
        )
        return cast("list[SummaryRow]", rows)

    def all_ids(self) -> list[int]:
        return [r[0] for r in self.db.execute("SELECT id FROM session_summaries ORDER BY id")]

    def page(self, after: int, size: int) -> list[SummaryRow]:
        """Up to ``size`` summaries with ids above ``after``, in id order (a whole-store pass, a page at a time)."""
        rows = self.db.query(
            "SELECT * FROM session_summaries WHERE id > ? ORDER BY id LIMIT ?", (after, size)
        )
        return cast("list[SummaryRow]", rows)

    def ids_without_path(self) -> list[int]:
        return [
            r[0] for r in self.db.execute("SELECT id FROM session_summaries WHERE path IS NULL ORDER BY id")
        ]

    def delete(self, summary_id: int) -> None:
        self.db.execute("DELETE FROM session_summaries WHERE id = ?", (summary_id,))
