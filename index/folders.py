"""Change detection by folder, for cmem's own export tree: a pass costs what changed, not what is stored.

A pass that stats every file costs in proportion to the store: 2 s at 200,000 observations, 10 s at a
million, every time a hook asks for one. cmem writes its files by renaming a temporary file into place, git
checks files out by creating them, and a file deleted or moved leaves its folder: each changes the
folder's mtime. So the index keeps each folder's mtime as it last listed it, and a pass lists (and stats
the files of) only the folders whose mtime moved; the others are known to hold what they held, their
subfolders included (a folder whose mtime did not move has the same entries). A pass then stats every
folder (the export tree has one per session) and lists the few that changed.

A file rewritten in place, by an editor that does not rename, leaves its folder's mtime alone: such an edit
is seen by `cmem watch` (its events name the file), by adopting edits (`cmem sync`, `cmem doctor --fix`
rewrite the file the cmem way), and by `cmem index --full`. A folder changed within a second of being
listed is listed again next time (its mtime may not have moved between two writes in the same tick).
User collections, where editors write in place, are stat'ed file by file as before.
"""

from __future__ import annotations

import os
import stat as stat_module
import time
from collections.abc import Iterator

from cmem_index.repositories.documents import StoredDocument
from cmem_index.scan import FileStat, compile_mask, is_ignored_name, list_folder
from cmem_index.store import IndexStore

RACY_NS = 1_000_000_000  # a folder modified this recently when listed is listed again by the next pass
UNTRUSTED = -1  # a folder's recorded mtime that never matches: list it next time

Change = tuple[str, FileStat | None, StoredDocument | None]  # (path, on disk or None, indexed or None)


class FolderWalk:
    """The files of one collection that may have changed, folder by folder; :meth:`record` afterwards."""

    def __init__(
        self,
        store: IndexStore,
        collection: str,
        root: str,
        mask: str,
        known: dict[str, int],
        skipped: list[str] | None = None,
    ):
        self.store = store
        self.collection = collection
        self.root = root
        self.matches = compile_mask(mask)
        self.real_root = os.path.realpath(root)
        self.skipped = skipped
        self.known = known  # store.folders.times(collection): every folder the index holds files of
        self.children: dict[str, list[str]] = {}
        for folder in known:
            if folder:
                self.children.setdefault(_parent(folder), []).append(folder)
        self.listed: dict[str, int] = {}  # folders listed or confirmed this pass -> mtime to record
        self.gone: list[str] = []  # folders that are no more
        self.folders = 0  # folders stat'ed
        self.files = 0  # files stat'ed

    def changes(self) -> Iterator[Change]:
        """(path, stat or None when gone, indexed entry or None when new) for every file of a folder that
        changed, and every indexed file below a folder that is gone."""
        yield from self._visit("")

    def _visit(self, folder: str) -> Iterator[Change]:
        path = os.path.join(self.root, folder) if folder else self.root
        self.folders += 1
        try:
            info = os.lstat(path)
            present = stat_module.S_ISDIR(info.st_mode) or (not folder and os.path.isdir(path))
        except OSError:
            present = False
        if not present:
            yield from self._gone(folder)
            return
        mtime = info.st_mtime_ns if not stat_module.S_ISLNK(info.st_mode) else os.stat(path).st_mtime_ns
        if self.known.get(folder) == mtime:
            self.listed[folder] = mtime
            for child in self.children.get(folder, ()):
                yield from self._visit(child)
            return
        files, subfolders = list_folder(path, folder, self.matches, self.real_root, self.skipped)
        self.files += len(files)
        self.listed[folder] = mtime if time.time_ns() - mtime > RACY_NS else UNTRUSTED
        stored = self.store.folders.documents_in(self.collection, folder)
        for relpath, stat in files:
            yield relpath, stat, stored.pop(relpath, None)
        for relpath, entry in stored.items():
            yield relpath, None, entry
        present_folders = {relative for relative, _ in subfolders}
        for child in self.children.get(folder, ()):
            if child not in present_folders:
                yield from self._gone(child)
        for relative, _ in subfolders:
            yield from self._visit(relative)

    def _gone(self, folder: str) -> Iterator[Change]:
        self.gone.append(folder)
        self.listed.pop(folder, None)
        for relpath, entry in self.store.folders.documents_below(self.collection, folder).items():
            yield relpath, None, entry

    def record(self) -> None:
        """Keep the folders' mtimes for the next pass: call once the changes are written (a pass killed
        before this lists them again)."""
        changed = {folder: mtime for folder, mtime in self.listed.items() if self.known.get(folder) != mtime}
        if not changed and not self.gone:
            return
        with self.store.transaction():
            self.store.folders.set_times(self.collection, changed, self.gone)


def _parent(folder: str) -> str:
    return folder[: folder.rstrip("/").rfind("/") + 1]


def folder_times(root: str) -> dict[str, int]:
    """Every folder under ``root`` (as :func:`cmem_index.scan.walk` enters them) -> its mtime, those
    modified within ``RACY_NS`` marked ``UNTRUSTED``: what a pass that stats every file records before it
    walks, so the next pass can go by folder."""
    out: dict[str, int] = {}
    stack = [("", root)]
    while stack:
        folder, path = stack.pop()
        try:
            mtime = os.stat(path).st_mtime_ns
            with os.scandir(path) as listing:
                entries = [(e.name, e.path) for e in listing if not is_ignored_name(e.name) and _is_folder(e)]
        except OSError:
            continue
        out[folder] = mtime if time.time_ns() - mtime > RACY_NS else UNTRUSTED
        stack.extend((f"{folder}{name}/", full) for name, full in entries)
    return out


def _is_folder(entry: os.DirEntry[str]) -> bool:
    try:
        return entry.is_dir(follow_symlinks=False)
    except OSError:
        return False
