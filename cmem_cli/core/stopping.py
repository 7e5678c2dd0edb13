"""Waits that a process asked to stop gives up.

`cmem watch` runs until SIGTERM (systemd, a terminal's Ctrl-C) and must stop within a second, even while
it waits for a lock another process holds: a long write on the store, a `cmem index` holding the index's
writer lock. A signal handler can only set a flag; SQLite's own busy timeout sleeps in C, deaf to it, for
up to its whole timeout. So such a process names its flag here, and every lock wait looks at it between
short sleeps and gives up (as a timeout would: nothing was written) once it is set. Other processes (hooks,
one-shot commands) keep SQLite's own busy timeout, which costs nothing until a lock is contended.
"""

from __future__ import annotations

from collections.abc import Callable

_asked: Callable[[], bool] | None = None


def stop_waiting_when(asked: Callable[[], bool] | None) -> None:
    """From now on, lock waits in this process end as soon as ``asked()`` is true (None: wait as usual)."""
    global _asked
    _asked = asked


def interruptible() -> bool:
    """Has this process named a flag (:func:`stop_waiting_when`)?"""
    return _asked is not None


def asked_to_stop() -> bool:
    return _asked is not None and _asked()
