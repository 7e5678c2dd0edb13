"""Atomic file writes: a reader (or a crash) sees the old file or the new one, never half of one."""

from __future__ import annotations

import contextlib
import errno
import itertools
import os
import stat
from pathlib import Path

from cmem_cli.core.config import make_private_dirs

FILE_MODE = 0o600
TEMP_PREFIX = ".tmp-"  # an atomic write's temp file; one left behind is a killed writer's debris


def ensure_dir(path: Path, root: Path | None = None) -> None:
    """Create ``path`` and every missing parent with mode 0700. Below ``root``, refuse a folder that is a
    symlink: a write through a symlinked project folder would land outside cmem's tree."""
    if root is None:
        make_private_dirs(path)
    elif make_private_dirs(path, check=lambda existing: refuse_symlinked_dirs(root, existing)):
        refuse_symlinked_dirs(root, path)


def refuse_symlinked_dirs(root: Path, path: Path) -> None:
    """Raise ELOOP when a folder between ``root`` (exclusive) and ``path`` (inclusive) is a symlink."""
    try:
        relative = path.relative_to(root)
    except ValueError:
        raise OSError(errno.EXDEV, f"{path} is outside {root}") from None
    current = root
    for part in relative.parts:
        current = current / part
        try:
            info = os.lstat(current)
        except FileNotFoundError:
            return
        if stat.S_ISLNK(info.st_mode):
            raise OSError(errno.ELOOP, f"{current} is a symlink; cmem does not write through it")


def atomic_write(
    path: Path,
    text: str,
    *,
    fsync: bool = True,
    make_dirs: bool = True,
    mode: int = FILE_MODE,
    root: Path | None = None,
) -> tuple[int, int]:
    """Write ``text`` to a temp file beside ``path``, optionally fsync it, then rename over ``path``.

    Bulk writers pass ``fsync=False`` and call ``sync_all`` once at the end, which is far cheaper than
    one fsync per file and still durable before the database commit. Returns the file's ``stat_key``.
    """
    return atomic_write_bytes(
        path, text.encode("utf-8"), fsync=fsync, make_dirs=make_dirs, mode=mode, root=root
    )


def atomic_write_bytes(
    path: Path,
    data: bytes,
    *,
    fsync: bool = True,
    make_dirs: bool = True,
    mode: int = FILE_MODE,
    root: Path | None = None,
) -> tuple[int, int]:
    """``atomic_write`` for exact bytes (restoring a file as it was, whatever its encoding).

    Few system calls, as a bulk import writes thousands of files: the temp file is created with its mode
    and named without ``tempfile``'s machinery, and its (size, mtime_ns) are read from the open descriptor
    (a rename keeps both), not by a second lookup of the path."""
    if make_dirs:
        ensure_dir(path.parent, root)
    fd, tmp = _create_temp(os.fspath(path), mode)
    try:
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
            if fsync:
                os.fsync(fd)
            if mode & _UMASK:  # the umask took bits the caller asked for: give them back
                os.fchmod(fd, mode)
            info = os.fstat(fd)
        finally:
            os.close(fd)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    return (info.st_size, info.st_mtime_ns)


def write_new(path: str, data: bytes) -> tuple[int, int]:
    """Create ``path`` (it must not exist; mode 0600) holding ``data``, not synced; returns its ``stat_key``.
    For files staged where no reader looks, renamed into place later (a bulk import's staging folder)."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0)
    fd = os.open(path, flags, FILE_MODE)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
        info = os.fstat(fd)
    finally:
        os.close(fd)
    return (info.st_size, info.st_mtime_ns)


def sync_dir(path: Path) -> None:
    """Make the names in folder ``path`` durable (the renames into it), where the platform allows."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError:
        return
    try:
        with contextlib.suppress(OSError):
            os.fsync(fd)
    finally:
        os.close(fd)


def _current_umask() -> int:
    mask = os.umask(0o077)
    os.umask(mask)
    return mask


_UMASK = _current_umask()  # read once: setting it is the only way to read it
_counter = itertools.count()


def _create_temp(target: str, mode: int) -> tuple[int, str]:
    """A new, exclusive temp file beside ``target``: ``.tmp-<pid>-<n>-<random>.<suffix>``."""
    directory, name = os.path.split(target)
    suffix = os.path.splitext(name)[1]
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0)
    for _ in range(100):
        tmp = os.path.join(
            directory, f"{TEMP_PREFIX}{os.getpid()}-{next(_counter)}-{os.urandom(3).hex()}{suffix}"
        )
        try:
            return os.open(tmp, flags, mode & 0o777), tmp
        except FileExistsError:
            continue
    raise FileExistsError(errno.EEXIST, f"no free temp file name in {directory}")


# A file written this recently is read and hashed even when its size and mtime match its record (as git does
# with "racily clean" entries): filesystem timestamps are coarse, so a quick same-size edit could share one.
RACY_NS = 2_000_000_000


def stat_key(path: Path | str) -> tuple[int, int] | None:
    """(size, mtime_ns): what must stay equal for a file to count as untouched without reading it (of the
    path itself: a symbolic link put there never passes for the file cmem wrote)."""
    try:
        st = os.lstat(path)
    except OSError:
        return None
    return (st.st_size, st.st_mtime_ns)


def sync_all() -> None:
    """Flush every pending write to disk (used once after a bulk export)."""
    if hasattr(os, "sync"):
        os.sync()


def remove_file(path: Path) -> bool:
    """Delete ``path`` if it exists; True when something was deleted."""
    try:
        path.unlink()
    except FileNotFoundError:
        return False
    return True


def prune_empty_dirs(start: Path, root: Path) -> None:
    """Remove empty directories from ``start`` up to (not including) ``root``."""
    current = start
    while current != root and root in current.parents:
        try:
            current.rmdir()
        except OSError:
            return
        current = current.parent
