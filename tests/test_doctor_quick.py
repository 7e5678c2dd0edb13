"""`cmem doctor` is quick by default: a file whose size and modification time are still those cmem recorded
when it wrote it is taken as written, so a million memories are checked in seconds; `--full` renders every
memory and compares it with its file (docs/cli.md), and `--fix` always checks in full."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

import apsw

from tests.runner import Result, invoke


def _cmem(home: Path, *args: str) -> Result:
    return invoke(*args, env={"CMEM_HOME": str(home)})


def _doctor(home: Path, *args: str) -> tuple[int, dict[str, Any]]:
    result = _cmem(home, "doctor", "--json", *args)
    assert "internal error" not in result.stderr, result.stderr
    return result.returncode, json.loads(result.stdout)


def _checks(report: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {c["name"]: c for c in report["checks"]}


def _file_of(home: Path, needle: str) -> Path:
    return next(p for p in (home / "export").rglob("*.md") if needle in p.name)


def _write(path: Path, text: str) -> None:
    path.write_text(text)
    path.chmod(0o600)


def test_a_quick_doctor_takes_an_untouched_file_as_written_and_the_full_one_renders_it(home):
    _cmem(home, "add", "-t", "Pool size is twenty", "-p", "api")
    path = _file_of(home, "pool-size")
    relpath = path.relative_to(home / "export").as_posix()
    _written_a_minute_ago(home, path, relpath)
    db = apsw.Connection(str(home / "cmem.db"))  # the row changes, its file is not rewritten
    db.execute("UPDATE observations SET title = 'Pool size is thirty'")
    db.close()

    code, report = _doctor(home)
    assert (code, report["full"]) == (0, False)
    assert _checks(report)["changed files"]["status"] == "ok"

    code, report = _doctor(home, "--full")
    assert (code, report["full"]) == (1, True)
    assert _checks(report)["changed files"]["paths"] == [relpath]


def test_a_same_size_edit_just_after_cmem_wrote_the_file_is_still_seen(home):
    _cmem(home, "add", "-t", "Quick", "-p", "web", "--narrative", "aaaa")
    path = _file_of(home, "quick")
    before = path.stat()
    _write(path, path.read_text().replace("aaaa", "bbbb"))
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))  # same size, same mtime: only the bytes

    code, report = _doctor(home)
    assert code == 1
    assert _checks(report)["changed, to adopt"]["paths"] == [path.relative_to(home / "export").as_posix()]


def _written_a_minute_ago(home: Path, path: Path, relpath: str) -> None:
    """Age a file and cmem's record of it alike, past the window in which a same-size edit could hide."""
    stamp = time.time_ns() - 60 * 10**9
    os.utime(path, ns=(stamp, stamp))
    db = apsw.Connection(str(home / "cmem.db"))
    db.execute("UPDATE export_files SET mtime_ns = ? WHERE path = ?", (stamp, relpath))
    db.close()


def test_a_quick_doctor_finds_missing_edited_and_new_files(home):
    for title in ("Gone file", "Edited by hand", "Left alone"):
        _cmem(home, "add", "-t", title, "-p", "web")
    export = home / "export"
    gone = _file_of(home, "gone-file")
    gone.unlink()
    edited = _file_of(home, "edited-by-hand")
    _write(edited, edited.read_text() + "\nOne more line.\n")
    _write(export / "web" / "new-note.md", "# A new note\n\nadoptable\n")

    code, report = _doctor(home)
    checks = _checks(report)
    assert code == 1 and report["full"] is False
    assert checks["missing files"]["paths"] == [gone.relative_to(export).as_posix()]
    assert checks["changed, to adopt"]["paths"] == [edited.relative_to(export).as_posix()]
    assert checks["new files, to adopt"]["paths"] == ["web/new-note.md"]
    assert checks["changed files"]["status"] == "ok"

    code, report = _doctor(home, "--fix")  # --fix checks in full, then repairs
    assert report["full"] is True
    assert _checks(report)["missing files"]["status"] == "fixed"
    code, report = _doctor(home)
    assert code == 0, report


def test_a_quick_doctor_reads_each_file_once_and_still_finds_loose_modes(home):
    """The quick check's one ``lstat`` a file serves both its stat comparison and the check of private
    modes: an aged file of cmem's made 0644 and a new note made 0644 are both listed."""
    _cmem(home, "add", "-t", "Shared by mistake", "-p", "web")
    path = _file_of(home, "shared-by-mistake")
    relpath = path.relative_to(home / "export").as_posix()
    _written_a_minute_ago(home, path, relpath)
    path.chmod(0o644)
    note = home / "export" / "web" / "open-note.md"
    note.write_text("# An open note\n")
    note.chmod(0o644)

    code, report = _doctor(home)
    assert code == 1 and report["full"] is False
    assert _checks(report)["private modes"]["paths"] == [f"export/{relpath}", "export/web/open-note.md"]
    assert _checks(report)["changed, to adopt"]["status"] == "ok"  # a mode is no edit
