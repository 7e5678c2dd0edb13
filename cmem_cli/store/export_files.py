"""The export_files table and the rows' paths: what cmem last wrote to each export file, so that a hand
edit (or a file git brought) is told apart from cmem's own write."""

from __future__ import annotations

from cmem_cli.core.batches import batches
from cmem_cli.store.rows import Repository


class ExportFiles(Repository):
    """What cmem wrote to the export tree: each file's hash and stat, and the rows' paths."""

    def record(self, relpath: str, digest: str, stat: tuple[int, int] | None = None) -> None:
        """Remember what cmem wrote to ``relpath``: its hash and (size, mtime_ns), in the caller's transaction."""
        size, mtime_ns = stat or (None, None)
        self.db.execute(
            "INSERT INTO export_files (path, hash, size, mtime_ns) VALUES (?, ?, ?, ?) "
            "ON CONFLICT (path) DO UPDATE SET hash = excluded.hash, size = excluded.size, "
            "mtime_ns = excluded.mtime_ns",
            (relpath, digest, size, mtime_ns),
        )

    def record_many(self, files: list[tuple[str, str, tuple[int, int] | None]]) -> None:
        """:meth:`record` for many (relpath, hash, stat) at once."""
        self.db.conn.executemany(
            "INSERT INTO export_files (path, hash, size, mtime_ns) VALUES (?, ?, ?, ?) "
            "ON CONFLICT (path) DO UPDATE SET hash = excluded.hash, size = excluded.size, "
            "mtime_ns = excluded.mtime_ns",
            [(relpath, digest, *(stat or (None, None))) for relpath, digest, stat in files],
        )

    def forget(self, relpath: str) -> None:
        self.db.execute("DELETE FROM export_files WHERE path = ?", (relpath,))

    def hash_of(self, relpath: str) -> str | None:
        found = self.db.scalar("SELECT hash FROM export_files WHERE path = ?", (relpath,))
        return None if found is None else str(found)

    def hashes(self) -> dict[str, str]:
        return {r[0]: r[1] for r in self.db.execute("SELECT path, hash FROM export_files")}

    def records(self) -> dict[str, tuple[str, tuple[int, int] | None]]:
        """relpath -> (hash, (size, mtime_ns) or None) of every file cmem wrote, in one query."""
        return {
            r[0]: (r[1], (r[2], r[3]) if r[2] is not None else None)
            for r in self.db.execute("SELECT path, hash, size, mtime_ns FROM export_files")
        }

    def stats(self) -> dict[str, tuple[int, int]]:
        """relpath -> (size, mtime_ns) of each file as cmem last wrote it."""
        return {
            r[0]: (r[1], r[2])
            for r in self.db.execute("SELECT path, size, mtime_ns FROM export_files WHERE size IS NOT NULL")
        }

    def record_paths(self) -> dict[str, tuple[str, int]]:
        """Every export path a row points at: relpath -> (kind, id)."""
        paths = {
            r[0]: ("observation", r[1])
            for r in self.db.execute("SELECT path, id FROM observations WHERE path IS NOT NULL")
        }
        for r in self.db.execute("SELECT path, id FROM session_summaries WHERE path IS NOT NULL"):
            paths[r[0]] = ("summary", r[1])
        return paths

    def uids_at_paths(self, relpaths: list[str]) -> dict[str, tuple[str, str]]:
        """Export path -> (kind, uid) for the observations and summaries whose files are at ``relpaths``."""
        found: dict[str, tuple[str, str]] = {}
        for chunk, marks in batches(relpaths):
            for table, kind in (("observations", "observation"), ("session_summaries", "summary")):
                for row in self.db.query(f"SELECT uid, path FROM {table} WHERE path IN ({marks})", chunk):
                    found[row["path"]] = (kind, row["uid"])
        return found
