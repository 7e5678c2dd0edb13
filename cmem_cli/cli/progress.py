"""A one-line progress bar on stderr for cmem's long phases (import, index, rebuild, doctor), only when
stderr is a terminal: scripts and hooks never see it, and stdout stays data.

It is a callback ``(phase, done, total)``, the shape the library layers take (``total`` 0: unknown, a
count is shown), so the services and the index need no terminal code of their own.
"""

from __future__ import annotations

import sys
import time
from typing import TextIO

LABELS = {
    "scan": "scanning",
    "read": "reading",
    "embed": "embedding",
    "compact": "compacting vectors",
    "keywords": "merging the keyword index",
    "prepare": "checking",
    "write": "writing",
    "render": "rendering",
    "files": "comparing files",
    "integrity": "checking the database",
    "adopt": "adopting",
    "status": "reading git's status",
    "stage": "staging for git",
    "commit": "committing",
    "fetch": "fetching",
    "merge": "merging",
    "join": "taking the remote's files",
    "push": "pushing",
}


class ProgressBar:
    """``phase [#####.....] done/total  rate/s``, redrawn at most ten times a second, cleared by close()."""

    WIDTH = 30

    def __init__(self, stream: TextIO | None = None, *, enabled: bool | None = None) -> None:
        self.stream = stream if stream is not None else sys.stderr
        self.enabled = self.stream.isatty() if enabled is None else enabled
        self.last = 0.0
        self.shown = False
        self.phase = ""
        self.started = 0.0

    def __call__(self, phase: str, done: int, total: int) -> None:
        if not self.enabled:
            return
        now = time.monotonic()
        if phase != self.phase:
            self.phase, self.started = phase, now
        elif (total <= 0 or done < total) and now - self.last < 0.1:
            return
        self.last = now
        label = LABELS.get(phase, phase)
        elapsed = now - self.started
        rate = f"  {done / elapsed:,.0f}/s" if elapsed > 1 and done else ""
        if total > 0:
            filled = int(self.WIDTH * min(done, total) / total)
            line = f"{label} [{'#' * filled}{'.' * (self.WIDTH - filled)}] {done:,}/{total:,}{rate}"
        else:
            line = f"{label} {done:,}{rate}" if done else f"{label}..."
        self.stream.write(f"\r\x1b[K{line}")
        self.stream.flush()
        self.shown = True

    def close(self) -> None:
        if self.shown:
            self.stream.write("\r\x1b[K")
            self.stream.flush()
            self.shown = False

    def __enter__(self) -> ProgressBar:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
