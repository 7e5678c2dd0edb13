"""Rows that arrive from the team database in a shape cmem never writes (issue 35): a teammate's script,
a migration or a dashboard wrote them. Each is skipped with a note naming its uid and the machine that
wrote it, counted in `cmem sync --json`, listed by `cmem doctor`; the rest of the sync goes on.

Every test drives the real CLI against a real PostgreSQL (tests/pg_server.py).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.team_helpers import Home, cmem, server_rows

pytestmark = pytest.mark.postgres  # each worker's own server (tests/conftest.py), a database per test


@pytest.fixture
def homes(tmp_path: Path, home: Path, capsys: pytest.CaptureFixture[str]) -> dict[str, Home]:
    return {name: Home(tmp_path / f"home-{name}", capsys, name) for name in ("a", "b")}


def server_write(url: str, sql: str, params: Any = ()) -> None:
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(sql, params)


def table_columns(url: str, table: str) -> dict[str, str]:
    """column -> its type, as the server made it (generated columns left out: nothing writes them)."""
    rows = server_rows(
        url,
        "SELECT column_name, data_type FROM information_schema.columns WHERE table_name = %s "
        "AND is_generated = 'NEVER' ORDER BY ordinal_position",
        (table,),
    )
    return dict(rows)


HUGE = "x" * 1_100_000  # over the export's file limit (1,000,000 bytes) by itself
WIDE = "\U0001f600" * 49_000  # within a summary field's 50,000 characters, 196,000 bytes of UTF-8
CONTROL = "ctl \x1b[31m red \x07 bell \x08\x0b\x0c\x7f \u2028 \u0085 end"

# Values of each column type a hand-written row can hold, cmem never writes (or may, for the controls).
BAD: dict[str, list[Any]] = {
    "jsonb": [None, 5, True, "a string", {"an": "object"}, [1, 2], [None], ["ok", 7], "JSON null"],
    "text": [None, "", "   ", CONTROL, HUGE, "../../etc/passwd"],
    "bigint": [None, -5, 2**62],
    "integer": [None, -1, 2**31 - 1],
    "double precision": [None, float("nan"), float("inf"), -1.0, 5.0],
}
# The row's key, its revision, and what only a search reads are left alone (the key: a new row each).
LEFT_ALONE = {"rev", "search", "session_id"}


def fuzzed_rows(url: str, table: str, base: dict[str, Any]) -> list[tuple[str, Any, dict[str, Any]]]:
    """(column, value, row): ``base`` with one column changed to each value its type can hold badly."""
    from psycopg.types.json import Jsonb

    out = []
    for column, kind in table_columns(url, table).items():
        if column in LEFT_ALONE:
            continue
        for value in BAD.get(kind, []):
            if kind == "jsonb":
                value = Jsonb(None) if value == "JSON null" else (None if value is None else Jsonb(value))
            out.append((column, value, {**base, column: value}))
    for column in ("facts", "concepts"):  # lists whose items together are over the file limit
        out.append((column, "600 x 1,999", {**base, column: Jsonb(["y" * 1_999] * 600)}))
    return out


def insert(url: str, table: str, row: dict[str, Any]) -> bool:
    """Insert ``row`` with the next revision; False when the server itself refuses it (a text too large
    for an index, a NULL primary key): such a row cannot exist."""
    import psycopg

    names = ", ".join(row)
    marks = ", ".join(f"%({n})s" for n in row)
    try:
        server_write(url, f"INSERT INTO {table} ({names}, rev) VALUES ({marks}, nextval('cmem_rev'))", row)
    except psycopg.Error:
        return False
    return True


def base_row(url: str, table: str, key: str = "uid") -> dict[str, Any]:
    from psycopg.types.json import Jsonb

    columns = [c for c in table_columns(url, table) if c != "rev"]
    [values] = server_rows(url, f"SELECT {', '.join(columns)} FROM {table} LIMIT 1")
    row = dict(zip(columns, values, strict=True))
    for name, value in row.items():
        if isinstance(value, list | dict):
            row[name] = Jsonb(value)
    return row


def test_a_row_with_a_list_column_of_another_shape_is_skipped_and_the_sync_goes_on(
    homes: dict[str, Home], team_db: str
):
    """The issue's reproduction, through `python -m cmem_cli`: `facts` = 5 stopped every member's sync."""
    a, b = homes["a"], homes["b"]
    a.add("Good memory")
    a.join(team_db)
    base = base_row(team_db, "cmem_observations")
    from psycopg.types.json import Jsonb

    insert(team_db, "cmem_observations", {**base, "uid": "bad-facts", "facts": Jsonb(5), "machine": "script"})
    insert(
        team_db, "cmem_observations", {**base, "uid": "bad-concepts", "concepts": Jsonb("x"), "title": "T2"}
    )
    a.add("Added after the foreign rows")
    synced = cmem(a.path, "sync", "--json")
    assert synced.returncode == 0, synced.stderr
    report = json.loads(synced.stdout)
    assert report["pushed"] == 1 and report["pulled"] == 0
    assert sorted((s["uid"], s["machine"]) for s in report["skipped"]) == [
        ("bad-concepts", "a"),
        ("bad-facts", "script"),
    ]
    assert "cmem: skipped observation bad-facts from the team database (written by script): facts is 5" in (
        synced.stderr
    )
    joined = cmem(b.path, "sync", "init", team_db, "--machine", "b")
    assert joined.returncode == 0, joined.stderr
    assert "internal error" not in joined.stderr and "skipped 2" in joined.stderr
    assert {r["title"] for r in b.rows().values()} == {"Good memory", "Added after the foreign rows"}
    doctor = cmem(b.path, "doctor", "--json")
    assert doctor.returncode == 1
    [check] = [c for c in json.loads(doctor.stdout)["checks"] if c["name"] == "team rows not taken"]
    assert check["status"] == "fail" and sorted(check["uids"]) == ["bad-concepts", "bad-facts"]
    assert "bad-facts (written by script): facts is 5, not a list of texts" in check["detail"]
    assert [c["name"] for c in json.loads(doctor.stdout)["checks"] if c["status"] == "fail"] == [
        "team rows not taken"
    ]
    # repaired on the server: the next sync takes it, and doctor is clean again
    server_write(
        team_db,
        "UPDATE cmem_observations SET facts = '[]', concepts = '[]', rev = nextval('cmem_rev') "
        "WHERE uid IN ('bad-facts', 'bad-concepts')",
    )
    assert b.sync()["pulled"] == 2
    assert cmem(b.path, "doctor").returncode == 0


def test_a_local_edit_of_a_memory_whose_server_row_is_foreign_replaces_it(
    homes: dict[str, Home], team_db: str
):
    a = homes["a"]
    obs = a.add("Edited here", "--fact", "one")
    a.join(team_db)
    drop_not_null(team_db)
    server_write(team_db, "UPDATE cmem_observations SET facts = 'true', updated_at = NULL")
    a.ok("edit", str(obs), "--fact", "two")
    report = a.sync()
    assert report["pushed"] == 1 and [s["reason"] for s in report["skipped"]] == [
        "facts is true, not a list of texts"
    ]
    assert server_rows(team_db, "SELECT facts FROM cmem_observations") == [(["two"],)]
    assert cmem(a.path, "doctor").returncode == 0  # replaced: nothing left to repair


def drop_not_null(url: str) -> None:
    """What a careless migration does: every column but the keys may now be NULL."""
    for table in ("cmem_observations", "cmem_summaries", "cmem_sessions", "cmem_prompts", "cmem_tombstones"):
        for column, _ in table_columns(url, table).items():
            if column not in ("uid", "session_id", "kind", "rev", "from_uid", "to_uid"):
                server_write(url, f"ALTER TABLE {table} ALTER COLUMN {column} DROP NOT NULL")


def test_every_column_of_every_team_table_given_every_wrong_type_never_stops_a_sync(
    homes: dict[str, Home], team_db: str
):
    """A fuzz of team rows: each column of each table, each value of the wrong shape (NULL, another JSON
    type, huge, control characters). Every sync ends with exit 0; what cannot be taken is skipped and
    counted; what is taken is written as any memory (doctor finds nothing else); nothing is taken twice."""
    a, b = homes["a"], homes["b"]
    a.ok("session", "start", "s-fuzz", "--project", "web", "--label", "Fuzzing")
    a.ok("prompt", "add", "--session", "s-fuzz", "-p", "web", "what arrives?")
    a.add("Base memory", "--fact", "a fact", "--session", "s-fuzz")
    a.ok("summary", "add", "--session", "s-fuzz", "--learned", "base summary", "--project", "web")
    a.join(team_db)
    b.join(team_db)
    drop_not_null(team_db)
    cases: list[tuple[str, str, Any]] = []
    for table, key in (
        ("cmem_observations", "uid"),
        ("cmem_summaries", "uid"),
        ("cmem_prompts", "uid"),
        ("cmem_sessions", "session_id"),
    ):
        base = base_row(team_db, table)
        for n, (column, value, row) in enumerate(fuzzed_rows(team_db, table, base)):
            if column != key:
                row[key] = f"fz-{table[5:9]}-{n}"
            if column == "uid" and not isinstance(value, str):
                continue  # the primary key: never NULL
            if insert(team_db, table, row):
                cases.append((table, column, value))
        report = b.sync()  # one sync per table: every row of it arrives at once
        assert report["queued"] == 0
        for item in report["skipped"]:
            assert item["reason"] and "\n" not in item["reason"] and item["machine"]
    # tombstones and links of the wrong shape
    server_write(team_db, "INSERT INTO cmem_tombstones (kind, uid, rev, project, machine, deleted_at) "
                 "VALUES ('observation', '../x', nextval('cmem_rev'), NULL, NULL, NULL), "
                 "('nonsense', 'fz-1', nextval('cmem_rev'), 'web', 'm', 1)")  # fmt: skip
    (uid,) = [u for u, r in a.rows().items() if r["title"] == "Base memory"]
    server_write(team_db, "INSERT INTO cmem_links (from_uid, to_uid, type) VALUES (%s, %s, 'no-such-type'), "
                 "(%s, '../../etc', 'related')", (uid, uid, uid))  # fmt: skip
    server_write(team_db, "UPDATE cmem_observations SET rev = nextval('cmem_rev') WHERE uid = %s", (uid,))
    report = b.sync()
    assert [s["uid"] for s in report["skipped"]] == [uid]  # its links are of the wrong shape
    for home in (a, b):  # both sides sync again and again: exit 0, nothing doubles
        for _ in range(2):
            code, out, err = home.run("sync", "--json")
            assert code == 0 and "internal error" not in err, err
    doctor = cmem(b.path, "doctor", "--json")
    failed = [c["name"] for c in json.loads(doctor.stdout)["checks"] if c["status"] == "fail"]
    assert failed == ["team rows not taken"], doctor.stdout
    assert cmem(b.path, "sync").returncode == 0  # no file over the limit was written: nothing to refuse
    taken = {r["title"] for r in b.rows().values()}
    assert HUGE not in taken and len(b.rows()) == len({r["uid"] for r in b.rows().values()})
    for path in (b.path / "export").rglob("*.md"):
        assert path.stat().st_size <= 1_000_000
    assert len(cases) > 150


def test_a_pulled_memory_keeps_the_file_name_its_writer_gave_it_on_every_home(
    tmp_path: Path, homes: dict[str, Home], capsys: pytest.CaptureFixture[str], team_db: str
):
    """One rule for a pulled memory's file name: the name its writer's home gave it travels with it (as a
    file through git), so a home that pulls it after its title changed names it as every other home does.
    A name that is not cmem's form for that memory (another uid's, outside the tree) is not taken."""
    a, b = homes["a"], homes["b"]
    obs = a.add("Cache lives in Redis")
    a.join(team_db)
    b.join(team_db)  # pulls it while its title is the first one
    a.ok("edit", str(obs), "--title", "Cache lives in SQLite now")
    a.sync()
    c = Home(tmp_path / "home-c", capsys, "c")
    c.join(team_db)  # pulls it with the new title
    names = {home.name: sorted(r["path"] for r in home.rows().values()) for home in (a, b, c)}
    assert names["a"] == names["b"] == names["c"] and "cache-lives-in-redis" in names["a"][0]
    [uid] = list(a.rows())
    server_write(team_db, "UPDATE cmem_observations SET path = %s WHERE uid = %s", ("../../etc/x.md", uid))
    d = Home(tmp_path / "home-d", capsys, "d")
    d.join(team_db)
    [row] = d.rows().values()
    assert "cache-lives-in-sqlite-now" in row["path"] and (d.path / "export" / row["path"]).is_file()
