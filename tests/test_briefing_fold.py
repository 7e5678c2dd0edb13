"""A briefing a person would write, through the real hooks: a session's reads, test runs, commits and
scratch commands fold into one correct line each kind (tests in one, commits and commands in one), the
decisions and the last summary lead, and the budget holds."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from cmem_cli.services.read.activity import command_kind, failed_tests, where
from tests.agent_fixtures import payload, tool_payload
from tests.conftest import fake_repo

SESSION = "5a1b2c3d-reset-work"


@pytest.fixture
def project(tmp_path: Path) -> Path:
    return fake_repo(tmp_path / "work", "auth-api")


def hook(sh: Any, event: str, data: dict[str, Any]) -> Any:
    result = sh("hook", event, input=json.dumps(data))
    assert result.exit_code == 0, result.stderr
    return result


def bash(sh: Any, project: Path, command: str, *, failed: str | None = None, stdout: str = "") -> None:
    if failed is None:
        data = tool_payload(
            SESSION, project, "Bash", {"command": command}, {"stdout": stdout, "exit_code": 0}
        )
        hook(sh, "PostToolUse", data)
    else:
        data = tool_payload(SESSION, project, "Bash", {"command": command}, event="PostToolUseFailure",
                            error=f"Exit code 1\n{failed}")  # fmt: skip
        hook(sh, "PostToolUseFailure", data)


@pytest.mark.slow
def test_a_session_of_40_captured_calls_takes_three_lines_and_the_older_decisions_stay(sh, home, project):
    old = datetime.now(UTC) - timedelta(days=3)
    decisions = [
        {"type": "decision", "title": title, "project": "auth-api", "session": "0ld-session",
         "created_at": (old + timedelta(minutes=n)).isoformat()}
        for n, title in enumerate([
            "Tokens expire after 15 minutes", "Refresh tokens rotate on every use", "Passwords hash with argon2id",
            "Sessions live in Redis", "Password reset links are single-use",
        ])
    ]  # fmt: skip
    sh("session", "start", "0ld-session", "-p", "auth-api")
    added = sh("add", "--json", "-", input=json.dumps(decisions))
    assert added.exit_code == 0, added.stderr
    summary = sh("summary", "add", "--session", "0ld-session", "--completed", "Token rules settled",
                 "--next-steps", "Fix the reset flow", "-p", "auth-api")  # fmt: skip
    assert summary.exit_code == 0, summary.stderr

    hook(sh, "SessionStart", payload("SessionStart", SESSION, project, source="startup"))
    reads = [f"src/auth/m{n}.py" for n in range(20)] + ["tests/test_reset.py"]
    reads += ["README.md", "pyproject.toml", "setup.cfg", "Makefile"]
    for path in reads:
        hook(sh, "PostToolUse", tool_payload(SESSION, project, "Read", {"file_path": f"{project}/{path}"}))
    runs = ["pass", "fail", "pass", "pass", "fail", "pass", "pass", "fail"]
    for n, outcome in enumerate(runs):
        command = "python -m pytest tests/test_reset.py -q" if n % 2 else "pytest -q"
        if outcome == "pass":
            bash(sh, project, command, stdout="12 passed in 0.4s")
        else:
            bash(sh, project, command,
                 failed="FAILED tests/test_reset.py::test_link_expires - AssertionError\n1 failed, 11 passed")  # fmt: skip
    for message in ("Fix reset token expiry", "Test single-use links", "Log reset attempts"):
        bash(sh, project, f'git commit -am "{message}"', stdout="[main 1a2b3c4] " + message)
    for command in ('python -c "import jwt; print(jwt.__version__)"', "python3 -c 'print(2**10)'",
                    "node -e 'console.log(Date.now())'", "python - <<'EOF'\nprint('scratch')\nEOF"):  # fmt: skip
        bash(sh, project, command, stdout="ok")

    out = hook(sh, "SessionStart", payload("SessionStart", "next-session", project, source="startup"))
    text = json.loads(out.stdout)["hookSpecificOutput"]["additionalContext"]
    lines = text.splitlines()
    activity = lines[
        lines.index(next(line for line in lines if line.startswith("## What the agents did"))) + 1 : -1
    ]
    folded = [re.fullmatch(r"- \d{4}-\d\d-\d\d (\S+): (.*) \(#\d+\.\.#\d+\)", line) for line in activity]
    assert [m.groups() if m else line for m, line in zip(folded, activity, strict=True)] == [
        ("5a1b2c3d-re…", "3 commits, 4 scratch commands"),  # newest first
        ("5a1b2c3d-re…", "ran the tests 8 times, 3 failed, last run failed: tests/test_reset.py"),
        ("5a1b2c3d-re…", "read 25 files: 20 under src/, 4 in the top folder, 1 under tests/"),
    ]
    for decision in decisions:  # the five older decisions are all kept, and lead
        [line] = [n for n, line in enumerate(lines) if decision["title"] in line]
        assert line < lines.index(activity[0])
    assert lines[1].startswith("## Last session (") and "- Next steps: Fix the reset flow" in lines
    assert not [line for line in lines if "Ran " in line or "Command failed" in line]

    data = sh("context", "-p", "auth-api", "--json").json()
    assert data["tokens"] <= data["budget"] == 1500
    test_line = next(a for a in data["activity"] if a["kind"] == "test")
    assert (test_line["count"], test_line["failed"], test_line["last_failed"], test_line["failing"]) == (
        8, 3, True, ["tests/test_reset.py"]
    )  # fmt: skip
    commands = next(a for a in data["activity"] if a["kind"] == "command")
    assert (commands["commits"], commands["scratch"], commands["other"]) == (3, 4, 0)
    tight = sh("context", "-p", "auth-api", "--budget", "120", "--json").json()
    assert tight["tokens"] <= 120


@pytest.mark.parametrize(
    ("files", "said"),
    [
        (["src/a.py", "src/b.py"], "under src/"),
        (["tests/test_a.py", "README.md", "setup.py"], ": tests/test_a.py, README.md, setup.py"),
        (["README.md", "tests/a.py", "tests/b.py", "docs/x.md"], ": 2 under tests/, 1 in the top folder, 1 under docs/"),
    ],
)  # fmt: skip
def test_where_files_were_counts_every_file_where_it_is(files: list[str], said: str) -> None:
    assert where(files) == said


@pytest.mark.parametrize(
    ("command", "kind"),
    [
        ("pytest -q", "test"),
        ("python -m pytest tests/test_x.py", "test"),
        ("npm test", "test"),
        ("cargo test --all", "test"),
        ("make check", "test"),
        ("git commit -m 'x'", "commit"),
        ("git -C repo commit --amend", "commit"),
        ("python -c 'print(1)'", "scratch"),
        ("node -e 'x'", "scratch"),
        ("npm install", "other"),
        ("git push", "other"),
        ("cat tests/test_x.py", "other"),
    ],
)
def test_command_kinds(command: str, kind: str) -> None:
    assert command_kind(command) == kind


def test_what_a_failed_run_names_comes_from_its_output_else_its_command() -> None:
    assert failed_tests(
        "pytest", "FAILED tests/a.py::t1 - x\nFAILED tests/a.py::t2\nFAILED tests/b.py::t"
    ) == [
        "tests/a.py",
        "tests/b.py",
    ]
    assert failed_tests("go test ./...", "--- FAIL: TestReset (0.00s)") == ["TestReset"]
    assert failed_tests("pytest tests/test_reset.py -x", "Exit code 2") == ["tests/test_reset.py"]
    assert failed_tests("npm test", "Exit code 1") == []
