"""The SessionStart briefing kept ready, so that the hook an agent waits for reads one small file instead of
importing the store and running the briefing's queries.

The detached child of a hook that wrote (SessionStart, Stop, SessionEnd) builds the briefing for its work
tree and keeps it here with a record of everything it was built from. The next SessionStart prints it only
when all of that is unchanged, and builds it live otherwise:

- the store: the header SQLite rewrites at every commit in the WAL index (``cmem.db-shm``), the database's
  change counter, and the size, time and inode of the database and its WAL (any write, whoever made it);
- every file an anchor of the briefing's candidates cites (a changed file makes a memory stale), and the
  git facts the marks read (HEAD, branch tips and forks, packs): compared as they are now;
- the settings that shape it, the work tree, the current folder and the session asking;
- its age: at most :data:`MAX_AGE_MS`, since the briefing's ranking decays with time.

Kept as ``<home>/cache/briefings/<crc>.json`` (0600, folders 0700), written whole or not at all.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
import zlib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

VERSION = 1
MAX_AGE_MS = 3_600_000  # an hour: the ranking's recency weight moves little in that time
RACY_NS = 2_000_000_000  # a file changed this recently may change again within its clock's tick
FOLDER = ("cache", "briefings")
# the WAL index's header (SQLite's file format, "WAL-Index Format"): two copies of 48 bytes, written at
# every commit; they differ only while a writer is changing them
_HEADER = 48


def store_stamp(db_path: str | os.PathLike[str]) -> list[Any] | None:
    """What identifies the store's state: None when it cannot be told (no store, a commit in flight)."""
    path = os.fspath(db_path)
    stamp: list[Any] = []
    for suffix in ("", "-wal"):
        try:
            info = os.stat(path + suffix)
        except FileNotFoundError:
            stamp.append(None)
            continue
        except OSError:
            return None
        stamp.append([info.st_ino, info.st_size, info.st_mtime_ns])
    if stamp[0] is None:
        return None
    try:
        with open(path, "rb") as fh:
            header = fh.read(100)
        with open(path + "-shm", "rb") as fh:
            index = fh.read(2 * _HEADER)
    except FileNotFoundError:
        index = b""  # no WAL index: no connection has the store open in WAL mode
    except OSError:
        return None
    if index and (len(index) < 2 * _HEADER or index[:_HEADER] != index[_HEADER:]):
        return None
    stamp += [header[24:28].hex() + header[92:100].hex(), index[:_HEADER].hex()]
    return stamp


def file_stamp(path: str) -> list[int] | None:
    """A file's lstat as the cache compares it (None: not there)."""
    try:
        info = os.lstat(path)
    except OSError:
        return None
    return [info.st_ino, info.st_size, info.st_mtime_ns, info.st_mode]


def files_stamp(paths: Sequence[str], present: Sequence[str] = ()) -> dict[str, Any] | None:
    """:func:`file_stamp` of each of ``paths`` (files whose content counts), and whether each of
    ``present`` exists (a git object, a ``.git``); None when one of ``paths`` changed too recently to be
    told apart from a later change within the same tick of the file system's clock."""
    now = time.time_ns()
    out: dict[str, Any] = {}
    for path in paths:
        stamp = out[path] = file_stamp(path)
        if stamp is not None and now - stamp[2] < RACY_NS:
            return None
    for path in present:
        out[path] = os.path.lexists(path)
    return out


def _holds(path: str, kept: Any) -> bool:
    """Whether a path is as :func:`files_stamp` found it."""
    return os.path.lexists(path) == kept if isinstance(kept, bool) else file_stamp(path) == kept


def _file(home: Path, key: list[Any]) -> Path:
    name = f"{zlib.crc32(json.dumps(key).encode('utf-8')):08x}.json"
    return home.joinpath(*FOLDER, name)


def save(home: Path, key: list[Any], store: list[Any], entry: dict[str, Any], built_at: int) -> None:
    """Keep ``entry`` (the briefing and what it read: ``files``, ``git``) for ``key``, atomically."""
    folder = home
    for name in FOLDER:  # each level cmem's own, private
        folder = folder / name
        folder.mkdir(exist_ok=True, mode=0o700)
    final = _file(home, key)
    tmp = folder / f".{final.name}.{os.getpid()}.tmp"
    data = {"version": VERSION, "key": key, "store": store, "built_at": built_at, **entry}
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump(data, fh, ensure_ascii=False)
        os.replace(tmp, final)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def drop(home: Path) -> None:
    """Delete every kept briefing (a memory was forgotten: its title must not stay on disk)."""
    folder = home.joinpath(*FOLDER)
    try:
        names = os.listdir(folder)
    except OSError:
        return
    for name in names:
        with contextlib.suppress(OSError):
            os.unlink(folder / name)


def load(home: Path, key: list[Any], db_path: str | os.PathLike[str], now_ms: int) -> dict[str, Any] | None:
    """The kept entry for ``key`` when nothing it was built from has changed since; else None (and an
    entry the store moved past is deleted: what it shows may since have been forgotten)."""
    path = _file(home, key)
    try:
        with open(path, encoding="utf-8") as fh:
            data = json.load(fh)
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or data.get("version") != VERSION or data.get("key") != key:
        return None
    built = data.get("built_at")
    if not isinstance(built, int) or not 0 <= now_ms - built <= MAX_AGE_MS:
        return None
    stamp = store_stamp(db_path)
    if data.get("store") != stamp:
        if stamp is not None:
            with contextlib.suppress(OSError):
                path.unlink()
        return None
    files = data.get("files")
    if not isinstance(files, dict) or not all(_holds(path, kept) for path, kept in files.items()):
        return None
    facts = data.get("git")
    if not isinstance(facts, list) or not git_unchanged(facts):
        return None
    return data


def git_fact(root: str, kind: str, arg: str | None) -> Any:
    """One fact of the work tree at ``root`` that a briefing's marks read (see the builder,
    :func:`cmem_cli.services.read.briefing.kept`): ``head`` (branch and commit), a branch's ``tip`` or
    ``fork``, the ``packs`` folder's time, ``remote`` (the origin's key), ``top`` (the tree's top)."""
    from cmem_cli.core import worktree

    repo = worktree.find_repo(root)
    if repo is None:
        return None
    if kind == "head":
        head = worktree.head(repo)
        return [head.branch, head.commit]
    if kind == "tip":
        return worktree.branch_commit(repo, arg or "")
    if kind == "fork":
        return worktree.branch_fork(repo, arg or "")
    if kind == "packs":
        return worktree.packs_stamp(repo)
    if kind == "remote":
        return worktree.remote_key(repo)
    return repo.root


def git_unchanged(facts: list[Any]) -> bool:
    """Whether every kept ``[root, kind, arg, value]`` still holds."""
    return all(git_fact(root, kind, arg) == value for root, kind, arg, value in facts)
