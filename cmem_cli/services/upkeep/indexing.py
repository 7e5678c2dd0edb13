"""Building the search index and keeping its collections, behind one set of functions: `cmem index`,
`cmem collection`, `cmem watch`, the hooks and the Python API (:class:`cmem_cli.api.index.Index`) call these,
so no front end opens the index's database, takes its writer lock or deletes its documents itself.

Everything heavy (apsw, numpy, llama.cpp, watchdog) is imported inside the function that needs it: a hook
that only asks for a background pass pays for none of it.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from cmem_cli.core.config import Config

if TYPE_CHECKING:
    from cmem_index.collections import Collection
    from cmem_index.indexer import IndexReport, Progress
    from cmem_index.watcher import Watcher

DROP_WAIT_SECONDS = (
    2.0  # `cmem collection remove` waits this long for a running pass, then leaves it to the next
)


def build(
    config: Config,
    *,
    full: bool = False,
    progress: Progress | None = None,
    on_wait: Callable[[], None] | None = None,
    on_keyword_only: Callable[[str], None] | None = None,
) -> IndexReport:
    """Bring the index up to date with the export tree and every collection (only what changed; with
    ``full``, a new file built from scratch and swapped in atomically), taking the hooks' backlog with it.

    Waits for another process's pass (``on_wait`` is told once). Without a usable embedding model the index
    is keyword-only (``on_keyword_only`` is told why, before the pass) unless a model was chosen by name,
    which is a :class:`~cmem_cli.core.errors.ModelError`."""
    from cmem_cli.core.errors import ModelError
    from cmem_index import refresh
    from cmem_index.collections import load_collections
    from cmem_index.indexer import Indexer, rebuild
    from cmem_index.loading import NO_MODEL_HINT, lazy_embedder
    from cmem_index.lock import writer_lock
    from cmem_index.store import IndexStore

    config.ensure_home()
    collections = load_collections(config)
    embedder, note = lazy_embedder(config, refresh.remembered_model(config))
    if embedder is None and config.embed_model_chosen:
        raise ModelError(note or f"embedding model {config.embed_model} is not usable")
    if embedder is None:
        if on_keyword_only is not None:
            on_keyword_only(note or "no embedding model")
        note = note if "cmem models" in (note or "") else f"{note}; {NO_MODEL_HINT}"
    with writer_lock(config.index_path, on_wait=on_wait):
        taken = refresh.take_backlog(config.index_path)  # this pass covers what the hooks noted
        if full:
            report = rebuild(config.index_path, collections, embedder, note=note, progress=progress)
        else:
            store = IndexStore.open(config.index_path)
            try:
                report = Indexer(store, collections, embedder, note=note, progress=progress).run()
            finally:
                store.close()
        if embedder is not None:
            refresh.remember_model(config, embedder.describe())
        refresh.backlog_done(taken)
    return report


def request_refresh(config: Config) -> bool:
    """Start a detached index pass when the hooks' backlog holds files (never waits; False when none was
    needed or background passes are off)."""
    from cmem_index import refresh

    return refresh.request(config)


def collections(config: Config) -> list[Collection]:
    """``memories`` (cmem's own export tree) first, then the user's collections in the order added."""
    from cmem_index.collections import load_collections

    return load_collections(config)


def add_collection(
    config: Config, directory: str, *, name: str | None = None, mask: str | None = None
) -> Collection:
    """Register a folder of markdown (indexed by the next pass); InvalidInput or NotFound when it cannot be."""
    from cmem_index.collections import add_collection as add

    return add(config, directory, name=name, mask=mask)


def remove_collection(config: Config, name: str) -> tuple[Collection, int | None]:
    """Stop indexing a collection and drop its documents from the index (its files are not touched).
    Returns the collection and how many documents were dropped, or None when a pass held the index past
    :data:`DROP_WAIT_SECONDS` (the next pass drops them, as the collection is no longer configured)."""
    from cmem_cli.core.errors import DatabaseBusy
    from cmem_index.collections import remove_collection as remove

    removed = remove(config, name)
    try:
        return removed, drop_documents(config, removed.name, timeout=DROP_WAIT_SECONDS)
    except DatabaseBusy:
        return removed, None


def drop_documents(config: Config, collection: str, *, timeout: float | None = None) -> int:
    """Delete a collection's documents (and their chunks and vectors) from the index under its writer
    lock, in one transaction; how many there were. DatabaseBusy when the lock stays taken past ``timeout``."""
    from cmem_index.lock import writer_lock
    from cmem_index.store import IndexStore

    if not config.index_path.exists():
        return 0
    with writer_lock(config.index_path, timeout=timeout):
        store = IndexStore.open(config.index_path)
        try:
            docs = store.documents.in_collection(collection)
            with store.transaction():
                for doc in docs.values():
                    store.documents.delete(doc.id)
            return len(docs)
        finally:
            store.close()


def watcher(
    config: Config,
    *,
    debounce: float,
    on_report: Callable[[IndexReport], None],
    on_error: Callable[[str], None],
    on_export_change: Callable[[list[Path] | None], None],
) -> tuple[Watcher, str | None]:
    """A watcher of the export tree and every collection (``run()`` blocks until ``stop()`` or a signal),
    with the embedding model loaded once for all its passes; the second value says why the index is
    keyword-only when no model is usable."""
    from cmem_index.loading import load_embedder
    from cmem_index.watcher import Watcher

    config.ensure_home()
    _, note = load_embedder(config)  # loaded once here; the passes reuse the process's model
    return (
        Watcher(
            config,
            debounce=debounce,
            on_report=on_report,
            on_error=on_error,
            on_export_change=on_export_change,
        ),
        note,
    )
