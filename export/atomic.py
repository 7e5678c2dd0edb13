"""Atomic file writes: a reader (or a crash) sees the old file or the new one, never half of one."""

from __future__ import annotations

import contextlib
import errno
import os
import stat
import tempfile
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
) -> None:
    """Write ``text`` to a temp file beside ``path``, optionally fsync it, then rename over ``path``.

    Bulk writers pass ``fsync=False`` and call ``sync_all`` once at the end, which is far cheaper than
    one fsync per file and still durable before the database commit.
    """
    atomic_write_bytes(path, text.encode("utf-8"), fsync=fsync, make_dirs=make_dirs, mode=mode, root=root)


def atomic_write_bytes(
    path: Path,
    data: bytes,
    *,
    fsync: bool = True,
    make_dirs: bool = True,
    mode: int = FILE_MODE,
    root: Path | None = None,
) -> None:
    """``atomic_write`` for exact bytes (restoring a file as it was, whatever its encoding)."""
    if make_dirs:
        ensure_dir(path.parent, root)
    fd, tmp = tempfile.mkstemp(prefix=TEMP_PREFIX, suffix=path.suffix, dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            if fsync:
                fh.flush()
                os.fsync(fh.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def stat_key(path: Path | str) -> tuple[int, int] | None:
    """(size, mtime_ns): what must stay equal for a file to count as untouched without reading it."""
    try:
        st = os.stat(path)
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
