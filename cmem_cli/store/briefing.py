"""The store's side of the session briefing (`cmem context`, the SessionStart hook): the last session's
outcome and the newest observations of a project, reading only the columns the briefing shows.

Pure data access; :mod:`cmem_cli.services.read.briefing` ranks and renders. A SessionStart hook runs this on
every session, so each query is one walk of an index in time order, bounded by a limit.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, cast

from cmem_cli.store.projects import FOLDED_SQL
from cmem_cli.store.rows import Repository

if TYPE_CHECKING:
    from cmem_cli.store.row_types import BriefCandidate, SessionOutcome

_SESSION_COLUMNS = "session_id, status, outcome, next_steps, started_at, last_activity_at"


def _of_project(project: str | None) -> tuple[str, tuple[str, ...]]:
    """The condition keeping ``project``'s rows and its repository's older names' (every project's for
    None) and its parameters."""
    return (f"project {FOLDED_SQL}", (project, project)) if project is not None else ("1", ())


class BriefingRows(Repository):
    """What the session briefing reads (``store.briefing``)."""

    def session_outcome(self, session_id: str) -> SessionOutcome | None:
        """The session ``session_id`` (exactly), or None."""
        row = self.db.query_one(
            f"SELECT {_SESSION_COLUMNS} FROM sessions WHERE session_id = ?", (session_id,)
        )
        return cast("SessionOutcome", row) if row else None

    def latest_outcome(self, project: str | None, *, besides: str | None) -> SessionOutcome | None:
        """The most recently active session of ``project`` (None: of any) that recorded an outcome or next
        steps, other than ``besides`` (the session asking)."""
        where, params = _of_project(project)
        row = self.db.query_one(
            f"SELECT {_SESSION_COLUMNS} FROM sessions "
            f"WHERE {where} AND (outcome IS NOT NULL OR next_steps IS NOT NULL) AND session_id IS NOT ? "
            "ORDER BY last_activity_at DESC LIMIT 1",
            (*params, besides),
        )
        return cast("SessionOutcome", row) if row else None

    def current_observations(self, project: str | None, *, limit: int) -> list[BriefCandidate]:
        """The newest ``limit`` observations of ``project`` (None: of every project) that no newer memory
        superseded, probably replaced (inferred when the newer one was recorded) or invalidated: the briefing
        is what an agent takes as true, so it lists the current version only. Newest first."""
        where, params = _of_project(project)
        rows = self.db.query(
            "SELECT id, uid, type, title, created_at, tokens, session, tools_used, files_read, files_modified "
            "FROM observations o "
            f"WHERE {where} AND NOT EXISTS (SELECT 1 FROM observation_links l "
            "WHERE l.to_id = o.id AND l.type = 'supersedes') "
            "AND NOT EXISTS (SELECT 1 FROM inferred_supersessions i WHERE i.to_id = o.id AND i.marked = 1) "
            "AND o.invalidated IS NULL ORDER BY created_at DESC, id DESC LIMIT ?",
            (*params, limit),
        )
        for row in rows:
            for field in ("tools_used", "files_read", "files_modified"):
                try:
                    row[field] = json.loads(row[field] or "[]")
                except ValueError:
                    row[field] = []
        return cast("list[BriefCandidate]", rows)
