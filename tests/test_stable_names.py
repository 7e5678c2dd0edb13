"""An observation's (and a summary's) file keeps the name it got at creation for its whole life.

A retitle, a project move, a hand edit, an adoption, a rebuild of the export or of a lost store never
renames or moves it: the name is stored in the row, and everything that needs a path reads it there.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

from tests.sync_helpers import Machine, bare_repo


def _md_files(home: Path) -> list[str]:
    root = home / "export"
    return sorted(p.relative_to(root).as_posix() for p in root.rglob("*.md"))


def _get(cli, ident: str) -> dict:
    return cli("get", ident, "--json").json()[0]


def test_cmem_edit_of_title_and_project_keeps_the_file_name(cli, home):
    assert cli("add", "-t", "First title", "-p", "web", "--narrative", "body").exit_code == 0
    [name] = _md_files(home)
    assert "first-title" in name and name.startswith("web/")
    assert cli("edit", "1", "--title", "A quite different title").exit_code == 0
    assert cli("edit", "1", "--project", "infra").exit_code == 0
    assert _md_files(home) == [name]
    text = (home / "export" / name).read_text()
    assert "# A quite different title" in text and "project: infra" in text
    got = _get(cli, "1")
    assert (got["title"], got["project"]) == ("A quite different title", "infra")
    assert cli("doctor").exit_code == 0


def test_a_hand_retitle_and_a_rebuild_keep_the_file_name(cli, home):
    cli("add", "-t", "Hand edited", "-p", "web")
    cli("summary", "add", "--session", "s1", "-p", "web", "--learned", "cookies expire")
    names = _md_files(home)
    note = home / "export" / next(n for n in names if "hand-edited" in n)
    note.write_text(note.read_text().replace("# Hand edited", "# Renamed by hand"))
    summary = home / "export" / next(n for n in names if "summary" in n)
    summary.write_text(summary.read_text().replace("project: web", "project: moved"))
    assert cli("sync").exit_code == 0
    assert _md_files(home) == names
    assert _get(cli, "1")["title"] == "Renamed by hand"
    assert _get(cli, "S1")["project"] == "moved"
    assert cli("export", "--rebuild").exit_code == 0
    assert cli("doctor", "--fix").exit_code == 0
    assert _md_files(home) == names
    assert cli("doctor").exit_code == 0


def test_a_store_rebuilt_from_the_export_keeps_every_name(cli, home):
    cli("add", "-t", "Before the retitle", "-p", "web")
    cli("edit", "1", "--title", "After the retitle")
    names = _md_files(home)
    assert "before-the-retitle" in names[0]
    for suffix in ("", "-wal", "-shm"):
        (home / f"cmem.db{suffix}").unlink(missing_ok=True)
    assert cli("doctor", "--fix").exit_code == 0
    assert _md_files(home) == names
    assert _get(cli, "1")["title"] == "After the retitle"
    assert cli("doctor").exit_code == 0


def test_a_moved_file_goes_back_to_the_name_it_was_given(cli, home):
    cli("add", "-t", "Original name", "-p", "web")
    cli("edit", "1", "--title", "Retitled since")
    [name] = _md_files(home)
    assert "original-name" in name
    (home / "export" / name).rename(home / "export" / "web" / "elsewhere.md")
    assert cli("sync").exit_code == 0
    assert _md_files(home) == [name]


def test_a_retitle_travels_as_an_edit_of_the_same_file(home, tmp_path, capsys):
    url = bare_repo(tmp_path / "team.git")
    a, b = Machine(tmp_path / "a", capsys), Machine(tmp_path / "b", capsys)
    first = a.add("Login uses JWT")
    a.sync(url)
    b.sync(url)
    path = a.by_uid()[first["uid"]]["path"]
    a.ok("edit", str(first["id"]), "--title", "Login uses JWT with refresh", "--project", "api")
    a.sync()
    b.sync()
    assert b.by_uid()[first["uid"]]["path"] == path
    assert b.by_uid()[first["uid"]]["title"] == "Login uses JWT with refresh"
    log = subprocess.run(
        ["git", "log", "--format=", "--name-status", "--no-renames"],
        cwd=a.export,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert [line for line in log.splitlines() if line.startswith("D")] == []
