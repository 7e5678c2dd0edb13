"""One sync per home at a time, whatever the remote: git sync, a team database and `cmem watch` share it."""

from __future__ import annotations

import contextlib
import fcntl
import os
import time
from collections.abc import Iterator
from pathlib import Path

from cmem_cli.core.errors import DatabaseBusy


@contextlib.contextmanager
def sync_lock(home: Path, *, timeout: float = 0.0) -> Iterator[None]:
    """Hold the home's sync lock (cron and a person may overlap); the kernel drops it if the process dies."""
    fd = os.open(home / "sync.lock", os.O_RDWR | os.O_CREAT, 0o600)
    try:
        deadline = time.monotonic() + timeout
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    raise DatabaseBusy("another cmem sync is running; try again later") from None
                time.sleep(0.05)
        yield
    finally:
        os.close(fd)
