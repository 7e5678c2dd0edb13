"""`cmem watch` stops within a second of SIGTERM even while it waits for a lock another process holds (a
write transaction on the store, or the index's writer lock): it gives the wait up, writes nothing half, and
what it was about to adopt is adopted by the next command."""

from __future__ import annotations

import fcntl
import os
import signal
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import apsw
import pytest

from tests.watch_helpers import end_watch, start_watch, wait_for_line


@contextmanager
def _store_write_held(home: Path) -> Iterator[None]:
    conn = apsw.Connection(str(home / "cmem.db"))
    conn.execute("BEGIN IMMEDIATE")  # what a long `cmem add --json` or `sync` holds
    try:
        yield
    finally:
        conn.execute("ROLLBACK")
        conn.close()


@contextmanager
def _index_lock_held(home: Path) -> Iterator[None]:
    from cmem_index.lock import lock_path

    fd = os.open(lock_path(home / "index.db"), os.O_RDWR | os.O_CREAT, 0o600)
    fcntl.flock(fd, fcntl.LOCK_EX)  # what a long `cmem index` holds
    try:
        yield
    finally:
        os.close(fd)


@pytest.mark.parametrize("held", [_store_write_held, _index_lock_held], ids=["store", "index"])
def test_watch_stops_on_sigterm_while_it_waits_for_a_lock(home, cli, held):
    assert cli("add", "-t", "Edited while locked", "-p", "web", "--narrative", "as written").exit_code == 0
    path = home / "export" / cli("get", "1", "--json").json()[0]["path"]
    path.write_text(path.read_text().replace("as written", "saved by hand"))  # watch's first pass adopts it
    env = {**os.environ, "CMEM_HOME": str(home), "CMEM_BUSY_TIMEOUT_MS": "120000"}
    with held(home):
        proc, lines, reader = start_watch(env)
        try:
            wait_for_line(proc, lines, "watching", poll=0.02)
            time.sleep(0.3)  # into the wait (stopping before it must not wait either)
            asked = time.monotonic()
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                pytest.fail(f"watch still waiting for the lock 15 s after SIGTERM: {lines}")
            took = time.monotonic() - asked
        finally:
            text = end_watch(proc, lines, reader)
    assert proc.returncode == 0 and text.endswith("cmem: stopped\n"), text
    assert took < 3, f"{took:.1f} s from SIGTERM to exit"  # a second, give or take a loaded machine
    assert "Traceback" not in text and "failed" not in text, text
    assert cli("sync").exit_code == 0  # nothing lost: the save is adopted once the lock is free
    assert cli("get", "1", "--json").json()[0]["narrative"] == "saved by hand"
