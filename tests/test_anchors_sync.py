"""Code anchors travel with git sync: a memory's file carries its anchor (the repository by its name on
every machine, branch, commit, blob ids by repository-relative path, times; never the folder it lives in),
so a machine with a clone of the same repository, wherever it lives, says correctly whether the memory is
stale; a machine without the repository says nothing (null)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.sync_helpers import Machine, bare_repo, remote_history
from tests.test_anchors import git


@pytest.fixture
def clones(tmp_path: Path) -> tuple[Path, Path]:
    return two_clones(tmp_path)


def two_clones(tmp_path: Path) -> tuple[Path, Path]:
    """Two clones of one code repository at different paths, their origin written two ways (one with
    credentials): both name the repository example.com/team/app."""
    origin = tmp_path / "code.git"
    git(tmp_path, "init", "-q", "--bare", "-b", "main", str(origin))
    first = tmp_path / "laptop" / "app"
    git(tmp_path, "clone", "-q", str(origin), str(first))
    (first / "src").mkdir()
    (first / "src" / "auth.py").write_text("def login():\n    return True\n")
    (first / "src" / "db.py").write_text("POOL = 4\n")
    git(first, "add", ".")
    git(first, "commit", "-qm", "first")
    git(first, "push", "-q", "origin", "main")
    second = tmp_path / "desktop" / "work" / "app-clone"
    git(tmp_path, "clone", "-q", str(origin), str(second))
    git(first, "remote", "set-url", "origin", "https://dev:s3cr3t-token@example.com/team/app.git")
    git(second, "remote", "set-url", "origin", "git@example.com:team/app")
    return first, second


def row_of(machine: Machine, uid: str) -> dict:
    rows = json.loads(machine.ok("search", "--json", "-n", "0", "--all-projects"))  # memories filed as "web"
    [row] = [r for r in rows if r["uid"] == uid]
    return row


def anchor_of(machine: Machine, uid: str) -> dict:
    [record] = json.loads(machine.ok("get", uid, "--json"))
    return record["anchor"]


def test_anchors_travel_with_git_sync_to_a_clone_elsewhere(tmp_path, home, capsys, monkeypatch, clones):
    first, second = clones
    url = bare_repo(tmp_path / "memories.git")
    laptop, desktop, server = (
        Machine(tmp_path / name, capsys) for name in ("laptop-home", "desktop-home", "srv")
    )
    plain = tmp_path / "plain"
    plain.mkdir()

    monkeypatch.chdir(first)
    uid = laptop.add("Login returns a bool", "--read", "src/auth.py", "--modified", "src/db.py")["uid"]
    laptop.sync(url)
    text = laptop.file_of(uid).read_text()
    front = next(line for line in text.splitlines() if line.startswith("anchor: "))
    anchor = json.loads(front[len("anchor: ") :])
    assert anchor["repo"] == "example.com/team/app" and anchor["branch"] == "main"
    assert anchor["commit"] == git(first, "rev-parse", "HEAD")
    assert sorted(anchor["files"]) == ["src/auth.py", "src/db.py"]
    assert str(first) not in text and str(tmp_path) not in text  # no folder of this machine
    assert "s3cr3t" not in text and "s3cr3t" not in remote_history(url)

    desktop.sync(url)
    server.sync(url)
    monkeypatch.chdir(second)  # the same repository, cloned elsewhere
    assert (row_of(desktop, uid)["stale"], row_of(desktop, uid)["branch"]) == ([], "main")
    (second / "src" / "auth.py").write_text("def login():\n    return check()\n")
    assert row_of(desktop, uid)["stale"] == ["src/auth.py"]
    assert anchor_of(desktop, uid)["present"] is True
    assert row_of(laptop, uid)["stale"] == []  # the laptop's own clone did not change

    monkeypatch.chdir(plain)  # no clone here to compare with: unknown, not "vanished"
    assert (row_of(server, uid)["stale"], row_of(server, uid)["branch"]) == (None, "main")
    assert anchor_of(server, uid)["present"] is False
    assert row_of(laptop, uid)["stale"] == []  # the laptop knows where its own clone lives

    monkeypatch.chdir(second)  # the desktop says the memory holds for the code as it is there now
    assert desktop.ok("verify", uid).startswith(str(row_of(desktop, uid)["id"]) + "\tverified")
    assert row_of(desktop, uid)["stale"] == []
    desktop.sync()
    laptop.sync()
    monkeypatch.chdir(plain)
    verified = anchor_of(laptop, uid)
    assert verified["verified_at"] == anchor_of(desktop, uid)["verified_at"] is not None
    assert verified["root"] == str(first)  # the laptop's clone is still where the anchor looks
    assert row_of(laptop, uid)["stale"] == ["src/auth.py"]  # anchored now to the desktop's auth.py
    report = laptop.sync()
    assert (report["committed"], report["adopted"]) == (0, 0)  # both machines write the same file


def test_a_file_whose_anchor_leaves_the_repository_is_adopted_without_it(
    tmp_path, home, capsys, monkeypatch, clones
):
    """A hand-edited anchor naming a path out of the repository is never followed: the store keeps its
    own anchor, and the file is written back with it."""
    first, _ = clones
    machine = Machine(tmp_path / "home-a", capsys)
    monkeypatch.chdir(first)
    uid = machine.add("Login returns a bool", "--read", "src/auth.py")["uid"]
    path = machine.file_of(uid)
    original = path.read_text()
    [line] = [line for line in original.splitlines() if line.startswith("anchor: ")]
    hostile_line = line.replace('"src/auth.py"', '"../../../etc/passwd"')
    assert hostile_line != line
    hostile = original.replace(line, hostile_line).replace(
        "# Login returns a bool", "# Login returns a bool, edited"
    )
    path.write_text(hostile)
    report = json.loads(machine.ok("sync", "--json"))
    assert len(report["adopted"]) == 1
    assert machine.by_uid()[uid]["title"] == "Login returns a bool, edited"
    assert [f["path"] for f in anchor_of(machine, uid)["files"]] == ["src/auth.py"]
    assert "etc/passwd" not in path.read_text() and line in path.read_text()
