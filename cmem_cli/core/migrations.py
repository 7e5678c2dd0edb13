"""Named schema migrations, recorded in a table as they are applied (after simonw/llm's ``migrations.py``).

One mechanism for every cmem database: the store (scope ``store``), the capture bookkeeping tables that
share its file (scope ``capture``) and the search index (scope ``index``). A migration is a function of an
apsw connection registered under its name; never edit or rename one that has shipped, append a new one.
Applied names are rows of ``_cmem_migrations``, so a database says which steps it has, not just how many.

Databases made before this table existed counted their steps in ``PRAGMA user_version``; their first
``user_version`` migrations are recorded as applied without running them again.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from cmem_cli.core.errors import DatabaseCorrupt

MigrationStep = Callable[[Any], None]

TABLE = "_cmem_migrations"
_CREATE = f"""
CREATE TABLE IF NOT EXISTS {TABLE} (
    scope      TEXT NOT NULL,
    name       TEXT NOT NULL,
    applied_at INTEGER NOT NULL,
    PRIMARY KEY (scope, name)
) WITHOUT ROWID
"""


class Migrations:
    """The ordered, named migrations of one scope; register with the instance as a decorator."""

    def __init__(self, scope: str, *, guest: bool = False):
        """``guest``: the scope's tables live in another scope's file (capture's and team's in the store's),
        so ``PRAGMA user_version`` is not its own: never read as its legacy count, never written."""
        self.scope = scope
        self.guest = guest or scope == "capture"
        self.steps: list[tuple[str, MigrationStep]] = []

    def __call__(self, step: MigrationStep) -> MigrationStep:
        name = step.__name__
        if any(existing == name for existing, _ in self.steps):
            raise ValueError(f"migration {self.scope}/{name} registered twice")
        self.steps.append((name, step))
        return step

    @property
    def names(self) -> list[str]:
        return [name for name, _ in self.steps]

    # -- reading -----------------------------------------------------------------------------------
    def applied(self, conn: Any) -> list[str]:
        """Names applied to this database, in order; legacy ``user_version`` counts are read as names."""
        if _has_table(conn):
            rows = conn.execute(f"SELECT name FROM {TABLE} WHERE scope = ?", (self.scope,))
            found = {row[0] for row in rows}
            if found:
                return [n for n in self.names if n in found] + sorted(found - set(self.names))
        return self.names[: self._legacy_count(conn)]

    def pending(self, conn: Any) -> list[str]:
        """Names still to apply; refuses a database that has steps this cmem does not know."""
        applied = self.applied(conn)
        unknown = [name for name in applied if name not in self.names]
        if unknown:
            raise DatabaseCorrupt(
                f"{self.scope} database has migration {unknown[0]!r}, newer than this cmem; upgrade cmem"
            )
        return [name for name in self.names if name not in applied]

    def _legacy_count(self, conn: Any) -> int:
        if self.guest:
            return 0  # user_version belongs to the file's own scope (capture's step is safe to run again)
        version = int(conn.execute("PRAGMA user_version").fetchone()[0] or 0)
        if version > len(self.steps):
            raise DatabaseCorrupt(
                f"{self.scope} database has schema version {version}, newer than this cmem; upgrade cmem"
            )
        return version

    # -- writing -----------------------------------------------------------------------------------
    def apply(self, conn: Any) -> list[str]:
        """Apply what is pending, in the caller's write transaction; returns the names applied."""
        pending = self.pending(conn)
        if not pending:
            return []
        already = self.applied(conn)
        conn.execute(_CREATE)
        now = int(time.time() * 1000)
        for name in already:  # record a legacy database's steps by name
            conn.execute(f"INSERT OR IGNORE INTO {TABLE} VALUES (?, ?, ?)", (self.scope, name, now))
        steps = dict(self.steps)
        for name in pending:
            steps[name](conn)
            conn.execute(f"INSERT INTO {TABLE} VALUES (?, ?, ?)", (self.scope, name, now))
        if not self.guest:
            # an older cmem counted steps in user_version: keep it meaningful for it
            conn.execute(f"PRAGMA user_version = {len(already) + len(pending)}")
        return pending


def _has_table(conn: Any) -> bool:
    row = conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (TABLE,)).fetchone()
    return row is not None
