"""Several cmem homes against one team database, driven through the real CLI."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.runner import invoke


class Home:
    """One cmem home (``--home``), run in-process through ``cmem_cli.__main__.main``, as a machine of its
    own: its ``name`` is the machine its writes record (``CMEM_MACHINE`` while it runs)."""

    def __init__(self, path: Path, capsys: Any, name: str):
        self.path = path
        self.capsys = capsys
        self.name = name

    def run(self, *args: str) -> tuple[int, str, str]:
        """``cmem --home PATH ARGS`` in this process (tests/runner.py), as machine ``name``."""
        result = invoke("--home", str(self.path), *args, env={"CMEM_MACHINE": self.name})
        return result.exit_code, result.stdout, result.stderr

    def ok(self, *args: str) -> str:
        code, out, err = self.run(*args)
        assert code == 0, (args, code, err)
        return out

    def add(self, title: str, *extra: str, project: str = "web") -> int:
        return int(self.ok("add", "--title", title, "--project", project, *extra).split()[0])

    def join(self, url: str, *extra: str) -> dict[str, Any]:
        return json.loads(self.ok("sync", "init", url, "--machine", self.name, "--json", *extra))

    def sync(self) -> dict[str, Any]:
        return json.loads(self.ok("sync", "--json"))

    def rows(self) -> dict[str, dict[str, Any]]:
        """uid -> stored observation (through the store: what search and get read)."""
        from cmem_cli.core.config import load_config
        from cmem_cli.services.write.service import WriteService

        with WriteService.open(load_config(self.path)) as memory:
            store = memory.store
            return {
                row["uid"]: row for row in (store.observations.get(i) for i in store.observations.all_ids())
            }

    def links(self, uid: str) -> list[tuple[str, str]]:
        from cmem_cli.core.config import load_config
        from cmem_cli.services.write.service import WriteService

        with WriteService.open(load_config(self.path)) as memory:
            row = memory.store.observations.by_uid(uid)
            return sorted((link["type"], link["uid"]) for link in memory.store.links.outgoing(row["id"]))

    def search(self, *args: str) -> tuple[int, list[dict[str, Any]], str]:
        code, out, err = self.run("search", *args, "--json")
        return code, json.loads(out) if out.strip() else [], err


def cmem(
    home: Path, *args: str, env: dict[str, str] | None = None, timeout: float = 120, stdin: str | None = None
) -> subprocess.CompletedProcess:
    """``cmem --home HOME ARGS`` as a real process (as hooks and cron run it)."""
    return subprocess.run(
        [sys.executable, "-m", "cmem_cli", "--home", str(home), *args],
        input=stdin,
        capture_output=True,
        text=True,
        env={**os.environ, **(env or {})},
        timeout=timeout,
    )


def server_rows(url: str, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        return list(conn.execute(sql, params).fetchall())
