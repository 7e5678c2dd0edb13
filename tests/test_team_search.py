"""`cmem search --team` runs the search's stages as local search does: one pipeline, two sources.

A team row carries what a local row carries (``superseded_by``, ``possibly_superseded_by``, ``stale``,
``branch``), from the team database's links and anchors, so a home that holds none of the memories (a
scoped pull) still sees which one is current. Against a real PostgreSQL (tests/pg_server.py).
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client, StdioServerParameters  # at collection: the client's stderr default is a real file

from tests.team_helpers import Home
from tests.test_anchors_sync import two_clones

pytestmark = pytest.mark.postgres

# what a search row says of a memory, whichever source found it (the score is each source's own; the token
# cost is what `get` prints here, where this home holds the memory)
TRUTH = (
    "id", "uid", "kind", "type", "title", "subtitle", "project", "session", "agent", "machine", "key",
    "created_at", "tokens", "path", "superseded_by", "possibly_superseded_by", "stale", "branch",
)  # fmt: skip


@pytest.fixture
def homes(tmp_path: Path, home: Path, capsys: pytest.CaptureFixture[str]) -> dict[str, Home]:
    return {name: Home(tmp_path / f"home-{name}", capsys, name) for name in ("a", "b", "c")}


@pytest.fixture
def clones(tmp_path: Path) -> tuple[Path, Path]:
    return two_clones(tmp_path)


def truth(row: dict[str, Any]) -> dict[str, Any]:
    return {name: row[name] for name in TRUTH}


def test_a_memorys_team_row_says_what_its_local_row_says_replaced_stale_branch_and_successor_first(
    homes: dict[str, Home], team_db: str, clones: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
):
    first, _ = clones
    a = homes["a"]
    monkeypatch.chdir(first)
    old = a.add("Deploy target is staging", "--read", "src/auth.py", project="ops")
    new = a.add(
        "Deploy target moved", "--narrative", "we ship to prod now", "--supersedes", str(old), project="ops"
    )
    a.join(team_db)
    (first / "src" / "auth.py").write_text("def login():\n    return check()\n")  # the cited file changed

    code, local, err = a.search("deploy target staging", "--all-projects")
    assert code == 0, err
    code, team, err = a.search("deploy target staging", "--team", "--all-projects")
    assert code == 0, err
    assert [r["id"] for r in local] == [new, old]  # the successor just above the memory it replaced
    assert (local[1]["superseded_by"], local[1]["stale"], local[1]["branch"]) == (
        new,
        ["src/auth.py"],
        "main",
    )
    assert [truth(r) for r in team] == [truth(r) for r in local]
    assert set(team[0]) == set(local[0])  # the same fields, no more, no fewer

    # the old wording alone: the successor is brought in from the team database as locally
    assert [r["id"] for r in a.search("staging", "--team", "--all-projects")[1]] == [new, old]
    assert [r["id"] for r in a.search("staging", "--all-projects")[1]] == [new, old]
    # listing (no words): marked the same way
    listed = a.search("--team", "--project", "ops")[1]
    assert {r["id"]: r["superseded_by"] for r in listed} == {new: None, old: new}


def test_a_home_holding_none_of_the_memories_sees_them_marked_by_uid_and_branch_filters_the_team(
    homes: dict[str, Home], team_db: str, clones: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
):
    first, second = clones
    a, c = homes["a"], homes["c"]
    monkeypatch.chdir(first)
    old = a.add("Deploy target is staging", "--read", "src/auth.py", project="ops")
    a.add("Deploy target moved to production", "--supersedes", str(old), project="ops")
    a.join(team_db)
    uids = {row["title"]: uid for uid, row in a.rows().items()}
    c.add("Unrelated note", project="web")
    c.join(team_db, "--project", "web")  # c pulls only web: it holds neither ops memory
    assert {row["title"] for row in c.rows().values()} == {"Unrelated note"}

    monkeypatch.chdir(second)  # c works in its own clone of the same repository
    code, rows, err = c.search("deploy target staging", "--team", "--all-projects")
    assert code == 0, err
    staging, moved = uids["Deploy target is staging"], uids["Deploy target moved to production"]
    assert [r["id"] for r in rows] == [moved, staging]  # uids: c has no id of its own for them
    assert (rows[1]["superseded_by"], rows[1]["stale"], rows[1]["branch"]) == (moved, [], "main")
    assert (rows[0]["superseded_by"], rows[0]["stale"], rows[0]["branch"]) == (
        None,
        None,
        "main",
    )  # no file cited
    assert [r["machine"] for r in rows] == ["a", "a"]
    # --machine narrows the team database's query as it narrows this home's
    mine = c.search("deploy target staging", "--team", "--machine", "a", "--limit", "1", "--all-projects")
    assert [r["id"] for r in mine[1]] == [moved]
    assert c.search("deploy target staging", "--team", "--machine", "c", "--all-projects")[:2] == (10, [])

    assert {r["id"] for r in c.search("deploy", "--team", "--branch", "main", "--all-projects")[1]} == {
        moved,
        staging,
    }
    code, rows, _ = c.search("deploy", "--team", "--branch", "feature-x", "--all-projects")
    assert code == 10 and rows == []


def test_a_newer_team_memory_stating_an_update_marks_the_older_possibly_superseded(
    homes: dict[str, Home], team_db: str, tmp_path: Path
):
    a, b = homes["a"], homes["b"]
    records = tmp_path / "records.json"
    records.write_text(
        json.dumps(
            [
                {
                    "title": "Max upload size is 10 MB for attachments",
                    "project": "ops",
                    "created_at": "2025-01-10T09:00:00Z",
                },
                {
                    "title": "Max upload size is now 25 MB",
                    "project": "ops",
                    "created_at": "2025-03-02T09:00:00Z",
                },
            ]
        )  # fmt: skip
    )
    a.ok("add", "--json", str(records))
    a.join(team_db)
    b.join(team_db, "--project", "web")  # b holds none of them
    code, local, _ = a.search("max upload size", "--all-projects")
    code, team, err = b.search("max upload size", "--team")
    assert code == 0, err
    assert (
        [r["title"] for r in team]
        == [r["title"] for r in local]
        == [
            "Max upload size is now 25 MB",
            "Max upload size is 10 MB for attachments",
        ]
    )
    assert local[1]["possibly_superseded_by"] == local[0]["id"]
    assert team[1]["possibly_superseded_by"] == team[0]["id"] == team[0]["uid"]


def test_the_api_and_mcp_search_the_team_through_the_same_stages(homes: dict[str, Home], team_db: str):
    from cmem_cli.api import Memory, Query

    a, b = homes["a"], homes["b"]
    old = a.add("Cache size is 64 MB", project="ops")
    new = a.add("Cache size raised", "--supersedes", str(old), project="ops")
    a.join(team_db)
    b.join(team_db, "--project", "web")

    with Memory(a.path) as memory:
        page = memory.search("cache size", team=True)
        assert [(h.id, h.superseded_by, h.machine) for h in page] == [(new, None, "a"), (old, new, "a")]
        assert memory.search(Query("cache size", team=True)).to_json() == page.to_json()
    with Memory(b.path) as memory:
        uids = [h.uid for h in page]
        hits = memory.search("cache size", team=True)
        assert [(h.id, h.superseded_by) for h in hits] == [(uids[0], None), (uids[1], uids[0])]
        assert list(memory.search("cache size")) == []  # b's own home holds neither

    async def run() -> Any:
        params = StdioServerParameters(
            command=sys.executable,
            args=["-m", "cmem_cli", "--home", str(b.path), "mcp"],
            env=dict(os.environ),
        )
        async with Client(params, read_timeout_seconds=60) as client:
            return await client.call_tool("search", {"query": "cache size", "team": True})

    result = anyio.run(run)
    hits = result.structured_content["hits"]
    assert [(h["id"], h["superseded_by"], h["machine"]) for h in hits] == [
        (uids[0], None, "a"),
        (uids[1], uids[0], "a"),
    ]


def test_a_home_without_a_team_database_is_told_so_by_the_api(homes: dict[str, Home]):
    from cmem_cli.api import Memory
    from cmem_cli.core.errors import UsageError

    a = homes["a"]
    a.add("Something", project="ops")
    with Memory(a.path) as memory, pytest.raises(UsageError, match="no team database"):
        memory.search("something", team=True)
    code, _, err = a.run("search", "something", "--team")
    assert code == 2 and err.count("\n") == 1 and "no team database" in err
