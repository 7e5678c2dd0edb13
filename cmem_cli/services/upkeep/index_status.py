"""What the index holds and whether its vectors match the configured model: one answer for `cmem index
status` and for the Python API, so neither front end computes it on its own."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from cmem_cli.core.config import Config


def index_status(config: Config) -> dict[str, Any]:
    """Documents, chunks, vectors, stale entries, models, collections and the last run, JSON-ready."""
    from cmem_cli.core.errors import CmemError
    from cmem_index.changes import changes_since_last_run
    from cmem_index.collections import load_collections
    from cmem_index.loading import NO_MODEL_HINT, embed_model_path, model_file_identity
    from cmem_index.store import IndexStore

    collections = load_collections(config)
    info: dict[str, Any] = {"index": str(config.index_path), "exists": config.index_path.exists()}
    stats: dict[str, Any] = {}
    remembered: dict[str, Any] = {}
    changes = None
    if info["exists"]:
        try:
            store = IndexStore.open(config.index_path, readonly=True, busy_ms=2000)
            try:
                stats = store.stats()
                remembered = store.settings.get_json("embed_model") or {}
                changes = changes_since_last_run(store, collections)
            finally:
                store.close()
        except CmemError as exc:
            info["error"] = exc.message
    else:
        changes = changes_since_last_run(None, collections)
    embed: dict[str, Any] = {"spec": config.embed_model, "path": None, "available": False, "hint": None}
    try:
        path = embed_model_path(config)
        embed.update(path=str(path), available=True)
    except CmemError as exc:
        embed["hint"] = exc.message if "cmem models" in exc.message else f"{exc.message}; {NO_MODEL_HINT}"
    chunks = stats.get("chunks", 0)
    vectors = stats.get("vectors", 0)
    vectors_match = bool(
        embed["available"]
        and remembered.get("file") == model_file_identity(Path(embed["path"]))
        and remembered.get("fingerprint") == stats.get("vectors_model")
    )
    pending = (chunks - vectors if vectors_match else chunks) if embed["available"] else None
    info.update(
        documents=stats.get("documents", 0),
        chunks=chunks,
        vectors=vectors,
        vectors_model=stats.get("vectors_model"),
        vectors_current=vectors_match,
        stale_documents=stats.get("stale_documents", 0),
        # the documents' machine and branch are in the index (False: built before it kept them; a
        # `--machine`/`--branch` search then ranks every hit until `cmem index` reads them)
        machines_indexed=stats.get("machines_indexed", True),
        chunks_without_current_vectors=pending,
        cached_vectors=stats.get("cached_vectors", 0),
        models={"embed": embed, "rerank": {"spec": config.rerank_model}},
        collections=[
            {
                **c.to_json(),
                **stats.get("collections", {}).get(c.name, {"documents": 0, "chunks": 0}),
                "skipped_symlinks": outside_symlinks(c),
            }
            for c in collections
        ],
        last_run=stats.get("last_run"),
        changed_files=changes,  # files added, modified, deleted since the last index run
    )
    return info


def outside_symlinks(collection: Any) -> list[str]:
    """Files of a collection that are symlinks resolving outside its root: never indexed, listed here."""
    from cmem_index.scan import scan

    outside: list[str] = []
    scan(collection.root, collection.mask, outside)
    return sorted(outside)
