"""Bad input: one line on stderr, a documented exit code, no traceback, nothing half-written."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from cmem_cli.cli import exits


def _state(home: Path) -> tuple[int, list[str]]:
    if not (home / "cmem.db").exists():
        return 0, []
    import apsw

    conn = apsw.Connection(str(home / "cmem.db"))
    count = conn.execute("SELECT count(*) FROM observations").fetchone()[0]
    conn.close()
    return count, sorted(str(p) for p in (home / "export").rglob("*") if p.is_file())


def assert_clean_failure(result, code: int, fragment: str) -> None:
    assert result.exit_code == code, (result.exit_code, result.stderr)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("cmem: ") and fragment in lines[0], lines[0]
    assert "Traceback" not in result.stderr and result.stdout == ""


@pytest.mark.parametrize(
    ("payload", "fragment"),
    [
        ("{not json", "invalid JSON"),
        ('{"title": "x", "type": "musing"}', "unknown type 'musing'"),
        ('{"type": "bugfix"}', "missing title"),
        ('{"title": "   "}', "missing title"),
        ('{"title": "x", "facts": "a"}', None),  # a single string is accepted as one fact
        ('{"title": "x", "facts": [1]}', "must be a string"),
        ('{"title": "x", "bogus": 1}', "unknown field 'bogus'"),
        ('{"title": "x", "confidence": 7}', "confidence"),
        ('{"title": "x", "created_at": "yesterday-ish"}', "ISO 8601"),
        ('{"title": "x", "links": ["friend:1"]}', "unknown link type"),
        ('{"title": "x", "links": ["related:999"]}', "does not exist"),
        ("[1, 2]", "must be a JSON object"),
        ("", "no JSON input"),
    ],
)
def test_invalid_json_records_are_rejected_whole(cli, home, payload, fragment):
    result = cli("add", "--json", "-", input=payload)
    if fragment is None:
        assert result.exit_code == 0
        return
    code = exits.EXIT_NOT_FOUND if "does not exist" in fragment else exits.EXIT_INVALID
    assert_clean_failure(result, code, fragment)
    assert _state(home)[0] == 0 and _state(home)[1] == []


def test_one_bad_line_in_bulk_import_imports_nothing_and_names_the_line(cli, home):
    lines = [json.dumps({"title": f"ok {i}", "project": "p"}) for i in range(50)]
    lines[37] = json.dumps({"title": "bad", "type": "nope"})
    result = cli("add", "--json", "-", input="\n".join(lines))
    assert_clean_failure(result, exits.EXIT_INVALID, "line 38")
    assert "nothing was imported" in result.stderr
    assert _state(home) == (0, [])


def test_oversized_fields_are_refused(cli, home):
    result = cli("add", "--title", "x" * 501)
    assert_clean_failure(result, exits.EXIT_INVALID, "too long")
    big = json.dumps({"title": "t", "narrative": "n" * 200_001})
    assert_clean_failure(cli("add", "--json", "-", input=big), exits.EXIT_INVALID, "too long")
    assert _state(home)[0] == 0


def test_invalid_utf8_in_arguments_and_files(sh, home, tmp_path):
    bad_file = tmp_path / "bad.json"
    bad_file.write_bytes(b'{"title": "caf\xe9"}')
    assert_clean_failure(sh("add", "--json", str(bad_file)), exits.EXIT_INVALID, "not valid UTF-8")
    result = subprocess.run(
        [sys.executable, "-m", "cmem_cli", "add", "--title", os.fsdecode(b"caf\xe9")],
        capture_output=True,
        text=True,
        env=os.environ,
    )
    assert result.returncode == exits.EXIT_INVALID and "not valid UTF-8" in result.stderr
    assert _state(home)[0] == 0


def test_unknown_ids_exit_with_not_found(cli):
    assert_clean_failure(cli("get", "42"), exits.EXIT_NOT_FOUND, "no observation with id 42")
    assert_clean_failure(cli("timeline", "7"), exits.EXIT_NOT_FOUND, "no observation with id 7")
    assert_clean_failure(cli("get", "S3"), exits.EXIT_NOT_FOUND, "no summary S3")
    assert_clean_failure(cli("forget", "5", "--yes"), exits.EXIT_NOT_FOUND, "no observation with id 5")
    assert_clean_failure(cli("edit", "5", "--title", "x"), exits.EXIT_NOT_FOUND, "no observation")
    assert_clean_failure(cli("get", "abc"), exits.EXIT_INVALID, "not an id")


def test_corrupt_database_is_reported_not_traced(sh, home):
    home.mkdir(parents=True)
    (home / "cmem.db").write_bytes(b"this is not a database" * 100)
    result = sh("search", "x")
    assert_clean_failure(result, exits.EXIT_CORRUPT, "not a usable cmem database")


def test_unwritable_home_is_reported(sh, tmp_path):
    if os.geteuid() == 0:
        blocker = tmp_path / "file-not-dir"
        blocker.write_text("x")
        result = sh("add", "-t", "x", env={"CMEM_HOME": str(blocker / "home")})
    else:  # pragma: no cover - root ignores permissions
        ro = tmp_path / "ro"
        ro.mkdir(mode=0o500)
        result = sh("add", "-t", "x", env={"CMEM_HOME": str(ro / "home")})
    assert_clean_failure(result, exits.EXIT_IO, "cannot create")


def test_locked_database_times_out_with_busy_exit_code(sh, home, cli, monkeypatch):
    cli("add", "-t", "seed", "-p", "p")
    import apsw

    holder = apsw.Connection(str(home / "cmem.db"))
    holder.execute("BEGIN EXCLUSIVE")
    try:
        result = sh("add", "-t", "blocked", "-p", "p", env={"CMEM_BUSY_TIMEOUT_MS": "300"})
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert_clean_failure(result, exits.EXIT_BUSY, "locked")
    assert _state(home)[0] == 1
    assert len(_state(home)[1]) == 1


def test_failed_file_write_rolls_back_the_row(cli, home, monkeypatch):
    cli("add", "-t", "seed", "-p", "p")
    from cmem_export import atomic

    def explode(*args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(atomic, "atomic_write", explode)
    result = cli("add", "-t", "doomed", "-p", "p")
    assert_clean_failure(result, exits.EXIT_IO, "No space left")
    assert _state(home)[0] == 1


def test_usage_errors_exit_2_without_traceback(cli):
    result = cli("search", "--limit", "many")
    assert result.exit_code == 2 and "Traceback" not in result.stderr
    result = cli("nonsense-command")
    assert result.exit_code == 2


def test_debug_mode_shows_the_traceback(sh, home):
    home.mkdir(parents=True)
    (home / "cmem.db").write_bytes(b"garbage" * 200)
    result = sh("search", "x", env={"CMEM_DEBUG": "1"})
    assert result.exit_code != 0 and "Traceback" in result.stderr


def test_usage_errors_are_one_line_naming_the_help(sh):
    for args, message in [
        (
            ["search", "--limt", "3"],
            "cmem: No such option '--limt'. Did you mean '--limit'? (see 'cmem search --help')",
        ),
        (["get"], "cmem: Missing argument 'ID...'. (see 'cmem get --help')"),
        (["nonsense-command"], "cmem: No such command 'nonsense-command'. (see 'cmem --help')"),
    ]:
        result = sh(*args)
        assert result.exit_code == 2
        assert result.stderr == message + "\n"


def test_bare_cmem_prints_help_to_stdout_and_succeeds(sh):
    for args in ([], ["session"]):
        result = sh(*args)
        assert result.exit_code == 0 and result.stderr == ""
        assert result.stdout.startswith(f"Usage: cmem {' '.join(args)}".rstrip() + " [OPTIONS] COMMAND")


def test_a_date_in_words_says_that_an_age_works(sh):
    result = sh("search", "x", "--since", "last week")
    assert (result.exit_code, result.stderr) == (
        4,
        "cmem: not an ISO 8601 date or time: 'last week'; an age works too: 7d, 2w, 12h, 3mo\n",
    )
