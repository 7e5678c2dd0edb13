"""What changed on disk since the last index run, for `cmem status`: a stat walk, no file is read."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from cmem_index.collections import Collection
from cmem_index.scan import merge_sorted, walk


def changes_since_last_run(store: Any | None, collections: Sequence[Collection]) -> dict[str, int]:
    """Files added, modified (size or mtime) and deleted since the index last saw them; ``store`` None means
    no index yet, so every file counts as added. The same test the indexer uses to pick files to read, and
    the same walk: disk and index side by side in path order, neither held in memory."""
    added = modified = removed = 0
    for collection in collections:
        indexed = store.iter_documents(collection.name) if store is not None else ()
        for _, stat, stored in merge_sorted(walk(collection.root, collection.mask), indexed):
            if stat is None:
                removed += 1
            elif stored is None:
                added += 1
            elif stored.size != stat.size or stored.mtime_ns != stat.mtime_ns:
                modified += 1
    return {"added": added, "modified": modified, "removed": removed}
