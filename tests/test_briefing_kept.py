"""SessionStart prints the briefing the last writing hook's detached child kept, and only while nothing it was
built from has changed: a memory added, replaced or adopted from a hand-edited file since, or a cited file
that changed, shows as the live briefing would show it. Real processes, as Claude Code starts them, the
write detached (the suite turns it off elsewhere: tests/conftest.py)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from cmem_cli.core import briefing_cache
from tests.agent_fixtures import payload

PROCESS = pytest.mark.integration  # starts cmem as a process (tests/conftest.py)
OLD = time.time() - 600  # a cited file's time, well before any briefing is kept


def git(repo: Path, *args: str) -> str:
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.com",
           "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1"}  # fmt: skip
    return subprocess.run(
        ["git", *args], cwd=repo, env=env, capture_output=True, text=True, check=True
    ).stdout


@pytest.fixture
def repo(tmp_path: Path, home: Path) -> Path:
    """A git work tree with one commit of src/auth.py (its time in the past) and one memory citing it."""
    root = tmp_path / "app"
    (root / "src").mkdir(parents=True)
    git(root, "init", "-q", "-b", "main")
    (root / "src" / "auth.py").write_text("def login():\n    return True\n")
    os.utime(root / "src" / "auth.py", (OLD, OLD))
    git(root, "add", ".")
    git(root, "commit", "-qm", "first")
    cmem(root, "add", "Login always succeeds in tests", "--type", "decision", "--read", "src/auth.py")
    return root


def cmem(cwd: Path, *args: str, stdin: str | None = None, **env: str) -> subprocess.CompletedProcess[str]:
    result = subprocess.run(
        [sys.executable, "-m", "cmem_cli", *args],
        input=stdin,
        env={**os.environ, "CMEM_HOOK_DETACH": "on", **env},
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    return result


def kept_files(home: Path) -> dict[Path, int]:
    folder = home.joinpath(*briefing_cache.FOLDER)
    return {p: p.stat().st_mtime_ns for p in folder.glob("*.json")} if folder.is_dir() else {}


def end_turn(cwd: Path, home: Path, session: str = "s-1", said: str | None = None) -> None:
    """A Stop hook (the agent's last words ``said``), then wait until its detached child kept a briefing."""
    before = kept_files(home)
    data = payload("Stop", session, cwd, stop_hook_active=False, last_assistant_message=said)
    cmem(cwd, "hook", "Stop", stdin=json.dumps(data))
    settle(home, before)


def settle(home: Path, before: dict[Path, int]) -> None:
    """Wait until a detached child has kept a briefing anew."""
    deadline = time.monotonic() + 20
    while kept_files(home) == before and time.monotonic() < deadline:
        time.sleep(0.05)
    assert kept_files(home) != before, "no briefing was kept"


def session_start(cwd: Path, session: str, *, home: Path | None = None) -> tuple[dict, set[str]]:
    """The answer of a SessionStart hook and the modules its own process (not its child) loaded; with
    ``home``, once its child has kept the briefing again."""
    before = kept_files(home) if home is not None else {}
    data = json.dumps(payload("SessionStart", session, cwd, source="startup"))
    result = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "cmem_cli", "hook", "SessionStart"],
        input=data,
        env={**os.environ, "CMEM_HOOK_DETACH": "on"},
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    if home is not None:
        settle(home, before)
    modules = {line.rsplit("|", 1)[-1].strip() for line in result.stderr.splitlines() if "|" in line}
    return json.loads(result.stdout), modules


def briefing(answer: dict) -> str:
    return str(answer["hookSpecificOutput"]["additionalContext"])


def live(cwd: Path, session: str) -> dict:
    """The briefing built in the foreground, as without a kept one."""
    data = json.dumps(payload("SessionStart", session, cwd, source="startup"))
    return json.loads(cmem(cwd, "hook", "SessionStart", stdin=data, CMEM_HOOK_DETACH="off").stdout)


@PROCESS
def test_a_session_start_after_a_turn_prints_the_kept_briefing_without_opening_the_store(home, repo):
    end_turn(repo, home)
    answer, modules = session_start(repo, "s-2")
    assert "Login always succeeds in tests" in briefing(answer)
    assert "apsw" not in modules  # kept: tests/test_startup.py pins what it loads
    assert answer == live(repo, "s-3")  # word for word what the live briefing says


@PROCESS
def test_a_memory_added_after_the_briefing_was_kept_is_in_the_next_one(home, repo):
    end_turn(repo, home)
    cmem(repo, "add", "Pool size is 20", "--type", "decision")
    answer, modules = session_start(repo, "s-2")
    assert "Pool size is 20" in briefing(answer) and "cmem_cli.store.repository" in modules


@PROCESS
def test_a_replaced_memory_is_not_shown_once_replaced(home, repo):
    old = cmem(repo, "add", "Pool size is 4", "--type", "decision").stdout.strip()
    end_turn(repo, home)
    assert "Pool size is 4" in briefing(session_start(repo, "s-2")[0])
    cmem(repo, "add", "Pool size is 20", "--type", "decision", "--supersedes", old)
    text = briefing(session_start(repo, "s-3")[0])
    assert "Pool size is 20" in text and "Pool size is 4" not in text


@PROCESS
def test_a_cited_file_changed_after_the_briefing_was_kept_marks_the_memory_stale(home, repo):
    end_turn(repo, home)
    answer, modules = session_start(repo, "s-2", home=home)
    assert "[stale]" not in briefing(answer) and "apsw" not in modules
    answer, modules = session_start(repo, "s-3", home=home)
    assert "[stale]" not in briefing(answer) and "apsw" not in modules  # kept by s-2's child
    (repo / "src" / "auth.py").write_text("def login():\n    return check()\n")
    answer, modules = session_start(repo, "s-4")
    assert "Login always succeeds in tests (~" in briefing(answer) and "[stale]" in briefing(answer)
    assert "cmem_cli.store.repository" in modules  # built anew


@PROCESS
def test_a_hand_edited_memory_adopted_by_sync_shows_as_edited(home, repo):
    end_turn(repo, home)
    [path] = [p for p in (home / "export").rglob("*.md") if "Login always succeeds" in p.read_text()]
    path.write_text(path.read_text().replace("# Login always succeeds in tests", "# Login fails closed"))
    cmem(repo, "sync")
    text = briefing(session_start(repo, "s-2")[0])
    assert "Login fails closed" in text and "Login always succeeds" not in text


@PROCESS
def test_a_session_whose_own_summary_leads_the_kept_briefing_is_briefed_without_it(home, repo):
    """A kept briefing leads with the newest summary; a new session that has that id gets the one before."""
    stop = payload("Stop", "s-1", repo, stop_hook_active=False, last_assistant_message="Made login strict.")
    cmem(repo, "hook", "Stop", stdin=json.dumps(stop), CMEM_HOOK_DETACH="off")
    end_turn(repo, home, session="s-2", said="Made login lenient again.")  # leads the kept briefing
    answer, modules = session_start(repo, "s-2")
    assert "Made login strict." in briefing(answer) and "lenient" not in briefing(answer)
    assert answer == live(repo, "s-2") and "apsw" in modules  # built without its own summary
    answer, modules = session_start(repo, "s-3")
    assert "lenient" in briefing(answer)


def test_a_kept_briefing_is_not_used_past_its_age_or_while_a_commit_is_in_flight(tmp_path):
    db = tmp_path / "cmem.db"
    db.write_bytes(b"SQLite format 3\x00" + bytes(84))
    (tmp_path / "cmem.db-shm").write_bytes(bytes(96))
    stamp = briefing_cache.store_stamp(db)
    assert stamp is not None
    entry = {"text": "t", "files": {}, "git": []}
    briefing_cache.save(tmp_path, ["k"], stamp, entry, 1_000)
    assert briefing_cache.load(tmp_path, ["k"], db, 1_000 + briefing_cache.MAX_AGE_MS)["text"] == "t"
    assert briefing_cache.load(tmp_path, ["k"], db, 2_000 + briefing_cache.MAX_AGE_MS) is None
    assert briefing_cache.load(tmp_path, ["other"], db, 1_000) is None
    (tmp_path / "cmem.db-shm").write_bytes(bytes(10) + b"\x01" + bytes(85))  # the two headers differ
    assert briefing_cache.store_stamp(db) is None
    assert briefing_cache.load(tmp_path, ["k"], db, 1_000) is None
    kept = tmp_path.joinpath(*briefing_cache.FOLDER)
    assert oct(kept.stat().st_mode & 0o777) == "0o700" and oct(kept.parent.stat().st_mode & 0o777) == "0o700"
    assert {oct(p.stat().st_mode & 0o777) for p in kept.iterdir()} == {"0o600"}


def test_a_file_changed_within_the_clock_tick_is_not_trusted(tmp_path):
    fresh, old = tmp_path / "fresh.py", tmp_path / "old.py"
    fresh.write_text("x")
    old.write_text("y")
    os.utime(old, (OLD, OLD))
    assert briefing_cache.files_stamp([str(old), str(tmp_path / "gone.py")]) is not None
    assert briefing_cache.files_stamp([str(old), str(fresh)]) is None


@PROCESS
def test_a_forgotten_memory_leaves_no_kept_briefing_that_names_it(home, repo):
    secret = cmem(repo, "add", "Staging password rotates on Fridays", "--type", "decision").stdout.strip()
    end_turn(repo, home)
    assert any("Staging password" in p.read_text() for p in kept_files(home))
    cmem(repo, "forget", secret, "--yes")
    assert not any("Staging password" in p.read_text() for p in kept_files(home))
    assert "Staging password" not in briefing(session_start(repo, "s-2")[0])
