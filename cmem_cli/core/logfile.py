"""One line appended to a log of cmem's own (``<home>/logs/NAME``): hooks and background passes have no
terminal, so what went wrong goes there. Rotated to ``NAME.1`` at about a megabyte; never raises."""

from __future__ import annotations

import contextlib
import os
import time
from pathlib import Path

LOG_MAX_BYTES = 1_000_000


def append_line(log_dir: Path, name: str, message: str) -> None:
    """Append ``message`` to ``log_dir/name`` with a UTC time stamp (folder 0700, file 0600)."""
    try:
        log_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
        path = log_dir / name
        with contextlib.suppress(FileNotFoundError):
            if path.stat().st_size > LOG_MAX_BYTES:
                os.replace(path, path.with_name(name + ".1"))
        stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime())
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            os.write(fd, f"{stamp}Z {message}\n".encode("utf-8", "replace"))
        finally:
            os.close(fd)
    except OSError:
        pass
