"""Whether a process id names a live process: the one rule the hook spool and `cmem view` use before they take
over files another cmem process may still be writing."""

from __future__ import annotations

import os


def is_running(pid: int) -> bool:
    """True unless the process is certainly gone.

    A process of another user (PermissionError) or an answer the kernel would not give counts as running: both
    callers fall back on a file's age, so a wrong "running" costs a delay, a wrong "gone" costs someone's work.
    A pid no process can have (zero, negative, too large) is gone, and so is a zombie: a killed process whose
    parent has exited waits there until init reaps it, which may take a second.
    """
    if pid == os.getpid():
        return True
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OverflowError:
        return False
    except OSError:
        return True
    return not _zombie(pid)


def _zombie(pid: int) -> bool:
    """True when /proc says the process has exited and only waits to be reaped (Linux; elsewhere False)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            stat = fh.read()
    except OSError:
        return False
    state = stat.rpartition(b")")[2].split()[:1]
    return state in ([b"Z"], [b"X"])
