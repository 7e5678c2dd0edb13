"""Whether a git process works in the sync repository: read from /proc, where processes end mid-read."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import pytest

from cmem_cli.services.inbound import sync_repo


def _git_in(folder: Path) -> subprocess.Popen[bytes]:
    """A git process waiting in ``folder`` (a repository), returned once it runs git (not the Python that
    forked it)."""
    subprocess.run(["git", "init", "-q", str(folder)], check=True)
    git = subprocess.Popen(["git", "cat-file", "--batch"], cwd=folder, stdin=subprocess.PIPE)
    deadline = time.monotonic() + 10
    while Path(f"/proc/{git.pid}/comm").read_text().strip() != "git" or git.poll() is not None:
        assert time.monotonic() < deadline, "git never started"
        time.sleep(0.01)
    return git


def test_a_git_ending_while_it_is_looked_at_is_not_a_process_we_cannot_see(tmp_path: Path, monkeypatch):
    """A process that exits between reading its name and its folder answers ESRCH, not ENOENT; it is gone,
    not unreadable, so stale locks are still told from live ones (under load, many gits end every second)."""
    git = _git_in(tmp_path)
    real_readlink = os.readlink

    def ending(path, *args, **kwargs):
        if path == f"/proc/{git.pid}/cwd":
            raise ProcessLookupError(3, "No such process")
        return real_readlink(path, *args, **kwargs)

    try:
        monkeypatch.setattr(sync_repo.os, "readlink", ending)
        assert sync_repo.git_running_in([tmp_path]) is False
    finally:
        git.communicate(b"")


def test_a_git_working_in_the_repository_is_seen(tmp_path: Path):
    git = _git_in(tmp_path)
    try:
        assert sync_repo.git_running_in([tmp_path]) is True
    finally:
        git.communicate(b"")
    assert sync_repo.git_running_in([tmp_path]) is False


@pytest.fixture(autouse=True)
def _proc_exists():
    if not Path("/proc/self").exists():
        pytest.fail("these tests read /proc")
