"""A checkout is read like an archive from a stranger (issue 35): a FIFO where git keeps a ref, packed-refs,
config or a worktree's commondir, a ref symlinked to /dev/zero, a folder symlinked out of the work tree.
`cmem add --read`, `cmem verify` and a PostToolUse hook must each return promptly, and nothing is recorded
for the bad path (docs/truth.md, "What is never read")."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.agent_fixtures import tool_payload
from tests.test_anchors import git

# A hang guard, not a performance target: each command finishes in well under a second when it reads
# nothing it should not; one that blocks on a FIFO never would.
HANG_S = 30


def cmem(*args: str, cwd: Path, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "cmem_cli", *args],
        cwd=cwd,
        input=stdin,
        capture_output=True,
        text=True,
        timeout=HANG_S,
        env=os.environ.copy(),
    )


@pytest.fixture
def repo(tmp_path: Path, home: Path) -> Path:
    root = tmp_path / "app"
    (root / "src").mkdir(parents=True)
    git(root, "init", "-q", "-b", "main")
    (root / "src" / "auth.py").write_text("def login():\n    return True\n")
    git(root, "add", ".")
    git(root, "commit", "-qm", "first")
    git(root, "remote", "add", "origin", "https://example.com/team/app.git")
    return root


def fifo_at(path: Path) -> None:
    path.unlink(missing_ok=True)
    os.mkfifo(path)


def packed_refs_fifo(root: Path) -> Path:
    git(root, "pack-refs", "--all")
    fifo_at(root / ".git" / "packed-refs")
    return root


def linked_worktree_fifo(root: Path) -> Path:
    linked = root.parent / "linked"
    git(root, "worktree", "add", "-q", str(linked), "-b", "side")
    fifo_at(root / ".git" / "worktrees" / "linked" / "commondir")
    return linked


def ref_to_dev_zero(root: Path) -> Path:
    ref = root / ".git" / "refs" / "heads" / "main"
    ref.unlink()
    ref.symlink_to("/dev/zero")
    return root


HOSTILE: dict[str, Callable[[Path], Path]] = {
    "a FIFO at refs/heads/main": lambda root: (fifo_at(root / ".git" / "refs" / "heads" / "main"), root)[1],
    "a FIFO at packed-refs": packed_refs_fifo,
    "a FIFO at config": lambda root: (fifo_at(root / ".git" / "config"), root)[1],
    "a FIFO at a worktree's commondir": linked_worktree_fifo,
    "a ref symlinked to /dev/zero": ref_to_dev_zero,
}


def anchor_of(work: Path, obs: str) -> dict | None:
    got = cmem("get", obs, "--json", cwd=work)
    assert got.returncode == 0, got.stderr
    return json.loads(got.stdout)[0]["anchor"]


@pytest.mark.parametrize("case", sorted(HOSTILE))
def test_add_verify_and_a_hook_return_promptly_on_a_hostile_git_folder(repo, case):
    work = HOSTILE[case](repo)
    added = cmem("add", "Login returns True", "--read", "src/auth.py", cwd=work)
    assert added.returncode == 0, added.stderr
    obs = added.stdout.strip()
    anchor = anchor_of(work, obs)
    if anchor is not None:  # what could be read is kept; the bad file gave nothing
        assert anchor["commit"] is None or len(anchor["commit"]) == 40
    verified = cmem("verify", obs, cwd=work)
    assert verified.returncode in (0, 3), verified.stderr
    assert "Traceback" not in verified.stderr
    read = tool_payload("s-1", work, "Read", {"file_path": str(work / "src" / "auth.py")})
    hooked = cmem("hook", "PostToolUse", cwd=work, stdin=json.dumps(read))
    assert hooked.returncode == 0, hooked.stderr
    listed = cmem("search", "--json", "--order", "oldest", cwd=work)
    assert listed.returncode == 0, listed.stderr
    assert len(json.loads(listed.stdout)) == 2


def test_a_ref_symlinked_to_dev_zero_names_no_commit(repo):
    ref_to_dev_zero(repo)
    added = cmem("add", "Login returns True", "--read", "src/auth.py", cwd=repo)
    assert added.returncode == 0, added.stderr
    anchor = anchor_of(repo, added.stdout.strip())
    assert anchor is not None and anchor["commit"] is None and anchor["branch"] == "main"
    assert [f["path"] for f in anchor["files"]] == ["src/auth.py"]


def test_a_folder_symlinked_out_of_the_work_tree_is_never_read_nor_anchored(repo, tmp_path):
    outside = tmp_path / "dot-aws"
    outside.mkdir()
    (outside / "credentials").write_text("[default]\naws_secret_access_key = abc\n")
    (repo / "conf").symlink_to(outside)
    added = cmem("add", "Where the keys are", "--read", "conf/credentials", "--read", "src/auth.py", cwd=repo)
    assert added.returncode == 0, added.stderr
    obs = added.stdout.strip()
    assert [f["path"] for f in anchor_of(repo, obs)["files"]] == ["src/auth.py"]
    read = tool_payload("s-1", repo, "Read", {"file_path": str(repo / "conf" / "credentials")})
    hooked = cmem("hook", "PostToolUse", cwd=repo, stdin=json.dumps(read))
    assert hooked.returncode == 0, hooked.stderr
    rows = json.loads(cmem("search", "--json", "--session", "s-1", cwd=repo).stdout)
    [row] = rows
    got = anchor_of(repo, str(row["id"]))
    assert got is None or got["files"] == []
    verified = cmem("verify", obs, cwd=repo)
    assert verified.returncode == 0, verified.stderr
    assert [f["path"] for f in anchor_of(repo, obs)["files"]] == ["src/auth.py"]
    export = Path(os.environ["CMEM_HOME"]) / "export"
    anchors = [
        line
        for p in export.rglob("*.md")
        for line in p.read_text().splitlines()
        if line.startswith("anchor: ")
    ]
    assert anchors and not any("credentials" in line for line in anchors)


def test_a_cited_file_above_the_size_limit_is_anchored_by_stat_only(repo):
    big = repo / "data.bin"
    with big.open("wb") as handle:
        handle.truncate(9 << 20)  # larger than worktree.MAX_CITED_BYTES (8 MiB), sparse
    added = cmem("add", "The data file", "--read", "data.bin", cwd=repo)
    assert added.returncode == 0, added.stderr
    obs = added.stdout.strip()
    [record] = json.loads(cmem("get", obs, "--json", cwd=repo).stdout)
    assert record["stale"] == [] and [f["path"] for f in record["anchor"]["files"]] == ["data.bin"]
    with big.open("ab") as handle:
        handle.write(b"x")
    [record] = json.loads(cmem("get", obs, "--json", cwd=repo).stdout)
    assert record["stale"] == ["data.bin"]
