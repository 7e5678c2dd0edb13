"""Refuse to start a new, empty store where one was lost.

``cmem.db`` is the source of truth, but the export tree holds a copy of every observation. When the
database file is gone or zero bytes long while the export still holds cmem's files, creating a fresh store
would silently "forget" everything (and a later ``doctor --fix`` would treat every file as an orphan). So
every command that opens the store asks :func:`lost_store_problem` first and stops with a pointer to
``cmem doctor``; doctor explains the way back (restore a backup, or rebuild the store from the export).

Only the standard library is used, and the common case (the file exists and is not empty) costs one stat.
"""

from __future__ import annotations

import os
from pathlib import Path

from cmem_cli.core.errors import DatabaseCorrupt

# The first line of every front-mattered file cmem writes (see export/markdown.py).
_CMEM_HEADS = (b"---\ncmem: observation\n", b"---\ncmem: summary\n")
REPAIR_ADVICE = "restore cmem.db from a backup, or rebuild it from the export with `cmem doctor --fix`"


def export_holds_records(export_dir: Path) -> bool:
    """True as soon as one file under ``export_dir`` starts like a file cmem wrote (stops at the first)."""
    if not export_dir.is_dir():
        return False
    for folder, dirs, names in os.walk(export_dir):
        dirs.sort()
        for name in sorted(names):
            if not name.endswith(".md") or name.startswith("."):
                continue
            try:
                with open(os.path.join(folder, name), "rb") as fh:
                    head = fh.read(32)
            except OSError:
                continue
            if head.startswith(_CMEM_HEADS):
                return True
    return False


def lost_store_problem(db_path: Path, export_dir: Path) -> str | None:
    """Describe a store that is missing or empty while the export holds cmem's files; None when it is not.

    This is the one place that decides "the store was lost": commands refuse to run (see
    :func:`check_store_presence`), ``doctor`` reports it, and an adoption from the export may call it to
    know when rebuilding the store is the right repair."""
    try:
        size = db_path.stat().st_size
    except FileNotFoundError:
        state = "missing"
    except OSError:
        return None  # unreadable: opening it reports the real error
    else:
        if size > 0:
            return None
        state = "empty (0 bytes)"
    if not export_holds_records(export_dir):
        return None  # a first run (or nothing exported yet): a new store is right
    return f"the store {db_path} is {state} but the export {export_dir} holds cmem's files"


def check_store_presence(db_path: Path, export_dir: Path) -> None:
    """Raise (exit 6, pointing at ``cmem doctor``) instead of creating a new empty store over a lost one."""
    problem = lost_store_problem(db_path, export_dir)
    if problem is not None:
        raise DatabaseCorrupt(f"{problem}; not starting a new empty store: see `cmem doctor`")


__all__ = ["REPAIR_ADVICE", "check_store_presence", "export_holds_records", "lost_store_problem"]
