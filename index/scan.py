"""The cheap part of change detection: walk a collection and stat its files, reading nothing.

Re-indexing one changed file in a 10,000-file collection has to take well under a second, so the walk uses
``os.scandir`` (no per-file ``Path`` objects, one ``stat`` each), matches relative paths against a compiled
glob, and skips hidden directories (``.git``, ``.obsidian``) and hidden or editor temporary files.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from functools import lru_cache
from typing import TypeVar

T = TypeVar("T")
MAX_FILE_BYTES = 10 * 1024 * 1024  # larger files are not indexed (nor served by `cmem get`)


@dataclass(frozen=True)
class FileStat:
    size: int
    mtime_ns: int


@lru_cache(maxsize=64)
def compile_mask(mask: str) -> Callable[[str], bool]:
    """A matcher for POSIX relative paths: ``**`` spans directories, ``*``/``?`` stay in one, ``{a,b}``."""
    return re.compile(_glob_to_regex(mask)).fullmatch  # type: ignore[return-value]


def _glob_to_regex(mask: str) -> str:
    out: list[str] = []
    i, n = 0, len(mask)
    while i < n:
        c = mask[i]
        if mask.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif mask.startswith("**", i):
            out.append(".*")
            i += 2
        elif c == "*":
            out.append("[^/]*")
            i += 1
        elif c == "?":
            out.append("[^/]")
            i += 1
        elif c == "[":
            end = mask.find("]", i + 2 if mask[i + 1 : i + 2] in ("!", "]") else i + 1)
            if end == -1:
                out.append(re.escape(c))
                i += 1
                continue
            body = mask[i + 1 : end]
            if body.startswith("!"):
                body = "^" + body[1:]
            out.append(f"[{body.replace(chr(92), chr(92) * 2)}]")
            i = end + 1
        elif c == "{":
            end = mask.find("}", i)
            if end == -1:
                out.append(re.escape(c))
                i += 1
                continue
            options = mask[i + 1 : end].split(",")
            out.append("(?:" + "|".join(_glob_to_regex(o) for o in options) + ")")
            i = end + 1
        else:
            out.append(re.escape(c))
            i += 1
    return "".join(out)


def is_ignored_name(name: str) -> bool:
    """Hidden files and directories, and the temporary files editors and cmem write before a rename."""
    return name.startswith((".", "~", "#")) or name.endswith(("~", ".tmp", ".swp", ".part"))


def resolves_inside(path: str, real_root: str) -> bool:
    """True when ``path``, symlinks resolved, is ``real_root`` or below it."""
    real = os.path.realpath(path)
    return real == real_root or real.startswith(real_root.rstrip(os.sep) + os.sep)


def scan(root: os.PathLike[str] | str, mask: str, skipped: list[str] | None = None) -> dict[str, FileStat]:
    """Relative POSIX path -> size and mtime of every matching regular file under ``root`` (see :func:`walk`)."""
    return dict(walk(root, mask, skipped))


def walk(
    root: os.PathLike[str] | str, mask: str, skipped: list[str] | None = None
) -> Iterator[tuple[str, FileStat]]:
    """(relative POSIX path, size and mtime) of every matching regular file under ``root``, in the order of
    the paths as text (code points, which is how SQLite orders them), one folder in memory at a time.

    A missing root is an empty collection (a folder removed and recreated comes back on the next pass).
    Symlinked folders are not entered; a symlinked file is indexed only when it resolves inside the root
    (a ``setup.md -> ~/.aws/credentials`` must never be read), else its path is added to ``skipped``.
    """
    matches = compile_mask(mask)
    yield from _walk_folder(os.fspath(root), "", matches, os.path.realpath(root), skipped)


def _walk_folder(
    directory: str, prefix: str, matches: Callable[[str], bool], real_root: str, skipped: list[str] | None
) -> Iterator[tuple[str, FileStat]]:
    files, folders = list_folder(directory, prefix, matches, real_root, skipped)
    # every path below folder "a" starts with "a/": sorting folders as "a/" puts them where their files go
    merged = sorted([(relative, stat, None) for relative, stat in files] + [(f, None, p) for f, p in folders])
    for relative, stat, path in merged:
        if stat is not None:
            yield relative, stat
        else:
            assert path is not None
            yield from _walk_folder(path, relative, matches, real_root, skipped)


def list_folder(
    directory: str, prefix: str, matches: Callable[[str], bool], real_root: str, skipped: list[str] | None
) -> tuple[list[tuple[str, FileStat]], list[tuple[str, str]]]:
    """One folder, not below it: its matching files (relative path, size and mtime) and its subfolders
    (relative path with a trailing ``/``, full path), hidden and temporary names skipped. A symlinked
    folder is not a subfolder; a symlinked file counts only when it resolves inside the root (else its
    path is added to ``skipped``). A folder that cannot be listed has nothing."""
    try:
        with os.scandir(directory) as listing:
            entries = sorted((entry for entry in listing if not is_ignored_name(entry.name)), key=_name)
    except (FileNotFoundError, NotADirectoryError, PermissionError):
        return [], []
    files: list[tuple[str, FileStat]] = []
    folders: list[tuple[str, str]] = []
    for entry in entries:
        relative = prefix + entry.name
        try:
            if entry.is_dir(follow_symlinks=False):
                folders.append((relative + "/", entry.path))
                continue
            if not matches(relative) or not entry.is_file():
                continue
            if entry.is_symlink() and not resolves_inside(entry.path, real_root):
                if skipped is not None:
                    skipped.append(relative)
                continue
            st = entry.stat()
        except OSError:
            continue  # vanished between listing and stat: the next pass sees the truth
        files.append((relative, FileStat(st.st_size, st.st_mtime_ns)))
    return files, folders


def _name(entry: os.DirEntry[str]) -> str:
    return entry.name


def merge_sorted(
    on_disk: Iterable[tuple[str, FileStat]], indexed: Iterable[tuple[str, T]]
) -> Iterator[tuple[str, FileStat | None, T | None]]:
    """Join two streams sorted by path: (path, its stat or None when gone, its index entry or None when new).

    Should the two orders ever disagree (a name the two sorts see differently), a path comes out once as
    gone and once as new: the file is indexed again, nothing is missed."""
    disk, index = iter(on_disk), iter(indexed)
    file, entry = next(disk, None), next(index, None)
    while file is not None or entry is not None:
        if entry is None or (file is not None and file[0] < entry[0]):
            assert file is not None
            yield file[0], file[1], None
            file = next(disk, None)
        elif file is None or entry[0] < file[0]:
            yield entry[0], None, entry[1]
            entry = next(index, None)
        else:
            yield file[0], file[1], entry[1]
            file, entry = next(disk, None), next(index, None)


def why_not_indexed(root: str, relpath: str, mask: str) -> str | None:
    """Why :func:`scan` would not list ``relpath`` under ``root`` (None when it would): the index's own
    rules, for whoever must serve only what the index reads (`cmem get`). ``root`` is the collection's
    real path (symlinks resolved); raises FileNotFoundError when nothing is there."""
    import stat

    parts = relpath.split("/")
    if any(part in ("", ".", "..") for part in parts):
        return "not a path inside the collection"
    if any(is_ignored_name(part) for part in parts):
        return "a hidden or temporary file, which the index skips"
    if not compile_mask(mask)(relpath):
        return f"not matched by the collection's mask {mask}"
    folder = root
    for part in parts[:-1]:  # scan never enters a symlinked folder
        folder = os.path.join(folder, part)
        info = os.lstat(folder)
        if stat.S_ISLNK(info.st_mode):
            return "inside a symlinked folder, which the index does not enter"
        if not stat.S_ISDIR(info.st_mode):
            raise FileNotFoundError(folder)
    path = os.path.join(root, relpath)
    info = os.lstat(path)
    if stat.S_ISLNK(info.st_mode):
        if not resolves_inside(path, root):
            return "a symlink out of the collection"
        info = os.stat(path)
    if not stat.S_ISREG(info.st_mode):
        return "not a regular file"
    return None
