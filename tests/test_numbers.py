"""A memory's number names it for good: a forgotten memory's number is retired, never given to another one
(a script that saved `cmem get 12` must not read a different memory later), whatever brings the next one."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import apsw

from cmem_cli.core.migrations import TABLE
from cmem_cli.store.repository import Store


def add(sh: Any, *args: str) -> int:
    result = sh("add", *args)
    assert result.exit_code == 0, result.stderr
    return int(result.stdout.strip())


def test_the_number_of_a_forgotten_newest_memory_is_not_given_to_the_next(sh):
    first = add(sh, "-t", "Cache lives in Redis", "-p", "web")
    newest = add(sh, "-t", "Deploys go through staging", "-p", "web")
    assert sh("forget", str(newest), "--yes").exit_code == 0
    following = add(sh, "-t", "Logs ship to Loki", "-p", "web")
    assert following == newest + 1
    gone = sh("get", str(newest))
    assert (gone.exit_code, gone.stdout) == (3, "")
    assert gone.stderr.strip() == f"cmem: no observation with id {newest}"
    # a script's `cmem get` of the later number reads what it saved, and a bulk import numbers past it too
    assert sh("get", str(following), "--json").json()[0]["title"] == "Logs ship to Loki"
    assert sh("forget", str(following), "--yes").exit_code == 0
    imported = sh(
        "add", "--json", "-", input='[{"title": "a", "project": "web"}, {"title": "b", "project": "web"}]'
    )
    assert [int(i) for i in imported.stdout.split()] == [following + 1, following + 2]
    assert first < newest


def test_a_file_naming_a_retired_number_gets_a_new_one(sh, home):
    add(sh, "-t", "Queue is RabbitMQ", "-p", "web")
    retired = add(sh, "-t", "Queue is Kafka", "-p", "web")
    assert sh("forget", str(retired), "--yes").exit_code == 0
    # a hand-written file (or one from another machine) that says it is number `retired`
    stray = home / "export" / "web" / "by-hand.md"
    stray.write_text(f"---\ncmem: observation\nid: {retired}\n---\n# Queue is NATS\n")
    assert sh("export", "--rebuild", "--json").json()["created"] == 1
    [row] = [r for r in sh("search", "-p", "web", "--json").json() if r["title"] == "Queue is NATS"]
    assert row["id"] == retired + 1
    assert sh("get", str(retired)).exit_code == 3


def test_a_summary_file_brought_back_does_not_take_its_retired_number(sh, home):
    sh("session", "start", "s1", "-p", "web")
    first = sh("summary", "add", "--session", "s1", "--completed", "first pass").stdout.strip()
    retired = int(first.removeprefix("S"))
    [path] = (home / "export").rglob("*.md")
    text = path.read_text()
    store = Store.open(home / "cmem.db")  # another machine forgot it: the row goes, its number retires
    with store.transaction():
        store.summaries.delete(retired)
    store.close()
    path.write_text(text)  # and a backup brings the file back: a new summary here, with a new number
    assert sh("export", "--rebuild", "--json").json()["created"] == 1
    second = sh("summary", "add", "--session", "s1", "--completed", "second pass").stdout.strip()
    shown = sh("session", "show", "s1", "--json").json()
    assert sorted(shown["summaries"]) == [f"S{retired + 1}", f"S{retired + 2}"]
    assert second == f"S{retired + 2}"


def test_a_store_from_before_retired_numbers_keeps_working(sh, home):
    add(sh, "-t", "Port is 8000", "-p", "old")
    kept = add(sh, "-t", "Port is 8080", "-p", "old")
    _as_before_retired_numbers(home / "cmem.db")
    assert sh("get", str(kept), "--json").json()[0]["title"] == "Port is 8080"  # upgraded on open
    assert sh("forget", str(kept), "--yes").exit_code == 0
    assert add(sh, "-t", "Port is 9000", "-p", "old") == kept + 1
    assert sh("doctor").exit_code == 0


def _as_before_retired_numbers(path: Path) -> None:
    """Take the store back to the schema before migration m010 (as a cmem of that time left it)."""
    conn = apsw.Connection(str(path))
    with conn:
        conn.execute("DROP TRIGGER observations_retire_id")
        conn.execute("DROP TRIGGER session_summaries_retire_id")
        conn.execute("DROP TABLE retired_ids")
        conn.execute(f"DELETE FROM {TABLE} WHERE scope = 'store' AND name = 'm010_retired_ids'")
        conn.execute("PRAGMA user_version = 9")
    conn.close()
