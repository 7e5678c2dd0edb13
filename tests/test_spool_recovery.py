"""A hook killed while replaying the spool loses nothing and duplicates nothing (issue 8, item 4)."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import time
from pathlib import Path

import apsw
import pytest

from cmem_cli.capture.hooks import spool
from tests.agent_fixtures import payload
from tests.conftest import fake_repo


@pytest.fixture
def project(tmp_path: Path) -> Path:
    return fake_repo(tmp_path / "work", "shop")


def _spool_prompts(home: Path, project: Path, count: int) -> list[str]:
    texts = [f"spooled prompt number {i:03d} about invoices" for i in range(count)]
    for i, text in enumerate(texts):
        data = payload("UserPromptSubmit", "s-spool", project, prompt=text)
        spool.save(home, "UserPromptSubmit", data, 1_700_000_000_000 + i)
    return texts


def _stored_prompts(home: Path) -> list[str]:
    conn = apsw.Connection(str(home / "cmem.db"), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        return [row[0] for row in conn.execute("SELECT text FROM user_prompts ORDER BY text")]
    finally:
        conn.close()


def _hook_cmd() -> list[str]:
    return [sys.executable, "-m", "cmem_cli", "hook", "SessionEnd"]


def _end_payload(project: Path) -> bytes:
    return json.dumps(payload("SessionEnd", "s-other", project)).encode()


def test_a_claim_left_by_a_dead_process_is_replayed_once(sh, home, project):
    texts = _spool_prompts(home, project, 2)
    first = spool.pending(home)[0]
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True)
    dead_pid = int(dead.stdout)
    os.replace(first, first.with_name(f".{first.name}.{dead_pid}.claimed"))
    assert sh("hook", "SessionEnd", input=_end_payload(project)).exit_code == 0
    assert _stored_prompts(home) == sorted(texts)
    assert list((home / "spool").iterdir()) == []


@pytest.mark.slow
def test_kill_9_during_spool_replay_keeps_every_event_exactly_once(home, project):
    rng = random.Random(8)
    # the store first, so that kills land in replays rather than in creating the schema
    subprocess.run([sys.executable, "-m", "cmem_cli", "stats"], capture_output=True, timeout=60, check=True)
    texts = _spool_prompts(home, project, 400)
    kills = abandoned = 0
    for _ in range(10):
        if not list((home / "spool").iterdir()):
            break
        proc = subprocess.Popen(
            _hook_cmd(), stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        proc.stdin.write(_end_payload(project))
        proc.stdin.close()
        # kill inside the replay: once the hook has claimed its first spooled event (however fast it started)
        deadline = time.monotonic() + 10
        while proc.poll() is None and time.monotonic() < deadline:
            if any((home / "spool").glob(".*.claimed")):
                time.sleep(rng.uniform(0, 0.02))
                break
            time.sleep(0.001)
        if proc.poll() is None:
            proc.kill()
            kills += 1
        proc.wait(timeout=60)
        abandoned += len(list((home / "spool").glob(".*.claimed")))
    assert kills > 0  # the test exercised what it claims to
    print(f"{kills} kills, {abandoned} abandoned claims seen")
    for _ in range(20):  # hooks after the crashes replay what is left (up to 50 per call)
        if not list((home / "spool").iterdir()):
            break
        subprocess.run(_hook_cmd(), input=_end_payload(project), capture_output=True, timeout=60, check=True)
    assert _stored_prompts(home) == sorted(texts)
    assert list((home / "spool").iterdir()) == []


def test_an_event_arriving_while_the_store_is_lost_is_kept_until_it_is_back(sh, home, project):
    assert sh("add", "-t", "exported", "-p", "shop").exit_code == 0
    for suffix in ("", "-wal", "-shm"):
        source = home / f"cmem.db{suffix}"
        if source.exists():
            source.rename(home / f"aside{suffix}")
    prompt = json.dumps(payload("UserPromptSubmit", "s-lost", project, prompt="remember the lost store"))
    assert sh("hook", "UserPromptSubmit", input=prompt).exit_code == 0
    assert not (home / "cmem.db").exists()  # not replaced by a new empty store
    assert len(spool.pending(home)) == 1
    for suffix in ("", "-wal", "-shm"):
        if (home / f"aside{suffix}").exists():
            (home / f"aside{suffix}").rename(home / f"cmem.db{suffix}")
    assert sh("hook", "SessionEnd", input=_end_payload(project)).exit_code == 0
    assert _stored_prompts(home) == ["remember the lost store"]
    assert spool.pending(home) == []


@pytest.mark.parametrize(
    ("event", "fields", "table"),
    [
        ("UserPromptSubmit", {"prompt": "why is the invoice total off by a cent"}, "user_prompts"),
        ("Stop", {"last_assistant_message": "Rounded each line before summing."}, "session_summaries"),
    ],
)
def test_a_live_hook_stores_and_marks_in_one_transaction(home, project, monkeypatch, event, fields, table):
    """A busy store (or a kill) between storing a prompt or summary and marking it stored must not let the
    replay store it twice: the write and its mark commit together or not at all (issue 25)."""
    import io

    from cmem_cli.capture.hooks import runner
    from cmem_cli.core.errors import DatabaseBusy
    from cmem_cli.store.capture_log import CaptureLog

    def hook(name: str, data: dict) -> None:
        runner.run([name], stdin=io.BytesIO(json.dumps(data).encode()), stdout=io.StringIO())

    hook("UserPromptSubmit", payload("UserPromptSubmit", "s-live", project, prompt="first question"))
    real_mark = CaptureLog.mark
    failures = iter([True])

    def busy_once(self, session, key):
        if next(failures, False):
            raise DatabaseBusy("database is locked")
        return real_mark(self, session, key)

    monkeypatch.setattr(CaptureLog, "mark", busy_once)
    hook(event, payload(event, "s-live", project, **fields))
    assert len(spool.pending(home)) == 1  # the event was kept for the next hook
    hook("SessionEnd", payload("SessionEnd", "s-other", project))  # replays it
    text = fields.get("prompt") or fields["last_assistant_message"]
    column = "text" if table == "user_prompts" else "completed"
    conn = apsw.Connection(str(home / "cmem.db"), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        count = conn.execute(f"SELECT count(*) FROM {table} WHERE {column} = ?", (text,)).fetchone()[0]
    finally:
        conn.close()
    assert count == 1


def test_a_replayed_turn_end_forgets_the_marks_of_files_replayed_long_ago(sh, home, project):
    """Every detached event leaves a replay mark; a turn end drops those older than a week (their files
    are long gone), so the capture log does not grow by one row a hook call for ever."""
    _spool_prompts(home, project, 2)
    assert sh("hook", "SessionEnd", input=_end_payload(project)).exit_code == 0
    conn = apsw.Connection(str(home / "cmem.db"))
    try:
        week = 8 * 24 * 3600 * 1000
        conn.execute("UPDATE agent_captures SET created_at = created_at - ? WHERE session = ''", (week,))
    finally:
        conn.close()
    stop = payload(
        "Stop", "s-spool", project, stop_hook_active=False, last_assistant_message="Sent the invoices."
    )
    spool.save(home, "Stop", stop, 1_700_000_100_000)
    assert sh("hook", "SessionEnd", input=_end_payload(project)).exit_code == 0
    conn = apsw.Connection(str(home / "cmem.db"), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        marks = [row[0] for row in conn.execute("SELECT key FROM agent_captures WHERE session = ''")]
    finally:
        conn.close()
    assert len(marks) == 1 and marks[0].endswith(".json")  # the Stop's own mark, kept
    assert _stored_prompts(home) == sorted(f"spooled prompt number {i:03d} about invoices" for i in range(2))
