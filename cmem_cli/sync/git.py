"""Running git for `cmem sync`: a subprocess with a fixed environment, failures as one-line errors.

The user's and the system's git configuration are ignored (no pager, editor, signing or hook surprises
from cron), prompts are off (a remote that wants a password fails instead of hanging), cmem's commits
carry a fixed author, and every file git creates is private (umask 077).
"""

from __future__ import annotations

import os
import socket
import subprocess
from pathlib import Path

from cmem_cli.core.errors import SyncError

# Options every git call gets: they override anything a repository's own config might say.
FIXED_OPTIONS = (
    "-c", "core.quotepath=false",
    "-c", "core.autocrlf=false",
    "-c", "core.hooksPath=/dev/null",
    "-c", "commit.gpgsign=false",
    "-c", "gc.auto=0",
    "-c", "advice.detachedHead=false",
    "-c", "init.defaultBranch=main",
)  # fmt: skip
PASSED_THROUGH = ("PATH", "HOME", "SSH_AUTH_SOCK", "GIT_SSH_COMMAND", "TMPDIR", "SYSTEMROOT")


def git_environment() -> dict[str, str]:
    """The whole environment git runs with: nothing from the caller but what reaching a remote needs."""
    env = {name: os.environ[name] for name in PASSED_THROUGH if name in os.environ}
    author = os.environ.get("CMEM_SYNC_AUTHOR") or f"cmem on {socket.gethostname() or 'localhost'}"
    email = os.environ.get("CMEM_SYNC_EMAIL") or "cmem@localhost"
    env.update(
        GIT_CONFIG_NOSYSTEM="1",
        GIT_CONFIG_GLOBAL=os.devnull,
        GIT_TERMINAL_PROMPT="0",
        GIT_ASKPASS="true",
        SSH_ASKPASS="true",
        GIT_PAGER="cat",
        PAGER="cat",
        GIT_EDITOR="true",
        GIT_MERGE_AUTOEDIT="no",
        GIT_AUTHOR_NAME=author,
        GIT_AUTHOR_EMAIL=email,
        GIT_COMMITTER_NAME=author,
        GIT_COMMITTER_EMAIL=email,
        LC_ALL="C",
    )
    return env


class Git:
    """git commands run in one working tree."""

    def __init__(self, root: Path):
        self.root = root
        self.env = git_environment()

    def run(
        self, *args: str, check: bool = True, input: bytes | None = None, what: str | None = None
    ) -> subprocess.CompletedProcess[bytes]:
        """Run ``git ARGS``; a failure (when ``check``) raises SyncError naming what failed in one line."""
        try:
            proc = subprocess.run(
                ["git", *FIXED_OPTIONS, *args],
                cwd=self.root,
                env=self.env,
                input=input,
                stdin=None if input is not None else subprocess.DEVNULL,
                capture_output=True,
                umask=0o077,
                check=False,
            )
        except FileNotFoundError:
            raise SyncError("git is not installed (cmem sync needs git on PATH)") from None
        if check and proc.returncode != 0:
            raise SyncError(f"{what or 'git ' + args[0]} failed: {last_line(proc.stderr or proc.stdout)}")
        return proc

    def text(self, *args: str, what: str | None = None) -> str:
        return self.run(*args, what=what).stdout.decode("utf-8", "replace")

    def ok(self, *args: str) -> bool:
        return self.run(*args, check=False).returncode == 0

    def z_list(self, *args: str) -> list[str]:
        """Output of a ``-z`` command, split on NUL."""
        return [item for item in self.text(*args).split("\0") if item]


def last_line(output: bytes) -> str:
    """The most telling line of git's output (its last non-empty one), with the ``fatal:`` prefix dropped."""
    lines = [line.strip() for line in output.decode("utf-8", "replace").splitlines() if line.strip()]
    if not lines:
        return "no message from git"
    for prefix in ("fatal: ", "error: "):
        for line in lines:
            if line.startswith(prefix):
                return line[len(prefix) :]
    return lines[-1]
