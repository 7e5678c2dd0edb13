"""What `cmem status` and `cmem doctor` say about a home's remote (issue 32's trial: on a read-only
member's home, with a write refused and queued at every sync, both said all was clear), and the work a
refused push does not do. Through the real CLI; a real PostgreSQL (tests/pg_server.py) and a bare git
repository in tmp.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.sync_helpers import Machine, bare_repo, refuse_pushes
from tests.team_helpers import Home
from tests.test_team_members import reader


@pytest.fixture
def homes(tmp_path: Path, home: Path, capsys: pytest.CaptureFixture[str]) -> dict[str, Home]:
    return {name: Home(tmp_path / f"home-{name}", capsys, name) for name in ("a", "c")}


def status(home: Home | Machine) -> dict[str, Any]:
    info: dict[str, Any] = json.loads(home.ok("status", "--json"))
    return info


def status_rows(home: Home | Machine) -> dict[str, str]:
    """`cmem status` piped: ``key<TAB>value`` lines."""
    return {line.split("\t")[0]: "\t".join(line.split("\t")[1:]) for line in home.ok("status").splitlines()}


def doctor_check(home: Home, name: str) -> tuple[int, dict[str, Any]]:
    code, out, _ = home.run("doctor", "--json")
    [check] = [c for c in json.loads(out)["checks"] if c["name"] == name]
    return code, check


@pytest.mark.postgres
def test_status_and_doctor_tell_a_readers_refused_push_and_its_queued_writes(
    homes: dict[str, Home], team_db: str, pg_server: Any
):
    a, c = homes["a"], homes["c"]
    a.add("First runbook")
    a.join(team_db)
    url = reader(pg_server, team_db)
    c.join(url)
    remote = status(c)["remote"]
    assert (remote["kind"], remote["url"], remote["machine"]) == ("team", url, "c")
    assert (remote["queued"], remote["refused"]) == (0, None)
    assert remote["last_sync"] is not None and remote["last_sync"] == remote["last_pull"]
    assert doctor_check(c, "team writes queued")[1]["status"] == "ok"

    c.add("A note the reader wrote")
    c.add("Another note the reader wrote")
    code, _, _ = c.run("sync")
    assert code == 9
    remote = status(c)["remote"]
    assert remote["queued"] == 2 and remote["last_sync"] is not None
    assert remote["last_pull"] > remote["last_sync"]  # the pull went on; the sync as a whole failed
    assert "read-only role" in remote["refused"]["reason"] and remote["refused"]["read_only"] is True
    rows = status_rows(c)
    assert rows["remote"] == f"team database {url} (machine c)"
    assert rows["queued"] == "2 writes wait to be pushed"
    assert (
        rows["refused"].startswith("read-only role: 2 writes stay queued here (")
        and "read-only" in rows["refused"]
    )

    code, check = doctor_check(c, "team writes queued")
    assert code == 1 and check["status"] == "fail"
    assert check["detail"].startswith("2 writes can never be pushed: this role is read-only")
    assert "docs/team.md" in check["detail"]


@pytest.mark.postgres
def test_an_ordinary_queue_is_no_doctor_finding_and_a_full_sync_clears_the_refusal(
    homes: dict[str, Home], team_db: str
):
    a = homes["a"]
    a.join(team_db)
    a.add("Written offline")
    code, check = doctor_check(a, "team writes queued")
    assert (code, check["status"]) == (0, "ok") and check["detail"] == "1 write waits for the next sync"
    assert status(a)["remote"]["queued"] == 1
    a.sync()
    remote = status(a)["remote"]
    assert (remote["queued"], remote["refused"]) == (0, None)


def test_status_says_no_remote_on_a_home_without_one(home: Path, capsys: pytest.CaptureFixture[str]):
    machine = Machine(home, capsys)
    machine.add("Alone")
    assert status(machine)["remote"] is None
    assert status_rows(machine)["remote"] == "none"


def test_status_tells_a_git_remote_without_its_credentials_and_a_refused_push(
    tmp_path: Path, home: Path, capsys: pytest.CaptureFixture[str]
):
    machine = Machine(home, capsys)
    url = bare_repo(tmp_path / "remote.git")
    machine.add("Shared through git")
    machine.sync(url)
    remote = status(machine)["remote"]
    assert (remote["kind"], remote["url"], remote["refused"]) == ("git", url, None)
    assert remote["last_sync"] is not None
    refuse_pushes(url, "pushes are closed")
    machine.add("Refused by the remote")
    code, _, _ = machine.run("sync")
    assert code == 9
    after = status(machine)["remote"]
    assert after["last_sync"] == remote["last_sync"]
    assert after["refused"]["reason"].startswith("git push failed") and after["refused"]["read_only"] is False
    assert status_rows(machine)["refused"].startswith("git push failed")
    git_dir = home / "sync.git"
    subprocess.run(
        [
            "git",
            "--git-dir",
            str(git_dir),
            "remote",
            "set-url",
            "origin",
            "https://bob:s3cret@example.invalid/m.git",
        ],
        check=True,
    )
    text = machine.ok("status") + machine.ok("status", "--json")
    assert "s3cret" not in text
    assert status(machine)["remote"]["url"] == "https://bob:***@example.invalid/m.git"


@pytest.mark.postgres
@pytest.mark.slow
def test_a_reader_with_a_model_does_not_embed_the_writes_its_role_may_not_push(
    homes: dict[str, Home], team_db: str, pg_server: Any, minilm_gguf: Path, monkeypatch: pytest.MonkeyPatch
):
    """Each sync of a reader embedded every queued write before the server refused the push."""
    from cmem_index.embedder import Embedder

    embedded: list[int] = []
    real = Embedder.embed_documents

    def counting(self: Embedder, texts: Any, *args: Any, **kwargs: Any) -> Any:
        embedded.append(len(texts))
        return real(self, texts, *args, **kwargs)

    monkeypatch.setattr(Embedder, "embed_documents", counting)
    monkeypatch.setenv("CMEM_EMBED_MODEL", str(minilm_gguf))
    a, c = homes["a"], homes["c"]
    a.join(team_db)
    c.join(reader(pg_server, team_db))
    c.add("A note the reader wrote")
    c.add("Another note the reader wrote")
    for _ in range(2):
        code, out, _ = c.run("sync", "--json")
        assert code == 9 and json.loads(out)["queued"] == 2
    assert embedded == []
    a.add("A writer's memory")
    assert a.sync()["pushed"] == 1
    assert embedded == [1]  # a writer's push still carries its vector


COMMON_SYNC_KEYS = {
    "kind",
    "remote",
    "adopted",
    "pulled",
    "forgotten",
    "conflicts",
    "rejected",
    "notes",
    "queued",
    "pushed",
    "ok",
    "exit_code",
    "error",
}


@pytest.mark.postgres
def test_git_and_team_sync_json_share_their_common_keys(
    tmp_path: Path, homes: dict[str, Home], team_db: str, capsys: pytest.CaptureFixture[str]
):
    """A script reads one report whichever remote a home has: the same keys for the same things (git's
    `committed` and the team's session and prompt counts stay each its own)."""
    first, second = Machine(tmp_path / "git-1", capsys), Machine(tmp_path / "git-2", capsys)
    url = bare_repo(tmp_path / "remote.git")
    first.add("Shared through git")
    first.sync(url)
    second.add("Written on the second machine")
    git = second.sync(url)
    a = homes["a"]
    a.add("Shared through the team database")
    a.join(team_db)
    c = homes["c"]
    c.add("Written on c")
    team = c.join(team_db)
    assert set(git) & set(team) == COMMON_SYNC_KEYS
    assert (git["kind"], git["remote"], git["pulled"], git["queued"]) == ("git", url, 1, 0)
    assert (team["kind"], team["remote"], team["pulled"], team["queued"]) == (
        "team",
        team_db.replace(":@", "@"),
        1,
        0,
    )
    assert {k: type(git[k]) for k in COMMON_SYNC_KEYS - {"pushed"}} == {
        k: type(team[k]) for k in COMMON_SYNC_KEYS - {"pushed"}
    }
    assert (git["pushed"], team["pushed"]) == (True, 1)  # git says whether it pushed, the team how many
