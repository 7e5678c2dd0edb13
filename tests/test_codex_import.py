"""`cmem import codex`: Codex CLI's session rollouts (~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl, one
`{timestamp, type, payload}` object per line) become the records its hooks make, incrementally, and never
twice: not on a re-run, not after the hooks captured the same session."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.agent_fixtures import all_stored_bytes, db_rows

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "agents" / "codex-rollouts"
SESSION = "019d1a2b-3c4d-7e5f-8a9b-0c1d2e3f4a5b"


def lines(name: str, project: Path) -> str:
    text = (FIXTURES / name).read_text()
    return text.replace("@CWD@", json.dumps(str(project))[1:-1]).replace("@SESSION@", SESSION)


@pytest.fixture
def rollout(home: Path, project: Path) -> Path:
    folder = Path(os.environ["HOME"]) / ".codex" / "sessions" / "2026" / "11" / "27"
    folder.mkdir(parents=True)
    path = folder / f"rollout-2026-11-27T09-00-00-{SESSION}.jsonl"
    path.write_text(lines("rollout-2026-11-27T09-00-00-SESSION.jsonl", project))
    return path


def test_a_rollout_becomes_the_session_its_hooks_would_have_recorded(sh, home, rollout) -> None:
    result = sh("import", "codex", "--settle", "0", "--json")
    assert result.exit_code == 0, result.stderr
    [report] = result.json()
    assert (report["prompts"], report["observations"], report["summaries"]) == (1, 2, 1)
    assert db_rows(
        home, "SELECT agent, project, started_at > 0 FROM sessions WHERE session_id = ?", (SESSION,)
    ) == [("codex", "billing-api", 1)]
    # the environment context Codex stores as a user message is not a prompt; the private span is gone
    assert db_rows(home, "SELECT prompt_number, text FROM user_prompts") == [
        (1, "Make the invoice total exact")
    ]
    rows = db_rows(home, "SELECT type, title, agent, files_modified, facts FROM observations ORDER BY id")
    assert [(r[0], r[1], r[2]) for r in rows] == [
        ("error", "Command failed: pytest -q tests/test_invoice.py", "codex"),
        ("change", "Patched src/invoice.py", "codex"),
    ]
    assert "exit status 1" in json.loads(rows[0][4])
    assert json.loads(rows[1][3]) == ["src/invoice.py"]
    assert db_rows(home, "SELECT request, completed FROM session_summaries") == [
        ("Make the invoice total exact", "Rounded the sum once; the test passes now.")
    ]
    assert b"99-1234" not in all_stored_bytes(home)


def test_a_rerun_reads_only_what_was_appended(sh, home, rollout, project) -> None:
    assert sh("import", "codex", "--settle", "0").exit_code == 0
    again = sh("import", "codex", "--settle", "0", "--json").json()
    assert (again[0]["prompts"], again[0]["observations"], again[0]["summaries"]) == (0, 0, 0)
    with rollout.open("a") as fh:
        fh.write(lines("second-turn.jsonl", project))
    more = sh("import", "codex", "--settle", "0", "--json").json()
    assert (more[0]["prompts"], more[0]["observations"], more[0]["summaries"]) == (1, 1, 1)
    assert db_rows(home, "SELECT count(*) FROM observations") == [(3,)]
    assert db_rows(home, "SELECT title, type FROM observations ORDER BY id DESC LIMIT 1") == [
        ("Ran git diff --stat", "discovery")
    ]
    assert db_rows(home, "SELECT prompt_number, text FROM user_prompts ORDER BY 1") == [
        (1, "Make the invoice total exact"),
        (2, "Now update the changelog"),
    ]


def test_an_open_turn_is_read_again_once_it_has_finished(sh, home, rollout, project) -> None:
    """A rollout still being written (not settled): the turn whose output has not come yet is left for the
    next run, which records it once."""
    text = rollout.read_text().splitlines(keepends=True)
    rollout.write_text("".join(text[:6]))  # the shell call is there, its output not yet
    first = sh("import", "codex", "--json").json()[0]
    assert first["observations"] == 0 and first["complete"] is False
    rollout.write_text("".join(text))
    second = sh("import", "codex", "--settle", "0", "--json").json()[0]
    assert (second["prompts"], second["observations"], second["summaries"]) == (0, 2, 1)
    assert db_rows(home, "SELECT count(*) FROM user_prompts") == [(1,)]


def test_a_session_the_hooks_captured_is_not_imported_twice(sh, home, rollout, project) -> None:
    """The PostToolUse hook keys a call by its tool_use_id, which is the rollout's call_id; prompts and
    summaries by their text: importing the same session afterwards adds nothing."""
    base = {"session_id": SESSION, "transcript_path": str(rollout), "cwd": str(project), "model": "gpt-5-codex",
            "permission_mode": "default", "turn_id": "1"}  # fmt: skip

    def hook(event: str, **fields: object) -> None:
        result = sh(
            "hook", "--agent", "codex", event, input=json.dumps({**base, "hook_event_name": event, **fields})
        )
        assert result.exit_code == 0

    hook("UserPromptSubmit", prompt="Make the invoice total exact <private>acct 99-1234</private>")
    hook(
        "PostToolUse",
        tool_name="Bash",
        tool_use_id="call_shell_1",
        tool_input={"command": "pytest -q tests/test_invoice.py"},
        tool_response="Exit code: 1\nWall time: 0.9 seconds\nOutput:\nFAILED tests/test_invoice.py::test_total\n",
    )
    hook("Stop", stop_hook_active=False, last_assistant_message="Rounded the sum once; the test passes now.")
    imported = sh("import", "codex", "--settle", "0", "--json").json()[0]
    assert (imported["prompts"], imported["observations"], imported["summaries"]) == (0, 1, 0)  # the patch
    assert db_rows(home, "SELECT count(*) FROM observations") == [(2,)]
    assert db_rows(home, "SELECT count(*) FROM user_prompts") == [(1,)]


def test_no_codex_sessions_folder_is_a_one_line_error(sh, home) -> None:
    result = sh("import", "codex")
    assert result.exit_code != 0
    assert (
        result.stderr.startswith("cmem: no Codex session directory") and len(result.stderr.splitlines()) == 1
    )


def test_a_nul_in_a_prompt_or_a_2_mb_tool_name_never_blocks_the_rollout(sh, home, rollout, project) -> None:
    """One bad line is repaired (a NUL becomes U+FFFD) or dropped and counted; the turns after it are
    imported and the offset moves past it, so a second run adds nothing."""
    assert sh("import", "codex", "--settle", "0").exit_code == 0
    bad = [
        {"timestamp": "2026-11-27T09:04:00.000Z", "type": "event_msg",
         "payload": {"type": "user_message", "message": "a prompt with a \x00 inside"}},
        {"timestamp": "2026-11-27T09:04:01.000Z", "type": "response_item",
         "payload": {"type": "function_call", "name": "x" * 2_000_000, "arguments": "{}", "call_id": "c-big"}},
        {"timestamp": "2026-11-27T09:04:02.000Z", "type": "response_item",
         "payload": {"type": "function_call_output", "call_id": "c-big", "output": "done"}},
    ]  # fmt: skip
    with rollout.open("a") as fh:
        fh.write("".join(json.dumps(line) + "\n" for line in bad))
        fh.write(lines("second-turn.jsonl", project))
    result = sh("import", "codex", "--settle", "0", "--json")
    assert result.exit_code == 0, result.stderr
    [report] = result.json()
    assert (report["prompts"], report["observations"], report["dropped"]) == (2, 1, 1)
    assert report["complete"] and report["offset"] == rollout.stat().st_size
    assert db_rows(home, "SELECT text FROM user_prompts ORDER BY prompt_number") == [
        ("Make the invoice total exact",),
        ("a prompt with a \ufffd inside",),
        ("Now update the changelog",),
    ]
    again = sh("import", "codex", "--settle", "0", "--json").json()
    assert (again[0]["prompts"], again[0]["observations"], again[0]["dropped"]) == (0, 0, 0)
