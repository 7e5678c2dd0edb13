"""A hook that finds the database locked longer than it may wait leaves its event here instead of losing it;
the next hook that gets through replays what was left (oldest first), so nothing is dropped silently.

Spooled events are scrubbed (``<private>`` spans and secrets removed) before they touch the disk, like
everything else cmem keeps. Each file is claimed by an atomic rename, so concurrent hooks never replay the
same event twice.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from pathlib import Path
from typing import Any

SPOOL_DIR = "spool"
SUFFIX = ".json"


def spool_dir(home: Path) -> Path:
    return home / SPOOL_DIR


def save(home: Path, event: str, payload: dict[str, Any], at_ms: int) -> Path:
    """Write one event atomically (0600) and return its path."""
    directory = spool_dir(home)
    directory.mkdir(parents=True, exist_ok=True, mode=0o700)
    name = f"{time.time_ns():020d}-{os.getpid()}"
    tmp = directory / f".{name}.tmp"
    final = directory / f"{name}{SUFFIX}"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        json.dump({"event": event, "at": at_ms, "payload": payload}, fh, ensure_ascii=False)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, final)
    return final


def pending(home: Path) -> list[Path]:
    directory = spool_dir(home)
    try:
        return sorted(
            p for p in directory.iterdir() if p.name.endswith(SUFFIX) and not p.name.startswith(".")
        )
    except FileNotFoundError:
        return []


def claim(path: Path) -> Path | None:
    """Take a spooled event for this process; None when another process took it first."""
    claimed = path.with_name(f".{path.name}.{os.getpid()}.claimed")
    try:
        os.replace(path, claimed)
    except FileNotFoundError:
        return None
    return claimed


def release(claimed: Path, original: Path) -> None:
    """Put an event back (the database is still busy)."""
    with contextlib.suppress(OSError):
        os.replace(claimed, original)


def load(claimed: Path) -> dict[str, Any] | None:
    try:
        data = json.loads(claimed.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if (
        not isinstance(data, dict)
        or not isinstance(data.get("payload"), dict)
        or not isinstance(data.get("event"), str)
    ):
        return None
    return data
