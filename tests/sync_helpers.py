"""Two (or more) cmem machines and a bare git repository in a temporary folder, for sync tests."""

from __future__ import annotations

import contextlib
import json
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from cmem_cli.services.inbound.sync_repo import Git
from tests.runner import invoke


class Machine:
    """One cmem home, driven through the real CLI in-process (``--home``)."""

    def __init__(self, home: Path, capsys: Any):
        self.home = home
        self.capsys = capsys

    @property
    def export(self) -> Path:
        return self.home / "export"

    def run(self, *args: str) -> tuple[int, str, str]:
        """``cmem --home HOME ARGS`` in this process (tests/runner.py): its exit code, stdout, stderr."""
        result = invoke("--home", str(self.home), *args)
        return result.exit_code, result.stdout, result.stderr

    def ok(self, *args: str) -> str:
        code, out, err = self.run(*args)
        assert code == 0, (args, code, err)
        return out

    def add(self, title: str, *extra: str) -> dict[str, Any]:
        obs_id = int(self.ok("add", "--title", title, "--project", "web", *extra).split()[0])
        return next(row for row in self.by_uid().values() if row["id"] == obs_id)

    def sync(self, url: str | None = None) -> dict[str, Any]:
        args = ("sync", "init", url, "--json") if url else ("sync", "--json")
        return json.loads(self.ok(*args))

    def by_uid(self) -> dict[str, dict[str, Any]]:
        from cmem_cli.core.config import load_config
        from cmem_cli.services.write.service import WriteService

        with WriteService.open(load_config(self.home)) as memory:
            ids = memory.store.observations.all_ids()
            return {row["uid"]: row for row in (memory.store.observations.get(i) for i in ids)}

    def links(self, obs_id: int) -> list[dict[str, Any]]:
        from cmem_cli.core.config import load_config
        from cmem_cli.services.write.service import WriteService

        with WriteService.open(load_config(self.home)) as memory:
            return memory.store.links.outgoing(obs_id)

    def links_to(self, obs_id: int) -> list[dict[str, Any]]:
        from cmem_cli.core.config import load_config
        from cmem_cli.services.write.service import WriteService

        with WriteService.open(load_config(self.home)) as memory:
            return memory.store.links.incoming(obs_id)

    def file_of(self, uid: str) -> Path:
        return self.export / self.by_uid()[uid]["path"]


def bare_repo(path: Path) -> str:
    subprocess.run(["git", "init", "-q", "--bare", "-b", "main", str(path)], check=True)
    return str(path)


def refuse_pushes(url: str, message: str = "push refused by policy") -> Path:
    """Make the bare repository at ``url`` refuse every push (a server-side policy); unlink the hook to
    open it again."""
    hook = Path(url) / "hooks" / "pre-receive"
    hook.write_text(f"#!/bin/sh\necho '{message}' >&2\nexit 1\n")
    hook.chmod(0o755)
    return hook


def remote_history(url: str) -> str:
    """Every change ever pushed to the remote, as one text (``git log -p`` of all refs)."""
    return Git(Path(url)).text("log", "-p", "--all", "--format=%H %s")


def remote_head(url: str) -> str:
    return Git(Path(url)).text("rev-parse", "refs/heads/main").strip()


def all_text(root: Path) -> str:
    return "\n".join(p.read_text(encoding="utf-8", errors="replace") for p in sorted(root.rglob("*.md")))


def remote_blobs(url: str) -> str:
    """Every blob ever pushed to the remote (all objects reachable from any ref), as one text."""
    git = Git(Path(url))
    listed = git.text("rev-list", "--objects", "--all")
    shas = [line.split()[0] for line in listed.splitlines() if line.strip()]
    batch = git.run("cat-file", "--batch", input=("\n".join(shas) + "\n").encode()).stdout
    return batch.decode("utf-8", "replace")


def git_in(machine: Machine, *args: str) -> str:
    """A plain git command in a machine's export tree, as a person would run it there."""
    proc = subprocess.run(["git", *args], cwd=machine.export, capture_output=True, text=True, check=True)
    return proc.stdout


# -- a module's machines, made once and copied into each test's folder ----------------------------------
@contextlib.contextmanager
def a_test_s_environment(root: Path) -> Iterator[None]:
    """The environment the ``home`` fixture gives a test (tests/conftest.py), with its folders under
    ``root``: for a module-scoped fixture that makes machines once, where ``home`` (per test) is not at hand."""
    from tests.conftest import USER_SETTINGS, private_env

    with pytest.MonkeyPatch.context() as patch:
        for name in USER_SETTINGS:
            patch.delenv(name, raising=False)
        for name, value in private_env(root).items():
            patch.setenv(name, value)
        patch.chdir(root)
        yield


def copy_machines(template: Path, dest: Path) -> None:
    """Copy the machines and bare repositories made under ``template`` into ``dest``, with each machine's
    remote pointed at the copy of its repository: what making them again there (a git process per step,
    about half a second of syncs) would give. Only a machine's git configuration and FETCH_HEAD name a
    path; the store and the files name none."""
    shutil.copytree(template, dest, symlinks=True, dirs_exist_ok=True)
    for name in ("config", "FETCH_HEAD"):
        for path in dest.glob(f"*/sync.git/{name}"):
            path.write_text(path.read_text().replace(str(template), str(dest)))
