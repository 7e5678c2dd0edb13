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
    assert (prompt["machine"], prompt["author"], summary["machine"], summary["author"]) == (
        "laptop",
        "ann@example.com",
        "laptop",
        "ann@example.com",
    )
    assert "· laptop · ann@example.com\n" in sh("get", "P1").stdout
    shown = sh("get", "S1").stdout
    assert "machine: laptop\n" in shown and 'author: "ann@example.com"\n' in shown
    items = json.loads(sh("timeline", "1", "--json").stdout)["items"]
    assert {item["machine"] for item in items} == {"laptop"}
    page = sh("view", "--all-projects", "--no-open", "--output", "-").stdout  # the details panel's data
    assert page.count('"author":"ann@example.com"') == 3


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


def test_the_config_file_names_the_machine_and_the_person_below_the_environment(
    sh: Any, home: Path, tmp_path: Path
):
    config = tmp_path / "config" / "cmem" / "config.toml"
    config.parent.mkdir(parents=True)
    config.write_text('machine = "studio"\nauthor = "ann@corp.example"\n')
    git_home = tmp_path / "person"
    git_home.mkdir()
    (git_home / ".gitconfig").write_text("[user]\n\temail = git@corp.example\n")
    assert (
        sh(
            "add", "Picked a port", "--project", "demo", env={"HOME": str(git_home), "CMEM_MACHINE": ""}
        ).exit_code
        == 0
    )
    assert (
        sh("add", "Picked a host", "--project", "demo", env={"CMEM_AUTHOR": "bob@corp.example"}).exit_code
        == 0
    )
    rows = json.loads(sh("get", "1", "2", "--json").stdout)
    assert [(r["machine"], r["author"]) for r in rows] == [
        ("studio", "ann@corp.example"),
        ("test-machine", "bob@corp.example"),  # CMEM_MACHINE and CMEM_AUTHOR beat the file
    ]
    config.write_text("machine = 7\n")
    bad = sh("add", "Picked a name", "--project", "demo")
    assert (bad.exit_code, bad.stderr.count("\n")) == (4, 1)
    assert "'machine' must be a name" in bad.stderr and "Traceback" not in bad.stderr


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
    monkeypatch.setenv("CMEM_AUTHOR", "ann@example.com")
    with Memory(home) as memory:
        memory.add("Chose WAL", project="demo", session="s-laptop")
        prompt = memory.add_prompt("why this journal mode?", session="s-laptop")
        summary = memory.add_summary("s-laptop", request="speed up the store")
        [hit] = memory.search("WAL")
        assert hit.machine == "laptop"
        assert (memory.observation(hit.id).machine, memory.observation(hit.id).author) == (
            "laptop",
            "ann@example.com",
        )
        assert (prompt.machine, prompt.author, summary.machine, summary.author) == (
            "laptop",
            "ann@example.com",
            "laptop",
            "ann@example.com",
        )
        assert memory.several_machines() is False
        window = memory.window()
        assert [(item["kind"], item["machine"], item["author"]) for item in window["items"]] == [
            ("summary", "laptop", "ann@example.com"),
            ("prompt", "laptop", "ann@example.com"),
            ("observation", "laptop", "ann@example.com"),
        ]
    monkeypatch.setenv("CMEM_MACHINE", "desk-box")
    with Memory(home) as memory:
        memory.add("Cache lives in redis", project="demo", session="s-desk")
        assert memory.several_machines() is True
        items = memory.timeline(hit.id, machine="desk-box").items
        assert [(item.title, item.machine, item.anchor) for item in items] == [
            ("Chose WAL", "laptop", True),  # the anchor, whoever wrote it
            ("Cache lives in redis", "desk-box", False),
        ]
        assert [s.session_id for s in memory.sessions(machine="desk-box")] == ["s-desk"]
        assert {s.session_id: s.machine for s in memory.sessions()} == {
            "s-laptop": "laptop",
            "s-desk": "desk-box",
        }


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


# -- the index keeps each memory's machine: `--machine` narrows retrieval -------------------------------------
def _two_machines_memories(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Thirty of desktop's memories that match "deploy staging cluster" better than laptop's one."""
    from cmem_cli.api import Memory

    monkeypatch.setenv("CMEM_MACHINE", "desktop")
    with Memory(home) as memory:
        for n in range(30):
            memory.add(f"Deploy staging cluster {n}", narrative="deploy staging cluster", project="web")
    monkeypatch.setenv("CMEM_MACHINE", "laptop")
    with Memory(home) as memory:
        memory.add("Staging notes", narrative="a deploy goes through the staging gate", project="web")


def _candidates(stderr: str) -> str:
    """The --explain line that says how deep each list was and how many documents it held."""
    [line] = [line for line in stderr.splitlines() if "explain: candidates:" in line]
    return line


def test_a_machine_search_narrows_the_index_to_that_machines_memories(
    sh: Any, home: Path, monkeypatch: pytest.MonkeyPatch
):
    _two_machines_memories(home, monkeypatch)
    assert sh("index").exit_code == 0

    found = sh(
        "search", "deploy staging cluster", "--machine", "laptop", "--limit", "1", "--explain", "--envelope"
    )
    assert found.exit_code == 0, found.stderr
    page = json.loads(found.stdout)
    assert [(hit["title"], hit["machine"]) for hit in page["hits"]] == [("Staging notes", "laptop")]
    assert (page["total"], page["capped"]) == (1, False)
    # the index's keyword list held laptop's memory alone, at the depth of a one-row page, not every hit
    assert "depth=100, store=1, keyword=1" in _candidates(found.stderr)
    desktop = json.loads(
        sh("search", "deploy staging cluster", "--machine", "desktop", "--limit", "3", "--json").stdout
    )
    assert [hit["machine"] for hit in desktop] == ["desktop"] * 3


def test_an_index_built_before_it_kept_machines_upgrades_without_reading_its_memories_again(
    sh: Any, home: Path, monkeypatch: pytest.MonkeyPatch
):
    _two_machines_memories(home, monkeypatch)
    assert sh("index").exit_code == 0
    _as_an_older_index(home / "index.db")

    status = json.loads(sh("status", "--json").stdout)
    assert "error" not in status and status["machines_indexed"] is False
    assert "machines\tnot in the index yet: run `cmem index`" in sh("status").stdout
    found = sh(
        "search", "deploy staging cluster", "--machine", "laptop", "--limit", "1", "--explain", "--json"
    )
    assert found.exit_code == 0, found.stderr
    assert [hit["title"] for hit in json.loads(found.stdout)] == ["Staging notes"]
    assert "index unavailable" not in found.stderr
    assert "keyword=31" in _candidates(found.stderr)  # every hit, checked on the store's rows
    assert sh("doctor").exit_code == 0

    report = json.loads(sh("index", "--json").stdout)
    assert (report["chunked"], report["chunks_written"], report["embedded"]) == (0, 0, 0)
    assert json.loads(sh("status", "--json").stdout)["machines_indexed"] is True
    found = sh(
        "search", "deploy staging cluster", "--machine", "laptop", "--limit", "1", "--explain", "--json"
    )
    assert [hit["title"] for hit in json.loads(found.stdout)] == ["Staging notes"]
    assert "depth=100, store=1, keyword=1" in _candidates(found.stderr)


def _as_an_older_index(path: Path) -> None:
    """Make ``path`` an index as cmem built it before documents kept their machine."""
    from cmem_index.store import IndexStore

    store = IndexStore.open(path)
    try:
        with store.transaction():
            store.conn.execute("DROP INDEX documents_machine")
            store.conn.execute("ALTER TABLE documents DROP COLUMN machine")
            store.conn.execute("DELETE FROM _cmem_migrations WHERE name = 'm002_machine'")
            store.conn.execute("PRAGMA user_version = 1")
    finally:
        store.close()


def test_timeline_and_session_list_say_and_filter_by_machine_and_tables_never_cut_an_id(sh: Any, home: Path):
    laptop = {"CMEM_MACHINE": "laptop", "CMEM_SESSION": "s-laptop"}
    desk = {"CMEM_MACHINE": "a-desk-box-with-a-long-name", "CMEM_SESSION": "s-desk"}
    assert sh("prompt", "add", "why is the store slow?", "--project", "demo", env=laptop).exit_code == 0
    assert sh("add", "Chose WAL for the store", "--project", "demo", env=laptop).exit_code == 0
    one = sh("timeline", "1").stdout.splitlines()
    assert [line.split("\t")[-2] for line in one] == ["why is the store slow?", "Chose WAL for the store"]

    for n in range(10):  # two-digit ids, the last ones a desk's
        assert sh("add", f"Cache store note {n}", "--project", "demo", env=desk).exit_code == 0
    items = json.loads(sh("timeline", "1", "--json").stdout)["items"]
    assert [item["machine"] for item in items] == ["laptop", "laptop"] + ["a-desk-box-with-a-long-name"] * 5
    lines = sh("timeline", "1").stdout.splitlines()  # piped: tab-separated, the machine before the tokens
    assert [line.split("\t")[-2] for line in lines] == [item["machine"] for item in items]

    # --machine keeps that machine's, and the anchor whoever wrote it
    mine = json.loads(sh("timeline", "11", "--machine", "laptop", "--json").stdout)["items"]
    assert [(item["id"], item["anchor"]) for item in mine] == [("P1", False), (1, False), (11, True)]
    found = json.loads(sh("timeline", "--query", "store", "--machine", "laptop", "--json").stdout)
    assert [item["machine"] for item in found["items"] if item["anchor"]] == ["laptop"]
    rows = json.loads(sh("session", "list", "--machine", "laptop", "--json").stdout)
    assert [row["session_id"] for row in rows] == ["s-laptop"]
    assert json.loads(sh("session", "list", "--machine", "nobody", "--json").stdout) == []
    page = json.loads(sh("view", "--machine", "laptop", "--all-projects", "--no-open", "--json").stdout)
    assert (page["machine"], page["observations"], page["prompts"]) == ("laptop", 1, 1)
    assert "machine laptop" in (home / "view" / "all-projects.html").read_text()

    # a terminal's table: the MACHINE column, cut before it goes, and every id whole
    narrow = {"COLUMNS": "80"}
    table = sh("search", "store", "--format", "table", env=narrow).stdout.splitlines()
    assert table[0].split()[-2:] == ["MACHINE", "TOKENS"]
    ids = [line.split()[0] for line in table[1:]]
    assert sorted(ids, key=lambda i: (len(i), i)) == [*(str(n) for n in range(1, 12)), "P1"]
    machines = {line.split()[-2] for line in table[1:]}
    assert {cell[:10] for cell in machines} == {
        "laptop",
        "a-desk-box",
    } and "a-desk-box-with-a-long-name" not in machines
    timeline = sh("timeline", "1", "--format", "table", env=narrow).stdout
    assert "MACHINE" in timeline and "\u2026" in timeline
    sessions = sh("session", "list", "--format", "table", env=narrow).stdout
    assert "MACHINE" in sessions.splitlines()[0] and "laptop" in sessions
    tiny = sh("search", "store", "--format", "table", env={"COLUMNS": "30"}).stdout.splitlines()
    assert sorted(line.split()[0] for line in tiny[1:]) == sorted(ids)


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


@pytest.mark.postgres
def test_a_teammates_edit_or_link_keeps_the_writer_and_names_the_last_editor_apart(
    tmp_path: Path, home: Path, capsys: pytest.CaptureFixture[str], team_db: str
):
    """b edits a's memory and links it to b's newer one: on every home (one that joins later too), on the
    server and in the export file, the memory still says a wrote it (machine), and who changed it last is
    a field of its own (edited_on)."""
    from tests.team_helpers import Home, server_rows

    a, b = Home(tmp_path / "home-a", capsys, "a"), Home(tmp_path / "home-b", capsys, "b")
    a.add("Cache lives in Redis", "--type", "decision")
    a.join(team_db)
    b.join(team_db)
    [uid] = list(b.rows())
    assert b.rows()[uid]["edited_on"] is None  # nobody but its writer changed it yet
    old_on_b = b.rows()[uid]["id"]
    b.ok("edit", str(old_on_b), "--narrative", "Redis was the cache until the move")
    newer = b.add("Cache lives in SQLite", "--type", "decision")
    b.ok("link", str(old_on_b), "related", str(newer))
    b.sync()
    a.sync()
    c = Home(tmp_path / "home-c", capsys, "c")
    c.join(team_db)
    for home_ in (a, b, c):
        row = home_.rows()[uid]
        assert (home_.name, row["machine"], row["edited_on"]) == (home_.name, "a", "b")
        [record] = json.loads(home_.ok("get", str(row["id"]), "--json"))
        assert (record["machine"], record["edited_on"]) == ("a", "b")
        front = (home_.path / "export" / row["path"]).read_text()
        assert "machine: a\n" in front and "edited_on: b\n" in front
    assert server_rows(
        team_db, "SELECT machine, edited_on FROM cmem_observations WHERE uid = %s", (uid,)
    ) == [("a", "b")]


def test_git_sync_carries_who_changed_a_memory_last_apart_from_who_wrote_it(
    home: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
):
    url = bare_repo(tmp_path / "team.git")
    a, b = Machine(tmp_path / "a", capsys), Machine(tmp_path / "b", capsys)
    monkeypatch.setenv("CMEM_MACHINE", "laptop")
    a.add("Login uses JWT")
    a.sync(url)
    monkeypatch.setenv("CMEM_MACHINE", "desktop")
    b.sync(url)
    [row] = json.loads(b.ok("search", "--json"))
    b.ok("edit", str(row["id"]), "--narrative", "tokens expire after an hour")
    b.sync()
    monkeypatch.setenv("CMEM_MACHINE", "laptop")
    a.sync()
    [record] = json.loads(a.ok("get", str(row["id"]), "--json"))
    assert (record["machine"], record["edited_on"], record["narrative"]) == (
        "laptop",
        "desktop",
        "tokens expire after an hour",
    )
