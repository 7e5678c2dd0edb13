"""Where a page is written: a private file under cmem's home unless the user names one, replaced atomically.

A page holds every memory of its window in clear text, so it gets what the database gets: mode 0600 in
folders of mode 0700. It is written to a temp file beside its place and renamed over it, so a browser that
reloads it (or a kill) sees the old page or the new one, never half of one.

A killed run leaves its temp file behind; the next view removes it. The temp file is named after its
writer's process and locked (``flock``) while it is written, so a lock that can be taken (the kernel drops
it with the process) or a writer that is gone marks debris, whatever its age, and a page another view is
writing at that moment is never touched.
"""

from __future__ import annotations

import contextlib
import os
import re
import tempfile
from pathlib import Path

from cmem_cli.core.config import FILE_MODE, Config, make_private_dirs
from cmem_cli.core.errors import StorageError
from cmem_cli.core.processes import is_running

VIEW_DIR = "view"  # under the home
TEMP_PREFIX = ".tmp-view-"  # then the writer's pid and a dash: .tmp-view-<pid>-<random>.html
DEBRIS_AGE_S = 600  # an unlocked temp page this old is debris even if its pid was given to a new process


def default_path(config: Config, title: str) -> Path:
    """``<home>/view/<title>.html``: one page per project (or session), rewritten by the next view of it."""
    slug = re.sub(r"[^A-Za-z0-9._-]+", "-", title).strip("-.")[:80] or "view"
    return config.home / VIEW_DIR / f"{slug}.html"


def write_private(path: Path, text: str, *, make_dirs: bool) -> None:
    """Write ``text`` to ``path`` (0600) through a temp file and a rename; ``make_dirs``: create the folders
    up to it (0700), else a missing folder is an error. Failures are a :class:`StorageError` (exit 7)."""
    try:
        if make_dirs:
            make_private_dirs(path.parent)
        if path.is_dir():
            raise StorageError(f"cannot write {path}: it is a directory")
        fd, tmp = tempfile.mkstemp(prefix=f"{TEMP_PREFIX}{os.getpid()}-", suffix=".html", dir=path.parent)
    except OSError as exc:
        raise StorageError(f"cannot write {path}: {exc.strerror or exc}") from None
    try:
        # held until the rename: a sweep that finds it locked leaves it alone
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            _lock(handle.fileno())
            handle.write(text)
            handle.flush()
            os.chmod(tmp, FILE_MODE)
            os.replace(tmp, path)
    except OSError as exc:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise StorageError(f"cannot write {path}: {exc.strerror or exc}") from None
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def _lock(fd: int) -> None:
    import fcntl

    with contextlib.suppress(OSError):  # a file system without locks: the sweep's age rule still holds
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)


def sweep_debris(folder: Path) -> None:
    """Remove the temp pages that killed runs left in ``folder`` (cmem's own view folder only)."""
    import time

    cutoff = time.time() - DEBRIS_AGE_S
    with contextlib.suppress(OSError):
        for entry in os.scandir(folder):
            if entry.name.startswith(TEMP_PREFIX) and entry.is_file(follow_symlinks=False):
                with contextlib.suppress(OSError):
                    if _abandoned(entry.path, entry.name, cutoff):
                        os.unlink(entry.path)


def _abandoned(path: str, name: str, cutoff: float) -> bool:
    """Whether the temp page at ``path`` belongs to no live ``cmem view``: nobody holds its lock, and its
    writer is gone (or it is older than ``cutoff``; a temp page of a cmem that named none is judged by age)."""
    import fcntl

    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            return False  # a view writing it now
        if os.fstat(fd).st_mtime < cutoff:
            return True
        pid = _writer(name)
        return pid is not None and not is_running(pid)
    finally:
        os.close(fd)


def _writer(name: str) -> int | None:
    head = name[len(TEMP_PREFIX) :].split("-", 1)[0]
    return int(head) if head.isdigit() and "-" in name[len(TEMP_PREFIX) :] else None
