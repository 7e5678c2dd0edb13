"""Run cmem with stdout on a pseudo-terminal of a given width, as a person at a terminal would."""

from __future__ import annotations

import fcntl
import os
import pty
import struct
import subprocess
import sys
import termios


def run_in_terminal(args: list[str], *, columns: int, env: dict[str, str] | None = None) -> str:
    """Stdout is a PTY ``columns`` wide (set on the device, not through $COLUMNS); stderr is discarded."""
    leader, follower = pty.openpty()
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 40, columns, 0, 0))
    base = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
    proc = subprocess.Popen(
        [sys.executable, "-m", "cmem_cli", *args],
        stdout=follower,
        stderr=subprocess.DEVNULL,
        env={**base, "NO_COLOR": "1", "TERM": "xterm-256color", **(env or {})},
    )
    os.close(follower)
    chunks = []
    while True:
        try:
            data = os.read(leader, 4096)
        except OSError:
            break
        if not data:
            break
        chunks.append(data)
    proc.wait(timeout=60)
    os.close(leader)
    return b"".join(chunks).decode("utf-8", "replace").replace("\r\n", "\n")
