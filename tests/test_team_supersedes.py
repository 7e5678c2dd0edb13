"""A `supersedes` loop that arrives by a team row is broken on arrival, the same way on every home (the
link of the loop's oldest memory goes), with a note: see tests/test_supersedes_arrivals.py for files."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from tests.team_helpers import Home, server_rows

pytestmark = pytest.mark.postgres  # each worker's own server (tests/conftest.py), a database per test


def test_a_team_row_that_closes_a_loop_is_broken_alike_on_every_home(
    tmp_path: Path, home: Path, capsys: pytest.CaptureFixture[str], team_db: str
):
    a, b = Home(tmp_path / "home-a", capsys, "a"), Home(tmp_path / "home-b", capsys, "b")
    older = a.add("Cache lives in Redis", "--type", "decision")
    time.sleep(0.002)
    newer = a.add("Cache lives in SQLite", "--type", "decision")
    a.join(team_db)
    b.join(team_db)
    rows_a, rows_b = a.rows(), b.rows()
    uid_of = {row["id"]: uid for uid, row in rows_a.items()}
    old_uid, new_uid = uid_of[older], uid_of[newer]
    a.ok("link", str(newer), "supersedes", str(older))
    b.ok("link", str(rows_b[old_uid]["id"]), "supersedes", str(rows_b[new_uid]["id"]))
    b.sync()
    report = a.sync()  # a pushes its link, then pulls b's: the loop closes on a
    assert [note for note in report["notes"] if "loop" in note] == [
        f"{old_uid}: supersedes loop of 2 memories broken: #{older} no longer supersedes #{newer} "
        "(the oldest memory of the loop)"
    ]
    b.sync()  # b pulls a's link: the loop closes on b, and b breaks it at the same memory
    for home_ in (a, b):
        assert home_.links(new_uid) == [("supersedes", old_uid)]
        assert home_.links(old_uid) == []
        briefing = json.loads(home_.ok("context", "-p", "web", "--json"))
        assert [o["uid"] for o in briefing["observations"]] == [new_uid]
    # the server held the loop too (b's link and a's): each home pushes the memory whose link went again,
    # so the server loses the loop, no copy is made, and a home that joins now has nothing to break
    for home_ in (a, b, a):
        assert home_.sync()["conflicts"] == []
    assert server_rows(team_db, "SELECT from_uid, to_uid FROM cmem_links WHERE type = 'supersedes'") == [
        (new_uid, old_uid)
    ]
    c = Home(tmp_path / "home-c", capsys, "c")
    joined = c.join(team_db)
    assert [note for note in joined["notes"] if "loop" in note] == []
    assert c.links(new_uid) == [("supersedes", old_uid)] and c.links(old_uid) == []
    assert sorted(row["title"] for row in c.rows().values()) == [
        "Cache lives in Redis",
        "Cache lives in SQLite",
    ]
