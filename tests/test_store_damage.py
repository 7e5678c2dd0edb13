"""A lost, foreign or damaged store is reported with a pointer to `cmem doctor`, never silently replaced;
doctor works on exactly those stores and says what to do."""

from __future__ import annotations

import json
import os
import time

import apsw
import pytest


def _export_files(home):
    return sorted(p for p in (home / "export").rglob("*.md") if not p.name.startswith("."))


@pytest.fixture
def exported(cli, home):
    assert cli("add", "-t", "keep me", "-p", "p").exit_code == 0
    assert cli("add", "-t", "and me", "-p", "p").exit_code == 0
    files = _export_files(home)
    assert len(files) == 2
    return files


def _wipe_store(home, how: str) -> None:
    for suffix in ("-wal", "-shm"):
        (home / f"cmem.db{suffix}").unlink(missing_ok=True)
    db = home / "cmem.db"
    if how == "missing":
        db.unlink()
    elif how == "empty":
        db.write_bytes(b"")
    else:  # a SQLite file that is not cmem's
        db.unlink()
        conn = apsw.Connection(str(db))
        conn.execute("CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT)")
        conn.close()


@pytest.mark.parametrize("how", ["missing", "empty", "foreign"])
def test_lost_or_foreign_store_is_not_adopted(sh, home, exported, how):
    _wipe_store(home, how)
    before = (home / "cmem.db").read_bytes() if how != "missing" else None
    for argv in (("add", "-t", "x"), ("search", "keep"), ("stats",), ("get", "1")):
        result = sh(*argv)
        assert result.exit_code == 6, (argv, result.stderr)
        assert "see `cmem doctor`" in result.stderr
        assert result.stderr.count("\n") == 1 and "Traceback" not in result.stderr
    if how == "missing":
        assert not (home / "cmem.db").exists()
    else:
        assert (home / "cmem.db").read_bytes() == before
    assert _export_files(home) == exported


@pytest.mark.parametrize("how", ["missing", "empty", "foreign"])
def test_doctor_explains_a_lost_store_and_fix_keeps_the_export(cli, home, exported, how):
    _wipe_store(home, how)
    report = cli("doctor", "--json")
    assert report.exit_code == 1
    store = report.json()["checks"][0]
    assert store["name"] == "store" and store["status"] == "fail"
    assert "backup" in store["detail"] and "rebuild" in store["detail"]
    cli("doctor", "--fix")
    assert _export_files(home) == exported


def test_a_first_run_still_creates_the_store(cli, home):
    assert cli("add", "-t", "first").exit_code == 0
    assert (home / "cmem.db").stat().st_size > 0


def test_zero_byte_store_without_export_is_a_new_store(cli, home):
    home.mkdir(parents=True)
    (home / "cmem.db").write_bytes(b"")
    assert cli("add", "-t", "first").exit_code == 0


def test_store_missing_a_table_gets_the_pointer_and_doctor_reports_it(cli, home, exported):
    conn = apsw.Connection(str(home / "cmem.db"))
    conn.execute("PRAGMA foreign_keys=OFF; DROP TABLE observation_links")
    conn.close()
    result = cli("get", "1", "--links")
    assert result.exit_code == 6 and "see `cmem doctor`" in result.stderr
    report = cli("doctor", "--json")
    assert report.exit_code == 1
    assert "internal error" not in report.stderr


def _damage_pages(home) -> None:
    conn = apsw.Connection(str(home / "cmem.db"))
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    page_size = conn.execute("PRAGMA page_size").fetchall()[0][0]
    conn.close()
    db = home / "cmem.db"
    data = bytearray(db.read_bytes())
    for page in range(2, len(data) // page_size):  # every page but the header page
        start = page * page_size
        data[start : start + page_size] = os.urandom(page_size)
    db.write_bytes(bytes(data))


def test_doctor_on_a_page_damaged_store_says_what_to_do(cli, home, exported):
    _damage_pages(home)
    result = cli("doctor", "--json")
    assert result.exit_code == 1, result.stderr
    report = result.json()
    assert report["ok"] is False
    text = json.dumps(report)
    assert "backup" in text and "rebuild" in text
    cli("doctor", "--fix")
    assert _export_files(home) == exported  # never rewritten from a damaged store


def test_commands_reading_damaged_pages_fail_with_the_pointer(cli, home, exported):
    _damage_pages(home)
    for argv in (("get", "1"), ("stats",), ("search", "keep")):
        result = cli(*argv)
        assert result.exit_code == 6, (argv, result.exit_code, result.stderr)
        assert "see `cmem doctor`" in result.stderr


def test_doctor_reports_and_removes_crash_debris(cli, home, exported):
    folder = exported[0].parent
    stale = folder / ".tmp-abc123.md"
    stale.write_bytes(b"")
    old = time.time() - 3600
    os.utime(stale, (old, old))
    fresh = folder / ".tmp-inflight.md"  # a write in progress right now: not debris
    fresh.write_bytes(b"")
    rebuild = home / "index.db.rebuild"
    rebuild.write_bytes(b"x" * 100)
    report = cli("doctor", "--json")
    assert report.exit_code == 1
    debris = {c["name"]: c for c in report.json()["checks"]}["crash debris"]
    assert debris["status"] == "fail"
    assert sorted(debris["paths"]) == sorted([stale.relative_to(home).as_posix(), "index.db.rebuild"])
    assert cli("doctor", "--fix").exit_code == 0
    assert not stale.exists() and not rebuild.exists()
    assert fresh.exists()
    assert _export_files(home) == exported


def test_index_full_clears_a_stale_rebuild_file_first(cli, home, exported):
    stale = home / "index.db.rebuild"
    stale.write_bytes(b"not a database at all" * 100)
    (home / "index.db.rebuild-wal").write_bytes(b"junk")
    result = cli("index", "--full")
    assert result.exit_code == 0, result.stderr
    assert not stale.exists() and not (home / "index.db.rebuild-wal").exists()
    assert cli("status", "--json").json()["documents"] == 2


def test_doctor_on_a_store_from_a_newer_cmem_says_upgrade_not_restore(cli, home, exported):
    conn = apsw.Connection(str(home / "cmem.db"))
    conn.execute("INSERT INTO _cmem_migrations VALUES ('store', 'm999_from_a_newer_cmem', 1)")
    conn.close()
    assert cli("add", "-t", "x").exit_code == 6
    report = cli("doctor", "--json")
    assert report.exit_code == 1
    detail = report.json()["checks"][0]["detail"]
    assert detail.endswith("upgrade cmem") and "backup" not in detail


def test_doctor_removes_a_new_index_a_killed_pass_left_half_laid_out_and_keeps_a_live_ones(
    cli, home, exported
):
    """A pass lays a new index out in ``index.db.new-PID`` and links it in whole; kill -9 between leaves it."""
    dead = 2**22 + 17  # above the kernel's default pid_max: no process has it
    left = [home / f"index.db.new-{dead}", home / f"index.db.new-{dead}-wal"]
    for path in left:
        path.write_bytes(b"half a schema")
    live = home / f"index.db.new-{os.getpid()}"  # a process laying one out right now: not debris
    live.write_bytes(b"in progress")
    report = cli("doctor", "--json")
    assert report.exit_code == 1
    debris = {c["name"]: c for c in report.json()["checks"]}["crash debris"]
    assert sorted(debris["paths"]) == sorted(path.name for path in left)
    assert cli("doctor", "--fix").exit_code == 0
    assert [path.exists() for path in left] == [False, False]
    assert live.exists()
