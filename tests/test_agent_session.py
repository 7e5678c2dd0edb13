"""The agent's own notes join its session: the SessionStart hook hands the session and the agent's name to
the agent's shell through Claude Code's ``CLAUDE_ENV_FILE`` (the lines Claude Code runs before each Bash
command), so `cmem add`, `cmem prompt add` and `cmem summary add` run by the agent carry them; MCP `remember`
names the client that sent it. Without the file nothing is guessed."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client, StdioServerParameters
from mcp_types import Implementation

from tests.agent_fixtures import payload, tool_payload
from tests.conftest import fake_repo


@pytest.fixture
def project(tmp_path: Path) -> Path:
    return fake_repo(tmp_path / "work", "orders-api", "src")


def hook(sh: Any, event: str, data: dict[str, Any], env: dict[str, str] | None = None) -> Any:
    result = sh("hook", event, input=json.dumps(data), env=env)
    assert (result.exit_code, result.stderr) == (0, "")
    return result


def agent_shell(command: str, cwd: Path, env_file: Path | None) -> subprocess.CompletedProcess[str]:
    """One Bash command of the agent, as Claude Code runs it: the env file sourced first, if there is one."""
    cmem = f"{sys.executable} -m cmem_cli"
    prefix = f'. "{env_file}" && ' if env_file is not None else ""
    return subprocess.run(
        ["bash", "-c", prefix + command.replace("cmem ", cmem + " ", 1)],
        cwd=cwd,
        env=dict(os.environ),
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_a_note_the_agent_adds_after_session_start_carries_its_session_and_agent(sh, home, project, tmp_path):
    env_file = tmp_path / "claude-session-env.sh"
    env_file.write_text('export PATH="$PATH"\n')  # another hook's line: kept, appended to
    sid = "7d1c2d3e-agent-notes"
    hook(sh, "SessionStart", payload("SessionStart", sid, project, source="startup"),
         env={"CLAUDE_ENV_FILE": str(env_file)})  # fmt: skip
    assert env_file.read_text() == f'export PATH="$PATH"\nexport CMEM_SESSION={sid} CMEM_AGENT=claude-code\n'
    for n in range(3):
        hook(sh, "PostToolUse", tool_payload(sid, project, "Read", {"file_path": f"{project}/src/f{n}.py"}))

    note = agent_shell(
        'cmem add --type decision -t "Refunds go back to the original card"', project, env_file
    )
    assert note.returncode == 0, note.stderr
    summary = agent_shell('cmem summary add --completed "Refunds decided"', project, env_file)
    assert summary.returncode == 0, summary.stderr
    prompt = agent_shell('cmem prompt add "what about partial refunds?"', project, env_file)
    assert prompt.returncode == 0, prompt.stderr

    [row] = sh("get", note.stdout.strip(), "--json").json()
    assert (row["session"], row["agent"], row["project"]) == (sid, "claude-code", "orders-api")
    shown = sh("session", "show", sid, "--json").json()
    assert shown["summaries"] == [summary.stdout.strip()]
    assert [p["text"] for p in shown["prompts"]] == ["what about partial refunds?"]
    listed = sh("search", "--session", sid, "--json").json()
    assert int(note.stdout) in [r["id"] for r in listed]

    briefing = sh("context", "-p", "orders-api", "--json").json()
    [decision] = [o for o in briefing["observations"] if o["id"] == int(note.stdout)]
    assert decision["session"] == sid  # the note and the session's reads are one session's work
    [reads] = briefing["activity"]
    assert (reads["session"], reads["kind"], reads["count"]) == (sid, "read", 3)


def test_without_the_env_file_a_note_gets_no_session_and_a_fifo_there_never_blocks_the_hook(
    sh, home, project, tmp_path
):
    sid = "8e2d3f4a-no-env-file"
    # the session's agent: a process that runs the hook and exits (tests/test_process_session.py: its own
    # shell's notes would find the session through it); the note below is not run by it
    start = json.dumps(payload("SessionStart", sid, project, source="startup"))
    runs_hook = (
        "import subprocess, sys; subprocess.run(sys.argv[1:], input=sys.stdin.read(), text=True, check=True)"
    )
    subprocess.run([sys.executable, "-c", runs_hook, sys.executable, "-m", "cmem_cli", "hook", "SessionStart"],
                   input=start, text=True, check=True, cwd=project, timeout=120)  # fmt: skip
    note = agent_shell('cmem add -t "Orders are archived after 90 days"', project, None)
    assert note.returncode == 0, note.stderr
    [row] = sh("get", note.stdout.strip(), "--json").json()
    assert (row["session"], row["agent"]) == (None, "cli")  # never guessed: the session may be another's
    # a resumed session (another SessionStart) hands the same session again; a FIFO is never waited on
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    hook(sh, "SessionStart", payload("SessionStart", sid, project, source="resume"),
         env={"CLAUDE_ENV_FILE": str(fifo)})  # fmt: skip
    log = (home / "logs" / "hooks.log").read_text()
    assert "error SessionStart: cannot write CLAUDE_ENV_FILE: No such device or address" in log  # not blocked


def test_mcp_remember_names_the_client_that_sent_it(home, sh):
    async def main() -> Any:
        params = StdioServerParameters(
            command=sys.executable, args=["-m", "cmem_cli", "mcp"], env=dict(os.environ)
        )
        info = Implementation(name="claude-code", version="2.1.140")
        async with Client(params, read_timeout_seconds=60, client_info=info) as client:
            return await client.call_tool("remember", {"title": "Invoices are immutable", "project": "demo"})

    result = anyio.run(main)
    assert result.is_error is False
    [row] = sh("search", "invoices", "--json").json()
    assert (row["agent"], row["session"]) == ("claude-code", None)


def test_codex_hands_its_session_to_its_shell_through_codex_env_file(sh, home, project, tmp_path):
    """Codex gives SessionStart hooks CODEX_ENV_FILE (and the same path as CLAUDE_ENV_FILE), sourced before
    its later shell commands: the lines are written once, name Codex, and its `cmem add` joins the session."""
    env_file = tmp_path / "codex-shell-env.sh"
    sid = "019d2b3c-codex-notes"
    data = {"session_id": sid, "transcript_path": None, "cwd": str(project), "hook_event_name": "SessionStart",
            "model": "gpt-5-codex", "permission_mode": "default", "source": "startup"}  # fmt: skip
    result = sh("hook", "--agent", "codex", "SessionStart", input=json.dumps(data),
                env={"CODEX_ENV_FILE": str(env_file), "CLAUDE_ENV_FILE": str(env_file)})  # fmt: skip
    assert (result.exit_code, result.stderr) == (0, "")
    assert "additionalContext" in result.json()["hookSpecificOutput"]
    assert env_file.read_text() == f"export CMEM_SESSION={sid} CMEM_AGENT=codex\n"
    note = agent_shell('cmem add --type decision -t "Invoices are immutable once sent"', project, env_file)
    assert note.returncode == 0, note.stderr
    [row] = sh("get", note.stdout.strip(), "--json").json()
    assert (row["session"], row["agent"], row["project"]) == (sid, "codex", "orders-api")


def test_the_env_file_gets_one_line_per_session_and_only_from_the_agent_that_gave_it(
    sh, home, project, tmp_path
):
    """Claude Code runs SessionStart again on resume, /clear and compaction with the same file: the session's
    line is written once. Another agent's hook (Gemini CLI started from a Claude Code shell inherits
    CLAUDE_ENV_FILE) never writes into a file its agent did not give it."""
    env_file = tmp_path / "claude-session-env.sh"
    sid = "9f3e4a5b-one-line"
    for source in ("startup", "resume", "clear", "compact"):
        hook(sh, "SessionStart", payload("SessionStart", sid, project, source=source),
             env={"CLAUDE_ENV_FILE": str(env_file)})  # fmt: skip
    assert env_file.read_text() == f"export CMEM_SESSION={sid} CMEM_AGENT=claude-code\n"
    other = "0a1b2c3d-next-session"
    hook(sh, "SessionStart", payload("SessionStart", other, project, source="clear"),
         env={"CLAUDE_ENV_FILE": str(env_file)})  # fmt: skip
    hook(sh, "SessionStart", payload("SessionStart", sid, project, source="resume"),
         env={"CLAUDE_ENV_FILE": str(env_file)})  # fmt: skip
    assert env_file.read_text().splitlines() == [
        f"export CMEM_SESSION={sid} CMEM_AGENT=claude-code",
        f"export CMEM_SESSION={other} CMEM_AGENT=claude-code",
        f"export CMEM_SESSION={sid} CMEM_AGENT=claude-code",  # back to the first: the last line wins
    ]

    inherited = tmp_path / "inherited-env.sh"
    for agent, event in (
        ("gemini", "SessionStart"),
        ("cursor", "sessionStart"),
        ("opencode", "session.created"),
    ):
        data = {"session_id": f"{agent}-s1", "sessionID": f"{agent}-s1", "conversation_id": f"{agent}-s1",
                "cwd": str(project), "hook_event_name": event}  # fmt: skip
        result = sh("hook", "--agent", agent, event, input=json.dumps(data),
                    env={"CLAUDE_ENV_FILE": str(inherited), "CODEX_ENV_FILE": str(inherited)})  # fmt: skip
        assert result.exit_code == 0, result.stderr
    assert not inherited.exists()
