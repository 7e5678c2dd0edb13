"""A pulled `.gitignore` that matches memory files never stops a member's memories from being shared
(issue 42, item 3): cmem stages exactly the files it wrote whatever any `.gitignore` says. Through the real
CLI, with two homes, a bare repository and a teammate's plain git clone.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.sync_helpers import Machine, a_test_s_environment, bare_repo, copy_machines, git_in


def push_ignore_rules(url: str, tmp_path: Path, files: dict[str, str]) -> None:
    clone = tmp_path / "teammate"
    subprocess.run(["git", "clone", "-q", url, str(clone)], check=True, capture_output=True)
    for relpath, text in files.items():
        (clone / relpath).parent.mkdir(parents=True, exist_ok=True)
        (clone / relpath).write_text(text)
    for args in (
        ["add", "-A", "-f"],
        ["commit", "-q", "-m", "ignore"],
        ["push", "-q", "origin", "HEAD:main"],
    ):
        subprocess.run(
            ["git", "-c", "user.name=T", "-c", "user.email=t@example.com", *args],
            cwd=clone, check=True, capture_output=True,
        )  # fmt: skip


@pytest.fixture(scope="module")
def pair(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Homes ``a`` (one memory) and ``b`` synced through one bare repository, made once a module; each test
    copies them."""
    root = tmp_path_factory.mktemp("pair")
    with a_test_s_environment(root):
        url = bare_repo(root / "team.git")
        a, b = Machine(root / "a", None), Machine(root / "b", None)
        a.add("Before the rules")
        a.sync(url)
        b.sync(url)
    return root


@pytest.mark.parametrize(
    "rules",
    [
        {".gitignore": "*\n"},
        {".gitignore": "*.md\n"},
        {"web/.gitignore": "*\n"},
        {".gitignore": "web/\n"},
    ],
)
def test_new_memories_are_shared_whatever_a_pulled_gitignore_says(tmp_path, home, capsys, rules, pair):
    copy_machines(pair, tmp_path)
    url = str(tmp_path / "team.git")
    a, b = Machine(tmp_path / "a", capsys), Machine(tmp_path / "b", capsys)
    push_ignore_rules(url, tmp_path, rules)
    a.sync()
    b.sync()
    made = a.add("After the rules")
    report = a.sync()
    assert report["committed"] >= 1 and report["pushed"] is True, report
    assert made["path"] in git_in(a, "ls-files").split()
    b.sync()
    assert made["uid"] in b.by_uid()
    # an edit of an ignored memory travels too, and a forget
    b.ok("edit", str(b.by_uid()[made["uid"]]["id"]), "--title", "Edited after the rules")
    b.sync()
    a.sync()
    assert a.by_uid()[made["uid"]]["title"] == "Edited after the rules"
    a.ok("forget", str(made["id"]), "--yes")
    a.sync()
    b.sync()
    assert made["uid"] not in b.by_uid()
    code, out, _ = a.run("status")
    assert code == 0
