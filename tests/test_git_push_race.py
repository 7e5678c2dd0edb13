"""Two machines pushing to one git remote at the same moment (issue 42, item 5): the loser's "cannot lock
ref / failed to update ref" is a race, not a refusal. It is retried like a non-fast-forward (fetch, merge,
push, after a short randomised back-off), and only a real refusal is reported as one (exit 9, `status`).
Through the real CLI, with homes and a bare repository in a temporary folder: a held ref lock in the bare
repository stands in for the other machine deterministically, and parallel syncs make the real race.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from tests.sync_helpers import Machine, bare_repo, remote_history


def hold_ref_lock(url: str, seconds: float | None) -> Path:
    """What a push from another machine holds while it updates the branch; released after ``seconds``."""
    lock = Path(url) / "refs" / "heads" / "main.lock"
    lock.write_text("")
    if seconds is not None:
        threading.Timer(seconds, lambda: lock.unlink(missing_ok=True)).start()
    return lock


def status_remote(machine: Machine) -> dict:
    return json.loads(machine.ok("status", "--json"))["remote"]


@pytest.fixture
def pair(tmp_path: Path, home: Path, capsys: pytest.CaptureFixture[str]) -> tuple[str, Machine, Machine]:
    url = bare_repo(tmp_path / "team.git")
    a, b = Machine(tmp_path / "a", capsys), Machine(tmp_path / "b", capsys)
    a.add("First from a")
    a.sync(url)
    b.sync(url)
    return url, a, b


def test_a_push_meeting_a_held_ref_lock_is_retried_and_goes_through(pair):
    url, a, b = pair
    a.add("Written while another machine pushes")
    hold_ref_lock(url, 0.6)
    report = a.sync()
    assert report["pushed"] is True, report
    assert "Written while another machine pushes" in remote_history(url)
    assert status_remote(a)["refused"] is None
    b.sync()
    assert "Written while another machine pushes" in {r["title"] for r in b.by_uid().values()}


def test_a_ref_lock_that_never_goes_is_a_sync_error_not_a_refusal(pair, monkeypatch):
    url, a, _ = pair
    # every attempt meets the lock; the back-offs between them (3 s on average) are not what is checked
    monkeypatch.setattr("cmem_cli.sync.gitsync.BACK_OFF_S", 0.001)
    a.add("Never pushed while the lock stays")
    lock = hold_ref_lock(url, None)
    try:
        code, out, err = a.run("sync", "--json")
    finally:
        lock.unlink()
    assert code == 9, err
    assert err.count("\n") == 1 and "lock" in err and "Traceback" not in err
    assert json.loads(out)["pushed"] is False
    assert status_remote(a)["refused"] is None  # no refusal recorded: the remote never said no
    assert a.sync()["pushed"] is True  # and the next sync pushes it


def cmem(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "CMEM_HOME": str(home)}
    return subprocess.run(
        [sys.executable, "-m", "cmem_cli", *args], capture_output=True, text=True, env=env, timeout=300
    )


@pytest.mark.slow
def test_parallel_syncs_of_several_machines_against_one_remote_all_go_through(tmp_path, home):
    url = bare_repo(tmp_path / "team.git")
    homes = [tmp_path / f"m{i}" for i in range(4)]
    for i, machine in enumerate(homes):
        assert cmem(machine, "add", "-t", f"Joined by {i}", "-p", "web").returncode == 0
        assert cmem(machine, "sync", "init", url).returncode == 0
    for round_ in range(3):
        for i, machine in enumerate(homes):
            assert cmem(machine, "add", "-t", f"Round {round_} from {i}", "-p", "web").returncode == 0
        start = time.monotonic()
        procs = [
            subprocess.Popen(
                [sys.executable, "-m", "cmem_cli", "sync", "--json"],
                env={**os.environ, "CMEM_HOME": str(machine)},
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )  # fmt: skip
            for machine in homes
        ]
        for proc in procs:
            out, err = proc.communicate(timeout=300)
            assert proc.returncode == 0, (round_, err)
            assert json.loads(out)["error"] is None
        assert time.monotonic() - start < 300
    for machine in homes:
        assert cmem(machine, "sync").returncode == 0
    titles = [
        {row["title"] for row in json.loads(cmem(m, "search", "--json", "-n", "0", "--all-projects").stdout)}
        for m in homes
    ]
    expected = {f"Round {r} from {i}" for r in range(3) for i in range(4)} | {
        f"Joined by {i}" for i in range(4)
    }
    assert all(found == expected for found in titles)
