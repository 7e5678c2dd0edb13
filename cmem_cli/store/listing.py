"""Listing without a query: observations by filters in time order, the timeline around a record, and the
observation that answers a bare question."""

from __future__ import annotations

from typing import Any

from cmem_cli.store.filters import Filters
from cmem_cli.store.rows import Repository, decode


class Listing(Repository):
    """Observations by filters in time order, a timeline around a record, and the replies to questions."""

    def observations(
        self, filters: Filters, *, limit: int, offset: int = 0, order: str = "newest"
    ) -> list[dict[str, Any]]:
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
        return rows

    def timeline_around(
        self,
        project: str,
        anchor_time: int,
        anchor_key: tuple[str, int],
        *,
        before: int,
        after: int,
        machine: str | None = None,
    ) -> list[dict[str, Any]]:
        """Observations, prompts and summaries of ``project`` around ``anchor_time``, oldest first;
        ``machine``: only what it wrote, and the anchor."""
        union = (
            "SELECT 'observation' AS kind, id, created_at, type, title, session, agent, tokens, uid, machine, "
            "invalidated FROM observations WHERE project = :p "
            "UNION ALL SELECT 'prompt', id, created_at, NULL, text, session, agent, "
            "(length(text) + 3) / 4, uid, machine, NULL FROM user_prompts WHERE project = :p "
            "UNION ALL SELECT 'summary', id, created_at, NULL, "
            "coalesce(request, completed, learned, investigated, next_steps, notes), "
            "session, agent, (length(coalesce(request,'') || coalesce(investigated,'') || coalesce(learned,'') "
            "|| coalesce(completed,'') || coalesce(next_steps,'') || coalesce(notes,'')) + 3) / 4, uid, machine, "
            "NULL FROM session_summaries WHERE project = :p"
        )
        kind_order = "CASE kind WHEN 'prompt' THEN 0 WHEN 'observation' THEN 1 ELSE 2 END"
        kind, ident = anchor_key
        anchor_rank = "CASE :k WHEN 'prompt' THEN 0 WHEN 'observation' THEN 1 ELSE 2 END"
        params = {"p": project, "t": anchor_time, "k": kind, "i": ident, "m": machine}
        whose = "" if machine is None else " AND (machine = :m OR (kind = :k AND id = :i))"
        earlier = self.db.query(
            f"SELECT * FROM ({union}) WHERE (created_at, {kind_order}, id) < (:t, {anchor_rank}, :i){whose} "
            f"ORDER BY created_at DESC, {kind_order} DESC, id DESC LIMIT :n",
            {**params, "n": before},
        )
        later = self.db.query(
            f"SELECT * FROM ({union}) WHERE (created_at, {kind_order}, id) >= (:t, {anchor_rank}, :i){whose} "
            f"ORDER BY created_at, {kind_order}, id LIMIT :n",
            {**params, "n": after + 1},
        )
        return list(reversed(earlier)) + later

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
