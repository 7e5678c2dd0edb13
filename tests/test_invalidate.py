"""Reversible curation through the real CLI: `cmem invalidate ID [--reason]` takes a memory out of search,
context and the briefing without deleting it (`get` shows it, marked; its file says so), and `cmem restore
ID` brings it back whole. Both travel through git sync to every machine (docs/truth.md)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.sync_helpers import Machine, bare_repo


def ids(rows: list[dict]) -> list:
    return [row["id"] for row in rows]


def search(machine: Machine, query: str) -> list:
    code, out, err = machine.run("search", query, "--json")
    assert code in (0, 10), err
    return ids(json.loads(out)) if code == 0 else []


def context_ids(machine: Machine) -> list:
    return ids(json.loads(machine.ok("context", "--project", "web", "--json"))["observations"])


def test_invalidate_leaves_search_and_context_and_restore_brings_it_back_whole(home, tmp_path, capsys):
    me = Machine(tmp_path / "me", capsys)
    old = me.add("Deploy target is staging", "--type", "decision", "--narrative", "we deploy to staging")
    other = me.add("Deploy logs live in loki", "--type", "decision")
    before = json.loads(me.ok("get", str(old["id"]), "--json"))[0]
    assert old["id"] in search(me, "deploy") and old["id"] in context_ids(me)

    code, out, err = me.run("invalidate", str(old["id"]), "--reason", "we moved to production")
    assert (code, out.strip()) == (0, str(old["id"]))
    assert f"cmem restore {old['id']}" in err
    assert search(me, "deploy") == [other["id"]]
    assert search(me, "staging") == []
    assert context_ids(me) == [other["id"]]
    assert "staging" not in me.ok("context", "--project", "web")

    [got] = json.loads(me.ok("get", str(old["id"]), "--json"))  # kept, and marked
    assert got["invalidated"] == "we moved to production"
    assert got["narrative"] == "we deploy to staging"
    assert me.ok("get", str(old["id"])).startswith("<!-- invalidated: we moved to production.")
    assert "invalidated: we moved to production" in me.file_of(old["uid"]).read_text()
    [item] = [i for i in json.loads(me.ok("timeline", str(old["id"]), "--json"))["items"] if i["anchor"]]
    assert item["invalidated"] == "we moved to production"  # the timeline shows it, marked
    assert "[invalidated] Deploy target is staging" in me.ok("timeline", str(old["id"]))

    assert me.ok("restore", str(old["id"])).strip() == str(old["id"])
    [back] = json.loads(me.ok("get", str(old["id"]), "--json"))
    assert back["invalidated"] is None
    same = ("title", "type", "narrative", "facts", "uid", "created_at", "project")
    assert {k: back[k] for k in same} == {k: before[k] for k in same}
    assert "invalidated" not in me.file_of(old["uid"]).read_text()
    assert set(search(me, "deploy")) == {old["id"], other["id"]}
    assert set(context_ids(me)) == {old["id"], other["id"]}


def test_invalidate_without_a_reason_and_errors(home, tmp_path, capsys):
    me = Machine(tmp_path / "me", capsys)
    note = me.add("Cache lives in redis")
    assert me.run("invalidate", str(note["id"]))[0] == 0
    assert json.loads(me.ok("get", str(note["id"]), "--json"))[0]["invalidated"] == "no reason given"
    code, out, err = me.run("invalidate", "999")
    assert (code, out) == (3, "") and len(err.strip().splitlines()) == 1
    code, _, err = me.run("restore", "999")
    assert code == 3 and "Traceback" not in err


def test_invalidate_and_restore_travel_through_git_to_another_machine(home, tmp_path, capsys):
    url = bare_repo(tmp_path / "team.git")
    a, b = Machine(tmp_path / "a", capsys), Machine(tmp_path / "b", capsys)
    note = a.add("Invoice 88 approved for $8,000", "--type", "decision")
    a.sync(url)
    b.sync(url)
    on_b = b.by_uid()[note["uid"]]
    assert search(b, "invoice") == [on_b["id"]]

    a.ok("invalidate", str(note["id"]), "--reason", "invoice 88 is on hold")
    a.sync()
    b.sync()
    assert b.by_uid()[note["uid"]]["invalidated"] == "invoice 88 is on hold"
    assert search(b, "invoice") == []
    assert context_ids(b) == []

    b.ok("restore", str(on_b["id"]))  # restored on the other machine, back on the first
    b.sync()
    a.sync()
    assert a.by_uid()[note["uid"]]["invalidated"] is None
    assert search(a, "invoice") == [note["id"]]
    assert a.by_uid()[note["uid"]]["title"] == "Invoice 88 approved for $8,000"


@pytest.mark.parametrize("reason", ["", "   "])
def test_a_blank_reason_counts_as_none(home, tmp_path, capsys, reason):
    me = Machine(tmp_path / "me", capsys)
    note = me.add("Cache lives in redis")
    assert me.run("invalidate", str(note["id"]), "--reason", reason)[0] == 0
    assert json.loads(me.ok("get", str(note["id"]), "--json"))[0]["invalidated"] == "no reason given"


def test_python_api_invalidate_and_restore(home: Path):
    from cmem_cli.api import Memory

    with Memory() as memory:
        obs = memory.add("Sessions expire after 30 minutes", project="web")
        gone = memory.invalidate(obs.id, reason="now 60 minutes")
        assert gone.invalidated == "now 60 minutes"
        assert obs.id not in [hit.id for hit in memory.search("sessions expire")]
        assert memory.restore(obs.id).invalidated is None
        assert obs.id in [hit.id for hit in memory.search("sessions expire")]
