"""Keyword search: FTS5 with BM25 over observations, summaries and prompts, each hit scored 0..1."""

from __future__ import annotations

from typing import TYPE_CHECKING, cast

from cmem_cli.core import bm25
from cmem_cli.core.batches import batches
from cmem_cli.core.fts import fts_query, query_tokens
from cmem_cli.store.filters import Filters
from cmem_cli.store.rows import MAX_ROWID, Repository, observations_by_id
from cmem_cli.store.schema import FTS_TOKENIZER

if TYPE_CHECKING:
    from cmem_cli.store.row_types import ObservationMatch, PromptMatch, SummaryMatch

WINDOW_IDS = 50_000  # a time window with more rows than this is not turned into a range of ids
# BM25 column weights for observations_fts: title, subtitle, narrative, facts, concepts, search_terms.
OBS_WEIGHTS = (10.0, 4.0, 1.0, 2.0, 3.0, 1.0)
OBS_BM25 = f"bm25(observations_fts, {', '.join(map(str, OBS_WEIGHTS))})"


def bm25_to_score(rank: float) -> float:
    """Map FTS5's negative BM25 to 0..1 (monotonic; 0.5 at a BM25 of 1)."""
    strength = max(0.0, -rank)
    return strength / (1.0 + strength)


class KeywordSearch(Repository):
    """Keyword (FTS5, BM25) search over observations, summaries and prompts."""

    def observations(
        self, query: str, filters: Filters, *, limit: int, offset: int = 0, order: str = "relevance"
    ) -> list[ObservationMatch]:
        """Keyword search over observations; each row gets ``score`` (0..1) and ``kind``.

        Two steps: the page's ids and ranks, then their rows. Ranking carries only (id, rank) through the
        sort, not every matching row's text, and without a filter it never leaves the full-text index
        (a common word matches a fifth of a million-row store). CROSS JOIN keeps the full-text match as the
        outer loop: with a selective filter SQLite's planner would otherwise walk the filtered rows and
        re-run the whole MATCH for each one (seconds at 100k).
        """
        match = fts_query(query)
        if match is None:
            return []
        where, params = filters.sql("o")
        plain = order == "relevance" and where == "1"
        low, high = (0, MAX_ROWID) if plain else self._window_ids(filters)
        if not plain:
            where += f" AND observations_fts.rowid BETWEEN {low} AND {high}"
        order_sql = {
            "relevance": "rank",
            "newest": "o.created_at DESC, o.id DESC",
            "oldest": "o.created_at, o.id",
        }

        def page(narrow: bm25.Head | None) -> bm25.Ranked:
            matching, also, more = bm25.narrowed(match, narrow)
            if plain:
                sql = (
                    f"SELECT rowid, {OBS_BM25} AS rank FROM observations_fts "
                    f"WHERE observations_fts MATCH ?{also} ORDER BY rank LIMIT ? OFFSET ?"
                )
            else:
                sql = (
                    f"SELECT o.id, {OBS_BM25} AS rank FROM observations_fts CROSS JOIN observations o "
                    f"ON o.id = observations_fts.rowid WHERE observations_fts MATCH ?{also} AND {where} "
                    f"ORDER BY {order_sql[order]} LIMIT ? OFFSET ?"
                )
            return list(self.db.execute(sql, [matching, *more, *params, limit, offset]))

        terms = None
        if order == "relevance" and (low, high) == (0, MAX_ROWID):  # a time window's range is narrow already
            terms = self._query_terms(query, "observations_fts")
            ranked = bm25.ranked_head(page, limit, bm25.head("observations_fts", terms))
        else:
            ranked = page(None)
        found = observations_by_id(self.db, [obs_id for obs_id, _ in ranked])
        if ranked and terms is None:
            terms = self._query_terms(query, "observations_fts")
        scale = terms.idf_sum() * max(OBS_WEIGHTS) if terms is not None else 0.0
        rows: list[ObservationMatch] = []
        for obs_id, rank in ranked:
            stored = found.get(obs_id)
            if stored is None:
                continue
            row = cast("dict[str, object]", stored)  # the stored row, extended with what matched
            row["kind"] = "observation"
            row["bm25"] = bm25_strength = -rank  # FTS5 ranks lower-is-better; keep the positive strength
            row["score"] = bm25_to_score(rank)
            row["strength"] = bm25_strength / scale if scale else 0.0
            rows.append(cast("ObservationMatch", row))
        return rows

    def summaries(self, query: str, filters: Filters, *, limit: int) -> list[SummaryMatch]:
        rows = self._search_side_table(query, filters, limit, "summary", "summaries_fts", "session_summaries")
        return cast("list[SummaryMatch]", rows)

    def prompts(
        self, query: str, filters: Filters, *, limit: int, pending: bool = False
    ) -> list[PromptMatch]:
        """Keyword hits among the prompts. ``pending``: ``query`` is a prompt not recorded yet (a hook
        answers before it records). Where the table gives every word it shares with it FTS5's IDF floor
        (a fresh home's one earlier prompt holds them all), a word only the new prompt has would outweigh
        them all: there the prompt is counted as a row, as it is once recorded. Elsewhere the statistics
        are kept as they are (what the recall bar was tuned on, bench/recall_week.py)."""
        rows = self._search_side_table(
            query, filters, limit, "prompt", "prompts_fts", "user_prompts", pending=pending
        )
        return cast("list[PromptMatch]", rows)

    def holding_phrase(self, phrase: str, obs_ids: list[int]) -> set[int]:
        """Which of ``obs_ids`` hold ``phrase`` (an FTS5 phrase, :func:`cmem_cli.core.fts.exact_phrase`),
        its words in order, in any field."""
        found: set[int] = set()
        for batch, marks in batches(obs_ids):
            sql = f"SELECT rowid FROM observations_fts WHERE observations_fts MATCH ? AND rowid IN ({marks})"
            found.update(row[0] for row in self.db.rows(sql, (phrase, *batch)))
        return found

    def _window_ids(self, filters: Filters) -> tuple[int, int]:
        """The range of ids the observations of a narrow time window (``--since 7d``) lie in, so that the
        full-text match skips the rest of the store: ids need not follow time (an import of old records),
        so it is the least and greatest id of the window's rows, read from the time index when the window
        holds at most ``WINDOW_IDS`` rows (else no bound: reading them would cost more than it saves)."""
        low, high, most = 0, MAX_ROWID, WINDOW_IDS
        if filters.since is None and filters.until is None:
            return low, high
        clauses, params = [], []
        if filters.since is not None:
            clauses.append("created_at >= ?")
            params.append(int(filters.since))
        if filters.until is not None:
            clauses.append("created_at <= ?")
            params.append(int(filters.until))
        where = " AND ".join(clauses)
        in_window = self.db.scalar(
            f"SELECT count(*) FROM (SELECT 1 FROM observations WHERE {where} LIMIT ?)", [*params, most + 1]
        )
        if in_window > most:
            return low, high
        bounds = self.db.query_one(
            f"SELECT min(id) AS low, max(id) AS high FROM observations WHERE {where}", params
        )
        if not bounds or bounds["low"] is None:
            return 1, 0  # nothing in the window
        return int(bounds["low"]), int(bounds["high"])

    def _query_terms(self, query: str, fts: str) -> bm25.QueryTerms:
        """The query's terms in ``fts``, whose IDF sum scales a hit's BM25 into its *strength*: a hit
        matching every term once, in its heaviest column, scores the sum times that column's weight
        (:mod:`cmem_cli.core.bm25`). Strengths compare between the observations, the summaries and the
        prompts whatever their tables' sizes (one prompt in a table of one scored 0.000002 for its own
        words)."""
        return bm25.query_terms(self.db.conn, fts, FTS_TOKENIZER, query_tokens(query))

    def _search_side_table(
        self,
        query: str,
        filters: Filters,
        limit: int,
        kind: str,
        fts: str,
        table: str,
        *,
        pending: bool = False,
    ) -> list[dict[str, object]]:
        """Keyword hits among summaries or prompts (their filters have no observation-only fields)."""
        match = fts_query(query)
        if match is None or filters.observation_only:
            return []
        where, params = filters.sql("t", observations=False)
        rows = self.db.query(
            f"SELECT t.*, bm25({fts}) AS rank FROM {fts} CROSS JOIN {table} t "
            f"ON t.id = {fts}.rowid WHERE {fts} MATCH ? AND {where} ORDER BY rank LIMIT ?",
            [match, *params, limit],
        )
        terms = self._query_terms(query, fts) if rows else None
        if terms is not None and pending and bm25.all_held_at_floor(terms):
            terms = bm25.with_row_of_its_own(terms)
        scale = terms.idf_sum() if terms is not None else 0.0
        for row in rows:
            row["kind"] = kind
            row["bm25"] = -row.pop("rank")  # FTS5 ranks lower-is-better; keep the positive strength
            row["score"] = bm25_to_score(-row["bm25"])
            row["strength"] = row["bm25"] / scale if scale else 0.0
        return rows
