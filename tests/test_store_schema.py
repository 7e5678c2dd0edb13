"""Schema versioning: named migrations run once, in a transaction, after a backup copy of the database."""

from __future__ import annotations

import apsw
import pytest

from cmem_cli.core.db import Database
from cmem_cli.core.errors import DatabaseCorrupt
from cmem_cli.core.migrations import TABLE, Migrations
from cmem_cli.store.records import normalize_observation
from cmem_cli.store.repository import Store
from cmem_cli.store.schema import MIGRATIONS
from tests.terminal import run_in_terminal


def test_new_database_is_created_at_the_current_version_with_wal(tmp_path):
    store = Store.open(tmp_path / "cmem.db")
    assert [r["name"] for r in store.db.query(f"SELECT name FROM {TABLE} WHERE scope = 'store'")] == [
        "m001_initial",
        "m002_export_files",
        "m003_date_search_terms",
        "m004_observation_anchors",
        "m005_git_reach",
        "m006_forgotten",
        "m007_sync_state",
        "m008_summary_updated_at",
        "m009_uid_tails",
        "m010_retired_ids",
        "m011_project_keys",
        "m012_anchor_regions",
        "m013_authorship",
        "m014_invalidated",
        "m015_last_editor",
        "m016_inferred_supersessions",
    ]
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
    assert db.migrate(_with(add_column)) == ["add_column"]
    assert db.migrate(_with(add_column)) == []  # recorded by name: never applied twice
    assert db.scalar("SELECT session_id FROM sessions") == "s"
    (backup,) = tmp_path.glob(f"cmem.db.v{len(MIGRATIONS.steps)}-*.bak")
    old = apsw.Connection(str(backup))
    assert [r[0] for r in old.execute(f"SELECT name FROM {TABLE}")] == MIGRATIONS.names
    assert old.execute("SELECT count(*) FROM sessions").fetchone()[0] == 1


def test_failed_migration_rolls_back_entirely(tmp_path):
    path = tmp_path / "cmem.db"
    Store.open(path).close()

    def broken(c: apsw.Connection) -> None:
        c.execute("CREATE TABLE half_done (x)")
        raise apsw.SQLError("simulated failure")

    db = Database(path)
    with pytest.raises(apsw.SQLError):
        db.migrate(_with(broken))
    assert MIGRATIONS.pending(db.conn) == []
    assert _with(broken).pending(db.conn) == ["broken"]
    assert db.scalar("SELECT count(*) FROM sqlite_master WHERE name = 'half_done'") == 0


def test_a_newer_database_is_refused_not_downgraded(tmp_path):
    path = tmp_path / "cmem.db"
    Store.open(path).close()
    conn = apsw.Connection(str(path))
    conn.execute(f"INSERT INTO {TABLE} VALUES ('store', 'm999_from_the_future', 1)")
    conn.close()
    with pytest.raises(DatabaseCorrupt, match="'m999_from_the_future', newer than this cmem"):
        Store.open(path)


def test_a_store_from_before_named_migrations_is_adopted_without_rerunning(tmp_path):
    """Stores made when user_version counted the steps: their steps are recorded by name, not run again."""
    path = tmp_path / "cmem.db"
    conn = apsw.Connection(str(path))
    conn.execute(MIGRATIONS.steps[0][1].__globals__["V1"])
    conn.execute("PRAGMA user_version = 1")
    conn.close()
    db = Database(path)
    assert MIGRATIONS.applied(db.conn) == ["m001_initial"]
    assert db.migrate(_with(lambda c: c.execute("CREATE TABLE extra (x)"), name="m999_extra")) == [
        "m002_export_files",
        "m003_date_search_terms",
        "m004_observation_anchors",
        "m005_git_reach",
        "m006_forgotten",
        "m007_sync_state",
        "m008_summary_updated_at",
        "m009_uid_tails",
        "m010_retired_ids",
        "m011_project_keys",
        "m012_anchor_regions",
        "m013_authorship",
        "m014_invalidated",
        "m015_last_editor",
        "m016_inferred_supersessions",
        "m999_extra",
    ]
    assert [r["name"] for r in db.query(f"SELECT name FROM {TABLE} ORDER BY name")] == [
        "m001_initial",
        "m002_export_files",
        "m003_date_search_terms",
        "m004_observation_anchors",
        "m005_git_reach",
        "m006_forgotten",
        "m007_sync_state",
        "m008_summary_updated_at",
        "m009_uid_tails",
        "m010_retired_ids",
        "m011_project_keys",
        "m012_anchor_regions",
        "m013_authorship",
        "m014_invalidated",
        "m015_last_editor",
        "m016_inferred_supersessions",
        "m999_extra",
    ]


def test_observations_from_before_dates_were_search_terms_get_theirs(tmp_path):
    path = tmp_path / "cmem.db"
    store = Store.open(path)
    with store.transaction():
        record = {"title": "Went camping", "type": "discovery", "project": "p", "agent": "a"}
        store.observations.insert(  # the store inserts a checked record, as every writer hands it
            {**normalize_observation(record), "created_at": 1687860000000}
        )  # 27 June 2023
    # as a store written before m003: no date among the search terms, m003 not recorded
    store.db.execute("UPDATE observations SET search_terms = ''")
    store.db.execute(f"DELETE FROM {TABLE} WHERE name = 'm003_date_search_terms'")
    store.close()

    def matches(word: str) -> int:
        db = Store.open(path).db
        try:
            return db.scalar("SELECT count(*) FROM observations_fts WHERE observations_fts MATCH ?", (word,))
        finally:
            db.close()

    assert matches("june") == 1
    assert matches("july") == 0
    assert apsw.Connection(str(path)).execute("SELECT search_terms FROM observations").fetchone()[0] == (
        " 27 June 2023"
    )


def test_the_index_and_the_capture_tables_use_the_same_mechanism(tmp_path):
    from cmem_index.store import IndexStore
    from tests.index_helpers import index_rows

    index = IndexStore.open(tmp_path / "index.db")
    assert index_rows(index, f"SELECT scope, name FROM {TABLE}") == [
        ("index", "m001_initial"),
        ("index", "m002_machine"),
    ]
    index.close()
    store = Store.open(tmp_path / "cmem.db")
    assert store.capture_log.count_prefix("s", "prompt:") == 0  # creates capture's tables
    scopes = store.db.query(f"SELECT scope, name FROM {TABLE} ORDER BY scope, name")
    assert scopes == [
        {"scope": "capture", "name": "m001_capture_tables"},
        {"scope": "store", "name": "m001_initial"},
        {"scope": "store", "name": "m002_export_files"},
        {"scope": "store", "name": "m003_date_search_terms"},
        {"scope": "store", "name": "m004_observation_anchors"},
        {"scope": "store", "name": "m005_git_reach"},
        {"scope": "store", "name": "m006_forgotten"},
        {"scope": "store", "name": "m007_sync_state"},
        {"scope": "store", "name": "m008_summary_updated_at"},
        {"scope": "store", "name": "m009_uid_tails"},
        {"scope": "store", "name": "m010_retired_ids"},
        {"scope": "store", "name": "m011_project_keys"},
        {"scope": "store", "name": "m012_anchor_regions"},
        {"scope": "store", "name": "m013_authorship"},
        {"scope": "store", "name": "m014_invalidated"},
        {"scope": "store", "name": "m015_last_editor"},
        {"scope": "store", "name": "m016_inferred_supersessions"},
    ]


def _with(step, name: str | None = None) -> Migrations:
    """The store's migrations plus one more."""
    extended = Migrations("store")
    extended.steps = [*MIGRATIONS.steps, (name or step.__name__, step)]
    return extended


def test_terminal_gets_a_table_with_icons_and_no_color_is_honoured(cli, home):
    cli("add", "-t", "Fix the flaky login test", "--type", "bugfix", "-p", "web")
    out = run_in_terminal(["search", "login"], columns=120)
    assert "TITLE" in out and "Fix the flaky login test" in out and "🐛 bugfix" in out
    assert "\x1b[" not in out
    colored = run_in_terminal(["search", "login"], columns=120, color=True)
    assert "\x1b[" in colored
