"""Killing `cmem sync` after a chosen git step: a ``git`` wrapper first on PATH that runs the real git,
counts and logs each call, and kills its parent (the cmem process) with SIGKILL after the Nth; it can also
run a shell snippet after a given subcommand (a person saving a file mid-sync)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

WRAPPER = """#!/bin/sh
ctl='{ctl}'
sub=
skip=
for a in "$@"; do
  if [ -n "$skip" ]; then skip=; continue; fi
  case "$a" in
    -c) skip=1 ;;
    -*) ;;
    *) sub=$a; break ;;
  esac
done
'{git}' "$@"
rc=$?
if [ -f "$ctl/armed" ]; then
  n=$(( $(cat "$ctl/count" 2>/dev/null || echo 0) + 1 ))
  echo $n > "$ctl/count"
  echo "$n $sub $rc" >> "$ctl/log"
  if [ -f "$ctl/after-$sub" ]; then sh "$ctl/after-$sub"; fi
  if [ "$(cat "$ctl/kill-at" 2>/dev/null)" = "$n" ]; then kill -9 $PPID; fi
fi
exit $rc
"""


class GitWrapper:
    def __init__(self, folder: Path):
        self.bin = folder / "bin"
        self.ctl = folder / "ctl"
        self.bin.mkdir(parents=True)
        self.ctl.mkdir()
        real = shutil.which("git")
        assert real is not None
        script = self.bin / "git"
        script.write_text(WRAPPER.format(ctl=self.ctl, git=real))
        script.chmod(0o755)

    def arm(self, *, kill_at: int | None = None, after: dict[str, str] | None = None) -> None:
        """Count (and log) the next process's git calls; kill it after call ``kill_at``; after each
        subcommand named in ``after``, run its shell snippet."""
        for child in self.ctl.iterdir():
            child.unlink()
        (self.ctl / "armed").write_text("")
        if kill_at is not None:
            (self.ctl / "kill-at").write_text(str(kill_at))
        for sub, snippet in (after or {}).items():
            (self.ctl / f"after-{sub}").write_text(snippet)

    def calls(self) -> list[str]:
        """The subcommands called since :meth:`arm`, in order."""
        log = self.ctl / "log"
        return [line.split()[1] for line in log.read_text().splitlines()] if log.exists() else []

    def run(self, home: Path, *args: str) -> subprocess.CompletedProcess[str]:
        """``cmem --home HOME ARGS`` as its own process, with the wrapper first on PATH."""
        env = {**os.environ, "PATH": f"{self.bin}{os.pathsep}{os.environ['PATH']}"}
        return subprocess.run(
            [sys.executable, "-m", "cmem_cli", "--home", str(home), *args],
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )


def copy_world(source: Path, target: Path, homes: list[str], remote: str = "team.git") -> None:
    """Copy homes and the bare remote, and point each copied home's repository at the copied remote."""
    for name in [*homes, remote]:
        shutil.copytree(source / name, target / name, symlinks=True)
    for name in homes:
        for config in (target / name / "sync.git" / "config", target / name / "export" / ".git" / "config"):
            if not config.exists():
                continue
            subprocess.run(
                ["git", "config", "--file", str(config), "remote.origin.url", str(target / remote)],
                check=True,
            )


def report_of(proc: subprocess.CompletedProcess[str]) -> dict[str, Any]:
    return json.loads(proc.stdout)
