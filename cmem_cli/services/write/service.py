"""The write service: every write goes to SQLite and to its markdown file, all or nothing.

A write runs inside one ``BEGIN IMMEDIATE`` transaction: the row is inserted, its file is written
atomically (temp file + rename), the row records the file's path, and only then does the transaction
commit. If anything fails before the commit, the transaction rolls back and the new file is removed;
files that a committed write replaced are deleted after the commit.

:class:`WriteService` is the handle that holds that transaction and the home's privacy filter; the writes
themselves are three services reached from it: ``records`` (observations, links, the key rule:
:mod:`.records`), ``sessions`` (sessions, prompts, summaries: :mod:`.sessions`) and ``export`` (the file of a
stored row: :mod:`.exporter`).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from functools import cached_property
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

from cmem_cli.core.config import Config
from cmem_cli.core.errors import StorageError
from cmem_cli.core.files import read_regular
from cmem_cli.store.repository import Store
from cmem_export import atomic, digest, layout
from cmem_export.journal import JOURNAL_DIR, Journal

if TYPE_CHECKING:
    from collections.abc import Mapping

    from cmem_cli.services.write.exporter import Exporter
    from cmem_cli.services.write.records import RecordWrites
    from cmem_cli.services.write.sessions import SessionWrites


def _scrubber() -> ModuleType:
    """Privacy filter applied to every text before storage (``<private>`` blocks, secrets); imported here,
    not at module level, so a read-only command never loads its patterns. It is never optional."""
    from cmem_cli.services.write import privacy

    return privacy


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
        self._placed_in: set[Path] = set()  # folders files staged beforehand were renamed into
        self._unsynced = False  # files written without an fsync, to be flushed before the commit
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
                self._unsynced = self._unsynced or not self.fsync
        except OSError as exc:
            raise StorageError(f"cannot write {path}: {exc.strerror}") from None
        self.store.export_files.record_many(recorded)

    def place_many(self, items: list[tuple[str, Path, str, str, tuple[int, int]]]) -> None:
        """Move files written and flushed before the transaction (:mod:`cmem_cli.services.write.bulk_stage`)
        into place: (relative path, its path in the tree, staged path, text hash, stat key), the paths
        checked when staged. Journalled in one append, each renamed over its path (a rename keeps the stat
        key), hashes recorded in the caller's transaction."""
        path = self.root
        try:
            self.journal.before_writes([(relpath, target) for relpath, target, *_ in items])
            folders: dict[str, Path] = {}  # by relative folder: a few, however many files
            for relpath, target, *_ in items:
                folders.setdefault(relpath.rpartition("/")[0], target.parent)
            for path in folders.values():
                if path not in self._dirs:
                    atomic.ensure_dir(path, self.root)
                    self._dirs.add(path)
                self._placed_in.add(path)
            for relpath, target, staged, _, _ in items:
                path = target
                os.replace(staged, target)
                self.written.add(relpath)
        except OSError as exc:
            raise StorageError(f"cannot write {path}: {exc.strerror}") from None
        self.store.export_files.record_many(
            [(relpath, hashed, stat) for relpath, _, _, hashed, stat in items]
        )

    def flush(self) -> None:
        """Before the commit: files written without an fsync go to disk (all at once), and the renames of
        staged files (their journal, then their folders' names)."""
        if self._unsynced:
            atomic.sync_all()
        elif self._placed_in:
            self.journal.sync()
            for folder in self._placed_in:
                atomic.sync_dir(folder)

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


class WriteService:
    """This home's writes: the store, the write transaction over the store and the export files, the privacy
    filter, and the three services that write (``records``, ``sessions``, ``export``), each made on first use.

    Sync, team sync and the adoption of hand edits compose their own writes from public steps, so that what
    git or a remote brought is written exactly as cmem writes it: :meth:`write_transaction` (the store and
    the export files, all or nothing), ``records.store_observation`` (insert or update a prepared record and
    write its file) and ``export.export_observation`` (write a stored row's file again)."""

    def __init__(self, config: Config, store: Store):
        self.config = config
        self.store = store
        store.configured_writer = (config.machine, config.author)
        self.privacy = _scrubber()
        self._joined: FileTransaction | None = None  # the file transaction of an open :meth:`transaction`

    @cached_property
    def export(self) -> Exporter:
        """The files of stored rows (:class:`cmem_cli.services.write.exporter.Exporter`)."""
        from cmem_cli.services.write.exporter import Exporter

        return Exporter(self.store, self.scrub_text)

    @cached_property
    def records(self) -> RecordWrites:
        """Observations and links (:class:`cmem_cli.services.write.records.RecordWrites`)."""
        from cmem_cli.services.write.records import RecordWrites

        return RecordWrites(self)

    @cached_property
    def sessions(self) -> SessionWrites:
        """Sessions, prompts and summaries (:class:`cmem_cli.services.write.sessions.SessionWrites`)."""
        from cmem_cli.services.write.sessions import SessionWrites

        return SessionWrites(self)

    @classmethod
    def open(cls, config: Config) -> WriteService:
        config.ensure_home()
        return cls(config, Store.open(config.db_path, config.export_dir))

    def close(self) -> None:
        self.store.close()

    def __enter__(self) -> WriteService:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def export_root(self) -> Path:
        return self.config.export_dir

    @property
    def journal_dir(self) -> Path:
        return self.config.home / JOURNAL_DIR

    @contextlib.contextmanager
    def write_transaction(
        self, *, fsync: bool = True, skip_identical: bool = False
    ) -> Iterator[FileTransaction]:
        """One write transaction over the store and the export files: all or nothing across both. Yields
        the :class:`FileTransaction` that :meth:`store_observation` and :meth:`export_observation` write to.

        ``fsync=False``: the files are synced once, before the commit, not one by one (a sync or an
        import writes many); ``skip_identical``: a file whose text is already on disk is not rewritten
        (adopting what git brought must not touch the work tree it came in). Inside :meth:`transaction`
        it joins that one: its files are kept or undone with the whole."""
        if self._joined is not None:
            yield self._joined
            return
        files = FileTransaction(
            self.export_root, self.store, self.journal_dir, fsync=fsync, skip_identical=skip_identical
        )
        try:
            with self.store.transaction():
                try:
                    yield files
                    files.flush()  # files durable before the rows that point at them
                except BaseException:
                    files.rollback()  # still under the write lock: nobody sees the half-written files
                    raise
        except BaseException:
            files.rollback()  # no-op after the one above; covers a COMMIT that failed
            raise
        files.commit()
        if files.written or files.to_delete:
            from cmem_index.refresh import note_written

            note_written(self.config, len(files.written) + len(files.to_delete))

    @contextlib.contextmanager
    def transaction(self) -> Iterator[None]:
        """Several writes (and the caller's own rows on this connection) in one transaction: every row and
        every export file they write is kept, or none is. An exception inside must end the transaction (a
        write that failed and was caught inside would keep its files until the whole is undone)."""
        if self._joined is not None:
            yield
            return
        with self.write_transaction() as files:
            self._joined = files
            try:
                yield
            finally:
                self._joined = None

    # -- privacy ----------------------------------------------------------------------------------------
    def scrub_record(self, record: Mapping[str, Any]) -> dict[str, Any]:
        """``record`` with this home's privacy rules applied to each of its texts."""
        scrubbed: dict[str, Any] = self.privacy.scrub_record(record, config=self.config)
        return scrubbed

    def scrub_text(self, text: str | None) -> str | None:
        """``text`` with this home's privacy rules applied (private spans and secrets removed); what adoption
        and team sync pass to a record's other fields, such as an adopted anchor."""
        if text is None:
            return text
        return str(self.privacy.scrub(text, config=self.config))


def _same_text(path: Path, text: str) -> bool:
    """True when ``path`` already holds exactly ``text`` (reading is far cheaper than a rename)."""
    try:
        return read_regular(path, len(text.encode("utf-8"))) == text.encode("utf-8")
    except OSError:
        return False
