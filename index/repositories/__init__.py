"""The repositories of index.db: one concern's SQL each, reached as an attribute of the handle
(:class:`cmem_index.store.IndexStore`): ``store.documents``, ``store.chunks``, ``store.vectors``,
``store.folders``, ``store.settings`` and ``store.retrieval``."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from cmem_index.store import IndexStore, translated

Params = Sequence[Any] | dict[str, Any]


class Repository:
    """One concern's SQL over the handle's connection. A read runs through :meth:`_all` or :meth:`_one`,
    which word apsw's errors as cmem's (one line, an exit code); a write runs in the caller's transaction."""

    def __init__(self, store: IndexStore) -> None:
        self._store = store
        self.conn: Any = store.conn

    def _all(self, sql: str, params: Params = ()) -> list[tuple[Any, ...]]:
        with translated(self._store.path):
            return list(self.conn.execute(sql, params).fetchall())

    def _one(self, sql: str, params: Params = ()) -> Any:
        """The first column of the first row, or None."""
        with translated(self._store.path):
            row = self.conn.execute(sql, params).fetchone()
        return row[0] if row else None
