"""A symbolic link committed to the memory repository is never followed, adopted or committed back (issue
42, item 1): a teammate (or a leaked CI token) commits ``web/notes.md -> ~/.aws/credentials`` and every
member's next sync must neither read the target nor push its text. Through the real CLI, with two homes,
a bare repository and a plain git clone in a temporary folder.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from tests.sync_helpers import Machine, bare_repo, git_in, remote_blobs
from tests.watch_helpers import end_watch, start_watch, wait_for_line

SECRET = "aws_secret_access_key = ZZLEAKEDSECRETVALUEZZ"


def teammate(url: str, tmp_path: Path) -> Path:
    clone = tmp_path / "teammate"
    if not clone.exists():
        subprocess.run(["git", "clone", "-q", url, str(clone)], check=True, capture_output=True)
    return clone


def commit_and_push(clone: Path, message: str = "a teammate's commit") -> None:
    for args in (["add", "-A"], ["commit", "-q", "-m", message], ["push", "-q", "origin", "HEAD:main"]):
        subprocess.run(
            ["git", "-c", "user.name=T", "-c", "user.email=t@example.com", *args],
            cwd=clone, check=True, capture_output=True,
        )  # fmt: skip


@pytest.fixture
def secret(tmp_path: Path) -> Path:
    path = tmp_path / "user-home" / ".aws" / "credentials"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"# creds\n\n[default]\n{SECRET}\n")
    return path


@pytest.fixture
def pair(tmp_path: Path, home: Path, capsys: pytest.CaptureFixture[str]) -> tuple[str, Machine, Machine]:
    url = bare_repo(tmp_path / "team.git")
    a, b = Machine(tmp_path / "a", capsys), Machine(tmp_path / "b", capsys)
    a.add("From machine a")
    a.sync(url)
    return url, a, b


def assert_never_leaked(url: str, *machines: Machine) -> None:
    assert "ZZLEAKEDSECRETVALUEZZ" not in remote_blobs(url)
    for machine in machines:
        for row in machine.by_uid().values():
            assert "ZZLEAKEDSECRETVALUEZZ" not in json.dumps(row)
        for path in machine.export.rglob("*"):
            if path.is_file() and not path.is_symlink() and path.stat().st_nlink == 1:  # not planted
                assert "ZZLEAKEDSECRETVALUEZZ" not in path.read_text(errors="replace"), path


def link_mode(url: str, relpath: str) -> str:
    listed = subprocess.run(
        ["git", "--git-dir", url, "ls-tree", "refs/heads/main", relpath], capture_output=True, text=True
    ).stdout
    return listed.split()[0] if listed else ""


def test_a_committed_symlink_is_refused_by_name_never_read_or_pushed_back(pair, tmp_path, secret):
    url, a, b = pair
    clone = teammate(url, tmp_path)
    (clone / "web" / "notes.md").symlink_to(secret)
    (clone / "web" / "nested").mkdir()
    (clone / "web" / "nested" / "deep.md").symlink_to("../../../user-home/.aws/credentials")
    commit_and_push(clone)
    for machine, args in ((a, ("sync", "--json")), (b, ("sync", "init", url, "--json"))):
        code, out, err = machine.run(*args)
        assert code == 4, err
        report = json.loads(out)
        refused = {item["path"]: item["reason"] for item in report["rejected"]}
        assert set(refused) == {"web/notes.md", "web/nested/deep.md"}
        assert all("symbolic link" in reason for reason in refused.values())
        assert "cmem: web/notes.md: " in err and "symbolic link" in err
        assert "Traceback" not in err
        assert_never_leaked(url, machine)
        assert {row["title"] for row in machine.by_uid().values()} == {"From machine a"}
    # the link stays a link in the repository (nothing committed over it), and every later sync says so
    assert link_mode(url, "web/notes.md") == "120000"
    code, _, err = a.run("sync")
    assert code == 4 and "web/notes.md" in err
    # watch's and doctor's whole-tree adoption skip it the same way
    code, out, _ = a.run("doctor", "--fix", "--json")
    assert_never_leaked(url, a)
    code, _, _ = a.run("sync")
    assert code == 4
    assert_never_leaked(url, a, b)
    assert link_mode(url, "web/notes.md") == "120000"


def test_a_memory_file_replaced_by_a_symlink_keeps_the_memory_and_reads_nothing(pair, tmp_path, secret):
    url, a, b = pair
    b.sync(url)
    [row] = a.by_uid().values()
    clone = teammate(url, tmp_path)
    target = clone / row["path"]
    target.unlink()
    target.symlink_to(secret)
    commit_and_push(clone, "replace a memory by a link")
    code, out, err = a.run("sync", "--json")
    assert code == 4, err
    assert [item["path"] for item in json.loads(out)["rejected"]] == [row["path"]]
    assert a.by_uid()[row["uid"]]["title"] == "From machine a"  # not forgotten, not replaced
    assert_never_leaked(url, a)
    # doctor --fix adopts the whole tree: the link is not taken for a deleted memory nor followed
    a.run("doctor", "--fix")
    assert row["uid"] in a.by_uid()
    code, _, _ = a.run("sync")
    assert code == 4
    assert_never_leaked(url, a, b)


def test_a_symlink_made_in_the_tree_by_hand_is_never_adopted_or_committed(pair, secret):
    url, a, _ = pair
    (a.export / "web" / "local.md").symlink_to(secret)
    fifo = a.export / "web" / "pipe.md"
    os.mkfifo(fifo)
    code, out, err = a.run("sync", "--json")
    assert code == 4, err
    rejected = {item["path"]: item["reason"] for item in json.loads(out)["rejected"]}
    assert "symbolic link" in rejected["web/local.md"]  # git lists no FIFO: it is never even looked at
    a.run("doctor", "--fix")  # the whole tree's adoption reads neither (a FIFO read would hang here)
    assert_never_leaked(url, a)
    assert "web/local.md" not in git_in(a, "ls-files")
    assert "web/pipe.md" not in git_in(a, "ls-files")


def test_a_hard_link_in_the_tree_to_a_file_elsewhere_is_not_adopted(pair, secret):
    url, a, _ = pair
    os.link(secret, a.export / "web" / "hard.md")
    code, _, err = a.run("sync", "--json")
    assert code == 4 and "web/hard.md" in err and "hard link" in err, err
    assert_never_leaked(url, a)


def test_sync_init_never_reads_a_gitignore_that_is_a_link(tmp_path, home, capsys, secret):
    url = bare_repo(tmp_path / "team.git")
    a = Machine(tmp_path / "a", capsys)
    a.add("From machine a")
    (a.export / ".gitignore").symlink_to(secret)
    code, _, err = a.run("sync", "init", url)
    assert code == 4 and err.count("\n") == 1 and "symbolic link" in err, err
    assert not remote_has_commits(url)  # refused before anything was committed or pushed
    assert (a.export / ".gitignore").is_symlink()  # nothing written over it


def remote_has_commits(url: str) -> bool:
    return subprocess.run(["git", "--git-dir", url, "rev-parse", "-q", "--verify", "HEAD"]).returncode == 0


def test_a_link_checked_out_as_text_under_core_symlinks_false_is_never_adopted(pair, tmp_path, secret):
    """A repository whose config sets ``core.symlinks=false`` gets a committed link as a small text file
    holding the target path: git's index still says mode 120000, and local adoption (watch, sync, doctor
    --fix) refuses it by that mode instead of taking the path for a new memory and committing it back."""
    url, a, _ = pair
    git_in(a, "config", "core.symlinks", "false")
    clone = teammate(url, tmp_path)
    (clone / "web" / "notes.md").symlink_to("../../user-home/.aws/credentials")
    commit_and_push(clone, "a link")
    code, _, err = a.run("sync")
    assert code == 4 and "web/notes.md" in err, err
    planted = a.export / "web" / "notes.md"
    assert planted.is_file() and not planted.is_symlink()  # git wrote the link as a text file
    assert git_in(a, "ls-files", "-s", "web/notes.md").split()[0] == "120000"
    proc, lines, reader = start_watch({**os.environ, "CMEM_HOME": str(a.home)})
    try:
        wait_for_line(proc, lines, "watching")
        planted.write_text(planted.read_text())  # a person's editor saves it: watch adopts what changed
        wait_for_line(proc, lines, "web/notes.md")
    finally:
        said = end_watch(proc, lines, reader)
    assert "web/notes.md: a symbolic link" in said and "cmem: adopted" not in said, said
    for args in (("doctor", "--fix"), ("sync", "--json")):
        code, out, err = a.run(*args)
        assert "Traceback" not in err
    assert code == 4
    refused = {item["path"]: item["reason"] for item in json.loads(out)["rejected"]}
    assert "symbolic link" in refused["web/notes.md"]
    assert not any("user-home" in json.dumps(row) for row in a.by_uid().values())
    assert {row["title"] for row in a.by_uid().values()} == {"From machine a"}
    assert link_mode(url, "web/notes.md") == "120000"  # never committed back as a regular file
