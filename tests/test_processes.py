"""The one "is this writer still alive" rule the hook spool and `cmem view` share."""

from __future__ import annotations

import os
import subprocess
import sys

from cmem_cli.core.processes import is_running


def test_this_process_is_running() -> None:
    assert is_running(os.getpid())


def test_a_finished_child_is_gone() -> None:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    assert not is_running(child.pid)


def test_a_live_child_is_running() -> None:
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        assert is_running(child.pid)
    finally:
        child.kill()
        child.wait()


def test_pids_no_process_can_have_are_gone() -> None:
    assert not is_running(0)
    assert not is_running(-5)
    assert not is_running(2**40)


def test_a_killed_child_not_yet_reaped_is_gone() -> None:
    """A zombie (dead, its exit status not yet collected) writes nothing more: its claims are taken over."""
    import signal
    import time

    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        os.kill(child.pid, signal.SIGKILL)
        time.sleep(0.3)  # dead, not reaped: this process has not waited for it yet
        assert not is_running(child.pid)
    finally:
        child.wait()
