"""One index writer at a time: `cmem index` and `cmem watch` take an advisory lock beside index.db.

SQLite would serialise their transactions anyway, but two interleaved passes would each embed the same
chunks. The lock is released by the kernel when a process dies, so a crash never leaves it stuck.
Searches never take it.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import time
from collections.abc import Callable, Iterator
from pathlib import Path

from cmem_cli.core import stopping
from cmem_cli.core.errors import DatabaseBusy


def lock_path(index_path: Path) -> Path:
    return index_path.with_name(index_path.name + ".lock")


@contextlib.contextmanager
def writer_lock(
    index_path: Path, *, timeout: float | None = None, on_wait: Callable[[], None] | None = None
) -> Iterator[None]:
    """Hold the index writer lock; wait for it (forever when ``timeout`` is None), calling ``on_wait`` once."""
    index_path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    fd = os.open(lock_path(index_path), os.O_RDWR | os.O_CREAT, 0o600)
    try:
        deadline = None if timeout is None else time.monotonic() + timeout
        announced = False
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if stopping.asked_to_stop():  # `cmem watch` told to stop: give the wait up
                    raise DatabaseBusy("stopped while another cmem process was updating the index") from None
                if deadline is not None and time.monotonic() >= deadline:
                    raise DatabaseBusy(
                        "another cmem process is updating the index; try again later"
                    ) from None
                if not announced and on_wait is not None:
                    on_wait()
                    announced = True
                time.sleep(0.05)
        try:
            yield
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)
