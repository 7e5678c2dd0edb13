"""Files a killed cmem process leaves behind, and how doctor tells them from work in progress.

- ``.tmp-*`` files under the export tree: an atomic write's temp file, renamed over the real file on
  success and removed on failure; only ``kill -9`` leaves one. A writer holds its temp file for
  milliseconds, so one older than :data:`STALE_SECONDS` belongs to no live writer.
- ``index.db.rebuild`` (and its ``-wal``/``-shm``): ``index --full`` builds there and removes it when done.
  It is stale when no process holds the index writer lock.
- ``index.db.new-PID``: a new index laid out by process PID and linked into place whole; stale when that
  process is gone.
- ``export/.cmem-staging/PID-RANDOM/``: the files a bulk import staged before taking the write lock
  (:mod:`cmem_cli.services.write.bulk_stage`); stale when process PID is gone.
"""

from __future__ import annotations

import contextlib
import os
import time
from glob import escape as glob_escape
from pathlib import Path

from cmem_export.atomic import TEMP_PREFIX

STALE_SECONDS = 60
REBUILD_SUFFIX = ".rebuild"


def stale_temp_files(export_root: Path, *, now: float | None = None) -> list[Path]:
    """Temp files of atomic writes under ``export_root`` older than STALE_SECONDS (symlinks not followed)."""
    if not export_root.is_dir():
        return []
    cutoff = (time.time() if now is None else now) - STALE_SECONDS
    found = []
    for folder, _dirs, names in os.walk(export_root):
        for name in names:
            if not name.startswith(TEMP_PREFIX):
                continue
            path = Path(folder, name)
            try:
                info = path.lstat()
            except OSError:
                continue
            if info.st_mtime < cutoff:
                found.append(path)
    return sorted(found)


def stale_rebuild_files(index_path: Path) -> list[Path]:
    """``index.db.rebuild*`` left by a killed ``index --full``; none while an indexer holds the lock."""
    base = index_path.with_name(index_path.name + REBUILD_SUFFIX)
    present = [Path(f"{base}{s}") for s in ("", "-wal", "-shm", "-journal") if os.path.lexists(f"{base}{s}")]
    if not present or _indexer_running(index_path):
        return []
    return present


def stale_layout_files(index_path: Path) -> list[Path]:
    """``index.db.new-PID`` (and its journal files) left by a pass killed while it laid out a new index; a
    living process's own is work in progress."""
    from cmem_index.store import LAYOUT_INFIX

    prefix = index_path.name + LAYOUT_INFIX
    found = []
    for path in index_path.parent.glob(f"{glob_escape(prefix)}*"):
        pid = path.name[len(prefix) :].split("-", 1)[0]
        if pid.isdigit() and not alive(int(pid)):
            found.append(path)
    return sorted(found)


def alive(pid: int) -> bool:
    """Whether process ``pid`` runs (another user's counts as running)."""
    try:
        os.kill(pid, 0)
    except (ProcessLookupError, OverflowError):
        return False
    except PermissionError:
        return True  # another user's process
    return True


def stale_staging_folders(export_root: Path) -> list[Path]:
    """Staging folders of bulk imports whose process is gone (killed while it staged its files)."""
    from cmem_cli.services.write.bulk_stage import STAGING_DIR

    parent = export_root / STAGING_DIR
    try:
        names = sorted(os.listdir(parent))
    except (FileNotFoundError, NotADirectoryError):
        return []
    return [
        parent / name
        for name in names
        if not (name.split("-", 1)[0].isdigit() and alive(int(name.split("-", 1)[0])))
    ]


def _indexer_running(index_path: Path) -> bool:
    import fcntl

    from cmem_index.lock import lock_path

    try:
        fd = os.open(lock_path(index_path), os.O_RDONLY)
    except FileNotFoundError:
        return False
    except OSError:
        return True  # cannot tell: leave the file alone
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        fcntl.flock(fd, fcntl.LOCK_UN)
        return False
    finally:
        os.close(fd)


def find_debris(home: Path, export_root: Path) -> list[Path]:
    index_path = home / "index.db"
    return [
        *stale_temp_files(export_root),
        *stale_rebuild_files(index_path),
        *stale_layout_files(index_path),
        *stale_staging_folders(export_root),
    ]


def remove(paths: list[Path]) -> None:
    for path in paths:
        if path.is_dir() and not path.is_symlink():
            import shutil

            shutil.rmtree(path, ignore_errors=True)
            with contextlib.suppress(OSError):
                path.parent.rmdir()  # the staging parent, once no other import uses it
            continue
        with contextlib.suppress(FileNotFoundError):
            path.unlink()
