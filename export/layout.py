"""Where each record's markdown file lives under the export root, with names safe on every filesystem.

``<project>/<session or YYYY-MM-DD>/<YYYYMMDD-HHMMSS>-<slug>-<uid tail>.md``: readable, sorted by time in
a directory listing, and unique across machines because the uid tail is random.
"""

from __future__ import annotations

import re
import time
import unicodedata
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any

from cmem_cli.core.ids import UID_TAIL

if TYPE_CHECKING:
    from collections.abc import Mapping

_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")
MAX_SEGMENT = 64
MAX_SLUG = 48


def safe_segment(name: str | None, *, fallback: str = "_") -> str:
    """Turn any text into one path segment: ASCII letters, digits, ``.``, ``_``, ``-``; never ``..``."""
    if not name:
        return fallback
    ascii_text = unicodedata.normalize("NFKD", name).encode("ascii", "ignore").decode("ascii")
    cleaned = _UNSAFE.sub("-", ascii_text).strip("-._")
    cleaned = re.sub(r"-{2,}", "-", cleaned)[:MAX_SEGMENT].strip("-._")
    return cleaned or fallback


def slugify(title: str) -> str:
    return safe_segment(title.lower(), fallback="untitled")[:MAX_SLUG].strip("-._") or "untitled"


def _stamp(ms: int, fmt: str) -> str:
    """A UTC time in a file or folder name (the ``time`` module: ``datetime`` costs every hook 1.5 ms)."""
    return time.strftime(fmt, time.gmtime(ms // 1000))


def _uid_tail(uid: str) -> str:
    return safe_segment(uid[-UID_TAIL:].lower(), fallback="uid")


def file_name_ending(uid: str) -> str:
    """How every file name cmem gives the memory ``uid`` ends: ``-<uid tail>.md``."""
    return f"-{_uid_tail(uid)}.md"


def _group_dir(record: Mapping[str, Any]) -> str:
    session = record.get("session")
    return safe_segment(session) if session else _stamp(record["created_at"], "%Y-%m-%d")


def observation_relpath(record: Mapping[str, Any]) -> str:
    """Relative (POSIX) path of an observation's file under the export root."""
    name = f"{_stamp(record['created_at'], '%Y%m%d-%H%M%S')}-{slugify(record['title'])}-{_uid_tail(record['uid'])}.md"
    return str(PurePosixPath(safe_segment(record["project"]), _group_dir(record), name))


def summary_relpath(record: Mapping[str, Any]) -> str:
    name = f"{_stamp(record['created_at'], '%Y%m%d-%H%M%S')}-summary-{_uid_tail(record['uid'])}.md"
    return str(PurePosixPath(safe_segment(record["project"]), _group_dir(record), name))


def resolve_inside(root: Path, relpath: str) -> Path:
    """Join ``relpath`` to ``root`` and refuse anything that would land outside it.

    The check is lexical (no ``..``, not absolute): paths cmem generates are made of safe segments, and a
    lexical check costs nothing per file in a bulk import, where resolving symlinks did.
    """
    parts = [part for part in relpath.split("/") if part and part != "."]  # as PurePosixPath reads it
    if not parts or relpath.startswith("/") or ".." in parts or "\\" in relpath:
        raise ValueError(f"path {relpath!r} escapes the export directory")
    return root.joinpath(*parts)
