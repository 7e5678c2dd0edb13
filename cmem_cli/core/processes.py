"""Whether a process id names a live process: the one rule the hook spool and `cmem view` use before they take
over files another cmem process may still be writing."""

from __future__ import annotations

import os


def is_running(pid: int) -> bool:
    """True unless the process is certainly gone.

    A process of another user (PermissionError) or an answer the kernel would not give counts as running: both
    callers fall back on a file's age, so a wrong "running" costs a delay, a wrong "gone" costs someone's work.
    A pid no process can have (zero, negative, too large) is gone.
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
    return True
