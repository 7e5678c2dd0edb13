"""Codex CLI, Gemini CLI, Cursor and opencode captured through `cmem hook --agent AGENT EVENT`, fed with the
payloads each agent's documentation describes (tests/fixtures/agents/AGENT/EVENT[.case].json, one per event,
with odd cases: a failed tool, a huge output, a `<private>` span, a path outside the repository), through
the real command in new processes, as the agents run it. The records must be the ones a Claude Code session
makes: same runner, same rules, same scrubbing, same spool."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cmem_cli.capture.agents import specs
from tests.agent_fixtures import AGENT_FIXTURES as FIXTURES
from tests.agent_fixtures import all_stored_bytes, db_rows, payload, recorded_payload
from tests.hook_log import hook_log

# A secret at the very end of a 5 MB output: where the Bash narrative keeps the tail.
TOKEN = "ghp_" + "Zq7" * 12
HUGE = "rate 0.0123 EUR\n" * 320_000 + f"export GITHUB_TOKEN={TOKEN}\n"
HUGE_IN_JSON = json.dumps(HUGE)[1:-1]  # encoded once, not once a payload


def fixture(agent: str, name: str, project: Path, session: str) -> dict:
    """A documented payload with this test's folders and session filled in, and @HUGE@ as HUGE."""
    data = recorded_payload(agent, name, project, session)
    text = json.dumps(data)
    return json.loads(text.replace("@HUGE@", HUGE_IN_JSON)) if "@HUGE@" in text else data


def run(sh, agent: str, name: str, project: Path, session: str):
    data = fixture(agent, name, project, session)
    # the event on the command line, as each agent's installed entry names it
    event = data.get("hook_event_name") or name.split(".")[0]  # Cline's hook is named by its file
    result = sh("hook", "--agent", agent, event, input=json.dumps(data))
    assert result.exit_code == 0 and result.stderr == ""
    return result


def log_text(home: Path) -> str:
    return hook_log(home)


def observations(home: Path, session: str) -> list[tuple]:
    return db_rows(
        home,
        "SELECT type, title, agent, files_read, files_modified, narrative, facts FROM observations "
        "WHERE session = ? ORDER BY id",
        (session,),
    )


def claude_briefing(sh, project: Path) -> str:
    """What Claude Code's SessionStart hook injects for this project, for comparison."""
    result = sh("hook", "SessionStart", input=json.dumps(payload("SessionStart", "claude-probe", project)))
    return json.loads(result.stdout)["hookSpecificOutput"]["additionalContext"]


def remember_something(sh, project: Path) -> None:
    added = sh(
        "add",
        "--type",
        "decision",
        "--title",
        "Invoice totals round the sum, not each line",
        "--project",
        "billing-api",
    )
    assert added.exit_code == 0, added.stderr


def assert_huge_output_kept_short_and_scrubbed(home: Path, row: tuple) -> None:
    narrative = row[5]
    assert len(narrative) < 4_000
    assert "[REDACTED:github-token]" in narrative
    assert TOKEN.encode() not in all_stored_bytes(home)


# -- Codex CLI ------------------------------------------------------------------------------------------


def test_a_codex_session_is_captured_from_its_documented_hook_payloads(sh, home, project) -> None:
    sid = "019d036d-codex-session"
    remember_something(sh, project)
    start = run(sh, "codex", "SessionStart", project, sid)
    answer = json.loads(start.stdout)
    assert answer["hookSpecificOutput"]["hookEventName"] == "SessionStart"
    assert answer["hookSpecificOutput"]["additionalContext"] == claude_briefing(sh, project)
    assert "Invoice totals round the sum, not each line" in answer["hookSpecificOutput"]["additionalContext"]
    for name in (
        "UserPromptSubmit",
        "PreToolUse",
        "PostToolUse.failed",
        "PostToolUse.apply_patch",
        "PostToolUse.mcp",
        "PostToolUse.huge",
        "Stop",
    ):
        assert run(sh, "codex", name, project, sid).stdout == ""

    assert log_text(home) == ""
    assert db_rows(home, "SELECT agent, project FROM sessions WHERE session_id = ?", (sid,)) == [
        ("codex", "billing-api")
    ]
    prompts = db_rows(home, "SELECT text FROM user_prompts WHERE session = ?", (sid,))
    assert prompts == [("Why does the invoice total drift by a cent?  Fix it.",)]
    rows = observations(home, sid)
    assert [(r[0], r[1], r[2]) for r in rows] == [
        ("error", "Command failed: pytest -q tests/test_invoice.py", "codex"),
        (
            "change",
            "Patched 2 files: src/invoice.py, "
            + str(project.parent.parent / "elsewhere/notes/invoice-rounding.md"),
            "codex",
        ),
        ("discovery", "Called github get_issue", "codex"),
        ("change", "Ran python scripts/dump_rates.py", "codex"),
    ]
    assert "exit status 1" in json.loads(rows[0][6])
    assert json.loads(rows[1][4]) == [
        "src/invoice.py",
        str(project.parent.parent / "elsewhere" / "notes" / "invoice-rounding.md"),
    ]
    assert_huge_output_kept_short_and_scrubbed(home, rows[3])
    assert db_rows(home, "SELECT request, completed FROM session_summaries WHERE session = ?", (sid,)) == [
        (
            "Why does the invoice total drift by a cent?  Fix it.",
            "The total now rounds the sum once instead of each line; tests pass.",
        )
    ]
    assert b"ACME-778812" not in all_stored_bytes(home)


# -- Gemini CLI -----------------------------------------------------------------------------------------


def test_a_gemini_session_is_captured_from_its_documented_hook_payloads(sh, home, project) -> None:
    sid = "gemini-5f1c-session"
    remember_something(sh, project)
    start = run(sh, "gemini", "SessionStart", project, sid)
    answer = json.loads(start.stdout)
    assert answer == {
        "hookSpecificOutput": {
            "hookEventName": "SessionStart",
            "additionalContext": claude_briefing(sh, project),
        }
    }
    for name in (
        "BeforeAgent",
        "BeforeTool",
        "AfterTool.replace",
        "AfterTool.failed",
        "AfterTool.outside",
        "AfterTool.mcp",
        "AfterTool.huge",
        "AfterAgent",
        "SessionEnd",
    ):
        assert run(sh, "gemini", name, project, sid).stdout == ""

    assert log_text(home) == ""
    assert db_rows(home, "SELECT agent, status FROM sessions WHERE session_id = ?", (sid,)) == [
        ("gemini", "completed")
    ]
    assert db_rows(home, "SELECT text FROM user_prompts WHERE session = ?", (sid,)) == [
        ("Rename the config loader.",)
    ]
    rows = observations(home, sid)
    outside = str(project.parent.parent / "elsewhere" / "shared" / "defaults.toml")
    assert [(r[0], r[1]) for r in rows] == [
        ("change", "Edited src/config.py"),
        ("error", "Command failed: npm test"),
        ("discovery", f"Read {outside}"),
        ("discovery", "Called github get_issue"),
        ("discovery", "Ran cat build.log"),
    ]
    assert json.loads(rows[0][4]) == ["src/config.py"]
    assert "+ def load_config(" in rows[0][5]
    assert "exit status 1" in json.loads(rows[1][6]) and "FAIL src/config.test.ts" in rows[1][5]
    assert json.loads(rows[2][3]) == [outside]
    assert_huge_output_kept_short_and_scrubbed(home, rows[4])
    assert db_rows(home, "SELECT completed FROM session_summaries WHERE session = ?", (sid,)) == [
        ("Renamed load_cfg to load_config and updated both callers.",)
    ]
    assert b"hunter2" not in all_stored_bytes(home)


def test_a_gemini_read_of_some_lines_cites_those_lines_counted_from_one(sh, home, project) -> None:
    """Gemini CLI's read_file counts `offset` from 0 (its tool schema: "the 0-based line number to start
    reading from"); Claude Code's Read counts from 1. offset 40, limit 10 read lines 41-50."""
    sid = "gemini-read-lines"
    assert run(sh, "gemini", "AfterTool.read-lines", project, sid).stdout == ""
    rows = db_rows(home, "SELECT subtitle, files_read FROM observations WHERE session = ?", (sid,))
    assert [(subtitle, json.loads(files)) for subtitle, files in rows] == [("lines 41-50", ["src/config.py"])]


# -- Cursor ---------------------------------------------------------------------------------------------


def test_a_cursor_conversation_is_captured_from_its_documented_hook_payloads(sh, home, project) -> None:
    sid = "cursor-conv-7c1f"
    remember_something(sh, project)
    start = run(sh, "cursor", "sessionStart", project, sid)
    assert json.loads(start.stdout) == {"additional_context": claude_briefing(sh, project)}
    assert json.loads(run(sh, "cursor", "beforeSubmitPrompt", project, sid).stdout) == {"continue": True}
    assert run(sh, "cursor", "beforeShellExecution", project, sid).stdout == ""  # no permission decision
    for name in (
        "afterFileEdit",
        "afterFileEdit.outside",
        "afterShellExecution",
        "afterShellExecution.failed",
        "afterShellExecution.huge",
        "afterMCPExecution",
        "stop",
        "sessionEnd",
    ):
        assert run(sh, "cursor", name, project, sid).stdout == ""

    assert log_text(home) == ""
    assert db_rows(home, "SELECT agent, status FROM sessions WHERE session_id = ?", (sid,)) == [
        ("cursor", "completed")
    ]
    assert db_rows(home, "SELECT text FROM user_prompts WHERE session = ?", (sid,)) == [
        ("Add retries to the webhook sender",)
    ]
    rows = observations(home, sid)
    outside = str(project.parent.parent / "elsewhere" / "scratch" / "retry-notes.md")
    assert [(r[0], r[1]) for r in rows] == [
        ("change", "Edited src/webhooks.ts (2 edits)"),
        ("change", f"Edited {outside}"),
        ("change", "Ran npm run build"),
        ("error", "Command failed: npm test"),
        ("discovery", "Ran cat dist/bundle.js.map"),
        ("discovery", "Used get_issue"),
    ]
    assert "+ await withRetry(() => send(event), 3)" in rows[0][5]
    assert "exit status 1" in json.loads(rows[3][6])
    assert_huge_output_kept_short_and_scrubbed(home, rows[4])
    assert b"whsec_live_51xyz" not in all_stored_bytes(home)


def test_cursor_s_own_cmem_mcp_lookups_are_not_recorded(sh, home, project) -> None:
    data = fixture("cursor", "afterMCPExecution", project, "cursor-own")
    data.update(tool_name="search", command="/home/me/.local/bin/cmem mcp", tool_input='{"query": "jwt"}')
    assert sh("hook", "--agent", "cursor", "afterMCPExecution", input=json.dumps(data)).exit_code == 0
    assert observations(home, "cursor-own") == []


def test_a_locked_database_spools_a_cursor_prompt_answers_cursor_and_replays_it_as_cursor(
    sh, home, project, tmp_path
) -> None:
    import apsw

    config = tmp_path / "config" / "cmem" / "config.toml"
    config.parent.mkdir(parents=True)
    config.write_text("[hooks]\nbusy_timeout_ms = 200\n")
    sid = "cursor-busy"
    run(sh, "cursor", "sessionStart", project, sid)
    holder = apsw.Connection(str(home / "cmem.db"))
    holder.set_busy_timeout(5000)
    holder.execute("BEGIN IMMEDIATE")
    try:
        answer = run(sh, "cursor", "beforeSubmitPrompt", project, sid)
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert json.loads(answer.stdout) == {"continue": True}  # Cursor is not kept waiting
    spooled = list((home / "spool").glob("*.json"))
    assert len(spooled) == 1 and b"whsec_live_51xyz" not in spooled[0].read_bytes()
    run(sh, "cursor", "afterShellExecution", project, sid)
    assert db_rows(home, "SELECT agent, text FROM user_prompts WHERE session = ?", (sid,)) == [
        ("cursor", "Add retries to the webhook sender")
    ]
    assert list((home / "spool").iterdir()) == []


# -- opencode -------------------------------------------------------------------------------------------


def test_an_opencode_session_is_captured_from_what_its_plugin_sends(sh, home, project) -> None:
    sid = "ses_opencode_1"
    for name in (
        "session.created",
        "chat.message",
        "tool.execute.after.edit",
        "tool.execute.after.failed",
        "tool.execute.after.outside",
        "tool.execute.after.huge",
        "session.idle",
        "session.deleted",
    ):
        answer = run(sh, "opencode", name, project, sid).stdout
        # a session's start answers with its briefing (the plugin waits for it in session.started)
        assert answer == "" or (name == "session.created" and "additionalContext" in json.loads(answer))

    assert log_text(home) == ""
    assert db_rows(home, "SELECT agent, status FROM sessions WHERE session_id = ?", (sid,)) == [
        ("opencode", "completed")
    ]
    assert db_rows(home, "SELECT text FROM user_prompts WHERE session = ?", (sid,)) == [
        ("Why is the cache cold after deploy?",)
    ]
    rows = observations(home, sid)
    outside = str(project.parent.parent / "elsewhere" / "ops" / "redis.conf")
    assert [(r[0], r[1]) for r in rows] == [
        ("change", "Edited src/cache.ts"),
        ("error", "Command failed: npm run warm-cache"),
        ("discovery", f"Read {outside}"),
        ("change", "Ran redis-cli --scan"),
    ]
    assert "exit status 1" in json.loads(rows[1][6]) and "ECONNREFUSED" in rows[1][5]
    assert_huge_output_kept_short_and_scrubbed(home, rows[3])
    assert b"s3cret" not in all_stored_bytes(home)


# -- every agent ---------------------------------------------------------------------------------------


# Every agent in the registry with an adapter has its recorded payloads here.
ADAPTED = [spec.name for spec in specs() if spec.adapter]


def test_every_agent_with_an_adapter_has_recorded_payloads() -> None:
    assert [name for name in ADAPTED if not sorted((FIXTURES / name).glob("*.json"))] == []


@pytest.mark.parametrize("agent", ADAPTED)
def test_every_documented_event_of_every_agent_is_answered_without_a_problem(
    sh, home, project, agent
) -> None:
    """Each fixture alone, in a fresh session, leaves hooks.log empty: no event of an agent is unknown to
    its adapter or breaks the runner. Not the 5 MB outputs (``.huge``): each is its event's payload with a
    longer output, and the agent's session test above takes it through with hooks.log checked empty (here
    it would cost about 4 s of scrubbing a run, for the event its sibling fixture already answers)."""
    for path in sorted((FIXTURES / agent).glob("*.json")):
        if path.name.endswith(".huge.json"):
            continue
        run(sh, agent, path.name.removesuffix(".json"), project, f"alone-{path.stem}")
    assert log_text(home) == ""


def test_an_unknown_agent_is_logged_not_shown_to_it(sh, home, project) -> None:
    result = sh(
        "hook", "--agent", "vim", "SessionStart", input=json.dumps({"session_id": "x", "cwd": str(project)})
    )
    assert result.exit_code == 0 and result.stdout == "" and result.stderr == ""
    assert "unknown agent 'vim'" in log_text(home)


def test_a_hook_behind_global_options_goes_through_typer_with_its_agent(sh, home, project, tmp_path) -> None:
    other = tmp_path / "other-home"
    data = fixture("codex", "UserPromptSubmit", project, "codex-typer")
    result = sh("--home", str(other), "hook", "--agent", "codex", "UserPromptSubmit", input=json.dumps(data))
    assert result.exit_code == 0 and result.stderr == ""
    assert db_rows(other, "SELECT agent, text FROM user_prompts") == [
        ("codex", "Why does the invoice total drift by a cent?  Fix it.")
    ]


def test_cursor_s_answer_is_the_turn_summary_and_its_generic_tool_event_adds_the_rest(
    sh, home, project
) -> None:
    """afterAgentResponse carries the answer's text; postToolUse every tool, of which the shell, edits and MCP
    calls already come with their own events (not recorded twice)."""
    sid = "cursor-conv-answer"
    run(sh, "cursor", "beforeSubmitPrompt", project, sid)
    for name in ("postToolUse", "postToolUse.shell", "afterShellExecution", "afterAgentResponse", "stop"):
        assert run(sh, "cursor", name, project, sid).stdout == ""
    assert log_text(home) == ""
    assert [(r[0], r[1]) for r in observations(home, sid)] == [
        ("discovery", "Read src/webhooks.ts"),
        ("change", "Ran npm run build"),
    ]
    [(completed,)] = db_rows(home, "SELECT completed FROM session_summaries WHERE session = ?", (sid,))
    assert "the sender tries 3 times with backoff" in completed
