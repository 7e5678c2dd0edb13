"""Every memory, summary and prompt says who wrote it: the machine and, where known, the person.

The machine is CMEM_MACHINE, else this home's team name, else the host name; the person CMEM_AUTHOR,
else git's global user.email. Rows carry ``machine`` (JSON, the API), `get` and the export file state
both (so a home that learns a memory by git sync learns whose it is), a table gets a MACHINE column once a
store holds several machines' memories, and ``--machine NAME`` keeps one machine's.
"""

from __future__ import annotations

import json
import socket
from pathlib import Path
from typing import Any

import pytest

from tests.sync_helpers import Machine, bare_repo


def test_a_memory_a_prompt_and_a_summary_record_the_machine_and_the_person(sh: Any, home: Path):
    env = {"CMEM_MACHINE": "laptop", "CMEM_AUTHOR": "ann@example.com", "CMEM_SESSION": "s-1"}
    assert sh("add", "Chose WAL", "--project", "demo", env=env).exit_code == 0
    assert sh("prompt", "add", "why is the store slow?", "--project", "demo", env=env).exit_code == 0
    assert (
        sh("summary", "add", "--request", "speed up the store", "--project", "demo", env=env).exit_code == 0
    )

    [row] = json.loads(sh("search", "WAL", "--json").stdout)
    assert row["machine"] == "laptop"
    [record] = json.loads(sh("get", "1", "--json").stdout)
    assert (record["machine"], record["author"]) == ("laptop", "ann@example.com")
    shown = sh("get", "1").stdout
    assert "machine: laptop\n" in shown and 'author: "ann@example.com"\n' in shown
    front = (home / "export" / record["path"]).read_text()
    assert "machine: laptop\n" in front and 'author: "ann@example.com"\n' in front
    [prompt] = json.loads(sh("get", "P1", "--json").stdout)
    [summary] = json.loads(sh("get", "S1", "--json").stdout)
    assert (prompt["machine"], summary["machine"], summary["author"]) == (
        "laptop",
        "laptop",
        "ann@example.com",
    )
    items = json.loads(sh("timeline", "1", "--json").stdout)["items"]
    assert {item["machine"] for item in items} == {"laptop"}


def test_without_settings_the_host_name_and_gits_user_email(sh: Any, home: Path, tmp_path: Path):
    git_home = tmp_path / "person"
    git_home.mkdir()
    (git_home / ".gitconfig").write_text(
        '[core]\n\temail = not-this\n[user]\n\tname = Ann\n\temail = "ann@corp.example"\n'
    )
    result = sh("add", "Picked a port", "--project", "demo", env={"HOME": str(git_home), "CMEM_MACHINE": ""})
    assert result.exit_code == 0, result.stderr
    [record] = json.loads(sh("get", "1", "--json").stdout)
    assert (record["machine"], record["author"]) == (socket.gethostname(), "ann@corp.example")


def test_git_sync_carries_whose_it_is_and_the_table_shows_machines_once_there_are_two(
    home: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
):
    url = bare_repo(tmp_path / "team.git")
    a, b = Machine(tmp_path / "a", capsys), Machine(tmp_path / "b", capsys)
    monkeypatch.setenv("CMEM_MACHINE", "laptop")
    a.add("Login uses JWT")
    a.sync(url)
    monkeypatch.setenv("CMEM_MACHINE", "desktop")
    b.sync(url)
    assert "laptop" not in b.ok("search", "--format", "plain")  # one machine's memories: no machine column
    b.add("Cache lives in redis")

    rows = json.loads(b.ok("search", "--json"))
    assert {r["title"]: r["machine"] for r in rows} == {
        "Login uses JWT": "laptop",
        "Cache lives in redis": "desktop",
    }
    lines = b.ok("search", "--format", "plain").splitlines()
    assert sorted(line.split("\t")[-2] for line in lines) == ["desktop", "laptop"]  # the machine column
    assert [r["title"] for r in json.loads(b.ok("search", "--machine", "laptop", "--json"))] == [
        "Login uses JWT"
    ]
    assert [r["title"] for r in json.loads(b.ok("search", "redis", "--machine", "desktop", "--json"))] == [
        "Cache lives in redis"
    ]
    code, out, _ = b.run("search", "redis", "--machine", "laptop", "--json")
    assert code == 10 and json.loads(out) == []
    b.sync()
    monkeypatch.setenv("CMEM_MACHINE", "laptop")
    a.sync()
    assert {r["title"]: r["machine"] for r in json.loads(a.ok("search", "--json"))} == {
        "Login uses JWT": "laptop",
        "Cache lives in redis": "desktop",
    }


def test_the_api_and_the_view_say_whose_each_memory_is(home: Path, monkeypatch: pytest.MonkeyPatch):
    from cmem_cli.api import Memory

    monkeypatch.setenv("CMEM_MACHINE", "laptop")
    with Memory(home) as memory:
        memory.add("Chose WAL", project="demo")
        [hit] = memory.search("WAL")
        assert hit.machine == "laptop"
        assert memory.observation(hit.id).machine == "laptop"
        assert memory.several_machines() is False
        window = memory.window()
        assert [item["machine"] for item in window["items"]] == ["laptop"]


def test_a_file_that_does_not_say_whose_it_is_arrives_unattributed_and_git_sync_settles(
    home: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
):
    """A memory written by a cmem that did not record machines is nobody's here, not this machine's: its
    file is not rewritten with this machine's name, so two machines do not commit it back and forth."""
    import subprocess

    url = bare_repo(tmp_path / "team.git")
    a, b = Machine(tmp_path / "a", capsys), Machine(tmp_path / "b", capsys)
    monkeypatch.setenv("CMEM_MACHINE", "laptop")
    a.add("Login uses JWT")
    a.sync(url)
    person = tmp_path / "person"
    subprocess.run(["git", "clone", "-q", url, str(person)], check=True)
    old = person / "web" / "2024-05-01-cache-01J0000000000000000000ABCD.md"
    old.write_text(
        "---\ncmem: observation\nuid: 01J0000000000000000000ABCD\ntype: discovery\ntitle: Cache lives in redis\n"
        'project: web\nagent: cli\ncreated_at: "2024-05-01T10:00:00.000Z"\n---\n# Cache lives in redis\n'
    )
    for args in (("add", "."), ("commit", "-qm", "an older cmem's memory"), ("push", "-q", "origin", "main")):
        subprocess.run(
            ["git", "-c", "user.email=p@example.com", "-c", "user.name=P", *args], cwd=person, check=True
        )

    monkeypatch.setenv("CMEM_MACHINE", "desktop")
    b.sync(url)
    rows = {r["title"]: r for r in json.loads(b.ok("search", "--json"))}
    assert (rows["Cache lives in redis"]["machine"], rows["Login uses JWT"]["machine"]) == (None, "laptop")
    assert "machine:" not in b.file_of("01J0000000000000000000ABCD").read_text()
    for machine, name in ((b, "desktop"), (a, "laptop"), (b, "desktop")):
        monkeypatch.setenv("CMEM_MACHINE", name)
        report = machine.sync()
        assert report["committed"] == 0, (name, report)


def test_the_session_list_says_where_each_session_ran_once_there_are_two_machines(sh: Any, home: Path):
    laptop = {"CMEM_MACHINE": "laptop", "CMEM_SESSION": "s-laptop"}
    desk = {"CMEM_MACHINE": "desk-box", "CMEM_SESSION": "s-desk"}
    assert sh("prompt", "add", "why is the store slow?", "--project", "demo", env=laptop).exit_code == 0
    listed = sh("session", "list", "--format", "table")
    assert listed.exit_code == 0 and "MACHINE" not in listed.stdout  # one machine: nothing to tell apart

    assert sh("add", "Chose WAL", "--project", "demo", env=desk).exit_code == 0
    rows = json.loads(sh("session", "list", "--json").stdout)
    assert {row["session_id"]: row["machine"] for row in rows} == {"s-laptop": "laptop", "s-desk": "desk-box"}
    table = sh("session", "list", "--format", "table").stdout.splitlines()
    assert "MACHINE" in table[0].split()
    assert {line.split()[0]: "desk-box" in line.split() for line in table[1:]} == {
        "s-laptop": False,
        "s-desk": True,
    }
    assert json.loads(sh("session", "show", "s-desk", "--json").stdout)["machine"] == "desk-box"


def test_the_timeline_says_whose_each_memory_is_once_there_are_two_machines(sh: Any, home: Path):
    """Search and the session list gained a MACHINE column once a store held several machines' memories;
    the timeline, which interleaves them, did not say whose each was."""
    assert sh("add", "Chose WAL", "--project", "demo", env={"CMEM_MACHINE": "laptop"}).exit_code == 0
    plain = sh("timeline", "1", "--format", "plain").stdout
    assert "laptop" not in plain  # one machine: nothing to tell apart
    assert (
        sh("add", "Cache lives in redis", "--project", "demo", env={"CMEM_MACHINE": "desk-box"}).exit_code
        == 0
    )
    lines = sh("timeline", "1", "--format", "plain").stdout.splitlines()
    assert [line.split("\t")[-2] for line in lines] == ["laptop", "desk-box"]
    table = sh("timeline", "1", "--format", "table").stdout.splitlines()
    assert "MACHINE" in table[1].split()
    assert [line.split()[-2] for line in table[2:]] == ["laptop", "desk-box"]
