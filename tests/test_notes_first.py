"""What the agent wrote ranks above what the hooks recorded about it: a session's note (a decision, a bug's
cause) comes before the same session's summary, prompt and tool records that restate the request, through
the real CLI (hooks as Claude Code runs them, the note from the agent's shell)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.agent_fixtures import payload, tool_payload
from tests.runner import invoke

SESSION = "5b1c0f7e-2f1d-4c38-9a61-2d8f0c1e7a10"
REQUEST = "Partners hit 429s during their nightly sync, raise the rate limit"


def cmem(*args: str, cwd: Path, stdin: str | None = None, env: dict[str, str] | None = None) -> str:
    """`cmem ARGS` in ``cwd``, in this process (tests/runner.py): its stdout."""
    result = invoke(*args, input=stdin, cwd=cwd, env=env)
    assert result.exit_code == 0, result.stderr
    return result.stdout


@pytest.fixture
def week(home: Path, tmp_path: Path) -> Path:
    """One session: the request, a read, an edit, the agent's decision note, the turn's end."""
    repo = tmp_path / "authsvc"
    (repo / ".git").mkdir(parents=True)
    (repo / "src").mkdir()
    limit = repo / "src" / "ratelimit.py"
    limit.write_text("def bucket(rate=10, burst=20):\n    return rate, burst\n")

    def hook(event: str, data: dict) -> None:
        cmem("hook", event, cwd=repo, stdin=json.dumps(data))

    hook("SessionStart", payload("SessionStart", SESSION, repo, source="startup"))
    hook("UserPromptSubmit", payload("UserPromptSubmit", SESSION, repo, prompt=REQUEST))
    hook("PostToolUse", tool_payload(SESSION, repo, "Read", {"file_path": str(limit)}, {"type": "text"}))
    hook(
        "PostToolUse",
        tool_payload(
            SESSION,
            repo,
            "Edit",
            {"file_path": str(limit), "old_string": "rate=10, burst=20", "new_string": "rate=20, burst=40"},
        ),
    )
    cmem(
        "add", "--type", "decision", "-t", "Each API key may send 20 requests a second, bursts up to 40",
        "--narrative", "Partners' nightly syncs were throttled at 10/s; the bucket now refills at 20 per "
        "second and holds 40. Agreed with ops; the limit is per key, not per IP.",
        cwd=repo, env={"CMEM_SESSION": SESSION, "CMEM_AGENT": "claude-code"},
    )  # fmt: skip
    hook(
        "Stop",
        payload(
            "Stop", SESSION, repo, last_assistant_message="Raised the nightly sync's rate limit for partners."
        ),
    )
    return repo


def test_the_agents_note_ranks_above_the_summary_that_restates_the_request(week: Path) -> None:
    rows = json.loads(cmem("search", "partners get 429 in the nightly sync", "--json", cwd=week))
    kinds = [(r["kind"], r["title"][:40]) for r in rows]
    assert rows[0]["title"].startswith("Each API key may send 20 requests"), kinds
    # the automatic rows are still found, below the note
    assert any(r["kind"] == "summary" for r in rows[1:]), kinds


def test_the_note_leads_in_keyword_mode_too(week: Path) -> None:
    rows = json.loads(cmem("search", "raise the rate limit", "--mode", "keyword", "--json", cwd=week))
    assert rows[0]["title"].startswith("Each API key may send 20 requests"), [r["title"] for r in rows]


def test_a_failed_commands_record_keeps_its_place_above_the_note(week: Path) -> None:
    """A failure's record holds the exact error, which no note restates: searched by that message, it stays."""
    failed = tool_payload(
        SESSION, week, "Bash", {"command": "pytest -q"}, event="PostToolUseFailure",
        error="Exit code 1\nE   TokenBucketOverflow: burst of 41 requests exceeds 40",
    )  # fmt: skip
    cmem("hook", "PostToolUseFailure", cwd=week, stdin=json.dumps(failed))
    rows = json.loads(
        cmem("search", "TokenBucketOverflow burst exceeds", "--mode", "keyword", "--json", cwd=week)
    )
    assert rows[0]["title"].startswith("Command failed: pytest -q"), [r["title"] for r in rows]
