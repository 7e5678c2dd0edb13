"""Crash recovery for export files: finish what committed, undo what did not.

A journal left in ``<home>/journal`` means a write transaction was interrupted (or is just finishing).
The caller holds the store's write lock, so no such transaction is still running its database part. For
each file the journal names, the store's content hash says whether the write committed: a match is kept;
anything else gets its previous text back (or is removed, if the write created it). A file the journal
marks for removal is removed once the store no longer points at it. The journal is then deleted.
"""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import TYPE_CHECKING

from cmem_export import atomic, digest, layout
from cmem_export.journal import pending, undo_entries

if TYPE_CHECKING:
    from cmem_cli.services.write.service import WriteService


def recover(memory: WriteService, *, skip: Path | None = None) -> list[str]:
    """Apply every pending journal (inside the caller's write transaction); returns the paths restored."""
    store, root = memory.store, memory.export_root
    restored: list[str] = []
    paths = None
    for journal_file, entries in pending(memory.journal_dir):
        if journal_file == skip:
            continue
        if paths is None:
            paths = store.export_files.record_paths()
        keep = set()
        for entry in entries:
            path = layout.resolve_inside(root, entry.path)
            if entry.drop:
                committed = entry.path not in paths and store.export_files.hash_of(entry.path) is None
                if committed and atomic.remove_file(path):
                    atomic.prune_empty_dirs(path.parent, root)
                continue
            try:
                current = digest.bytes_hash(path.read_bytes())
            except FileNotFoundError:
                continue
            if current == store.export_files.hash_of(entry.path):
                keep.add(entry.path)
        restored += undo_entries(root, entries, keep=keep)
        with contextlib.suppress(FileNotFoundError):
            journal_file.unlink()
    return restored
