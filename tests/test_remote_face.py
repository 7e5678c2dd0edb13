"""One face for remotes (issue 46, item 1): `Memory.remote` drives git and a team database the same way
and returns one typed SyncReport, whose `to_json()` is what `cmem sync --json` has always printed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cmem_cli.api import Memory, SyncReport, UsageError
from cmem_cli.core.errors import SyncError
from tests.sync_helpers import Machine, bare_repo, refuse_pushes

GIT_KEYS = [
    "kind", "remote", "adopted", "pulled", "forgotten", "conflicts", "rejected", "notes", "queued",
    "committed", "pushed", "ok", "exit_code", "error",
]  # fmt: skip


@pytest.fixture
def connected(tmp_path: Path, home: Path, capsys: pytest.CaptureFixture[str]) -> tuple[str, Machine]:
    url = bare_repo(tmp_path / "team.git")
    a = Machine(tmp_path / "a", capsys)
    a.add("From machine a")
    a.sync(url)
    return url, a


def test_a_home_without_a_remote_has_none(tmp_path: Path, home: Path) -> None:
    with Memory(tmp_path / "alone") as memory:
        assert memory.remote is None


def test_the_git_remote_returns_a_typed_report_printed_as_sync_json_was(connected) -> None:
    url, a = connected
    a.add("A second memory")
    code, out, err = a.run("sync", "--json")
    assert code == 0, err
    assert list(json.loads(out)) == GIT_KEYS  # the documented shape, key for key and in order
    a.add("A third memory")
    with Memory(a.home) as memory:
        remote = memory.remote
        assert remote is not None and remote.kind == "git"
        report = remote.sync()
        status = remote.status()
        assert status is not None and (status.kind, status.url, status.queued) == ("git", url, None)
    assert isinstance(report, SyncReport)
    assert (report.kind, report.remote, report.pushed) == ("git", url, True)
    assert report.committed == 1 and report.rejected == []
    assert list(report.to_json()) == GIT_KEYS[:-3]
    assert report.summary() == "committed 1, adopted 0, forgotten 0, conflicts 0, rejected 0, pushed"


def test_a_failed_exchange_carries_what_it_did(connected) -> None:
    url, a = connected
    refuse_pushes(url)
    a.add("Never leaves")
    with Memory(a.home) as memory:
        remote = memory.remote
        assert remote is not None
        with pytest.raises(SyncError) as failed:
            remote.push()
    done = failed.value.sync_report  # type: ignore[attr-defined]
    assert isinstance(done, SyncReport) and done.committed == 1 and done.pushed is False
    code, out, _ = a.run("sync", "--json")
    result = json.loads(out)
    assert code == 9 and list(result) == GIT_KEYS and result["ok"] is False


def test_a_home_has_one_remote(connected) -> None:
    _, a = connected
    with Memory(a.home) as memory, pytest.raises(UsageError, match="already syncs through git"):
        memory.remote_at("postgresql://someone@localhost/memory")
    code, _, err = a.run("sync", "init", "postgresql://someone@localhost/memory")
    assert code == 2 and err == "cmem: this home already syncs through git; a home has one remote\n"
