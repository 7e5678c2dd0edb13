"""What members of a team database meet (issues 32 and 35): links that arrive are written whole, a
password is never printed whatever it holds, a read-only member keeps pulling, and messages say what
happened. Through the real CLI and a real PostgreSQL (tests/pg_server.py).
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from tests.pg_server import admin, bin_path, start, stop
from tests.team_helpers import Home, cmem, server_rows
from tests.watch_helpers import end_watch, start_watch, wait_for_line

pytestmark = pytest.mark.postgres  # each worker's own server (tests/conftest.py), a database per test
DOCS = Path(__file__).resolve().parent.parent / "docs" / "team.md"


@pytest.fixture
def homes(tmp_path: Path, home: Path, capsys: pytest.CaptureFixture[str]) -> dict[str, Home]:
    return {name: Home(tmp_path / f"home-{name}", capsys, name) for name in ("a", "b", "c")}


def uid_of(home: Home, title: str) -> str:
    (uid,) = [u for u, r in home.rows().items() if r["title"] == title]
    return uid


def db_and_host(url: str) -> tuple[str, str]:
    return url.split("@/", 1)[1].split("?")[0], url.split("host=", 1)[1]


def password_role(pg_server: Any, url: str, role: str, password: str) -> None:
    """A login role that must give ``password`` (scram over the socket), allowed into the test's database."""
    dbname, _ = db_and_host(url)
    quoted = password.replace("'", "''")
    with admin(pg_server) as conn:
        conn.execute(f"CREATE ROLE {role} LOGIN PASSWORD '{quoted}'")
        conn.execute(f"GRANT ALL ON DATABASE {dbname} TO {role}")
    hba = Path(pg_server.pgdata) / "pg_hba.conf"
    hba.write_text(f"local all {role} scram-sha-256\n" + hba.read_text())
    with admin(pg_server) as conn:
        conn.execute("SELECT pg_reload_conf()")


# -- links ------------------------------------------------------------------------------------------------
def test_a_pulled_link_to_a_memory_arriving_in_the_same_pull_is_written_whole_and_doctor_is_clean(
    homes: dict[str, Home], team_db: str
):
    a, b, c = homes["a"], homes["b"], homes["c"]
    old = a.add("The old approach")
    a.join(team_db)
    b.join(team_db)
    new = a.add("The new approach")
    a.ok("link", str(old), "led_to", str(new))
    a.sync()
    assert b.sync()["pulled"] == 2
    text = (b.path / "export" / b.rows()[uid_of(b, "The old approach")]["path"]).read_text()
    assert "]()" not in text and "The new approach" in text
    assert cmem(b.path, "doctor").returncode == 0
    c.join(team_db)  # a fresh join: every linked memory arrives at once
    for home in (b, c):
        doctor = cmem(home.path, "doctor")
        assert doctor.returncode == 0, doctor.stdout
        for path in (home.path / "export").rglob("*.md"):
            assert "]()" not in path.read_text(), path


# -- passwords --------------------------------------------------------------------------------------------
@pytest.mark.parametrize("password", ["Pa?ss/w@rd-1", "p@ss?word=x&y", "sl/ash:colon@at"])
def test_a_password_holding_question_mark_at_or_slash_is_used_and_never_printed(
    homes: dict[str, Home], team_db: str, pg_server: Any, tmp_path: Path, password: str
):
    role = "pw_" + os.urandom(3).hex()
    password_role(pg_server, team_db, role, password)
    dbname, host = db_and_host(team_db)
    import psycopg

    with psycopg.connect(team_db, autocommit=True) as conn:
        conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
        conn.execute(f"GRANT ALL ON SCHEMA public TO {role}")
    url = f"postgresql://{role}:{password}@/{dbname}?host={host}"  # the password written unencoded
    home = homes["a"].path
    env = {"PGPASSFILE": str(tmp_path / "no-such-pgpass"), "PGPASSWORD": ""}
    joined = cmem(home, "sync", "init", url, "--machine", "a", "--json", env=env)
    assert joined.returncode == 0, joined.stderr
    assert json.loads(joined.stdout)["remote"] == f"postgresql://{role}@/{dbname}?host={host}"
    wrong = url.replace(password, password + "-wrong")
    for args in (("sync", "init", wrong), ("sync", "init", wrong, "--json"), ("sync", "--json"), ("doctor",)):
        done = cmem(home, *args, env=env)
        shown = done.stdout + done.stderr
        assert password not in shown and "-wrong" not in shown, (args, shown)
    failed = cmem(home, "sync", "init", wrong, "--json", env=env)
    assert failed.returncode == 9 and json.loads(failed.stdout)["exit_code"] == 9
    assert "authentication failed" in json.loads(failed.stdout)["error"]
    stored = b"".join(p.read_bytes() for p in home.rglob("*") if p.is_file())
    assert password.encode() not in stored


def test_a_url_that_cannot_be_read_is_refused_without_showing_its_password(homes: dict[str, Home]):
    home = homes["a"].path
    done = cmem(home, "sync", "init", "postgresql://alice:s3cret-part")  # no host: where does it end?
    assert done.returncode == 2 and "s3cret" not in done.stderr and done.stderr.count("\n") == 1


def test_every_error_line_hides_a_url_password_whatever_it_holds():
    from cmem_cli.cli.guard import unsecret

    for secret in ("pa?ss", "p@ss/word", "a/b?c@d", "simple"):
        line = unsecret(f"cannot reach postgresql://bob:{secret}@db.example.com:5432/memory?sslmode=require")
        assert (
            secret not in line and "postgresql://bob:***@db.example.com:5432/memory?sslmode=require" in line
        )
    assert unsecret("remote https://user:tok?en@example.com/repo.git refused") == (
        "remote https://user:***@example.com/repo.git refused"
    )


# -- a read-only member ----------------------------------------------------------------------------------
def reader(pg_server: Any, url: str) -> str:
    """A role with docs/team.md's read-only grants; its URL."""
    import psycopg

    role = "reader_" + os.urandom(3).hex()
    with admin(pg_server) as conn:
        conn.execute(f"CREATE ROLE {role} LOGIN")
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(f"GRANT USAGE ON SCHEMA public TO {role}")
        conn.execute(f"GRANT SELECT ON ALL TABLES IN SCHEMA public TO {role}")
    return url.replace("postgresql://postgres:@", f"postgresql://{role}@")


def test_a_read_only_member_with_queued_writes_keeps_pulling_and_says_so_once(
    homes: dict[str, Home], team_db: str, pg_server: Any
):
    a, c = homes["a"], homes["c"]
    a.add("First runbook")
    a.join(team_db)
    c.join(reader(pg_server, team_db))
    c.add("A note the reader wrote")
    a.add("Second runbook")
    a.sync()
    code, out, err = c.run("sync", "--json")
    assert code == 9
    report = json.loads(out)
    assert (report["pulled"], report["queued"], report["ok"], report["exit_code"]) == (1, 1, False, 9)
    assert "read-only role" in report["error"]
    assert err.count("read-only role") == 1 and err.count("\n") == 1
    code, _, err = c.run("sync")
    assert code == 9 and err.count("read-only role") == 1
    assert "pulled 0" in err and "queued 1" in err  # what it did, then why it failed
    assert {r["title"] for r in c.rows().values()} == {
        "First runbook",
        "Second runbook",
        "A note the reader wrote",
    }


def test_a_reader_whose_writes_stay_queued_is_not_told_they_were_pushed_without_vectors(
    homes: dict[str, Home], team_db: str, pg_server: Any, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
):
    """A home with a model configured but not downloaded said "memories pushed without vectors" at every
    sync, a reader's too, whose push was refused: nothing was pushed. A writer's push still says it."""
    a, c = homes["a"], homes["c"]
    monkeypatch.setenv("CMEM_EMBED_MODEL", str(tmp_path / "absent.gguf"))
    a.join(team_db)
    c.join(reader(pg_server, team_db))
    c.add("A note the reader wrote")
    code, out, err = c.run("sync", "--json")
    assert code == 9 and json.loads(out)["queued"] == 1
    assert not [n for n in json.loads(out)["notes"] if "without vectors" in n]
    assert "without vectors" not in err and err.count("\n") == 1
    a.add("Pushed without a model")
    report = a.sync()
    assert report["pushed"] == 1
    assert [n for n in report["notes"] if n.startswith("memories pushed without vectors: ")]


def test_a_reader_syncs_with_a_server_whose_schema_an_older_cmem_made(
    homes: dict[str, Home], team_db: str, pg_server: Any
):
    a, c = homes["a"], homes["c"]
    a.add("Written before the upgrade")
    a.join(team_db)
    import psycopg

    with psycopg.connect(team_db, autocommit=True) as conn:  # the server as cmem before m004_identity left it
        conn.execute("DROP TABLE cmem_meta")
        conn.execute("DELETE FROM cmem_migrations WHERE name = 'm004_identity'")
    report = c.join(reader(pg_server, team_db))  # it may not migrate: it pulls what there is
    assert report["pulled"] == 1 and any("schema is older than this cmem's" in n for n in report["notes"])
    a.sync()  # a writer brings it up to date
    assert server_rows(team_db, "SELECT count(*) FROM cmem_meta") == [(1,)]


def test_a_reader_pulls_from_a_server_made_before_authors_travelled_and_gets_them_once_migrated(
    homes: dict[str, Home], team_db: str, pg_server: Any, monkeypatch: pytest.MonkeyPatch
):
    """The person who wrote a memory travels in a column migration m006_authors adds; a role that may not
    add it (a reader, a writer before the tables' owner synced) pulls and pushes as before without it."""
    import psycopg

    a, c = homes["a"], homes["c"]
    monkeypatch.setenv("CMEM_AUTHOR", "ann@example.com")
    a.add("Written before the upgrade")
    a.join(team_db)
    with psycopg.connect(team_db, autocommit=True) as conn:  # the server as cmem before m006_authors left it
        for table in ("cmem_observations", "cmem_summaries", "cmem_prompts"):
            conn.execute(f"ALTER TABLE {table} DROP COLUMN author")
        conn.execute("DELETE FROM cmem_migrations WHERE name = 'm006_authors'")
    report = c.join(reader(pg_server, team_db))
    [note] = [n for n in report["notes"] if "schema is older than this cmem's" in n]
    assert report["pulled"] == 1 and note.endswith("the next sync of the member who joined first will")
    # (it said "a writer's next sync will": a writer that does not own the tables may not add a column)
    [row] = json.loads(c.ok("get", "1", "--json"))
    assert (row["machine"], row["author"]) == ("a", None)
    a.add("Written after the upgrade")
    assert a.sync()["pushed"] == 1  # the owner migrates, then pushes with the person
    assert c.sync()["pulled"] == 1
    rows = {r["title"]: (r["machine"], r["author"]) for r in json.loads(c.ok("get", "1", "2", "--json"))}
    assert rows == {
        "Written before the upgrade": ("a", None),
        "Written after the upgrade": ("a", "ann@example.com"),
    }


def test_watch_on_a_read_only_member_pulls_while_its_writes_stay_queued(
    homes: dict[str, Home], team_db: str, pg_server: Any
):
    from tests.test_team import wait_for

    a, c = homes["a"], homes["c"]
    a.join(team_db)
    c.join(reader(pg_server, team_db))
    c.add("Queued on the reader")
    watch = subprocess.Popen(
        [sys.executable, "-m", "cmem_cli", "--home", str(c.path), "watch"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        a.add("Pushed while the reader watches")
        a.sync()
        wait_for(lambda: "Pushed while the reader watches" in {r["title"] for r in c.rows().values()}, 40)
        a.add("And another one")
        a.sync()
        wait_for(lambda: "And another one" in {r["title"] for r in c.rows().values()}, 40)
    finally:
        watch.terminate()
        _, err = watch.communicate(timeout=30)
    text = err.decode()
    assert text.count("read-only role") == 1, text
    assert "internal error" not in text and "reconnect" not in text
    assert server_rows(team_db, "SELECT count(*) FROM cmem_observations") == [(2,)]


# -- messages ----------------------------------------------------------------------------------------------
def test_a_writer_joining_before_the_grants_is_told_what_is_missing_not_that_it_is_read_only(
    homes: dict[str, Home], team_db: str, pg_server: Any
):
    import psycopg

    a, b = homes["a"], homes["b"]
    a.join(team_db)  # the first member: the tables are its own
    role = "writer_" + os.urandom(3).hex()
    with admin(pg_server) as conn:
        conn.execute(f"CREATE ROLE {role} LOGIN")
    with psycopg.connect(team_db, autocommit=True) as conn:
        conn.execute(
            f"GRANT CREATE, USAGE ON SCHEMA public TO {role}"
        )  # docs/team.md's writer, no grants yet
    code, _, err = b.run("sync", "init", team_db.replace("postgresql://postgres:@", f"postgresql://{role}@"))
    assert code == 9 and err.count("\n") == 1
    assert "read-only" not in err and "has not been granted cmem's tables yet" in err


def test_a_wrong_password_is_authentication_failed_and_a_stopped_server_unreachable(
    homes: dict[str, Home], team_db: str, pg_server: Any, tmp_path: Path
):
    role, password = "auth_" + os.urandom(3).hex(), "Right-" + os.urandom(4).hex()
    password_role(pg_server, team_db, role, password)
    dbname, host = db_and_host(team_db)
    env = {"PGPASSFILE": str(tmp_path / "none"), "PGPASSWORD": ""}
    done = cmem(homes["a"].path, "sync", "init", f"postgresql://{role}:nope@/{dbname}?host={host}", env=env)
    assert (
        done.returncode == 9 and "authentication failed" in done.stderr and "unreachable" not in done.stderr
    )
    a = homes["b"]
    a.join(team_db)
    stop(pg_server)
    try:
        code, out, err = a.run("sync", "--json")
    finally:
        start(pg_server)
    assert code == 9 and "unreachable" in err and err.count("\n") == 1
    report = json.loads(out)  # --json: a result object on failure too
    assert (report["ok"], report["exit_code"]) == (False, 9) and "unreachable" in report["error"]


def test_counts_say_what_happened(homes: dict[str, Home], team_db: str):
    a, b = homes["a"], homes["b"]
    ids = [a.add(f"Memory {i}") for i in range(3)]
    a.join(team_db)
    b.join(team_db)
    a.ok("forget", str(ids[0]), "--yes")  # one forgotten by cmem, one by deleting its file
    (a.path / "export" / a.rows()[uid_of(a, "Memory 1")]["path"]).unlink()
    code, _, err = a.run("sync")
    assert code == 0 and "adopted 1, pushed 0, pulled 0, forgotten 2," in err
    code, _, err = b.run("sync")
    assert code == 0 and ", forgotten 2," in err


INTERRUPTED = """
import signal, sys
# Ctrl-C reaches a terminal's foreground process with Python's handler in place; a run started in the
# background (`pytest &`, nohup) hands its children SIGINT ignored, and raise_signal would then do nothing
signal.signal(signal.SIGINT, signal.default_int_handler)
from cmem_cli.team import push
def interrupted(self):
    # Ctrl-C in the middle of the server's transaction. raise_signal delivers it to this thread and runs
    # Python's handler before it returns (os.kill may hand it to another thread, whose handler then runs
    # later: under load, after the line below)
    signal.raise_signal(signal.SIGINT)
    raise AssertionError("not interrupted")
push.Pusher._flush = interrupted
from cmem_cli.__main__ import main
sys.exit(main(["--home", sys.argv[1], "sync"]))
"""


def test_an_interrupted_team_sync_prints_only_its_one_line(homes: dict[str, Home], team_db: str):
    a = homes["a"]
    a.join(team_db)
    a.add("Pushed when the interrupt comes")
    done = subprocess.run([sys.executable, "-c", INTERRUPTED, str(a.path)], capture_output=True, text=True)
    assert done.returncode == 130 and done.stdout == ""
    assert done.stderr == "cmem: interrupted\n"
    assert a.sync()["pushed"] == 1


def sql_blocks() -> list[str]:
    return re.findall(r"```sql\n(.*?)```", DOCS.read_text(), re.S)


def test_the_admin_sql_of_docs_team_md_works_as_written_for_an_administrator_and_the_first_member(
    homes: dict[str, Home], pg_server: Any, tmp_path: Path
):
    """The two SQL blocks of docs/team.md, run as written with psql: the first as a superuser, the second
    as the member who joined first (who may not CREATE ROLE); then every role does what the docs say."""
    import psycopg

    admin_block, member_block = sql_blocks()
    socket = pg_server.get_uri().split("host=", 1)[1]
    names = ("alice", "bob", "memory_reader", "memory_writer")

    def clean() -> None:
        with admin(pg_server) as conn:
            conn.execute("DROP DATABASE IF EXISTS memory WITH (FORCE)")
            for name in names:
                if conn.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", (name,)).fetchone():
                    conn.execute(f"DROP OWNED BY {name} CASCADE")  # in the maintenance database
                    conn.execute(f"DROP ROLE {name}")

    def psql(user: str, dbname: str, sql: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            [str(bin_path("psql")), "-v", "ON_ERROR_STOP=1", "-h", socket, "-U", user, "-d", dbname],
            input=sql.encode(), capture_output=True, timeout=60,
        )  # fmt: skip

    clean()
    try:
        done = psql("postgres", "postgres", admin_block)
        assert done.returncode == 0, done.stderr.decode()
        url = {n: f"postgresql://{n}@/memory?host={socket}" for n in names}
        a, b, c = homes["a"], homes["b"], homes["c"]
        a.add("Written by alice")
        a.join(url["alice"])  # the first member: creates cmem's tables
        done = psql("alice", "memory", member_block)
        assert done.returncode == 0, done.stderr.decode()
        b.add("Written by bob")
        assert b.join(url["bob"])["pulled"] == 1  # a writer: pushes and pulls
        assert a.sync()["pulled"] == 1
        c.add("Written on the reader's home")
        code, out, err = c.run("sync", "init", url["memory_reader"], "--json")
        assert code == 9 and json.loads(out)["pulled"] == 2 and "read-only role" in err
        with psycopg.connect(url["bob"], autocommit=True) as conn:  # bob's rows: no grant of its own needed
            assert conn.execute("SELECT count(*) FROM cmem_observations").fetchone() == (2,)
    finally:
        clean()


# -- one embedder, two threads -------------------------------------------------------------------------------
def test_watch_pushes_and_indexes_at_once_with_one_model_and_never_aborts(
    homes: dict[str, Home], team_db: str, minilm_gguf: Path, tmp_path: Path
):
    """`cmem watch` on a home with queued writes and no index yet: its indexer's first pass and its team
    thread's push both embed with the one model the process loads (cmem_index.loading). llama.cpp aborted
    the process (SIGABRT, GGML_ASSERT) when two threads used its context at once (issues 32 and 35)."""
    a = homes["a"]
    a.join(team_db)
    records = tmp_path / "records.json"
    records.write_text(
        json.dumps(
            [
                {"title": f"Memory {i}", "project": "web", "narrative": f"words of memory {i} " * 15}
                for i in range(20)
            ]
        )
    )
    a.ok("add", "--json", str(records))  # queued for the team database; the index is not built
    env = {"CMEM_EMBED_MODEL": str(minilm_gguf), "CMEM_MACHINE": "a"}
    watch, lines, reader = start_watch({**os.environ, **env, "CMEM_HOME": str(a.path)})
    try:
        # the watcher says what it did once it did it: stopped before it said so, it would not (the
        # store and the server are then asked as well: the vectors may follow the rows)
        wait_for_line(watch, lines, "team: pushed 20,")
        wait_for_line(watch, lines, "indexed 20 files")
        deadline = time.monotonic() + 120
        while True:  # until the index is built and every memory is on the server with its vector
            said = "".join(lines)
            assert watch.poll() is None and "failed" not in said and time.monotonic() < deadline, said
            status = json.loads(cmem(a.path, "status", "--json", env=env).stdout)
            vectors = server_rows(team_db, "SELECT count(*) FROM cmem_vectors WHERE kind = 'observation'")
            if (status["documents"], status["vectors_current"], vectors) == (20, True, [(20,)]):
                break
            time.sleep(0.2)
        watch.send_signal(signal.SIGINT)
        watch.wait(timeout=30)
    finally:
        said = end_watch(watch, lines, reader)
    assert watch.returncode == 0 and "GGML_ASSERT" not in said and said.endswith("cmem: stopped\n"), said
    assert "team: pushed 20," in said and "indexed 20 files" in said and "20 embedded" in said
    assert server_rows(team_db, "SELECT count(DISTINCT uid), count(*) FROM cmem_observations") == [(20, 20)]
    status = json.loads(cmem(a.path, "status", "--json", env=env).stdout)
    assert (status["stale_documents"], status["chunks_without_current_vectors"]) == (0, 0)


def test_team_search_says_showing_n_of_more_only_when_the_list_was_cut(homes: dict[str, Home], team_db: str):
    a = homes["a"]
    records = [{"title": f"alpha beta note {i}", "project": "web"} for i in range(5)]
    records += [{"title": f"alpha note {i}", "project": "web"} for i in range(55)]
    for record in records:
        a.add(record["title"])
    a.join(team_db)
    code, out, err = a.run("search", "--team", "alpha beta", "--mode", "keyword", "--min-score", "0.5")
    assert code == 0 and len(out.strip().splitlines()) == 5, out  # the cut-off ended the list
    assert "showing" not in err
    code, out, err = a.run("search", "--team", "alpha", "-n", "3")  # cut: 3 of the 60
    assert code == 0 and "cmem: showing 3 of 50+" in err  # more than the 50 a search reads


def test_a_reader_pulls_from_a_server_made_before_last_editors_and_file_names_travelled(
    homes: dict[str, Home], team_db: str, pg_server: Any
):
    """Who changed a memory last and the file name its writer gave it travel in columns that later
    migrations add; a reader on a server without them pulls as before, and names files the standard way."""
    import psycopg

    a, b, c = homes["a"], homes["b"], homes["c"]
    a.add("Written before the upgrade")
    a.join(team_db)
    b.join(team_db)
    b.ok("edit", "1", "--narrative", "changed by b")
    b.sync()
    with psycopg.connect(team_db, autocommit=True) as conn:  # the server as cmem before them left it
        for column in ("edited_on", "edited_by", "path"):
            conn.execute(f"ALTER TABLE cmem_observations DROP COLUMN {column}")
        conn.execute("DELETE FROM cmem_migrations WHERE name IN ('m008_last_editor', 'm009_paths')")
    report = c.join(reader(pg_server, team_db))
    assert report["pulled"] == 1
    [row] = c.rows().values()
    assert (row["title"], row["narrative"], row["machine"], row["edited_on"]) == (
        "Written before the upgrade",
        "changed by b",
        "a",
        None,
    )
    assert (c.path / "export" / row["path"]).is_file()
