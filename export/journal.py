"""A journal of pending export writes, so a crash can be told apart from a file a person wrote.

A write transaction that touches export files first notes, per file, what was there before: its text, or
that it was absent. Only then is the file written. The database commits, the files it replaced are
removed, and the journal is deleted. If the process dies in between, the journal survives, and recovery
(``cmem_cli.services.upkeep.recovery``, run under the store's write lock) asks the store which files it committed (by
content hash) and puts the old text back for every other one. Without a journal, a file with no store row
is a person's file and is adopted, never deleted.

One JSON object per line: ``{"path": REL, "prev": TEXT|null}`` before a write, ``{"path": REL, "drop":
true}`` for a file the transaction removes once committed. A line cut short by a kill is ignored: its
file had not been touched yet.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Set
from pathlib import Path

from cmem_export import atomic, layout

JOURNAL_DIR = "journal"


class Entry:
    """One file the transaction touches: its previous text (None: absent), or ``drop``: removed after."""

    __slots__ = ("drop", "path", "prev")

    def __init__(self, path: str, prev: str | None = None, drop: bool = False):
        self.path, self.prev, self.drop = path, prev, drop


class Journal:
    """The undo log of one write transaction; created on the first file it records."""

    def __init__(self, directory: Path, root: Path, *, fsync: bool = True):
        self.directory = directory
        self.root = root
        self.fsync = fsync
        self.file: Path | None = None
        self._fd: int | None = None
        self._seen: set[str] = set()
        self.entries: list[Entry] = []

    def before_write(self, relpath: str, path: Path) -> None:
        """Record ``path``'s current text (or absence) before it is first written in this transaction."""
        self.before_writes([(relpath, path)])

    def before_writes(self, items: list[tuple[str, Path]]) -> None:
        """:meth:`before_write` for many files, noted in one append (a bulk import's batch)."""
        entries = []
        for relpath, path in items:
            if relpath in self._seen:
                continue
            prev = _text_of(path)
            self._seen.add(relpath)
            entries.append(Entry(relpath, prev))
        self._append_all(entries)

    def before_drop(self, relpath: str) -> None:
        """Record that ``relpath`` is to be removed once the transaction commits."""
        if relpath not in self._seen:
            self._append(Entry(relpath, drop=True))

    def _append(self, entry: Entry) -> None:
        self._seen.add(entry.path)
        self._append_all([entry])

    def _append_all(self, entries: list[Entry]) -> None:
        if not entries:
            return
        self.entries.extend(entries)
        if self._fd is None:
            atomic.ensure_dir(self.directory)
            self.file = self.directory / f"{os.getpid()}-{os.urandom(6).hex()}.jsonl"
            self._fd = os.open(self.file, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_APPEND, 0o600)
        lines = (
            {"path": e.path, "drop": True} if e.drop else {"path": e.path, "prev": e.prev} for e in entries
        )
        view = memoryview("".join(json.dumps(line) + "\n" for line in lines).encode("utf-8"))
        while view:
            view = view[os.write(self._fd, view) :]
        if self.fsync:
            os.fsync(self._fd)

    def sync(self) -> None:
        """Make the entries appended so far durable (a journal written without an fsync per append)."""
        if self._fd is not None:
            os.fsync(self._fd)

    def undo(self) -> None:
        """Put every written file back as it was (the transaction did not commit)."""
        undo_entries(self.root, self.entries)

    def close(self) -> None:
        """The transaction is over and its files are final: the journal is no longer needed."""
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
        if self.file is not None:
            with contextlib.suppress(FileNotFoundError):
                self.file.unlink()


def _text_of(path: Path) -> str | None:
    """The file's text as it is (None: absent); no file object is made for a file that is not there (a
    bulk import journals thousands of new names under the store's write lock)."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        return None
    with os.fdopen(fd, "rb") as fh:
        return fh.read().decode("utf-8", "surrogateescape")


def undo_entries(root: Path, entries: list[Entry], *, keep: Set[str] = frozenset()) -> list[str]:
    """Restore the previous state of each written file not in ``keep``; returns the paths restored."""
    restored = []
    for entry in reversed(entries):
        if entry.drop or entry.path in keep:
            continue
        path = layout.resolve_inside(root, entry.path)
        if entry.prev is None:
            if atomic.remove_file(path):
                atomic.prune_empty_dirs(path.parent, root)
                restored.append(entry.path)
            continue
        try:
            current = path.read_bytes().decode("utf-8", "surrogateescape")
        except FileNotFoundError:
            current = None
        if current != entry.prev:
            atomic.atomic_write_bytes(path, entry.prev.encode("utf-8", "surrogateescape"))
            restored.append(entry.path)
    return restored


def pending(directory: Path) -> list[tuple[Path, list[Entry]]]:
    """Journals left behind (by a crash, or by a process that is just finishing), oldest first."""
    try:
        names = sorted(os.listdir(directory))
    except FileNotFoundError:
        return []
    found = []
    for name in names:
        if not name.endswith(".jsonl"):
            continue
        file = directory / name
        entries = []
        try:
            lines = file.read_bytes().split(b"\n")
        except FileNotFoundError:
            continue
        for raw in lines:
            try:
                item = json.loads(raw)
                entry = Entry(str(item["path"]), item.get("prev"), bool(item.get("drop")))
            except (ValueError, KeyError, TypeError):
                continue  # the last line of a journal killed mid-append
            entries.append(entry)
        found.append((file, entries))
    return found
