"""A file pulled under a new path with an existing memory's uid never silently replaces that memory (issue
42, item 2): copying a memory's file to start a new one and committing it with plain git made the copy
take over the memory on every home (title, narrative and key overwritten, the original file deleted and
the deletion pushed, nothing told). Two files with one uid follow the one merge rule: the later edit
keeps the uid, the other is kept as a conflict copy with a derived uid, and both are told.
Through the real CLI, with two homes, a bare repository and a teammate's plain git clone.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from tests.sync_helpers import Machine, bare_repo, git_in


def clone_of(url: str, tmp_path: Path) -> Path:
    clone = tmp_path / "teammate"
    if clone.exists():
        subprocess.run(["git", "pull", "-q"], cwd=clone, check=True, capture_output=True)
    else:
        subprocess.run(["git", "clone", "-q", url, str(clone)], check=True, capture_output=True)
    return clone


def commit_and_push(clone: Path) -> None:
    for args in (["add", "-A"], ["commit", "-q", "-m", "plain git"], ["push", "-q", "origin", "HEAD:main"]):
        subprocess.run(
            ["git", "-c", "user.name=T", "-c", "user.email=t@example.com", *args],
            cwd=clone, check=True, capture_output=True,
        )  # fmt: skip


@pytest.fixture
def team(tmp_path: Path, home: Path, capsys: pytest.CaptureFixture[str]):
    url = bare_repo(tmp_path / "team.git")
    a, b = Machine(tmp_path / "a", capsys), Machine(tmp_path / "b", capsys)
    row = a.add("Original decision", "--narrative", "the original text", "--key", "auth-choice")
    a.sync(url)
    b.sync(url)
    return url, a, b, row


def copy_as_new(
    url: str, tmp_path: Path, relpath: str, new_relpath: str, *, updated: str | None = None
) -> None:
    """What a teammate does: copy a memory's file, change its title and narrative, commit with plain git."""
    clone = clone_of(url, tmp_path)
    text = (clone / relpath).read_text()
    text = text.replace("Original decision", "A new decision").replace("the original text", "the new text")
    if updated is not None:
        text = re.sub(r"(?m)^updated_at: .*$", f"updated_at: {updated}", text)
    (clone / new_relpath).write_text(text)
    commit_and_push(clone)


def test_a_copied_file_with_the_same_uid_keeps_both_memories_and_tells(team, tmp_path):
    url, a, b, row = team
    copy_as_new(url, tmp_path, row["path"], "web/new-decision.md")
    for machine in (a, b):
        report = machine.sync()
        rows = machine.by_uid()
        kept = rows[row["uid"]]
        assert kept["title"] == "Original decision" and kept["narrative"] == "the original text"
        assert kept["key"] == "auth-choice"
        [copy] = [r for uid, r in rows.items() if uid != row["uid"]]
        assert copy["title"].startswith("A new decision") and copy["narrative"] == "the new text"
        assert (machine.export / kept["path"]).is_file() and (machine.export / copy["path"]).is_file()
        assert report["conflicts"], report  # told, not silent
    a.sync()
    b.sync()
    assert set(a.by_uid()) == set(b.by_uid())
    tracked = git_in(a, "ls-files").split()
    assert row["path"] in tracked  # the original's file was never deleted from the repository


def test_the_later_edit_keeps_the_uid_and_the_earlier_is_kept_as_a_copy(team, tmp_path):
    url, a, b, row = team
    copy_as_new(url, tmp_path, row["path"], "web/new-decision.md", updated="2099-01-01T00:00:00.000Z")
    report = a.sync()
    rows = a.by_uid()
    assert rows[row["uid"]]["title"] == "A new decision"
    [copy] = [r for uid, r in rows.items() if uid != row["uid"]]
    assert copy["narrative"] == "the original text" and "(conflict copy)" in copy["title"]
    assert any(c.get("copy_uid") == copy["uid"] for c in report["conflicts"])
    b.sync()
    a.sync()
    assert {r["narrative"] for r in b.by_uid().values()} == {"the original text", "the new text"}
