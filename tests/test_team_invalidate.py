"""`cmem invalidate` and `cmem restore` through a team database (a real PostgreSQL server): the reason
travels in its own column (a server migration), every home leaves the memory out of search, context and
the team search, and a restore on another home brings it back everywhere."""

from __future__ import annotations

import pytest

from tests.team_helpers import Home, server_rows

pytestmark = pytest.mark.postgres  # each worker's own server (tests/conftest.py), a database per test


def test_invalidate_and_restore_travel_through_the_team_database(home, tmp_path, capsys, team_db):
    a, b = Home(tmp_path / "home-a", capsys, "a"), Home(tmp_path / "home-b", capsys, "b")
    obs = a.add("Book the review for Tuesday", "--type", "decision")
    a.join(team_db)
    b.join(team_db)
    uid = next(iter(a.rows()))
    assert [r["title"] for r in b.search("review", "--team")[1]] == ["Book the review for Tuesday"]

    a.ok("invalidate", str(obs), "--reason", "moved to Thursday")
    assert a.sync()["pushed"] == 1
    assert server_rows(team_db, "SELECT invalidated FROM cmem_observations") == [("moved to Thursday",)]
    b.sync()
    assert b.rows()[uid]["invalidated"] == "moved to Thursday"
    assert b.search("review")[0] == 10  # gone from search here and in the team's
    assert b.search("review", "--team")[0] == 10
    assert "review" not in b.ok("context", "--project", "web")

    b.ok("restore", str(b.rows()[uid]["id"]))
    b.sync()
    a.sync()
    assert a.rows()[uid]["invalidated"] is None
    assert server_rows(team_db, "SELECT invalidated FROM cmem_observations") == [(None,)]
    assert [r["id"] for r in a.search("review")[1]] == [obs]


def test_a_reader_pulls_and_searches_a_server_made_before_invalidations_travelled(
    home, tmp_path, capsys, team_db, pg_server
):
    """A role that may not add the column (a reader) on a server no home of this cmem migrated yet pulls
    and searches as before: nothing there is invalidated."""
    import psycopg

    from tests.test_team_members import reader

    a, c = Home(tmp_path / "home-a", capsys, "a"), Home(tmp_path / "home-c", capsys, "c")
    a.add("Book the review for Tuesday", "--type", "decision")
    a.join(team_db)
    with psycopg.connect(team_db, autocommit=True) as conn:  # the server as cmem before m007 left it
        conn.execute("ALTER TABLE cmem_observations DROP COLUMN invalidated")
        conn.execute("DELETE FROM cmem_migrations WHERE name = 'm007_invalidated'")
    report = c.join(reader(pg_server, team_db))
    assert report["pulled"] == 1
    assert [r["title"] for r in c.search("review", "--team")[1]] == ["Book the review for Tuesday"]
    assert [r["title"] for r in c.search("review")[1]] == ["Book the review for Tuesday"]
