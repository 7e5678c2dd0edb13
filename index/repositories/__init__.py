"""The repositories of index.db: one concern's SQL each, reached as an attribute of the handle
(:class:`cmem_index.store.IndexStore`): ``store.documents``, ``store.chunks``, ``store.vectors``,
``store.folders``, ``store.settings`` and ``store.retrieval``."""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import AbstractContextManager
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from cmem_index.store import translated

if TYPE_CHECKING:
    from cmem_index.repositories.chunks import Chunks
    from cmem_index.repositories.documents import Documents
    from cmem_index.repositories.folders import Folders
    from cmem_index.repositories.retrieval import Retrieval
    from cmem_index.repositories.settings import Settings
    from cmem_index.repositories.vectors import Vectors

Params = Sequence[Any] | dict[str, Any]


class IndexHandle(Protocol):
    """What a repository needs of the handle (:class:`cmem_index.store.IndexStore`): its connection, its
    path, its transactions and the other repositories. A protocol rather than the class, so the repositories
    type-check whichever name the handle's module is imported by (``cmem_index.store``, or ``index.store``
    when mypy is given the folder)."""

    @property
    def conn(self) -> Any: ...
    @property
    def path(self) -> Path: ...
    def transaction(self) -> AbstractContextManager[object]: ...
    @property
    def settings(self) -> Settings: ...
    @property
    def documents(self) -> Documents: ...
    @property
    def chunks(self) -> Chunks: ...
    @property
    def vectors(self) -> Vectors: ...
    @property
    def folders(self) -> Folders: ...
    @property
    def retrieval(self) -> Retrieval: ...


class Repository:
    """One concern's SQL over the handle's connection. A read runs through :meth:`_all` or :meth:`_one`,
    which word apsw's errors as cmem's (one line, an exit code); a write runs in the caller's transaction."""

    def __init__(self, store: IndexHandle) -> None:
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
