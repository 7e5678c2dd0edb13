"""Counts over the whole store: totals per table, type and project, and whose machines wrote it."""

from __future__ import annotations

from typing import TYPE_CHECKING

from cmem_cli.store.rows import Repository

if TYPE_CHECKING:
    from cmem_cli.store.row_types import StoreCounts


class Statistics(Repository):
    """Counts over the whole store: totals per table, type and project, and machines."""

    def counts(self) -> StoreCounts:
        counts = {
            table: int(self.db.scalar(f"SELECT count(*) FROM {table}"))
            for table in (
                "observations",
                "sessions",
                "user_prompts",
                "session_summaries",
                "observation_links",
            )
        }
        by_type = {
            r["type"]: r["n"]
            for r in self.db.query(
                "SELECT type, count(*) AS n FROM observations GROUP BY type ORDER BY n DESC, type"
            )
        }
        by_project = {
            r["project"]: r["n"]
            for r in self.db.query(
                "SELECT project, count(*) AS n FROM observations GROUP BY project ORDER BY n DESC, project"
            )
        }
        span = self.db.query_one("SELECT min(created_at) AS first, max(created_at) AS last FROM observations")
        first, last = (span["first"], span["last"]) if span else (None, None)
        return {"counts": counts, "by_type": by_type, "by_project": by_project, "first": first, "last": last}

    def several_machines(self) -> bool:
        """Does this store hold memories written on more than one machine? (Two index lookups.)"""
        return bool(
            self.db.scalar(
                "SELECT (SELECT min(machine) FROM observations) <> (SELECT max(machine) FROM observations)"
            )
        )
