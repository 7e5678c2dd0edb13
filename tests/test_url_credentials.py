"""Every credential in any URL form is hidden wherever a URL is printed (issue 42, item 6): `status`,
`status --json`, `sync --json` and error lines. git stores a URL holding ``#`` or ``;`` quoted in its
config, which cmem read with its quotes and printed whole. One rule for git and team URLs
(``cmem_cli.core.urls``). Through the real CLI, with a home connected to a bare repository whose remote
URL is then set the way a person would (`git remote set-url`).
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.sync_helpers import Machine, a_test_s_environment, bare_repo, copy_machines

# Each holds the marker S3CR in its secret part; 127.0.0.1:1 refuses at once, so a sync fails fast.
SECRET_URLS = [
    "https://bob:pa#S3CRss@127.0.0.1:1/m.git",
    "https://bob:pa;S3CR@127.0.0.1:1/m.git",
    "https://bob:p@S3CR@127.0.0.1:1/m.git",
    "https://bob:p%40S3CR%23x@127.0.0.1:1/m.git",
    "https://bob:pa/S3CR?x#y@127.0.0.1:1/team/m.git",
    'https://bob:p"S3CR\\q@127.0.0.1:1/m.git',
    "https://ghp_S3CRabcdefghijklmnopqrstuv@127.0.0.1:1/m.git",
    "https://S3CRtok@127.0.0.1:1/m.git",
    "https://x-access-token:S3CR@127.0.0.1:1/m.git",
    "https://S3CRxxxxxxxxxxxxxxxxxxxxxx:x-oauth-basic@127.0.0.1:1/m.git",
    "http://bob:S3CR@[::1]:1/m.git",
    "ssh://git:S3CR@127.0.0.1:1/m.git",
    "bob:S3CR@127.0.0.1:m.git",
    "S3CRtokentokentokentoken@127.0.0.1:team/m.git",
]


@pytest.fixture(scope="module")
def connected(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A home with one memory, connected to a bare repository, made once a module (in its folder's
    ``cmem-home``, where the ``home`` fixture puts a test's home)."""
    root = tmp_path_factory.mktemp("connected")
    with a_test_s_environment(root):
        one = Machine(root / "cmem-home", None)
        one.add("Shared through git")
        one.sync(bare_repo(root / "remote.git"))
    return root


@pytest.fixture
def machine(tmp_path: Path, home: Path, capsys: pytest.CaptureFixture[str], connected: Path) -> Machine:
    """This test's copy of the connected home, as its ``home``."""
    copy_machines(connected, tmp_path)
    assert home == tmp_path / "cmem-home"
    return Machine(home, capsys)


def set_url(machine: Machine, url: str) -> None:
    git_dir = machine.home / "sync.git"
    subprocess.run(["git", "--git-dir", str(git_dir), "remote", "set-url", "origin", url], check=True)


@pytest.mark.parametrize("url", SECRET_URLS)
def test_no_printed_url_shows_a_credential(machine: Machine, url: str):
    set_url(machine, url)
    shown = []
    for args in (("status",), ("status", "--json"), ("sync", "--json"), ("sync",), ("doctor", "--json")):
        _, out, err = machine.run(*args)
        shown.append(out + err)
        assert "S3CR" not in out + err, (args, out, err)
    remote = json.loads(machine.ok("status", "--json"))["remote"]["url"]
    assert ("127.0.0.1" in remote or "[::1]" in remote) and "***" in remote, remote


def test_a_url_without_credentials_is_shown_whole(machine: Machine):
    for url in (
        "git@example.com:team/m.git",
        "https://example.com/team/m@v1.git",
        "ssh://git@example.com/m.git",
    ):
        set_url(machine, url)
        assert json.loads(machine.ok("status", "--json"))["remote"]["url"] == url


def test_the_shown_forms_keep_the_host_and_a_plain_user():
    from cmem_cli.cli.guard import unsecret
    from cmem_cli.core.urls import redact_url

    assert redact_url("https://bob:pa#ss;w@rd@example.com/m.git") == "https://bob:***@example.com/m.git"
    assert redact_url("https://TOKEN123@github.com/o/r.git") == "https://***@github.com/o/r.git"
    assert redact_url("bob:pw@host.example:team/m.git") == "bob:***@host.example:team/m.git"
    assert redact_url("git@github.com:o/r.git") == "git@github.com:o/r.git"
    assert redact_url("postgresql://alice:p@ss/w?rd@db.example.com/memory") == (
        "postgresql://alice:***@db.example.com/memory"
    )
    line = unsecret("fatal: unable to access 'https://bob:pa#ss@example.com/m.git/': could not resolve host")
    assert "pa#ss" not in line and "https://bob:***@example.com/m.git/" in line
