"""The store's side of supersession: the ``supersedes`` links read as who replaced whom.

Pure data access over ``observation_links``; :mod:`cmem_cli.services.truth.supersession` decides what the read
paths do with it (mark rows, rank successors, leave replaced memories out of the briefing). Every query is
one indexed lookup for the ids a command shows, in chunks well under SQLite's bound-parameter limit.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import TYPE_CHECKING

from cmem_cli.core.batches import batches
from cmem_cli.store.rows import Repository

if TYPE_CHECKING:
    from cmem_cli.store.filters import Filters

SUPERSEDES = "supersedes"


class ObservationText:
    """The stated text of an observation (what an inferred update compares) and when it was recorded."""

    __slots__ = ("id", "title", "subtitle", "narrative", "facts", "created_at")

    def __init__(
        self, id: int, title: str, subtitle: str, narrative: str, facts: list[str], created_at: int
    ) -> None:
        self.id, self.title, self.subtitle, self.narrative = id, title, subtitle, narrative
        self.facts, self.created_at = facts, created_at


class Supersession(Repository):
    """The ``supersedes`` links read as who replaced whom (``store.supersession``)."""

    def newest_successors(self, obs_ids: Iterable[int]) -> dict[int, int]:
        """Each of ``obs_ids`` that a newer memory superseded -> that successor's id (the newest one, by the
        time it was recorded, when several superseded it)."""
        ids = sorted({int(i) for i in obs_ids})
        found: dict[int, int] = {}
        for chunk, marks in batches(ids):
            rows = self.db.rows(
                "SELECT l.to_id, l.from_id FROM observation_links l JOIN observations n ON n.id = l.from_id "
                f"WHERE l.type = '{SUPERSEDES}' AND l.to_id IN ({marks}) ORDER BY n.created_at, n.id",
                chunk,
            )
            for old, new in rows:  # newest last: it wins
                found[old] = new
        return found

    def superseders(self, obs_ids: Iterable[int]) -> set[int]:
        """Every memory that directly supersedes one of ``obs_ids``."""
        ids = sorted({int(i) for i in obs_ids})
        found: set[int] = set()
        for chunk, marks in batches(ids):
            found.update(
                row[0]
                for row in self.db.rows(
                    f"SELECT from_id FROM observation_links WHERE type = '{SUPERSEDES}' AND to_id IN ({marks})",
                    chunk,
                )
            )
        return found

    def superseding_links(self, obs_ids: Iterable[int]) -> list[tuple[int, int]]:
        """(from_id, to_id) of every ``supersedes`` link to one of ``obs_ids``: who replaced each of them."""
        ids = sorted({int(i) for i in obs_ids})
        found: list[tuple[int, int]] = []
        for chunk, marks in batches(ids):
            found.extend(
                (row[0], row[1])
                for row in self.db.rows(
                    f"SELECT from_id, to_id FROM observation_links WHERE type = '{SUPERSEDES}' "
                    f"AND to_id IN ({marks}) ORDER BY from_id, to_id",
                    chunk,
                )
            )
        return found

    def all_superseding_links(self) -> list[tuple[int, int]]:
        """(from_id, to_id) of every ``supersedes`` link (doctor's look for loops: a few per memory at most)."""
        return [
            (row[0], row[1])
            for row in self.db.rows(
                f"SELECT from_id, to_id FROM observation_links WHERE type = '{SUPERSEDES}' ORDER BY from_id, to_id"
            )
        ]

    def inherit_retrievals(self, new_id: int, old_id: int) -> None:
        """Add the retrieval count of ``old_id`` to that of ``new_id``, inside the caller's transaction."""
        self.db.execute(
            "UPDATE observations SET retrieval_count = retrieval_count + "
            "(SELECT retrieval_count FROM observations WHERE id = ?) WHERE id = ?",
            (old_id, new_id),
        )

    def ids_passing(self, obs_ids: Iterable[int], filters: Filters) -> list[int]:
        """The ids among ``obs_ids`` whose observations match ``filters`` (type, project, dates...), ascending."""
        ids = sorted({int(i) for i in obs_ids})
        where, params = filters.sql("o")
        found: list[int] = []
        for chunk, marks in batches(ids):
            found.extend(
                row[0]
                for row in self.db.rows(
                    f"SELECT o.id FROM observations o WHERE o.id IN ({marks}) AND {where} ORDER BY o.id",
                    [*chunk, *params],
                )
            )
        return found

    def stated_texts(self, obs_ids: Iterable[int]) -> list[ObservationText]:
        """The stated text of each of ``obs_ids`` that exists (narratives included: few rows, a search's head)."""
        ids = sorted({int(i) for i in obs_ids})
        found: list[ObservationText] = []
        for chunk, marks in batches(ids):
            rows = self.db.rows(
                "SELECT id, title, subtitle, narrative, facts, created_at FROM observations "
                f"WHERE id IN ({marks})",
                chunk,
            )
            for obs_id, title, subtitle, narrative, facts, created_at in rows:
                found.append(
                    ObservationText(
                        obs_id,
                        title or "",
                        subtitle or "",
                        narrative or "",
                        json.loads(facts or "[]"),
                        created_at,
                    )
                )
        return found

    def add_inferred(self, from_id: int, to_id: int, score: float, at: int, *, marked: bool = True) -> None:
        """Record that ``from_id`` probably replaced ``to_id`` (inferred when it was recorded; ``marked``
        False: only likely, ranked below it unmarked), inside the caller's transaction; once per pair."""
        self.db.execute(
            "INSERT OR REPLACE INTO inferred_supersessions (from_id, to_id, score, marked, created_at) "
            "VALUES (?, ?, ?, ?, ?)",
            (from_id, to_id, float(score), int(marked), at),
        )

    def likely_successors(self, obs_ids: Iterable[int]) -> dict[int, int]:
        """Each of ``obs_ids`` a newer memory likely replaced, not marked (a reported candidate whose
        change was stated about the same subject) -> that memory (the newest)."""
        ids = sorted({int(i) for i in obs_ids})
        found: dict[int, int] = {}
        for chunk, marks in batches(ids):
            rows = self.db.rows(
                "SELECT i.to_id, i.from_id FROM inferred_supersessions i JOIN observations n ON n.id = i.from_id "
                f"WHERE i.to_id IN ({marks}) AND i.marked = 0 ORDER BY n.created_at, n.id",
                chunk,
            )
            for old, new in rows:
                found[old] = new
        return found

    def newest_inferred(self, obs_ids: Iterable[int]) -> dict[int, int]:
        """Each of ``obs_ids`` that a newer memory probably replaced (inferred when that one was recorded)
        -> that memory's id (the newest when several did)."""
        ids = sorted({int(i) for i in obs_ids})
        found: dict[int, int] = {}
        for chunk, marks in batches(ids):
            rows = self.db.rows(
                "SELECT i.to_id, i.from_id FROM inferred_supersessions i JOIN observations n ON n.id = i.from_id "
                f"WHERE i.to_id IN ({marks}) AND i.marked = 1 ORDER BY n.created_at, n.id",
                chunk,
            )
            for old, new in rows:  # newest last: it wins
                found[old] = new
        return found

    def replacement_pool(
        self, match: str | None, obs_id: int, project: str, session: str | None, before: int, *, limit: int
    ) -> list[tuple[int, float, bool]]:
        """What an observation just recorded may replace: (id, BM25 strength, same session) of the older
        observations of its project that share its words (``match``, an FTS5 expression), best first, and
        the last few of its session whatever their words (a correction rarely repeats its subject).

        Ordered by ``bm25()``, the value of FTS5's ``rank`` column: ``ORDER BY rank`` had FTS5 rank every
        match of the whole store before the project's filter (19 ms for an `add` at 10,000 memories, 4 ms
        so), in the same order, ties included."""
        found: dict[int, tuple[int, float, bool]] = {}
        if match:
            rows = self.db.rows(
                "SELECT o.id, -bm25(observations_fts, 10.0, 4.0, 1.0, 2.0, 3.0, 1.0), o.session "
                "FROM observations_fts CROSS JOIN observations o ON o.id = observations_fts.rowid "
                "WHERE observations_fts MATCH ? AND o.project = ? AND o.id != ? AND o.created_at <= ? "
                "ORDER BY bm25(observations_fts) LIMIT ?",
                (match, project, obs_id, before, limit),
            )
            for found_id, strength, their_session in rows:
                found[found_id] = (
                    found_id,
                    float(strength),
                    session is not None and their_session == session,
                )
        if session:
            for (found_id,) in self.db.rows(
                "SELECT id FROM observations WHERE session = ? AND id != ? AND created_at <= ? "
                "ORDER BY created_at DESC, id DESC LIMIT 3",
                (session, obs_id, before),
            ):
                if found_id not in found:
                    found[found_id] = (found_id, 0.0, True)
        return list(found.values())
