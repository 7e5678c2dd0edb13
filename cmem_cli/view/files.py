"""Where a page is written: a private file under cmem's home unless the user names one, replaced atomically.

A page holds every memory of its window in clear text, so it gets what the database gets: mode 0600 in
folders of mode 0700. It is written to a temp file beside its place and renamed over it, so a browser that
reloads it (or a kill) sees the old page or the new one, never half of one.
"""

from __future__ import annotations

import contextlib
import os
import re
import tempfile
from pathlib import Path

from cmem_cli.core.config import FILE_MODE, Config, make_private_dirs
from cmem_cli.core.errors import StorageError

VIEW_DIR = "view"  # under the home
TEMP_PREFIX = ".tmp-view-"
DEBRIS_AGE_S = 600  # a temp page older than this was left by a killed `cmem view`, not one writing now


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
        fd, tmp = tempfile.mkstemp(prefix=TEMP_PREFIX, suffix=".html", dir=path.parent)
    except OSError as exc:
        raise StorageError(f"cannot write {path}: {exc.strerror or exc}") from None
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
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


def sweep_debris(folder: Path) -> None:
    """Remove the temp pages that killed runs left in ``folder`` (cmem's own view folder only)."""
    import time

    cutoff = time.time() - DEBRIS_AGE_S
    with contextlib.suppress(OSError):
        for entry in os.scandir(folder):
            if entry.name.startswith(TEMP_PREFIX) and entry.is_file(follow_symlinks=False):
                with contextlib.suppress(OSError):
                    if entry.stat(follow_symlinks=False).st_mtime < cutoff:
                        os.unlink(entry.path)
