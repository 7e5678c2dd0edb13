"""Listing without a query: observations by filters in time order, the timeline around a record, and the
observation that answers a bare question."""

from __future__ import annotations

from typing import TYPE_CHECKING, cast

from cmem_cli.store.filters import Filters
from cmem_cli.store.rows import Repository, decode

if TYPE_CHECKING:
    from cmem_cli.store.row_types import ListedObservation, TimelineItemRow


class Listing(Repository):
    """Observations by filters in time order, a timeline around a record, and the replies to questions."""

    def observations(
        self, filters: Filters, *, limit: int, offset: int = 0, order: str = "newest"
    ) -> list[ListedObservation]:
        where, params = filters.sql("o")
        order_sql = "o.created_at, o.id" if order == "oldest" else "o.created_at DESC, o.id DESC"
        rows = self.db.query(
            f"SELECT o.* FROM observations o WHERE {where} ORDER BY {order_sql} LIMIT ? OFFSET ?",
            [*params, limit, offset],
        )
        for row in rows:
            decode(row)
            row["kind"] = "observation"
            row["score"] = None
        return cast("list[ListedObservation]", rows)

    def timeline_around(
        self,
        project: str,
        anchor_time: int,
        anchor_key: tuple[str, int],
        *,
        before: int,
        after: int,
        filters: Filters | None = None,
    ) -> list[TimelineItemRow]:
        """Observations, prompts and summaries of ``project`` around ``anchor_time``, oldest first;
        ``filters``: only what they keep (prompts and summaries none when they are observation-only), and
        the anchor."""
        obs_where, obs_params = filters.sql("o") if filters is not None else ("1", [])
        other_where, other_params = (
            ("0", []) if filters is not None and filters.observation_only
            else filters.sql("o", observations=False) if filters is not None
            else ("1", [])
        )  # fmt: skip
        union = (
            "SELECT 'observation' AS kind, id, created_at, type, title, session, agent, tokens, uid, machine, "
            f"invalidated, ({obs_where}) AS keep FROM observations o WHERE project = ? "
            "UNION ALL SELECT 'prompt', id, created_at, NULL, text, session, agent, "
            f"(length(text) + 3) / 4, uid, machine, NULL, ({other_where}) FROM user_prompts o WHERE project = ? "
            "UNION ALL SELECT 'summary', id, created_at, NULL, "
            "coalesce(request, completed, learned, investigated, next_steps, notes), "
            "session, agent, (length(coalesce(request,'') || coalesce(investigated,'') || coalesce(learned,'') "
            "|| coalesce(completed,'') || coalesce(next_steps,'') || coalesce(notes,'')) + 3) / 4, uid, machine, "
            f"NULL, ({other_where}) FROM session_summaries o WHERE project = ?"
        )
        union_params = [*obs_params, project, *other_params, project, *other_params, project]
        kind_order = "CASE kind WHEN 'prompt' THEN 0 WHEN 'observation' THEN 1 ELSE 2 END"
        kind, ident = anchor_key
        anchor_rank = "CASE ? WHEN 'prompt' THEN 0 WHEN 'observation' THEN 1 ELSE 2 END"
        whose, whose_params = "", []
        if obs_where != "1" or other_where != "1":
            whose, whose_params = " AND (keep OR (kind = ? AND id = ?))", [kind, ident]
        columns = "kind, id, created_at, type, title, session, agent, tokens, uid, machine, invalidated"
        earlier = self.db.query(
            f"SELECT {columns} FROM ({union}) WHERE (created_at, {kind_order}, id) < (?, {anchor_rank}, ?){whose} "
            f"ORDER BY created_at DESC, {kind_order} DESC, id DESC LIMIT ?",
            [*union_params, anchor_time, kind, ident, *whose_params, before],
        )
        later = self.db.query(
            f"SELECT {columns} FROM ({union}) WHERE (created_at, {kind_order}, id) >= (?, {anchor_rank}, ?){whose} "
            f"ORDER BY created_at, {kind_order}, id LIMIT ?",
            [*union_params, anchor_time, kind, ident, *whose_params, after + 1],
        )
        return cast("list[TimelineItemRow]", list(reversed(earlier)) + later)

    def replies(self, obs_ids: list[int], filters: Filters) -> dict[int, int]:
        """For each of these observations that is a bare question (its title asks, nothing more is written)
        and belongs to a session: the id of the next observation of that session matching ``filters``."""
        if not obs_ids:
            return {}
        where, params = filters.sql("o")
        marks = ", ".join("?" * len(obs_ids))
        rows = self.db.query(
            f"""SELECT q.id AS question, (
                    SELECT o.id FROM observations o WHERE o.session = q.session
                    AND (o.created_at > q.created_at OR (o.created_at = q.created_at AND o.id > q.id)) AND {where}
                    ORDER BY o.created_at, o.id LIMIT 1) AS reply
                FROM observations q WHERE q.id IN ({marks}) AND q.session IS NOT NULL
                AND instr(q.title, '?') > 0 AND coalesce(q.narrative, '') = '' AND q.facts = '[]'""",
            (*params, *obs_ids),
        )
        return {row["question"]: row["reply"] for row in rows if row["reply"] is not None}
