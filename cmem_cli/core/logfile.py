"""One line appended to a log of cmem's own (``<home>/logs/NAME``): hooks and background passes have no
terminal, so what went wrong goes there. Rotated to ``NAME.1`` at about a megabyte; never raises.

A message may echo what an agent or a file sent (a session id, a path, a value a traceback shows): each is
cut to :data:`MAX_MESSAGE` characters and its control characters are escaped, so that reading the log in a
terminal runs nothing and one bad payload cannot fill it."""

from __future__ import annotations

import contextlib
import os
import re
import time
from pathlib import Path

LOG_MAX_BYTES = 1_000_000
MAX_MESSAGE = 8_000
# Control characters but the newline and tab of a traceback, DEL, C1, the line and paragraph separators, and
# lone surrogates (which no UTF-8 file holds). A pattern, compiled (by ``re``'s cache) when a line is written:
# compiling it costs about a millisecond, and every hook imports this module but few write a line.
_CONTROL = "[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\ud800-\udfff]"


def printable(message: str) -> str:
    """``message`` cut to :data:`MAX_MESSAGE` characters, its control characters escaped (``\\x1b``)."""
    if len(message) > MAX_MESSAGE:
        message = f"{message[:MAX_MESSAGE]}... ({len(message) - MAX_MESSAGE} more characters)"
    return re.sub(_CONTROL, lambda m: repr(m[0])[1:-1], message)


def append_line(log_dir: Path, name: str, message: str) -> None:
    """Append ``message`` to ``log_dir/name`` with a UTC time stamp (folder 0700, file 0600)."""
    try:
        if not log_dir.is_dir():  # the first thing a hook does may be to log: cmem's home is made 0700 too
            log_dir.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
            log_dir.mkdir(exist_ok=True, mode=0o700)
        path = log_dir / name
        with contextlib.suppress(FileNotFoundError):
            if path.stat().st_size > LOG_MAX_BYTES:
                os.replace(path, path.with_name(name + ".1"))
        stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime())
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            os.write(fd, f"{stamp}Z {printable(message)}\n".encode("utf-8", "replace"))
        finally:
            os.close(fd)
    except OSError:
        pass
