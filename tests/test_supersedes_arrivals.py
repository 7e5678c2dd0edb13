"""A `supersedes` loop that arrives (a hand-edited file, a file git sync brings, a team row) is broken on
arrival with a note, as `cmem link` refuses one locally: otherwise every memory of the loop counts as
replaced and drops out of the briefing. Every machine breaks it the same way, whatever order the links came
in: the link of the loop's oldest memory goes (an older memory cannot have replaced a newer one)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import apsw
import pytest

from tests.sync_helpers import Machine, bare_repo


def add(sh: Any, *args: str) -> int:
    result = sh("add", *args)
    assert result.exit_code == 0, result.stderr
    return int(result.stdout.strip())


def state_link(path: Path, link_type: str, uid: str) -> None:
    """Edit the file by hand: its front matter names one more link."""
    text = path.read_text()
    head, sep, body = text.partition("\n---\n")
    line = f'links: [{{"type": "{link_type}", "uid": "{uid}"}}]'
    assert "\nlinks:" not in head
    path.write_text(f"{head}\n{line}{sep}{body}")


def test_a_hand_edit_that_closes_a_loop_is_broken_with_a_note_and_both_stay_in_the_briefing(sh, home):
    old = add(sh, "-t", "Port is 8000", "--type", "decision", "-p", "web")
    new = add(sh, "-t", "Port is 8080", "--type", "decision", "-p", "web", "--supersedes", str(old))
    [old_row] = sh("get", str(old), "--json").json()
    [new_row] = sh("get", str(new), "--json").json()
    relpath = str(Path(old_row["path"]).relative_to(home / "export"))
    state_link(Path(old_row["path"]), "supersedes", new_row["uid"])

    result = sh("sync")
    assert result.exit_code == 4
    assert result.stderr.splitlines() == [
        f"cmem: {relpath}: supersedes loop of 2 memories broken: #{old} no longer supersedes #{new} "
        "(the oldest memory of the loop)"
    ]
    assert sh("get", str(old), "--json").json()[0]["links"] == []
    assert "supersedes" not in Path(old_row["path"]).read_text()  # the file says so too
    briefing = sh("context", "-p", "web", "--json").json()
    assert [o["id"] for o in briefing["observations"]] == [new]  # not both dropped: the newer one stands
    again = sh("sync")
    assert (again.exit_code, again.stderr) == (0, "")


def test_the_loop_is_broken_at_its_oldest_memory_even_when_that_link_was_here_first(sh, home):
    first = add(sh, "-t", "Queue is RabbitMQ", "--type", "decision", "-p", "q")
    second = add(sh, "-t", "Queue is Kafka", "--type", "decision", "-p", "q")
    third = add(sh, "-t", "Queue is NATS", "--type", "decision", "-p", "q")
    # here first: the oldest replaced the newest (a mistake made locally is allowed: no loop yet)
    assert sh("link", str(first), "supersedes", str(third)).exit_code == 0
    assert sh("link", str(third), "supersedes", str(second)).exit_code == 0
    [second_row] = sh("get", str(second), "--json").json()
    [first_row] = sh("get", str(first), "--json").json()
    state_link(Path(second_row["path"]), "supersedes", first_row["uid"])  # closes the loop
    result = sh("sync", "--json")
    assert result.exit_code == 4
    assert result.json()["conflicts"] == [
        {
            "path": str(Path(second_row["path"]).relative_to(home / "export")),
            "reason": f"supersedes loop of 3 memories broken: #{first} no longer supersedes #{third} "
            "(the oldest memory of the loop)",
        }
    ]
    links = {obs: [(link["type"], link["id"]) for link in sh("get", str(obs), "--json").json()[0]["links"]]
             for obs in (first, second, third)}  # fmt: skip
    assert links == {first: [], second: [("supersedes", first)], third: [("supersedes", second)]}
    assert "supersedes" not in Path(first_row["path"]).read_text()
    assert [o["id"] for o in sh("context", "-p", "q", "--json").json()["observations"]] == [third]


@pytest.fixture
def two_machines(home: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    url = bare_repo(tmp_path / "team.git")
    a, b = Machine(tmp_path / "a", capsys), Machine(tmp_path / "b", capsys)
    older = a.add("Deploys go to staging", "--type", "decision")
    newer = a.add("Deploys go to production", "--type", "decision")
    a.sync(url)
    b.sync(url)
    return a, b, older["uid"], newer["uid"]


def test_git_sync_breaks_a_loop_two_machines_made_and_both_converge(two_machines):
    a, b, older, newer = two_machines
    on_a, on_b = a.by_uid(), b.by_uid()
    # each machine links the pair its own way, both allowed locally
    a.ok("link", str(on_a[newer]["id"]), "supersedes", str(on_a[older]["id"]))
    b.ok("link", str(on_b[older]["id"]), "supersedes", str(on_b[newer]["id"]))
    b.sync()
    report = a.sync()  # takes b's file: the loop closes on a
    assert report["notes"] == [
        f"{on_a[older]['path']}: supersedes loop of 2 memories broken: #{on_a[older]['id']} no longer "
        f"supersedes #{on_a[newer]['id']} (the oldest memory of the loop)"
    ]
    b.sync()
    a.sync()
    for machine in (a, b):
        rows = machine.by_uid()
        assert [(link["type"], link["uid"]) for link in machine.links(rows[newer]["id"])] == [
            ("supersedes", older)
        ]
        assert machine.links(rows[older]["id"]) == []
        briefing = json.loads(machine.ok("context", "-p", "web", "--json"))
        assert [o["uid"] for o in briefing["observations"]] == [newer]


def test_doctor_reports_a_loop_the_store_already_held_and_fix_breaks_it_alike(sh, home):
    older = add(sh, "-t", "Backups run nightly", "--type", "decision", "-p", "ops")
    newer = add(sh, "-t", "Backups run hourly", "--type", "decision", "-p", "ops", "--supersedes", str(older))
    conn = apsw.Connection(str(home / "cmem.db"))  # as a store that took a loop before arrivals broke them
    with conn:
        conn.execute(
            "INSERT INTO observation_links (from_id, to_id, type, created_at) VALUES (?, ?, 'supersedes', 0)",
            (older, newer),
        )
    conn.close()
    assert sh("context", "-p", "ops", "--json").json()["observations"] == []  # both count as replaced

    report = sh("doctor", "--json")
    assert report.exit_code == 1
    loops = {c["name"]: c for c in report.json()["checks"]}["supersedes loops"]
    assert (loops["status"], loops["detail"]) == ("fail", f"1: #{older} -> #{newer} -> #{older}")
    fixed = sh("doctor", "--fix", "--json")
    assert fixed.exit_code == 0, fixed.stdout
    loops = {c["name"]: c for c in fixed.json()["checks"]}["supersedes loops"]
    assert loops["status"] == "fixed"
    assert loops["detail"] == (
        f"1: supersedes loop of 2 memories broken: #{older} no longer supersedes #{newer} "
        "(the oldest memory of the loop)"
    )
    assert sh("doctor").exit_code == 0
    assert [o["id"] for o in sh("context", "-p", "ops", "--json").json()["observations"]] == [newer]


def test_held_loops_finds_each_loop_once_and_breaking_leaves_none(sh, home):
    ids = [add(sh, "-t", f"Setting {n}", "-p", "loops") for n in range(6)]
    a, b, c, d, e, f = ids
    conn = apsw.Connection(str(home / "cmem.db"))
    with conn:  # a -> b -> c -> a, d <-> e, and f replacing a (no loop)
        for new, old in ((a, b), (b, c), (c, a), (d, e), (e, d), (f, a)):
            conn.execute(
                "INSERT INTO observation_links (from_id, to_id, type, created_at) VALUES (?, ?, 'supersedes', 0)",
                (new, old),
            )
    conn.close()
    from cmem_cli.services.truth import supersession
    from cmem_cli.store.repository import Store

    store = Store.open(home / "cmem.db")
    try:
        assert supersession.held_loops(store) == [[a, b, c], [d, e]]
        with store.transaction():
            broken = supersession.break_held_loops(store)
        assert [x.rewrite for x in broken] == [a, d]  # each loop's oldest memory loses its link
        assert supersession.held_loops(store) == []
    finally:
        store.close()
