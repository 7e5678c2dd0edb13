"""The file transaction: the export files written during one database transaction, journalled first and
undone if the transaction fails (each file's hash recorded in the same transaction, for crash recovery).
"""

from __future__ import annotations

import contextlib
from pathlib import Path

from cmem_cli.core.errors import StorageError
from cmem_cli.core.files import read_regular
from cmem_cli.store.repository import Store
from cmem_export import atomic, digest, layout
from cmem_export.journal import Journal


class FileTransaction:
    """Files written during one database transaction: journalled first, undone if the transaction fails.

    Each write records its content hash in the store (same transaction), so after a crash the journal's
    files can be sorted into committed (hash matches) and not (restored from the journal).
    """

    def __init__(
        self, root: Path, store: Store, journal_dir: Path, *, fsync: bool = True, skip_identical: bool = False
    ):
        self.root = root
        self.store = store
        self.fsync = fsync
        self.skip_identical = skip_identical  # adopting files git just wrote: most are already right
        self.journal = Journal(journal_dir, root, fsync=fsync)
        self.written: set[str] = set()
        self.to_delete: list[str] = []
        self._dirs: set[Path] = set()
        self._done = False

    def write(self, relpath: str, text: str) -> None:
        self.write_many([(relpath, text)])

    def write_many(self, items: list[tuple[str, str]]) -> None:
        """Write these files (relative path, text): journalled in one append, then each written atomically,
        their hashes and stats recorded in the store (the caller's transaction) in one statement."""
        targets = [(relpath, layout.resolve_inside(self.root, relpath), text) for relpath, text in items]
        recorded: list[tuple[str, str, tuple[int, int] | None]] = []
        if self.skip_identical:
            kept = []
            for relpath, path, text in targets:
                if _same_text(path, text):
                    recorded.append((relpath, digest.text_hash(text), atomic.stat_key(path)))
                    self.written.add(relpath)
                else:
                    kept.append((relpath, path, text))
            targets = kept
        path = self.root
        try:
            self.journal.before_writes([(relpath, path) for relpath, path, _ in targets])
            for relpath, path, text in targets:
                if path.parent not in self._dirs:
                    atomic.ensure_dir(path.parent, self.root)
                    self._dirs.add(path.parent)
                stat = atomic.atomic_write(path, text, fsync=self.fsync, make_dirs=False)
                recorded.append((relpath, digest.text_hash(text), stat))
                self.written.add(relpath)
        except OSError as exc:
            raise StorageError(f"cannot write {path}: {exc.strerror}") from None
        self.store.export_files.record_many(recorded)

    def delete_after_commit(self, relpath: str | None) -> None:
        if relpath and relpath not in self.written:
            layout.resolve_inside(self.root, relpath)  # refuse a path outside the tree before noting it
            self.journal.before_drop(relpath)
            self.store.export_files.forget(relpath)
            self.to_delete.append(relpath)

    def rollback(self) -> None:
        if self.journal.file is not None and not self._done:
            self.journal.undo()
        self._done = True
        self.journal.close()

    def commit(self) -> None:
        for relpath in self.to_delete:
            if relpath in self.written:
                continue
            path = layout.resolve_inside(self.root, relpath)
            with contextlib.suppress(OSError):
                path.unlink()
                atomic.prune_empty_dirs(path.parent, self.root)
        self.journal.close()


def _same_text(path: Path, text: str) -> bool:
    """True when ``path`` already holds exactly ``text`` (reading is far cheaper than a rename)."""
    try:
        return read_regular(path, len(text.encode("utf-8"))) == text.encode("utf-8")
    except OSError:
        return False
