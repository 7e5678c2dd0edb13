"""A hook with nothing to answer records its event after its process has exited: the agent waits for the
process (and its pipes), not for the write. Real processes, as Claude Code and Cursor start them; the
detached write is on here (the suite turns it off for every other test: tests/conftest.py)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import apsw
import pytest

from tests.agent_fixtures import db_rows, payload, tool_payload
from tests.conftest import fake_repo


@pytest.fixture
def project(home: Path, tmp_path: Path) -> Path:
    repo = fake_repo(tmp_path / "work")
    subprocess.run(
        [sys.executable, "-m", "cmem_cli", "add", "Retries back off", "--type", "decision"],
        cwd=repo,
        check=True,
        capture_output=True,
    )
    return repo


def hook(cwd: Path, *args: str, data: dict) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "CMEM_HOOK_DETACH": "on"}
    return subprocess.run(
        [sys.executable, "-m", "cmem_cli", "hook", *args],
        input=json.dumps(data),
        env=env,
        cwd=cwd,
        capture_output=True,  # returns when the pipes close: the detached write must not hold them
        text=True,
        timeout=60,
    )


def wait_for(home: Path, sql: str, want: int) -> list[tuple]:
    deadline = time.monotonic() + 60
    while True:
        rows = db_rows(home, sql)
        if len(rows) >= want or time.monotonic() > deadline:
            return rows
        time.sleep(0.1)


def test_a_tool_hook_returns_while_the_store_is_locked_and_its_record_follows(home, project):
    locker = apsw.Connection(str(home / "cmem.db"))
    locker.execute("BEGIN IMMEDIATE")  # every writer waits until this ends
    try:
        called = int(time.time() * 1000)
        data = tool_payload("s-1", project, "Bash", {"command": "pytest -q"}, {"stdout": "3 passed"})
        result = hook(project, "PostToolUse", data=data)
        returned = int(time.time() * 1000)
        assert (result.returncode, result.stdout, result.stderr) == (0, "", "")
        written = locker.execute("SELECT count(*) FROM observations WHERE session = 's-1'").fetchall()
        assert written == [(0,)]  # the hook is gone, its write still waits for the lock
    finally:
        locker.execute("ROLLBACK")
        locker.close()
    [(created,)] = wait_for(home, "SELECT created_at FROM observations WHERE session = 's-1'", 1)
    assert called <= created <= returned  # stamped with the time of the call, not of the write


def test_a_prompt_hook_answers_cursor_before_it_detaches(home, project):
    data = {
        "conversation_id": "c-1",
        "generation_id": "g-1",
        "hook_event_name": "beforeSubmitPrompt",
        "prompt": "Why do retries back off?",
        "workspace_roots": [str(project)],
    }
    result = hook(project, "--agent", "cursor", "beforeSubmitPrompt", data=data)
    assert result.returncode == 0 and json.loads(result.stdout) == {"continue": True}
    rows = wait_for(home, "SELECT text FROM user_prompts", 1)
    assert rows == [("Why do retries back off?",)]


def test_turn_end_and_session_start_keep_their_order(home, project):
    prompt = payload("UserPromptSubmit", "s-2", project, prompt="Make retries back off")
    assert hook(project, "UserPromptSubmit", data=prompt).returncode == 0
    stop = payload("Stop", "s-2", project, stop_hook_active=False, last_assistant_message="Retries back off.")
    assert hook(project, "Stop", data=stop).returncode == 0
    wait_for(home, "SELECT 1 FROM session_summaries WHERE session = 's-2'", 1)
    start = payload("SessionStart", "s-3", project, source="startup")
    answer = json.loads(hook(project, "SessionStart", data=start).stdout)  # answered from the store
    assert "Retries back off." in answer["hookSpecificOutput"]["additionalContext"]


def test_detach_false_in_the_config_makes_the_hook_write_before_it_exits(home, project, tmp_path):
    config = tmp_path / "config" / "cmem" / "config.toml"
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text("[hooks]\ndetach = false\nbusy_timeout_ms = 0\n")
    locker = apsw.Connection(str(home / "cmem.db"))
    locker.execute("BEGIN IMMEDIATE")
    try:
        data = tool_payload("s-4", project, "Bash", {"command": "make"}, {"stdout": "built"})
        env = {k: v for k, v in os.environ.items() if k != "CMEM_HOOK_DETACH"}
        result = subprocess.run(
            [sys.executable, "-m", "cmem_cli", "hook", "PostToolUse"],
            input=json.dumps(data),
            env=env,
            cwd=project,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert result.returncode == 0
        # written (here: spooled, the store being locked) by the time the hook's process ended
        assert len(list((home / "spool").glob("*"))) == 1
    finally:
        locker.execute("ROLLBACK")
        locker.close()
