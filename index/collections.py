"""Which folders the index covers: cmem's export tree (always, as ``memories``) plus user collections.

User collections live in ``<home>/collections.json``, not in ``index.db``: the index is disposable, the list
of folders a user chose is not. The file is rewritten atomically (temp file + rename) under a lock so two
concurrent ``cmem collection add`` calls cannot lose each other's entry.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import re
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from cmem_cli.core.config import Config
from cmem_cli.core.errors import InvalidInput, NotFound, StorageError

MEMORIES = "memories"
DEFAULT_MASK = "**/*.md"
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")


@dataclass(frozen=True)
class Collection:
    name: str
    root: Path
    mask: str = DEFAULT_MASK
    builtin: bool = False

    def to_json(self) -> dict[str, object]:
        return {"name": self.name, "path": str(self.root), "mask": self.mask, "builtin": self.builtin}


def collections_file(config: Config) -> Path:
    return config.home / "collections.json"


def memories_collection(config: Config) -> Collection:
    return Collection(MEMORIES, config.export_dir, DEFAULT_MASK, builtin=True)


def load_collections(config: Config) -> list[Collection]:
    """``memories`` first, then the user's collections in the order they were added."""
    return [memories_collection(config), *_read_user(collections_file(config))]


def add_collection(
    config: Config, directory: str, *, name: str | None = None, mask: str | None = None
) -> Collection:
    root = Path(directory).expanduser()
    if not root.is_dir():
        raise NotFound(f"{directory} is not a directory")
    root = root.resolve()
    name = name if name is not None else _default_name(root)
    if not _NAME.match(name):
        raise InvalidInput(f"bad collection name {name!r}: use letters, digits, '.', '_' or '-' (max 64)")
    if name == MEMORIES:
        raise InvalidInput(f"{MEMORIES!r} is cmem's own export tree; choose another name with --name")
    mask = mask or DEFAULT_MASK
    if not mask.strip() or mask.startswith("/") or ".." in Path(mask).parts:
        raise InvalidInput(f"bad mask {mask!r}: use a relative glob such as {DEFAULT_MASK}")
    export_dir = config.export_dir.expanduser().resolve()
    if root == export_dir or export_dir in root.parents or root in export_dir.parents:
        raise InvalidInput(f"{root} overlaps cmem's export tree {export_dir}, which is always indexed")
    collection = Collection(name, root, mask)
    with _locked(config):
        existing = _read_user(collections_file(config))
        for other in existing:
            if other.name == name:
                raise InvalidInput(f"a collection named {name!r} already exists ({other.root}); use --name")
            if other.root == root and other.mask == mask:
                raise InvalidInput(f"{root} is already the collection {other.name!r}")
        _write_user(collections_file(config), [*existing, collection])
    return collection


def remove_collection(config: Config, name: str) -> Collection:
    if name == MEMORIES:
        raise InvalidInput(f"{MEMORIES!r} is cmem's own export tree and cannot be removed")
    with _locked(config):
        existing = _read_user(collections_file(config))
        kept = [c for c in existing if c.name != name]
        if len(kept) == len(existing):
            raise NotFound(f"no collection named {name!r} (see `cmem collection list`)")
        _write_user(collections_file(config), kept)
    return next(c for c in existing if c.name == name)


def _default_name(root: Path) -> str:
    cleaned = re.sub(r"[^A-Za-z0-9._-]+", "-", root.name).strip("-.") or "docs"
    return cleaned[:64] if cleaned[0].isalnum() else f"c{cleaned}"[:64]


def _read_user(path: Path) -> list[Collection]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return []
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise StorageError(f"cannot read {path}: {exc}") from None
    entries = data.get("collections", []) if isinstance(data, dict) else []
    out: list[Collection] = []
    for entry in entries:
        try:
            out.append(
                Collection(str(entry["name"]), Path(entry["path"]), str(entry.get("mask") or DEFAULT_MASK))
            )
        except (KeyError, TypeError):
            raise StorageError(f"{path} has a malformed collection entry: {entry!r}") from None
    return out


def _write_user(path: Path, collections: list[Collection]) -> None:
    payload = {
        "version": 1,
        "collections": [{"name": c.name, "path": str(c.root), "mask": c.mask} for c in collections],
    }
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    fd, tmp = tempfile.mkstemp(prefix=".collections.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump(payload, fh, indent=2)
            fh.write("\n")
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except OSError as exc:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise StorageError(f"cannot write {path}: {exc.strerror}") from None


@contextlib.contextmanager
def _locked(config: Config) -> Iterator[None]:
    config.ensure_home()
    lock_path = config.home / ".collections.lock"
    fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o600)
    with os.fdopen(fd, "r+") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)
