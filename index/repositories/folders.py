"""index.db's folders: each folder of cmem's own tree with its mtime when a pass last listed it, so the next
pass reads only the folders that changed (:mod:`cmem_index.folders`), and the documents by folder."""

from __future__ import annotations

from collections.abc import Iterable

from cmem_index.repositories import Repository
from cmem_index.repositories.documents import StoredDocument

# The folder of a document's path: the path up to its last "/" (the characters that are no "/" trimmed
# from its end), "" at the collection's root; an index on it finds a folder's files in one seek.
_FOLDER_OF = "rtrim(path, replace(path, '/', ''))"


def after_prefix(folder: str) -> str:
    """The first text after every path that starts with ``folder`` ("a/" -> "a0"; "" -> past all)."""
    if not folder:
        return "\U0010ffff"
    return folder[:-1] + chr(ord(folder[-1]) + 1)


class Folders(Repository):
    """The ``folders`` table (made by the first pass that needs it) and the documents by folder."""

    def exist(self) -> bool:
        """Whether the folders table exists (an index an older cmem built has none)."""
        return bool(
            self.conn.execute(
                "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", ("folders",)
            ).fetchone()
        )

    def ensure(self) -> None:
        """The folders table and the documents' folder index, made by the first pass that needs them (a
        reader never does: an index an older cmem built is searched as it is)."""
        if self.exist():
            return
        with self._store.transaction():
            self.conn.execute(
                "CREATE TABLE IF NOT EXISTS folders(collection TEXT NOT NULL, path TEXT NOT NULL, "
                "mtime_ns INTEGER NOT NULL, PRIMARY KEY(collection, path)) WITHOUT ROWID"
            )
            self.conn.execute(
                f"CREATE INDEX IF NOT EXISTS documents_folder ON documents(collection, {_FOLDER_OF})"
            )

    def times(self, collection: str) -> dict[str, int]:
        """Folder (relative, ``/``-terminated, ``""`` for the root) -> its mtime when last listed."""
        rows = self._all("SELECT path, mtime_ns FROM folders WHERE collection = ?", (collection,))
        return {str(path): int(mtime) for path, mtime in rows}

    def set_times(self, collection: str, times: dict[str, int], gone: Iterable[str]) -> None:
        """Record folders listed by a pass (call inside a transaction, after their documents) and forget
        the folders that are gone, with every folder below them."""
        for folder in gone:
            self.conn.execute(
                "DELETE FROM folders WHERE collection = ? AND path >= ? AND path < ?",
                (collection, folder, after_prefix(folder)),
            )
        self.conn.executemany(
            "INSERT OR REPLACE INTO folders(collection, path, mtime_ns) VALUES (?, ?, ?)",
            [(collection, folder, mtime) for folder, mtime in times.items()],
        )

    def documents_in(self, collection: str, folder: str) -> dict[str, StoredDocument]:
        """The documents directly in ``folder`` (not below it), by path."""
        rows = self._all(
            "SELECT path, id, size, mtime_ns, hash, chunked_with FROM documents "
            f"WHERE collection = ? AND {_FOLDER_OF} = ?",
            (collection, folder),
        )
        return {r[0]: StoredDocument(r[1], r[2], r[3], r[4], r[5]) for r in rows}

    def documents_below(self, collection: str, folder: str) -> dict[str, StoredDocument]:
        """Every document in ``folder`` or below it, by path (a folder that is gone)."""
        rows = self._all(
            "SELECT path, id, size, mtime_ns, hash, chunked_with FROM documents "
            "WHERE collection = ? AND path >= ? AND path < ?",
            (collection, folder, after_prefix(folder)),
        )
        return {r[0]: StoredDocument(r[1], r[2], r[3], r[4], r[5]) for r in rows}
