"""What happened in a time window: the rows a page of the timeline shows, newest first, bounded.

`cmem view` draws weeks of memory at once, and a store may hold a million observations: every query here is
bounded by a ``limit`` and walks an index in time order (``observations_project_created`` and its kin), so its
cost follows the rows shown, not the store's size. Text queries go through the same FTS5 tables and query
builder as keyword search.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, cast

from cmem_cli.core.batches import batches
from cmem_cli.core.fts import fts_query
from cmem_cli.store.filters import Filters
from cmem_cli.store.rows import Repository

if TYPE_CHECKING:
    from cmem_cli.store.row_types import (
        LinkRow,
        ObservationHead,
        ObservationRow,
        PromptRow,
        SessionRow,
        SummaryRow,
    )


class Window(Repository):
    """The rows of a time window, newest first, bounded (``store.window``)."""

    def observations(self, filters: Filters, query: str | None, *, limit: int) -> list[ObservationRow]:
        """Observations matching ``filters`` (and the words of ``query``), newest first, at most ``limit``."""
        if query and query.strip():
            rows = cast(
                "list[dict[str, object]]",
                self._store.search.observations(query, filters, limit=limit, order="newest"),
            )
            for row in rows:
                for key in ("bm25", "score"):
                    row.pop(key, None)
            return cast("list[ObservationRow]", rows)
        return cast(
            "list[ObservationRow]", self._store.listing.observations(filters, limit=limit, order="newest")
        )

    def count_observations(self, filters: Filters, query: str | None, *, bound: int) -> int:
        """How many observations match, counting at most ``bound`` (a count past it says only "more")."""
        where, params = filters.sql("o")
        if query and query.strip():
            match = fts_query(query)
            if match is None:
                return 0
            inner = (
                "SELECT 1 FROM observations_fts CROSS JOIN observations o ON o.id = observations_fts.rowid "
                f"WHERE observations_fts MATCH ? AND {where} LIMIT ?"
            )
            params = [match, *params]
        else:
            inner = f"SELECT 1 FROM observations o WHERE {where} LIMIT ?"
        return int(self.db.scalar(f"SELECT count(*) FROM ({inner})", [*params, bound]))

    def prompts(self, filters: Filters, query: str | None, *, limit: int) -> list[PromptRow]:
        """User prompts in the window, newest first (none when the filters name observation-only fields)."""
        return cast("list[PromptRow]", self._side_rows(filters, query, limit, "user_prompts", "prompts_fts"))

    def summaries(self, filters: Filters, query: str | None, *, limit: int) -> list[SummaryRow]:
        """Session summaries in the window, newest first (none when the filters are observation-only)."""
        rows = self._side_rows(filters, query, limit, "session_summaries", "summaries_fts")
        return cast("list[SummaryRow]", rows)

    def _side_rows(
        self, filters: Filters, query: str | None, limit: int, table: str, fts: str
    ) -> list[dict[str, Any]]:
        if filters.observation_only:
            return []
        where, params = filters.sql("t", observations=False)
        if query and query.strip():
            match = fts_query(query)
            if match is None:
                return []
            return self.db.query(
                f"SELECT t.* FROM {fts} CROSS JOIN {table} t ON t.id = {fts}.rowid "
                f"WHERE {fts} MATCH ? AND {where} ORDER BY t.created_at DESC, t.id DESC LIMIT ?",
                [match, *params, limit],
            )
        return self.db.query(
            f"SELECT t.* FROM {table} t WHERE {where} ORDER BY t.created_at DESC, t.id DESC LIMIT ?",
            [*params, limit],
        )

    def links_touching(self, ids: Iterable[int]) -> list[LinkRow]:
        """Every link from or to one of ``ids``: ``from_id``, ``to_id``, ``type``, oldest link first."""
        wanted = sorted(set(ids))
        found: dict[tuple[int, int, str], LinkRow] = {}
        for chunk, marks in batches(wanted):
            for row in self.db.query(
                "SELECT from_id, to_id, type, created_at FROM observation_links "
                f"WHERE from_id IN ({marks}) UNION "
                "SELECT from_id, to_id, type, created_at FROM observation_links "
                f"WHERE to_id IN ({marks})",
                [*chunk, *chunk],
            ):
                found[(row["from_id"], row["to_id"], row["type"])] = cast("LinkRow", row)
        return sorted(found.values(), key=lambda r: (r["created_at"], r["from_id"], r["to_id"]))

    def observation_heads(self, ids: Iterable[int]) -> list[ObservationHead]:
        """Id, uid, type, title and creation time of observations ``ids`` (the far ends of links)."""
        rows: list[dict[str, Any]] = []
        for chunk, marks in batches(sorted(set(ids))):
            rows += self.db.query(
                f"SELECT id, uid, type, title, project, created_at FROM observations WHERE id IN ({marks})",
                chunk,
            )
        return cast("list[ObservationHead]", rows)

    def sessions(self, session_ids: Iterable[str]) -> list[SessionRow]:
        """The session rows of ``session_ids`` (those that exist)."""
        rows: list[dict[str, Any]] = []
        for chunk, marks in batches(sorted(set(session_ids))):
            rows += self.db.query(f"SELECT * FROM sessions WHERE session_id IN ({marks})", chunk)
        return cast("list[SessionRow]", rows)
