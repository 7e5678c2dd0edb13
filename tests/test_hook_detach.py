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


def hook(cwd: Path, *args: str, data: dict, **env: str) -> subprocess.CompletedProcess[str]:
    """``cmem hook ARGS`` as an agent runs it, its write detached; ``env`` adds to the environment."""
    return subprocess.run(
        [sys.executable, "-m", "cmem_cli", "hook", *args],
        input=json.dumps(data),
        env={**os.environ, "CMEM_HOOK_DETACH": "on", **env},
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


# -- kill -9 at any point loses nothing (issue 42) ----------------------------------------------------------
# The detached child kills itself (SIGKILL) at a test point: before it claims its spooled event, or inside
# the transaction that records it (after the write, before the commit).
DIE = "CMEM_HOOK_TEST_DIE"


def spool_files(home: Path) -> list[Path]:
    folder = home / "spool"
    return sorted(p for p in folder.iterdir() if not p.name.endswith(".tmp")) if folder.exists() else []


def wait_until_spool_empty(home: Path) -> None:
    deadline = time.monotonic() + 60
    while spool_files(home) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert spool_files(home) == []


@pytest.mark.parametrize("point", ["before-claim", "in-transaction"])
def test_a_detached_child_killed_before_its_commit_loses_nothing(home, project, point):
    data = tool_payload("s-k", project, "Bash", {"command": "make deploy"}, {"stdout": "deployed"})
    result = hook(project, "PostToolUse", data=data, **{DIE: point})
    assert (result.returncode, result.stdout, result.stderr) == (0, "", "")
    deadline = time.monotonic() + 10  # the child dies at its test point, leaving its event in the spool
    while not spool_files(home) and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(0.5)
    assert db_rows(home, "SELECT 1 FROM observations WHERE session = 's-k'") == []
    assert spool_files(home) != []  # kept on disk before the hook answered
    other = tool_payload("s-next", project, "Bash", {"command": "pytest -q"}, {"stdout": "3 passed"})
    assert hook(project, "PostToolUse", data=other).returncode == 0  # the next hook replays it
    wait_for(home, "SELECT 1 FROM observations WHERE session = 's-next'", 1)
    wait_until_spool_empty(home)
    assert db_rows(home, "SELECT count(*) FROM observations WHERE session = 's-k'") == [(1,)]


def test_the_replay_of_a_child_killed_mid_write_leaves_one_file_and_a_clean_doctor(home, project):
    data = tool_payload("s-half", project, "Bash", {"command": "make release"}, {"stdout": "released"})
    result = hook(project, "PostToolUse", data=data, **{DIE: "in-transaction"})
    assert result.returncode == 0
    deadline = time.monotonic() + 10  # the child dies after writing the file, before its commit
    while not list((home / "spool").glob(".*.claimed")) and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(0.5)
    other = tool_payload("s-after", project, "Bash", {"command": "pytest -q"}, {"stdout": "3 passed"})
    assert hook(project, "PostToolUse", data=other).returncode == 0  # replays the dead child's event
    wait_for(home, "SELECT 1 FROM observations WHERE session = 's-after'", 1)
    wait_until_spool_empty(home)
    files = [p.name for p in (home / "export").rglob("*.md") if "s-half" in p.parts]
    assert len(files) == 1, files  # the dead child's half-written file is gone, not left beside the replay's
    doctor = subprocess.run([sys.executable, "-m", "cmem_cli", "doctor"], cwd=project, capture_output=True,
                            text=True, timeout=60)  # fmt: skip
    assert doctor.returncode == 0, doctor.stdout


def test_a_spool_file_half_written_by_a_killed_hook_is_cleared_by_the_next(home, project):
    (home / "spool").mkdir(mode=0o700, exist_ok=True)
    dead = 4_194_304 + 7  # above any pid_max: no process has this pid
    debris = home / "spool" / f".{time.time_ns():020d}-{dead}.tmp"
    debris.write_text('{"event": "PostToolUse", "payload": {"prompt": "half')  # killed mid-write
    other = tool_payload("s-after", project, "Bash", {"command": "pytest -q"}, {"stdout": "3 passed"})
    assert hook(project, "PostToolUse", data=other).returncode == 0
    wait_for(home, "SELECT 1 FROM observations WHERE session = 's-after'", 1)
    deadline = time.monotonic() + 10
    while debris.exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not debris.exists()


def test_a_fifo_in_the_spool_never_hangs_a_hook_or_its_replay(home, project):
    (home / "spool").mkdir(mode=0o700, exist_ok=True)
    os.mkfifo(home / "spool" / f"{1:020d}-1.json", 0o600)  # where a spooled event would be
    data = payload("UserPromptSubmit", "s-fifo", project, prompt="Why do retries back off?")
    result = subprocess.run(
        [sys.executable, "-m", "cmem_cli", "hook", "UserPromptSubmit"],
        input=json.dumps(data),
        env={**os.environ, "CMEM_HOOK_DETACH": "on"},
        cwd=project,
        capture_output=True,
        text=True,
        timeout=30,  # the agent waits for this answer
    )
    assert result.returncode == 0
    assert wait_for(home, "SELECT 1 FROM user_prompts WHERE session = 's-fifo'", 1) == [(1,)]


KEY_SECRETS = ("AKIAIOSFODNN7EXAMPLE", "ghp_" + "1234567890" * 3 + "123456", "kept-private-key")


def test_secrets_and_private_text_in_a_payloads_keys_never_reach_the_spool(home, project):
    aws, token, private = KEY_SECRETS
    data = tool_payload(
        "s-keys",
        project,
        "mcp__deploy__run",
        {"env": {aws: "set", f"<private>{private}</private>": 1}, "args": [{token: True}]},
        {f"<private>{private}</private>": "done"},
    )
    result = hook(project, "PostToolUse", data=data, **{DIE: "before-claim"})
    assert (result.returncode, result.stderr) == (0, "")
    deadline = time.monotonic() + 10
    while not spool_files(home) and time.monotonic() < deadline:
        time.sleep(0.05)
    [kept] = spool_files(home)  # the child died before replaying: the event waits on disk
    text = kept.read_text(encoding="utf-8")
    assert [s for s in KEY_SECRETS if s in text] == []


def test_a_huge_tool_output_is_spooled_cut_with_the_secret_in_its_kept_tail_redacted(home, project):
    """Scrubbing a 5 MB output whole cost the waiting agent seconds; the spool keeps what capture can keep
    (both ends of it, far past the stored tail) and scrubs only that, so no kept secret is cut."""
    aws, token, _private = KEY_SECRETS
    middle = "log line without secrets\n" * 200_000  # about 5 MB
    output = f"{aws} at the start\n{middle}<private>the tail is private</private>\ntoken {token} at the end\n"
    data = tool_payload("s-huge", project, "Bash", {"command": "make logs"}, {"stdout": output})
    result = hook(project, "PostToolUse", data=data, **{DIE: "before-claim"})
    assert (result.returncode, result.stderr) == (0, "")
    deadline = time.monotonic() + 10
    while not spool_files(home) and time.monotonic() < deadline:
        time.sleep(0.05)
    [kept] = spool_files(home)
    text = kept.read_text(encoding="utf-8")
    assert len(text) < 100_000
    assert (aws in text, token in text, "the tail is private" in text) == (False, False, False)
    assert "at the end" in text  # the tail capture keeps is there, scrubbed
    other = tool_payload("s-next", project, "Bash", {"command": "pytest -q"}, {"stdout": "3 passed"})
    assert hook(project, "PostToolUse", data=other).returncode == 0  # replays the huge event
    wait_for(home, "SELECT 1 FROM observations WHERE session = 's-huge'", 1)
    [(narrative,)] = db_rows(home, "SELECT narrative FROM observations WHERE session = 's-huge'")
    assert ("at the end" in narrative, token in narrative) == (True, False)


def test_hooks_racing_to_replay_the_spool_store_each_event_once(home, project):
    from cmem_cli.capture.hooks import spool

    texts = [f"spooled question {i:02d} about the deploy script" for i in range(40)]
    for i, text in enumerate(texts):
        spool.save(
            home, "UserPromptSubmit", payload("UserPromptSubmit", "s-r", project, prompt=text), 1_000 + i
        )
    env = {**os.environ, "CMEM_HOOK_DETACH": "on"}
    procs = []
    for i in range(4):  # four hooks at once, each (its detached child) replaying what it can claim
        data = tool_payload(f"s-race-{i}", project, "Bash", {"command": f"make test-{i}"}, {"stdout": "ok"})
        proc = subprocess.Popen(
            [sys.executable, "-m", "cmem_cli", "hook", "PostToolUse"],
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            env=env,
            cwd=project,
        )
        proc.stdin.write(json.dumps(data).encode())
        proc.stdin.close()
        procs.append(proc)
    for proc in procs:
        assert proc.wait(timeout=60) == 0
    wait_for(home, "SELECT 1 FROM observations WHERE session LIKE 's-race-%'", 4)
    wait_until_spool_empty(home)
    stored = db_rows(home, "SELECT text, count(*) FROM user_prompts WHERE session = 's-r' GROUP BY text")
    assert sorted(stored) == [(text, 1) for text in texts]


# -- recall answers from the store alone; the detached child records the prompt and what was given ---------
@pytest.fixture
def recall_repo(home: Path, tmp_path: Path) -> Path:
    """test_recall.py's repository: an earlier session, other projects' notes and the timezone decision."""
    from tests import test_recall

    repo = test_recall.repo.__wrapped__(home, tmp_path)  # the fixture's body
    test_recall.timezone_note(repo)
    # What these tests check is where recall reads and records, not its bar: in a store this small the
    # prompt being asked (recorded before recall in the foreground, after it here) moves a note's score.
    write_config(tmp_path, "[recall]\nbar = 0.3\n")
    return repo


def write_config(tmp_path: Path, text: str) -> None:
    config = tmp_path / "config" / "cmem" / "config.toml"
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text(text)


def prompt_hook(repo: Path, session: str, prompt: str, **env: str) -> tuple[str, float]:
    """(the injected text, the seconds the agent waited) for a prompt, the hook detaching its write."""
    from tests.test_recall import context

    started = time.monotonic()
    result = hook(
        repo, "UserPromptSubmit", data=payload("UserPromptSubmit", session, repo, prompt=prompt), **env
    )
    waited = time.monotonic() - started
    assert (result.returncode, result.stderr) == (0, "")
    return context(json.loads(result.stdout) if result.stdout.strip() else None), waited


ASK = "the nightly job ran an hour late after the clocks changed"
ASK_AGAIN = "why did the nightly job run an hour late after the clock change"


def test_a_prompt_hook_injects_while_another_process_holds_the_write_lock(home, recall_repo, tmp_path):
    write_config(tmp_path, "[recall]\nbar = 0.3\n[hooks]\nbusy_timeout_ms = 30000\n")  # a writer waits 30 s
    locker = apsw.Connection(str(home / "cmem.db"))
    locker.execute("BEGIN IMMEDIATE")
    try:
        text, waited = prompt_hook(recall_repo, "s-locked", ASK)
        assert "Job times are Berlin wall-clock times" in text
        assert waited < 20  # answered from a read, not after the lock
        assert locker.execute("SELECT count(*) FROM user_prompts WHERE session = 's-locked'").fetchall() == [
            (0,)
        ]
    finally:
        locker.execute("ROLLBACK")
        locker.close()
    assert wait_for(home, "SELECT text FROM user_prompts WHERE session = 's-locked'", 1) == [(ASK,)]
    wait_until_spool_empty(home)
    given = db_rows(home, "SELECT key FROM agent_captures WHERE session = 's-locked' AND key LIKE 'recall:%'")
    assert len(given) == 1  # what was given is recorded with the prompt, by the detached child


def test_a_memory_is_not_given_twice_while_the_first_prompt_is_not_recorded_yet(home, recall_repo):
    first, _ = prompt_hook(recall_repo, "s-fast", ASK, **{DIE: "before-claim"})  # its child dies unrecorded
    assert "Job times are Berlin wall-clock times" in first
    assert db_rows(home, "SELECT 1 FROM user_prompts WHERE session = 's-fast'") == []
    again, _ = prompt_hook(recall_repo, "s-fast", ASK_AGAIN)
    assert "Job times are Berlin wall-clock times" not in again
    wait_for(home, "SELECT 1 FROM user_prompts WHERE session = 's-fast'", 2)
    wait_until_spool_empty(home)
    prompts = db_rows(home, "SELECT text FROM user_prompts WHERE session = 's-fast' ORDER BY created_at")
    assert prompts == [(ASK,), (ASK_AGAIN,)]
    third, _ = prompt_hook(recall_repo, "s-fast", ASK)  # and once recorded, the store remembers it
    assert "Job times are Berlin wall-clock times" not in third


def test_a_file_read_whose_record_is_not_written_yet_is_not_offered_again(home, recall_repo):
    """The read's record and its "offered" mark wait in the spool (its child died): the next read of the
    same file in the session is answered with nothing, and both reads are recorded once the spool drains."""
    from tests.test_recall import context

    schedule = str(recall_repo / "etl" / "schedule.py")

    def read(tool_use_id: str, **env: str) -> str:
        data = tool_payload(
            "s-read", recall_repo, "Read", {"file_path": schedule}, {"type": "text"}, tool_use_id
        )
        result = hook(recall_repo, "PostToolUse", data=data, **env)
        assert (result.returncode, result.stderr) == (0, "")
        return context(json.loads(result.stdout) if result.stdout.strip() else None)

    assert "Job times are Berlin wall-clock times" in read("toolu_r1", **{DIE: "in-transaction"})
    assert read("toolu_r2") == ""
    wait_until_spool_empty(home)
    rows = dict(db_rows(home, "SELECT key, repeats FROM agent_captures WHERE session = 's-read'"))
    assert "recall-file:etl/schedule.py" in rows  # offered, recorded by the replay of the first read
    assert sum(key.startswith("recall:") for key in rows) == 1
    [reads] = [repeats for key, repeats in rows.items() if key.startswith("read:")]
    assert reads == 1  # the two reads of the file merged into one record, each counted once


def test_before_an_edit_recall_answers_from_a_read_and_its_child_records_what_it_gave(home, recall_repo):
    """PreToolUse records nothing of its own; what it offered is spooled and recorded by its child, and a
    read of the file meanwhile (the child killed before its commit) is not offered the notes again."""
    from tests.test_recall import context

    schedule = str(recall_repo / "etl" / "schedule.py")
    edit = {"file_path": schedule, "old_string": "LOCAL", "new_string": "BERLIN"}

    def call(event: str, tool: str, tool_input: dict, tool_use_id: str, **env: str) -> str:
        data = tool_payload("s-edit", recall_repo, tool, tool_input, None, tool_use_id, event=event)
        result = hook(recall_repo, event, data=data, **env)
        assert (result.returncode, result.stderr) == (0, "")
        return context(json.loads(result.stdout) if result.stdout.strip() else None)

    assert "Job times are Berlin wall-clock times" in call(
        "PreToolUse", "Edit", edit, "toolu_e1", **{DIE: "in-transaction"}
    )
    assert call("PostToolUse", "Read", {"file_path": schedule}, "toolu_r1") == ""
    wait_until_spool_empty(home)
    keys = {key for (key,) in db_rows(home, "SELECT key FROM agent_captures WHERE session = 's-edit'")}
    assert "recall-file:etl/schedule.py" in keys
    assert sum(key.startswith("recall:") for key in keys) == 1


def test_a_prompt_hook_injects_nothing_while_the_store_cannot_be_read_and_its_prompt_follows(
    home, recall_repo, tmp_path
):
    """A store no reader can open (another process holds it exclusively) costs the agent recall's short
    wait, not the 60 s a command would wait: nothing is injected, hooks.log says why, and the prompt is
    recorded once the store is free (the child waits for it, or the next hook replays it)."""
    from tests.hook_log import hook_log

    locker = apsw.Connection(str(home / "cmem.db"))
    locker.execute("PRAGMA locking_mode = EXCLUSIVE")
    locker.execute("BEGIN EXCLUSIVE")
    locker.execute("DELETE FROM user_prompts WHERE 0")  # a write: now no other connection may even read
    try:
        text, waited = prompt_hook(recall_repo, "s-busy", ASK)
        assert text == ""
        assert waited < 20  # recall gave up after its short wait (the default busy wait is 60 s)
    finally:
        locker.execute("ROLLBACK")
        locker.close()
    assert "recall prompt session=s-busy: skipped" in hook_log(home)
    prompt_hook(recall_repo, "s-next", "write a Dockerfile")  # replays what a locked-out child spooled
    assert wait_for(home, "SELECT text FROM user_prompts WHERE session = 's-busy'", 1) == [(ASK,)]


def test_a_prompt_hook_past_its_recall_budget_injects_nothing_and_records_the_prompt(
    home, recall_repo, tmp_path
):
    """``[recall] budget_ms`` (here 1 ms, which the hook has spent before recall begins, or, at the latest,
    by its first statement, which is then abandoned): nothing is injected, and the prompt is recorded."""
    from tests.hook_log import hook_log

    write_config(tmp_path, "[recall]\nbar = 0.3\nbudget_ms = 1\n")
    text, _ = prompt_hook(recall_repo, "s-slow", ASK)
    assert text == ""
    assert "recall prompt session=s-slow: skipped" in hook_log(home)
    assert wait_for(home, "SELECT text FROM user_prompts WHERE session = 's-slow'", 1) == [(ASK,)]
    write_config(tmp_path, "[recall]\nbar = 0.3\n")
    again, _ = prompt_hook(recall_repo, "s-slow", ASK_AGAIN)  # nothing was given: the note is still news
    assert "Job times are Berlin wall-clock times" in again
