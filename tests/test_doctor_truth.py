"""`cmem doctor` tells the truth: it lists every file it cannot adopt, with exit 4 until the file is fixed
or removed; `--fix` says "fixed" only for what it fixed; the next `doctor` after a `--fix` shows exactly
what that `--fix` left. A person's own file in the export root (no memory front matter) is left alone."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.runner import Result, invoke


def _cmem(home: Path, *args: str) -> Result:
    """`cmem ARGS` over ``home``, in this process (tests/runner.py)."""
    return invoke(*args, env={"CMEM_HOME": str(home)})


def _doctor(home: Path, *args: str) -> tuple[int, dict[str, dict[str, Any]]]:
    result = _cmem(home, "doctor", "--json", *args)
    assert "internal error" not in result.stderr, result.stderr
    return result.returncode, {c["name"]: c for c in json.loads(result.stdout)["checks"]}


def _file_of(home: Path, needle: str) -> Path:
    return next(p for p in (home / "export").rglob("*.md") if needle in p.name)


def _write(path: Path, text: str) -> None:
    """Write as cmem would (0600), so doctor's check of private modes stays out of these tests."""
    path.write_text(text)
    path.chmod(0o600)


def _failing(checks: dict[str, dict[str, Any]]) -> set[str]:
    return {name for name, check in checks.items() if check["status"] == "fail"}


def test_doctor_lists_every_file_it_cannot_adopt_until_it_is_fixed_or_removed(home):
    _cmem(home, "add", "-t", "Edited by hand", "-p", "web")
    _cmem(home, "add", "-t", "Left alone", "-p", "web")
    edited = _file_of(home, "edited-by-hand")
    _write(edited, edited.read_text() + "\nOne more line.\n")
    export = home / "export"
    _write(export / "web" / "new-note.md", "# A new note\n\nadoptable\n")
    _write(export / "web" / "bad-type.md", "---\ncmem: observation\ntype: banana\n---\n# Bad\n")
    _write(export / "claims.md", "---\ncmem: observation\n---\n# In the root, of no project\n")
    _write(export / "TEAM.md", "# The team\n\nthe user's own page in the export root\n")

    code, checks = _doctor(home)
    assert code == 1
    not_adopted = checks["files not adopted"]
    assert not_adopted["paths"] == ["claims.md", "web/bad-type.md"]
    assert "outside any project folder" in not_adopted["reasons"][0]
    assert "unknown type 'banana'" in not_adopted["reasons"][1]
    assert checks["new files, to adopt"]["paths"] == ["web/new-note.md"]  # each file listed once
    assert checks["changed, to adopt"]["paths"] == [edited.relative_to(export).as_posix()]
    assert "TEAM.md" not in json.dumps(checks)  # the user's own file: not an error, not a memory

    code, checks = _doctor(home, "--fix")
    assert code == 4  # only the files it cannot adopt are left
    assert checks["changed, to adopt"]["status"] == "fixed"
    assert checks["new files, to adopt"]["status"] == "fixed"
    assert checks["new files, to adopt"]["paths"] == ["web/new-note.md"]
    assert checks["files not adopted"]["status"] == "fail"
    assert _failing(checks) == {"files not adopted"}

    code, checks = _doctor(home)  # the next doctor shows what --fix left, and only that
    assert code == 4 and _failing(checks) == {"files not adopted"}
    assert checks["files not adopted"]["paths"] == ["claims.md", "web/bad-type.md"]
    assert {c["status"] for n, c in checks.items() if n != "files not adopted"} == {"ok"}

    (export / "claims.md").unlink()
    bad = export / "web" / "bad-type.md"
    _write(bad, bad.read_text().replace("banana", "decision"))
    code, checks = _doctor(home, "--fix")
    assert code == 0 and checks["new files, to adopt"]["status"] == "fixed"
    code, checks = _doctor(home)
    assert code == 0 and {c["status"] for c in checks.values()} == {"ok"}
    assert (export / "TEAM.md").read_text() == "# The team\n\nthe user's own page in the export root\n"
    assert _cmem(home, "sync").returncode == 0  # sync ignores it too


def test_a_duplicate_of_a_memory_file_is_listed_and_never_reported_fixed(home):
    _cmem(home, "add", "-t", "Only one memory", "-p", "web")
    original = _file_of(home, "only-one-memory")
    duplicate = original.with_name("copy-of-it.md")
    _write(duplicate, original.read_text().replace("# Only one memory", "# Only one memory, edited"))

    code, checks = _doctor(home)
    assert code == 4
    relpath = original.relative_to(home / "export").as_posix()
    assert checks["files not adopted"]["paths"] == [duplicate.relative_to(home / "export").as_posix()]
    assert f"same uid as {relpath}" in checks["files not adopted"]["reasons"][0]
    code, checks = _doctor(home, "--fix")
    assert code == 4 and "fixed" not in {c["status"] for c in checks.values()}
    assert duplicate.exists() and original.exists()
    sync = _cmem(home, "sync")
    assert sync.returncode == 4 and f"same uid as {relpath}" in sync.stderr


def test_a_copy_of_a_forgotten_memory_is_never_brought_back(home):
    _cmem(home, "add", "-t", "Soon forgotten", "-p", "web")
    original = _file_of(home, "soon-forgotten")
    copy = original.with_name("backup-of-it.md")
    _write(copy, original.read_text())  # an editor's backup, a second file of the same memory
    assert _cmem(home, "forget", "--yes", "1").returncode == 0
    assert not original.exists()

    for args in (("doctor", "--fix"), ("doctor",)):
        code, checks = _doctor(home, *args[1:])
        assert code == 4 and _failing(checks) == {"files not adopted"}
        assert "forgotten here on" in checks["files not adopted"]["reasons"][0]
    sync = _cmem(home, "sync")
    assert sync.returncode == 4 and "backup-of-it.md: a copy of memory" in sync.stderr
    assert json.loads(_cmem(home, "search", "--json").stdout or "[]") == []

    _write(copy, "\n".join(line for line in copy.read_text().splitlines() if not line.startswith("uid:")))
    code, checks = _doctor(home, "--fix")  # without its uid, the text is a new memory: kept as the user asked
    assert code == 0
    assert [row["title"] for row in json.loads(_cmem(home, "search", "--json").stdout)] == ["Soon forgotten"]
