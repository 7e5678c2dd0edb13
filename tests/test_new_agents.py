"""GitHub Copilot CLI, Qwen Code, Factory Droid, Kilo Code and Cline captured through `cmem hook --agent
AGENT EVENT` (and Copilot through cmem's Claude Code hook too, which it runs from `.claude/settings.json`),
fed with payloads read out of each client's shipped code (tests/fixtures/agents/AGENT/EVENT[.case].json; each
names the client version in `_recorded_from`). The records must be the ones a Claude Code session makes: one
runner, one capture path."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.agent_fixtures import AGENT_FIXTURES as FIXTURES
from tests.agent_fixtures import all_stored_bytes, db_rows, payload, recorded_payload
from tests.hook_log import hook_log

fixture = recorded_payload


def run(sh, agent: str, name: str, project: Path, session: str, *, as_claude: bool = False):
    """One hook call as the agent's installed entry makes it: the event is the fixture's first name part."""
    data = fixture(agent, name, project, session)
    event = name.split(".")[0]
    args = ("hook", event) if as_claude else ("hook", "--agent", agent, event)
    result = sh(*args, input=json.dumps(data))
    assert result.exit_code == 0 and result.stderr == ""
    return result


def observations(home: Path, session: str) -> list[tuple]:
    return db_rows(
        home,
        "SELECT type, title, agent, files_read, files_modified, narrative, facts, subtitle FROM observations "
        "WHERE session = ? ORDER BY id",
        (session,),
    )


def remember_something(sh) -> None:
    added = sh(
        "add", "--type", "decision", "--title", "Invoice totals are integer cents", "--project", "billing-api"
    )
    assert added.exit_code == 0, added.stderr


def claude_briefing(sh, project: Path) -> str:
    result = sh("hook", "SessionStart", input=json.dumps(payload("SessionStart", "claude-probe", project)))
    return json.loads(result.stdout)["hookSpecificOutput"]["additionalContext"]


def session_row(home: Path, sid: str) -> list[tuple]:
    return db_rows(home, "SELECT agent, status FROM sessions WHERE session_id = ?", (sid,))


def prompts(home: Path, sid: str) -> list[tuple]:
    return db_rows(home, "SELECT agent, text FROM user_prompts WHERE session = ?", (sid,))


def summaries(home: Path, sid: str) -> list[tuple]:
    return db_rows(home, "SELECT completed FROM session_summaries WHERE session = ?", (sid,))


# -- Qwen Code ------------------------------------------------------------------------------------------


def test_a_qwen_code_session_is_captured_with_its_briefing_and_summary(sh, home, project) -> None:
    """The payloads the real Qwen Code 0.24.4 sent in a headless session (read, edit, a command, a failing
    command, the answer): every tool call with its file and exit status, the prompt, the summary."""
    sid = "qwen-8c1e-session"
    remember_something(sh)
    start = run(sh, "qwen", "SessionStart", project, sid)
    assert json.loads(start.stdout)["hookSpecificOutput"]["additionalContext"] == claude_briefing(sh, project)
    for name in (
        "UserPromptSubmit",
        "PreToolUse",
        "PostToolUse.read",
        "UserPromptSubmit.continuation1",  # Qwen sends an empty prompt when it goes on after a tool
        "PostToolUse.edit",
        "PostToolUse.shell",
        "PostToolUseFailure",
        "Stop",
        "SessionEnd",
    ):
        assert run(sh, "qwen", name, project, sid).stdout == ""
    assert hook_log(home) == ""
    assert session_row(home, sid) == [("qwen", "completed")]
    assert [(agent, text.strip()) for agent, text in prompts(home, sid)] == [
        ("qwen", "Make the invoice total exact.")
    ]
    rows = observations(home, sid)
    assert [(r[0], r[1], r[2]) for r in rows] == [
        ("discovery", "Read src/invoice.py", "qwen"),
        ("change", "Edited src/invoice.py", "qwen"),
        ("change", 'Ran python3 -c "print(1)"', "qwen"),
        ("error", "Command failed: echo lint && false", "qwen"),
    ]
    assert (rows[0][7], json.loads(rows[0][3])) == ("lines 1-2", ["src/invoice.py"])  # offset 0 is line 1
    assert "+ return sum(lines)  # integer cents" in rows[1][5]
    assert "exit status 0" in json.loads(rows[2][6])
    assert "exit status 1" in json.loads(rows[3][6]) and "lint" in rows[3][5]
    assert summaries(home, sid) == [("Totals are integer cents now; lint still fails.",)]
    assert b"sk-qwen-7f3a9b" not in all_stored_bytes(home)


# -- Factory Droid --------------------------------------------------------------------------------------


def test_a_droid_session_is_captured_with_its_tools_renamed(sh, home, project) -> None:
    """What the real Droid 0.225.2 sent (`droid exec`: a read, an edit, a command), plus the prompt read in
    its code: Droid's tools become Claude Code's, the exit status comes from Execute's last line."""
    sid = "droid-4f2a-session"
    remember_something(sh)
    start = run(sh, "droid", "SessionStart", project, sid)
    assert json.loads(start.stdout)["hookSpecificOutput"]["additionalContext"] == claude_briefing(sh, project)
    for name in (
        "UserPromptSubmit",
        "PreToolUse",
        "PostToolUse.Read",
        "PostToolUse.Edit",
        "PostToolUse.Execute",
        "Stop",
        "SessionEnd",
    ):
        assert run(sh, "droid", name, project, sid).stdout == ""
    assert hook_log(home) == ""
    assert session_row(home, sid) == [("droid", "completed")]
    assert [(agent, text.strip()) for agent, text in prompts(home, sid)] == [
        ("droid", "Make the total exact")
    ]
    rows = observations(home, sid)
    assert [(r[0], r[1]) for r in rows] == [  # `echo ok` is a command the rules skip
        ("discovery", "Read invoice.py"),
        ("change", "Edited invoice.py"),
    ]
    assert "- return round(sum(lines), 2)" in rows[1][5] and "+ return sum(lines)" in rows[1][5]
    assert b"fk-droid-secret-91" not in all_stored_bytes(home)


def test_droid_s_execute_output_gives_the_exit_status() -> None:
    from cmem_cli.capture.agents.droid import shell_output

    recorded = json.loads((FIXTURES / "droid" / "PostToolUse.Execute.json").read_text())["tool_response"]
    assert shell_output(recorded) == {"stdout": "ok", "exit_code": 0}
    assert shell_output("lint\n\n\n[Process exited with code 1]") == {"stdout": "lint", "exit_code": 1}


def test_droid_gets_its_hooks_where_it_reads_them(sh, home, tmp_path) -> None:
    """Droid 0.225 runs the hooks in settings.json; a folder with a hooks.json keeps them there."""
    factory = tmp_path / "user-home" / ".factory"
    assert sh("install", "droid", "--no-mcp").exit_code == 0
    assert set(json.loads((factory / "settings.json").read_text())["hooks"]) == {
        "SessionStart", "UserPromptSubmit", "PostToolUse", "Stop", "SessionEnd"
    }  # fmt: skip
    assert sh("install", "droid", "--uninstall").exit_code == 0
    (factory / "hooks.json").write_text('{"hooks": {}}\n')
    assert sh("install", "droid", "--no-mcp").exit_code == 0
    assert "SessionStart" in json.loads((factory / "hooks.json").read_text())["hooks"]
    assert not (factory / "settings.json").exists()


# -- GitHub Copilot CLI ---------------------------------------------------------------------------------


COPILOT_SESSION = (
    "SessionStart",
    "UserPromptSubmit",
    "PostToolUse.view",
    "PostToolUse.edit",
    "PostToolUse.bash",
    "PostToolUseFailure",
    "Stop",
    "SessionEnd",
)


def assert_copilot_session(home: Path, sid: str) -> None:
    assert hook_log(home) == ""
    assert session_row(home, sid) == [("copilot", "completed")]
    assert [(agent, text.strip()) for agent, text in prompts(home, sid)] == [
        ("copilot", "Make the total exact")
    ]
    rows = observations(home, sid)
    assert [(r[0], r[1], r[2]) for r in rows] == [
        ("discovery", "Read invoice.py", "copilot"),
        ("change", "Edited invoice.py", "copilot"),
        ("error", "Command failed: echo lint && false", "copilot"),
        ("error", "Write failed: Wrote src/cents.py", "copilot"),
    ]
    assert (rows[0][7], json.loads(rows[0][3])) == ("lines 1-2", ["invoice.py"])
    assert "exit status 1" in json.loads(rows[2][6]) and "<shellId" not in rows[2][5]
    assert b"ghu_copilotsecret77" not in all_stored_bytes(home)


def test_a_copilot_session_is_captured_through_its_own_hooks(sh, home, project) -> None:
    """Only SessionStart answers in a project with no notes: the briefing, as a top-level additionalContext
    (the field Copilot CLI 1.0.102 gives its model)."""
    sid = "copilot-6d0b-session"
    for name in COPILOT_SESSION:
        out = run(sh, "copilot", name, project, sid).stdout
        if name == "SessionStart":
            assert list(json.loads(out)) == ["additionalContext"], out
            assert json.loads(out)["additionalContext"].startswith("# cmem memory for"), out
        else:
            assert out == "", (name, out)
    assert_copilot_session(home, sid)


def test_copilot_running_the_claude_code_hooks_of_the_repository_is_recorded_as_copilot(
    sh, home, project
) -> None:
    """Should Copilot CLI run `.claude/settings.json`'s hooks (cmem's project-scope Claude Code install), they
    get its own payload: `cmem hook EVENT` without --agent must record the session as copilot, not
    claude-code."""
    sid = "copilot-through-claude"
    for name in COPILOT_SESSION:
        run(sh, "copilot", name, project, sid, as_claude=True)
    assert_copilot_session(home, sid)
    assert db_rows(home, "SELECT count(*) FROM sessions WHERE agent = 'claude-code'") == [(0,)]


def test_a_claude_code_payload_is_still_claude_code(sh, home, project) -> None:
    sid = "claude-still"
    data = payload("UserPromptSubmit", sid, project, prompt="plain Claude Code")
    assert sh("hook", "UserPromptSubmit", input=json.dumps(data)).exit_code == 0
    assert prompts(home, sid) == [("claude-code", "plain Claude Code")]


# -- Kilo Code ------------------------------------------------------------------------------------------


def test_a_kilo_code_session_is_captured_through_opencode_s_adapter_as_kilo(sh, home, project) -> None:
    """What cmem's plugin sent from the real Kilo Code 7.7.9 (`kilo run`: a read, an edit, a failing
    command), recorded as kilo."""
    sid = "ses_kilo_1"
    (project / "invoice.py").write_text("def total(lines):\n    return round(sum(lines), 2)\n")
    for name in ("session.created", "chat.message", "tool.execute.after.read", "tool.execute.after.edit",
                 "tool.execute.after.failed", "session.idle", "session.deleted"):  # fmt: skip
        data = fixture("kilo", name, project, sid)
        result = sh("hook", "--agent", "kilo", data["hook_event_name"], input=json.dumps(data))
        assert result.exit_code == 0 and result.stderr == ""
        if name == "session.created":  # the briefing, which the plugin adds to the system prompt
            assert "# cmem memory for" in json.loads(result.stdout)["additionalContext"]
        else:
            assert result.stdout == ""
    assert hook_log(home) == ""
    assert session_row(home, sid) == [("kilo", "completed")]
    assert [agent for agent, _ in prompts(home, sid)] == ["kilo"]
    rows = observations(home, sid)
    assert [(r[0], r[1], r[2]) for r in rows] == [
        ("discovery", "Read invoice.py", "kilo"),
        ("change", "Edited invoice.py", "kilo"),
        ("error", "Command failed: echo lint && false", "kilo"),
    ]
    assert "exit status 1" in json.loads(rows[2][6])
    assert b"k1losecret" not in all_stored_bytes(home)


def test_the_kilo_plugin_sends_its_events_as_kilo(sh, home, tmp_path) -> None:
    assert sh("install", "kilo").exit_code == 0
    plugin = (tmp_path / "config" / "kilo" / "plugins" / "cmem.js").read_text()
    assert '"--agent", "kilo"' in plugin and '"opencode"' not in plugin
    assert plugin.startswith("// cmem: added by `cmem install kilo`")


# -- Cline ----------------------------------------------------------------------------------------------


def test_a_cline_task_is_captured_and_every_answer_is_json_cline_accepts(sh, home, project) -> None:
    """What the real Cline 3.0.65 sent cmem's hook files in a one-shot task (a read of two lines, an edit, a
    failing command, the answer), plus the prompt and shutdown payloads read in its code."""
    sid = "cline-task-31"
    remember_something(sh)
    start = json.loads(run(sh, "cline", "TaskStart", project, sid).stdout)
    assert start == {"cancel": False, "contextModification": claude_briefing(sh, project)}
    for name in ("UserPromptSubmit", "PostToolUse.read_files", "PostToolUse.editor", "PostToolUse.run_commands",
                 "TaskComplete", "SessionShutdown"):  # fmt: skip
        assert json.loads(run(sh, "cline", name, project, sid).stdout) == {"cancel": False}
    assert hook_log(home) == ""
    assert session_row(home, sid) == [("cline", "completed")]
    rows = observations(home, sid)
    assert [(r[0], r[1], r[2]) for r in rows] == [
        ("discovery", "Read invoice.py", "cline"),
        ("change", "Edited invoice.py", "cline"),
        ("error", "Command failed: echo lint && false", "cline"),
    ]
    assert (rows[0][7], json.loads(rows[0][3])) == ("lines 1-2", ["invoice.py"])
    assert "- return round(sum(lines), 2)" in rows[1][5]
    assert "exit status 1" in json.loads(rows[2][6])
    assert summaries(home, sid) == [("Cline done: totals are cents.",)]
    assert b"cline-key-5521" not in all_stored_bytes(home)


def hook_script(sh, tmp_path: Path, event: str) -> Path:
    assert sh("install", "cline", "--no-mcp").exit_code == 0
    script = tmp_path / "user-home" / "Documents" / "Cline" / "Hooks" / event
    assert os.access(script, os.X_OK)
    return script


@pytest.mark.parametrize("stdin", ["", "not json", '{"hookName": "tool_result"}', "[1, 2]"])
def test_the_installed_cline_hook_always_exits_0_with_a_json_object(sh, home, tmp_path, stdin) -> None:
    """Cline blocks its action when a hook fails; whatever it sends, cmem's script answers JSON, exit 0."""
    script = hook_script(sh, tmp_path, "PostToolUse")
    done = subprocess.run([str(script)], input=stdin, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0
    assert json.loads(done.stdout) == {"cancel": False}


def test_the_cline_hook_answers_even_when_cmem_is_gone(sh, home, tmp_path, project) -> None:
    script = hook_script(sh, tmp_path, "TaskStart")
    text = script.read_text()
    script.write_text(text.replace(text.split("out=$(")[1].split(" hook ")[0], "/nowhere/cmem"))
    data = json.dumps(fixture("cline", "TaskStart", project, "gone"))
    done = subprocess.run([str(script)], input=data, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and json.loads(done.stdout) == {"cancel": False}


def test_the_installed_cline_hook_records_through_the_script(sh, home, tmp_path, project) -> None:
    script = hook_script(sh, tmp_path, "UserPromptSubmit")
    data = json.dumps(fixture("cline", "UserPromptSubmit", project, "through-script"))
    env = {**os.environ, "PATH": os.pathsep.join([str(Path(sys.executable).parent), os.environ["PATH"]])}
    done = subprocess.run([str(script)], input=data, capture_output=True, text=True, timeout=60, env=env)
    assert done.returncode == 0 and json.loads(done.stdout) == {"cancel": False}
    assert prompts(home, "through-script")[0][0] == "cline"


def test_droid_s_turn_summary_is_the_last_answer_in_its_session_file(sh, home, project) -> None:
    """Droid's Stop carries no answer text: the summary is read from its session file (recorded from
    `droid exec`, 0.225.2: its lines are `{"type": "message", "message": {"role", "content"}}`)."""
    sid = "droid-5e3b-session"
    transcript = project.parent / "droid-session.jsonl"
    transcript.write_text((FIXTURES / "droid" / "session.jsonl").read_text().replace("@CWD@", str(project)))
    run(sh, "droid", "SessionStart", project, sid)
    stop = fixture("droid", "Stop", project, sid) | {"transcript_path": str(transcript)}
    assert sh("hook", "--agent", "droid", "Stop", input=json.dumps(stop)).exit_code == 0
    summaries = db_rows(home, "SELECT completed FROM session_summaries WHERE session = ?", (sid,))
    assert summaries == [("Batches of 42 are in place; the build passes.",)]
