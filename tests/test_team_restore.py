"""A team database that went back in time (issue 35): restored from a pg_dump (a new database: its
identity changes) or its data reloaded in place (only the revisions say it). Every home notices, pulls
the server again, pushes what it lacks; all converge, nothing lost, nothing doubled; a sync killed -9
during the re-pull converges too. Through the real CLI and a real PostgreSQL (tests/pg_server.py).
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from tests.pg_server import admin, bin_path
from tests.team_helpers import Home, cmem, server_rows

pytestmark = pytest.mark.postgres  # each worker's own server (tests/conftest.py), a database per test


@pytest.fixture
def homes(tmp_path: Path, home: Path, capsys: pytest.CaptureFixture[str]) -> dict[str, Home]:
    return {name: Home(tmp_path / f"home-{name}", capsys, name) for name in ("a", "b", "c")}


def dump(url: str, *extra: str) -> bytes:
    return subprocess.run(
        [str(bin_path("pg_dump")), "--no-owner", *extra, url], capture_output=True, check=True, timeout=60
    ).stdout


def psql(url: str, sql: bytes) -> None:
    done = subprocess.run(
        [str(bin_path("psql")), "-q", "-v", "ON_ERROR_STOP=1", "-d", url],
        input=sql,
        capture_output=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr.decode()


def restore_database(pg_server: Any, url: str, dumped: bytes) -> None:
    """What an administrator does with last night's pg_dump: drop the database, create it, load it (a
    plain dump with psql, one in pg_dump's custom format, ``-Fc``, with pg_restore)."""
    name = url.split("@/", 1)[1].split("?")[0]
    with admin(pg_server) as conn:
        conn.execute(f"DROP DATABASE {name} WITH (FORCE)")
        conn.execute(f"CREATE DATABASE {name}")
    if not dumped.startswith(b"PGDMP"):
        psql(url, dumped)
        return
    done = subprocess.run(
        [str(bin_path("pg_restore")), "--no-owner", "--exit-on-error", "-d", url],
        input=dumped,
        capture_output=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr.decode()


TABLES = ("cmem_observations", "cmem_links", "cmem_summaries", "cmem_tombstones", "cmem_sessions",
          "cmem_prompts", "cmem_vectors", "cmem_models", "cmem_meta", "cmem_migrations")  # fmt: skip


def reload_data(url: str, sql: bytes) -> None:
    """A restore of the data alone into the same tables (their identity unchanged): only the revisions
    show that the server went back."""
    psql(url, f"TRUNCATE {', '.join(TABLES)};".encode() + sql)


def state(home: Home) -> dict[str, tuple[Any, ...]]:
    """uid -> what a memory says (title, narrative, facts, links), as this home holds it."""
    return {
        uid: (row["title"], row["narrative"], tuple(row["facts"]), tuple(home.links(uid)))
        for uid, row in home.rows().items()
    }


def server_state(url: str) -> set[str]:
    return {uid for (uid,) in server_rows(url, "SELECT uid FROM cmem_observations")}


def converged(homes: dict[str, Home], url: str) -> dict[str, tuple[Any, ...]]:
    first = state(homes["a"])
    for home in homes.values():
        assert state(home) == first, home.name
    assert server_state(url) == set(first)
    assert not [t for t, *_ in first.values() if "(conflict copy)" in t]
    return first


def test_a_database_restored_from_a_dump_is_noticed_and_every_home_converges(
    homes: dict[str, Home], team_db: str, pg_server: Any
):
    a, b, c = homes["a"], homes["b"], homes["c"]
    edited = a.add("Before the backup", "--narrative", "as it was")
    gone = a.add("Forgotten after the backup")
    for home in (a, b, c):
        home.join(team_db)
    backup = dump(team_db)
    a.ok("edit", str(edited), "--narrative", "edited after the backup")
    a.add("Pushed after the backup by a")
    a.ok("forget", str(gone), "--yes")
    a.sync()
    b.add("Pushed after the backup by b", "--fact", "b's fact")
    b.sync()
    c.sync()  # c holds everything pushed after the backup
    restore_database(pg_server, team_db, backup)
    b.add("Written after the restore, before anyone synced")
    reports = {name: home.sync() for name, home in (("c", c), ("b", b), ("a", a))}
    for name, report in reports.items():
        assert report["restored"] is True, name
        assert any("went back in time" in note for note in report["notes"])
        assert report["conflicts"] == []
    for home in (a, b, c):
        home.sync()
    final = converged(homes, team_db)
    titles = sorted(t for t, *_ in final.values())
    assert titles == [
        "Before the backup",
        "Pushed after the backup by a",
        "Pushed after the backup by b",
        "Written after the restore, before anyone synced",
    ]
    assert [n for t, n, *_ in final.values() if t == "Before the backup"] == ["edited after the backup"]
    for home in (a, b, c):  # settled: nothing moves any more, and nothing is said
        report = home.sync()
        assert (report["pushed"], report["pulled"], report["restored"]) == (0, 0, False)


def test_data_reloaded_in_place_is_noticed_by_its_revisions_and_the_others_follow(
    homes: dict[str, Home], team_db: str
):
    a, b, c = homes["a"], homes["b"], homes["c"]
    a.add("Before the backup")
    for home in (a, b, c):
        home.join(team_db)
    backup = dump(team_db, "--data-only")
    for i in range(3):
        a.add(f"After the backup {i}")
    a.sync()
    c.sync()
    reload_data(team_db, backup)
    b.add("Written by b after the reload")  # b had seen nothing past the backup: it cannot tell
    assert b.sync()["restored"] is False
    report = a.sync()  # a had: its revisions are ahead of the server's
    assert report["restored"] is True and "its revisions end at" in " ".join(report["notes"])
    assert c.sync()["restored"] is True  # the new epoch a gave the server tells c
    assert b.sync()["restored"] is True  # ...and b
    for home in (a, b, c):
        home.sync()
    final = converged(homes, team_db)
    assert len(final) == 5


KILLED_IN_THE_PULL = textwrap.dedent(
    """
    import os, signal, sys
    from cmem_cli.team import pull
    from cmem_cli.team.apply import Applier
    pulling = []
    apply_page, finish = pull.Puller._apply, Applier.finish
    def _apply(self, *args):
        pulling.append(1)
        return apply_page(self, *args)
    def killed(self):
        finish(self)
        if pulling:
            os.kill(os.getpid(), signal.SIGKILL)  # the page written, not committed
    pull.Puller._apply, Applier.finish = _apply, killed
    from cmem_cli.__main__ import main
    sys.exit(main(["--home", sys.argv[1], "sync"]))
    """
)


def test_a_sync_killed_during_the_re_pull_after_a_restore_converges(
    homes: dict[str, Home], team_db: str, pg_server: Any
):
    a, b = homes["a"], homes["b"]
    a.add("Before the backup")
    a.join(team_db)
    b.join(team_db)
    backup = dump(team_db, "-Fc")  # restored with pg_restore
    for i in range(3):
        b.add(f"After the backup {i}")
    b.sync()
    a.sync()
    restore_database(pg_server, team_db, backup)
    b.add("After the restore")
    b.sync()
    killed = subprocess.run([sys.executable, "-c", KILLED_IN_THE_PULL, str(a.path)], capture_output=True)
    assert killed.returncode == -9
    again = cmem(a.path, "sync", "--json")
    assert again.returncode == 0, again.stderr
    b.sync()
    a.sync()
    final = converged({"a": a, "b": b}, team_db)
    assert len(final) == 5
    assert json.loads(cmem(a.path, "doctor", "--json").stdout)["ok"] is True
