"""Atomic file writes: a reader (or a crash) sees the old file or the new one, never half of one."""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path

DIR_MODE = 0o700
FILE_MODE = 0o600


def ensure_dir(path: Path) -> None:
    """Create ``path`` and its missing parents, every one 0700 (``mkdir(parents=True)`` would give the
    parents the default mode, e.g. 0755 for a new project folder)."""
    if path.is_dir():
        return
    ensure_dir(path.parent)
    path.mkdir(exist_ok=True, mode=DIR_MODE)


def atomic_write(
    path: Path, text: str, *, fsync: bool = True, make_dirs: bool = True, mode: int = FILE_MODE
) -> None:
    """Write ``text`` to a temp file beside ``path``, optionally fsync it, then rename over ``path``.

    Bulk writers pass ``fsync=False`` and call ``sync_all`` once at the end, which is far cheaper than
    one fsync per file and still durable before the database commit.
    """
    atomic_write_bytes(path, text.encode("utf-8"), fsync=fsync, make_dirs=make_dirs, mode=mode)


def atomic_write_bytes(
    path: Path, data: bytes, *, fsync: bool = True, make_dirs: bool = True, mode: int = FILE_MODE
) -> None:
    """``atomic_write`` for exact bytes (restoring a file as it was, whatever its encoding)."""
    if make_dirs:
        ensure_dir(path.parent)
    fd, tmp = tempfile.mkstemp(prefix=".tmp-", suffix=path.suffix, dir=path.parent)
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
