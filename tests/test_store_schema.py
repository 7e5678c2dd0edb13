"""Schema versioning: migrations run once, in a transaction, after a backup copy of the database."""

from __future__ import annotations

import apsw
import pytest

from cmem_cli.core.db import Database
from cmem_cli.core.errors import DatabaseCorrupt
from cmem_cli.store.repository import Store
from cmem_cli.store.schema import MIGRATIONS
from tests.terminal import run_in_terminal


def test_new_database_is_created_at_the_current_version_with_wal(tmp_path):
    store = Store.open(tmp_path / "cmem.db")
    assert store.db.user_version() == len(MIGRATIONS)
    assert store.db.scalar("PRAGMA journal_mode") == "wal"
    assert not list(tmp_path.glob("*.bak"))  # nothing to back up on a fresh file
    store.close()


def test_upgrade_backs_up_first_and_keeps_data(tmp_path):
    path = tmp_path / "cmem.db"
    Store.open(path).close()
    conn = apsw.Connection(str(path))
    conn.execute(
        "INSERT INTO sessions (session_id, agent, project, started_at, last_activity_at) "
        "VALUES ('s', 'a', 'p', 1, 1)"
    )
    conn.close()

    def add_column(c: apsw.Connection) -> None:
        c.execute("ALTER TABLE sessions ADD COLUMN color TEXT")

    db = Database(path)
    db.migrate([*MIGRATIONS, add_column])
    assert db.user_version() == len(MIGRATIONS) + 1
    assert db.scalar("SELECT session_id FROM sessions") == "s"
    (backup,) = tmp_path.glob(f"cmem.db.v{len(MIGRATIONS)}-*.bak")
    old = apsw.Connection(str(backup))
    assert old.execute("PRAGMA user_version").fetchone()[0] == len(MIGRATIONS)
    assert old.execute("SELECT count(*) FROM sessions").fetchone()[0] == 1


def test_failed_migration_rolls_back_entirely(tmp_path):
    path = tmp_path / "cmem.db"
    Store.open(path).close()

    def broken(c: apsw.Connection) -> None:
        c.execute("CREATE TABLE half_done (x)")
        raise apsw.SQLError("simulated failure")

    db = Database(path)
    with pytest.raises(apsw.SQLError):
        db.migrate([*MIGRATIONS, broken])
    assert db.user_version() == len(MIGRATIONS)
    assert db.scalar("SELECT count(*) FROM sqlite_master WHERE name = 'half_done'") == 0


def test_a_newer_database_is_refused_not_downgraded(tmp_path):
    path = tmp_path / "cmem.db"
    Store.open(path).close()
    conn = apsw.Connection(str(path))
    conn.execute(f"PRAGMA user_version = {len(MIGRATIONS) + 5}")
    conn.close()
    with pytest.raises(DatabaseCorrupt, match="newer than this cmem"):
        Store.open(path)


def test_terminal_gets_a_table_with_icons_and_no_color_is_honoured(cli, home):
    cli("add", "-t", "Fix the flaky login test", "--type", "bugfix", "-p", "web")
    out = run_in_terminal(["search", "login"], columns=120)
    assert "TITLE" in out and "Fix the flaky login test" in out and "🐛 bugfix" in out
    assert "\x1b[" not in out
    colored = run_in_terminal(["search", "login"], columns=120, color=True)
    assert "\x1b[" in colored
