"""What changed on disk since the last index run, for `cmem status`: a stat walk, no file is read."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from cmem_index.collections import Collection
from cmem_index.scan import FileStat, merge_sorted, walk


def changes_since_last_run(store: Any | None, collections: Sequence[Collection]) -> dict[str, int]:
    """Files added, modified (size or mtime) and deleted since the index last saw them; ``store`` None means
    no index yet, so every file counts as added. The same test the indexer uses to pick files to read, and
    the same walk: disk and index side by side in path order, neither held in memory; cmem's own tree
    folder by folder once the index knows its folders (:mod:`cmem_index.folders`), as a pass compares it."""
    added = modified = removed = 0
    for collection in collections:
        for _, stat, stored in _compared(store, collection):
            if stat is None:
                removed += 1
            elif stored is None:
                added += 1
            elif stored.size != stat.size or stored.mtime_ns != stat.mtime_ns:
                modified += 1
    return {"added": added, "modified": modified, "removed": removed}


def _compared(store: Any | None, collection: Collection) -> Iterable[tuple[str, FileStat | None, Any]]:
    if store is not None and collection.builtin and store.folders.exist():
        known = store.folders.times(collection.name)
        if known:
            from cmem_index.folders import FolderWalk

            return FolderWalk(store, collection.name, str(collection.root), collection.mask, known).changes()
    indexed = store.documents.iterate(collection.name) if store is not None else ()
    return merge_sorted(walk(collection.root, collection.mask), indexed)
