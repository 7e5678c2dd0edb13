"""`cmem get` for collection documents: by short docid (``doc:abc123``; ``#abc123`` is still accepted) or by path with an optional line slice
(``notes:guide/setup.md:40:20``, ``./docs/setup.md:40``).

Only files inside cmem's export tree or a registered collection are served: `get` is a window onto memory,
not a general file reader.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cmem_cli.core.config import Config
from cmem_cli.core.errors import InvalidInput, NotFound

if TYPE_CHECKING:
    from cmem_cli.services.read.record_types import DocumentRecord

_DOCID = re.compile(r"^(?:#|doc:)(?P<docid>[0-9a-fA-F]{6})$")
_SLICE = re.compile(r"^(?P<path>.+?)(?::(?P<line>\d+)(?::(?P<count>\d+))?)?$")
MAX_DOCUMENT_CHARS = 2_000_000


def is_document_ref(ref: str) -> bool:
    """Docids and anything path-like; plain ids (``12``, ``S3``, ``P7``) are not documents."""
    ref = ref.strip()
    return bool(_DOCID.match(ref)) or "/" in ref or ref.endswith(".md") or ":" in ref.strip(":")


def _collections(config: Config) -> list[Any]:
    from cmem_index.collections import load_collections

    return load_collections(config)


def _by_docid(config: Config, docid: str) -> tuple[Any, str]:
    from cmem_index.store import IndexStore

    if not config.index_path.exists():
        raise NotFound(f"no document doc:{docid} (the index has not been built; run `cmem index`)")
    store = IndexStore.open(config.index_path, readonly=True)
    try:
        found = store.documents.location(docid)
    finally:
        store.close()
    if found is None:
        raise NotFound(f"no document doc:{docid}")
    collection_name, relpath = found
    for collection in _collections(config):
        if collection.name == collection_name:
            return collection, relpath
    raise NotFound(f"document doc:{docid} belongs to collection {collection_name!r}, which no longer exists")


def _by_path(config: Config, text: str) -> tuple[Any, str]:
    collections = _collections(config)
    name, sep, rest = text.partition(":")
    if sep and rest:
        for collection in collections:
            if collection.name == name:
                return collection, rest
    candidate = Path(text).expanduser().resolve()
    for collection in collections:
        root = collection.root.expanduser().resolve()
        if root in candidate.parents:
            return collection, candidate.relative_to(root).as_posix()
    raise NotFound(f"{text} is not in cmem's export tree or any collection (see `cmem collection list`)")


def _read_indexed(config: Config, collection: Any, relpath: str) -> tuple[str, Path]:
    """The scrubbed text of a file the indexer would read, and its path; anything else is refused.

    The index's own rules decide (no dotfiles, no ``.git/``, the collection's mask, regular files only, no
    symlink out of the collection): an agent prompted to ask for ``notes:.env`` or ``export/.git/config``
    gets an error, never the file. The file is opened without blocking (a FIFO named ``x.md`` would hang
    the caller, and an MCP server's later calls with it) and read up to the indexer's size limit;
    ``<private>`` spans and secrets are removed as from every memory."""
    import os

    from cmem_cli.core.files import FileTooLarge, read_regular
    from cmem_cli.services.write.privacy import scrub
    from cmem_index.scan import MAX_FILE_BYTES, why_not_indexed

    root = os.path.realpath(collection.root.expanduser())
    where = f"{collection.name}:{relpath}"
    try:
        problem = why_not_indexed(root, relpath, collection.mask)
        if problem is not None:
            raise InvalidInput(f"{where} is not a document cmem indexes: {problem}")
        path = Path(os.path.realpath(os.path.join(root, relpath)))
        data = read_regular(path, MAX_FILE_BYTES)
    except (FileNotFoundError, NotADirectoryError):
        raise NotFound(f"{where} does not exist (run `cmem index`)") from None
    except FileTooLarge:
        raise InvalidInput(f"{where} is larger than the index reads ({MAX_FILE_BYTES} bytes)") from None
    except OSError as exc:
        raise NotFound(f"cannot read {where}: {exc.strerror}") from None
    text = data.decode("utf-8", errors="replace")[:MAX_DOCUMENT_CHARS]
    return scrub(text, config=config), path


def fetch_document(config: Config, ref: str) -> DocumentRecord:
    """The document's text (or the requested line slice) with where it came from."""
    ref = ref.strip()
    line = count = None
    match = _DOCID.match(ref)
    if match:
        collection, relpath = _by_docid(config, match.group("docid"))
    else:
        sliced = _SLICE.match(ref)
        if sliced is None:
            raise InvalidInput(f"not a document reference: {ref!r}")
        line = int(sliced.group("line")) if sliced.group("line") else None
        count = int(sliced.group("count")) if sliced.group("count") else None
        collection, relpath = _by_path(config, sliced.group("path"))
    text, path = _read_indexed(config, collection, relpath)
    if line is not None:
        if line < 1:
            raise InvalidInput("line numbers start at 1")
        lines = text.splitlines(keepends=True)
        text = "".join(lines[line - 1 : line - 1 + count if count else None])
    from cmem_index.document import short_docid

    return {
        "kind": "document", "id": f"doc:{short_docid(collection.name, relpath)}", "collection": collection.name,
        "path": relpath, "file": str(path), "line": line, "count": count, "text": text,
    }  # fmt: skip
