"""Is the store's file sound? The checks `cmem doctor` runs before it trusts the store with anything.

Doctor is where every other command sends people when the store is damaged, so these checks must run on
exactly such files: any SQLite error while running one becomes a cmem error (:class:`DatabaseBusy` when
another process holds the lock, else :class:`DatabaseCorrupt`) that doctor reports as that check failing.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import apsw

from cmem_cli.core.db import classify_error
from cmem_cli.core.errors import CmemError, DatabaseCorrupt
from cmem_cli.store.rows import Repository


def _schema_objects() -> set[str]:
    """Every table, index and trigger cmem's migrations create (built in memory: doctor only)."""
    from cmem_cli.store.schema import MIGRATIONS

    conn = apsw.Connection(":memory:")
    try:
        for _, step in MIGRATIONS.steps:
            step(conn)
        return {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE name NOT LIKE 'sqlite_%'")}
    finally:
        conn.close()


class Health(Repository):
    """The checks `cmem doctor` runs on the file (``store.health``)."""

    @contextlib.contextmanager
    def _as_damage(self) -> Iterator[None]:
        try:
            yield
        except apsw.Error as exc:
            translated = classify_error(exc, self.db.path, "database", "see `cmem doctor`")
            if isinstance(translated, CmemError):
                raise translated from None
            raise DatabaseCorrupt(str(exc)) from None

    def integrity_problems(self, *, limit: int = 3) -> list[str]:
        """SQLite's quick check: an empty list when the file is sound, else its first ``limit`` findings."""
        with self._as_damage():
            rows = [row[0] for row in self.db.conn.execute("PRAGMA quick_check")]
        return [] if rows == ["ok"] else rows[:limit]

    def foreign_key_violations(self) -> int:
        """How many rows point at a row that is not there."""
        with self._as_damage():
            return len(self.db.conn.execute("PRAGMA foreign_key_check").fetchall())

    def keyword_index_in_sync(self) -> bool:
        """Whether the contentless keyword index holds one row per observation (triggers keep it so)."""
        with self._as_damage():
            ((observations, indexed),) = self.db.conn.execute(
                "SELECT (SELECT count(*) FROM observations), (SELECT count(*) FROM observations_fts)"
            ).fetchall()
        return bool(observations == indexed)

    def missing_schema_objects(self) -> list[str]:
        """The tables, indexes and triggers cmem's migrations create that the file lacks, sorted."""
        with self._as_damage():
            present = {row[0] for row in self.db.conn.execute("SELECT name FROM sqlite_master")}
        return sorted(_schema_objects() - present)
