"""`cmem hook EVENT` fed with recorded Claude Code payloads through the real CLI (new processes, as Claude
Code runs them), plus the pure tool-call -> observation builder."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from cmem_cli.capture.hooks.payload import canonical_event, parse_payload
from cmem_cli.capture.hooks.rules import HookRules, rules_from_config
from cmem_cli.capture.hooks.tools import ToolCall, build_observation
from tests.agent_fixtures import all_stored_bytes, db_rows, payload, tool_payload
from tests.hook_log import hook_log

RULES = HookRules()


def hook(sh, event: str, data: dict | str | bytes, **kw):
    body = data if isinstance(data, str | bytes) else json.dumps(data)
    return sh("hook", event, input=body, **kw)


def log_text(home: Path) -> str:
    return hook_log(home)


# --- the pure builder -------------------------------------------------------------------------------------


def build(name: str, tool_input: dict, response=None, **kw):
    obs = build_observation(ToolCall(name, tool_input, response, cwd="/repo", **kw), RULES)
    return obs.record if obs else None


def test_edit_becomes_a_change_with_the_file_modified_and_a_diff() -> None:
    record = build(
        "Edit",
        {
            "file_path": "/repo/src/invoice.py",
            "old_string": "total = a + b",
            "new_string": "total = round(a + b, 2)",
        },
    )
    assert record["type"] == "change"
    assert record["title"] == "Edited src/invoice.py"
    assert record["files_modified"] == ["src/invoice.py"]
    assert "- total = a + b" in record["narrative"] and "+ total = round(a + b, 2)" in record["narrative"]
    assert record["tools_used"] == ["Edit"]


def test_multiedit_counts_its_edits_and_write_says_created() -> None:
    record = build(
        "MultiEdit",
        {
            "file_path": "/repo/a.py",
            "edits": [
                {"old_string": "x", "new_string": "y"},
                {"old_string": "p", "new_string": "q", "replace_all": True},
            ],
        },
    )
    assert record["title"] == "Edited a.py (2 edits)"
    assert "replaced every occurrence" in record["facts"]
    created = build(
        "Write",
        {"file_path": "/repo/docs/new.md", "content": "# New\n\ntext\n"},
        {"type": "create", "filePath": "/repo/docs/new.md"},
    )
    assert created["title"] == "Created docs/new.md" and created["facts"] == ["3 lines"]


def test_read_is_a_discovery_with_files_read_and_a_repeat_key() -> None:
    obs = build_observation(
        ToolCall("Read", {"file_path": "/repo/src/db.py", "offset": 40, "limit": 20}, cwd="/repo"), RULES
    )
    assert obs.record["title"] == "Read src/db.py"
    assert obs.record["subtitle"] == "lines 40-59"
    # cited as PATH:START-END, as a person cites lines: the store keeps src/db.py and anchors those lines
    assert obs.record["files_read"] == ["src/db.py:40-59"]
    assert obs.repeat_key == "read:/repo/src/db.py"


def test_failed_command_is_an_error_with_its_exit_status_and_output() -> None:
    record = build(
        "Bash",
        {"command": "pytest -x tests/test_tax.py", "description": "Run tax tests"},
        error="Exit code 2\nE   AssertionError: 19.99 != 20.0",
    )
    assert record["type"] == "error"
    assert record["title"] == "Command failed: pytest -x tests/test_tax.py"
    assert "exit status 2" in record["facts"]
    assert "AssertionError" in record["narrative"]


def test_successful_commands_are_typed_by_what_they_do() -> None:
    ok = {"stdout": "3 passed", "stderr": "", "interrupted": False, "isImage": False}
    assert build("Bash", {"command": "pytest"}, ok)["type"] == "discovery"
    assert build("Bash", {"command": "git log --oneline -5"}, ok)["type"] == "discovery"
    assert build("Bash", {"command": "npm install left-pad"}, ok)["type"] == "change"
    assert build("Bash", {"command": "make build"}, {"stdout": "", "exit_code": 1})["type"] == "error"
    assert build("Bash", {"command": "sleep 100"}, {"stdout": "", "interrupted": True})["type"] == "error"


def test_trivial_commands_are_skipped_unless_they_fail() -> None:
    assert build("Bash", {"command": "ls -la"}, {"stdout": "x"}) is None
    assert build("Bash", {"command": "FOO=1 cmem search parser"}, {"stdout": "x"}) is None
    assert (
        build("Bash", {"command": "ls /missing"}, error="Exit code 2\nls: cannot access")["type"] == "error"
    )


def test_searches_say_what_was_searched_and_what_matched() -> None:
    grep = build(
        "Grep",
        {"pattern": "def charge", "path": "/repo/src", "glob": "*.py"},
        {"mode": "files_with_matches", "filenames": ["/repo/src/pay.py"], "numFiles": 1},
    )
    assert grep["title"] == "Searched code for `def charge` in src"
    assert grep["facts"] == ["1 file matched", "match: src/pay.py"]
    glob = build(
        "Glob", {"pattern": "**/*.sql"}, {"filenames": ["/repo/m/1.sql", "/repo/m/2.sql"], "numFiles": 2}
    )
    assert glob["title"] == "Listed files matching `**/*.sql`"
    web = build("WebSearch", {"query": "stripe idempotency keys"})
    assert web["title"] == "Searched the web for 'stripe idempotency keys'"
    fetch = build(
        "WebFetch",
        {"url": "https://docs.example.com/api", "prompt": "rate limits?"},
        {"result": "100 requests per second", "code": 200},
    )
    assert fetch["title"] == "Fetched https://docs.example.com/api"
    assert "100 requests per second" in fetch["narrative"]


def test_subagents_plans_questions_and_mcp_tools_get_useful_titles() -> None:
    task = build(
        "Task",
        {"description": "Find flaky tests", "prompt": "Look for flaky tests", "subagent_type": "Explore"},
        {"content": [{"type": "text", "text": "test_retry is flaky: it sleeps 0.1s"}]},
    )
    assert task["title"] == "Delegated to Explore: Find flaky tests"
    assert "test_retry is flaky" in task["narrative"]
    plan = build("ExitPlanMode", {"plan": "# Move tax rules to config\n1. ...\n2. ..."})
    assert plan["type"] == "decision" and plan["title"].startswith("Plan: Move tax rules to config")
    question = build(
        "AskUserQuestion",
        {"questions": [{"question": "Keep the v1 API?", "options": []}]},
        {"answers": {"Keep the v1 API?": "yes"}},
    )
    assert question["type"] == "question" and question["title"] == "Asked: Keep the v1 API?"
    mcp = build("mcp__github__create_issue", {"title": "Tax rounding", "body": "..."})
    assert mcp["title"] == "Called github create_issue: Tax rounding"
    assert mcp["tools_used"] == ["mcp__github__create_issue"]


def test_a_failed_edit_is_an_error_that_modified_nothing() -> None:
    record = build(
        "Edit",
        {"file_path": "/repo/a.py", "old_string": "x", "new_string": "y"},
        error="String to replace not found in file.",
    )
    assert record["type"] == "error"
    assert record["title"] == "Edit failed: Edited a.py"
    assert "files_modified" not in record


def test_rules_from_config_skip_tools_by_glob_and_extend_commands() -> None:
    rules = rules_from_config(
        {
            "skip_tools": ["Read", "mcp__playwright__*"],
            "also_skip_commands": ["make lint"],
            "merge_repeats": "off",
        }
    )
    assert build_observation(ToolCall("Read", {"file_path": "/x"}), rules) is None
    assert build_observation(ToolCall("mcp__playwright__click", {}), rules) is None
    assert build_observation(ToolCall("Bash", {"command": "make lint"}, {"stdout": ""}), rules) is None
    grep = build_observation(ToolCall("Grep", {"pattern": "x"}), rules)
    assert grep is not None and grep.repeat_key is None


def test_event_names_are_forgiving_and_payload_types_tolerated() -> None:
    assert canonical_event("session-start") == "SessionStart"
    assert canonical_event("post_tool_use") == "PostToolUse"
    assert canonical_event("SomethingNew") == "SomethingNew"
    parsed = parse_payload(
        json.dumps(
            {
                "session_id": 42,
                "tool_input": "not an object",
                "agent_type": "Explore",
                "hook_event_name": "PostToolUse",
                "tool_name": "Bash",
            }
        )
    )
    assert parsed.session_id == "42" and parsed.tool_input == {"input": "not an object"}
    assert parsed.agent == "claude-code/Explore"


# --- through the real CLI -----------------------------------------------------------------------------------


def test_a_whole_session_becomes_session_prompts_observations_and_a_summary(sh, home, project) -> None:
    sid = "6f1c2d3e-0000-4000-8000-000000000001"
    assert hook(sh, "SessionStart", payload("SessionStart", sid, project, source="startup")).exit_code == 0
    hook(sh, "UserPromptSubmit", payload("UserPromptSubmit", sid, project, prompt="Round invoice totals"))
    calls = [
        tool_payload(
            sid,
            project,
            "Read",
            {"file_path": f"{project}/src/invoice.py"},
            {
                "type": "text",
                "file": {
                    "filePath": f"{project}/src/invoice.py",
                    "numLines": 80,
                    "startLine": 1,
                    "totalLines": 80,
                },
            },
        ),
        tool_payload(
            sid,
            project,
            "Edit",
            {
                "file_path": f"{project}/src/invoice.py",
                "old_string": "a + b",
                "new_string": "round(a + b, 2)",
            },
        ),
        tool_payload(
            sid,
            project,
            "Bash",
            {"command": "pytest tests/test_invoice.py", "description": "Run tests"},
            event="PostToolUseFailure",
            error="Exit code 1\nFAILED test_invoice.py::test_round",
            is_interrupt=False,
        ),
        tool_payload(
            sid,
            project,
            "Grep",
            {"pattern": "round\\(", "path": str(project)},
            {"mode": "files_with_matches", "filenames": [f"{project}/src/invoice.py"], "numFiles": 1},
        ),
        tool_payload(sid, project, "TodoWrite", {"todos": [{"content": "x", "status": "pending"}]}),
    ]
    for call in calls:
        assert hook(sh, call["hook_event_name"], call).exit_code == 0
    hook(sh, "UserPromptSubmit", payload("UserPromptSubmit", sid, project, prompt="Now update the changelog"))
    hook(
        sh,
        "PostToolUse",
        tool_payload(
            sid,
            project,
            "Write",
            {"file_path": f"{project}/CHANGELOG.md", "content": "- rounding\n"},
            {"type": "update"},
        ),
    )
    hook(
        sh,
        "Stop",
        payload(
            "Stop",
            sid,
            project,
            stop_hook_active=False,
            last_assistant_message="Totals are rounded to cents; changelog updated.",
        ),
    )
    hook(sh, "SessionEnd", payload("SessionEnd", sid, project, reason="prompt_input_exit"))

    assert log_text(home) == ""
    session = db_rows(
        home, "SELECT project, agent, status, prompt_counter FROM sessions WHERE session_id = ?", (sid,)
    )
    assert session == [("billing-api", "claude-code", "completed", 2)]
    prompts = db_rows(
        home, "SELECT prompt_number, text FROM user_prompts WHERE session = ? ORDER BY 1", (sid,)
    )
    assert prompts == [(1, "Round invoice totals"), (2, "Now update the changelog")]
    observations = db_rows(
        home,
        "SELECT type, title, prompt_number, files_read, files_modified FROM observations "
        "WHERE session = ? ORDER BY id",
        (sid,),
    )
    assert [(o[0], o[1], o[2]) for o in observations] == [
        ("discovery", "Read src/invoice.py", 1),
        ("change", "Edited src/invoice.py", 1),
        ("error", "Command failed: pytest tests/test_invoice.py", 1),
        ("discovery", "Searched code for `round\\(`", 1),
        ("change", "Wrote CHANGELOG.md", 2),
    ]  # TodoWrite skipped by default
    assert json.loads(observations[0][3]) == ["src/invoice.py"]
    assert json.loads(observations[1][4]) == ["src/invoice.py"]
    summary = db_rows(home, "SELECT request, completed FROM session_summaries WHERE session = ?", (sid,))
    assert summary == [("Now update the changelog", "Totals are rounded to cents; changelog updated.")]
    files = sorted(p.name for p in (home / "export").rglob("*.md"))
    assert len(files) == 6  # five observations and the summary, each a markdown file


def test_session_start_answers_with_context_for_the_project(sh, home, project) -> None:
    sh("add", "--type", "decision", "--title", "Money is stored as integer cents", "--project", "billing-api")
    out = hook(sh, "SessionStart", payload("SessionStart", "s-ctx", project, source="startup"))
    assert out.exit_code == 0
    answer = json.loads(out.stdout)
    assert answer["hookSpecificOutput"]["hookEventName"] == "SessionStart"
    context = answer["hookSpecificOutput"]["additionalContext"]
    assert "Money is stored as integer cents" in context
    assert "cmem search" in context and "cmem get" in context
    assert len(context) <= 1500 * 4


def test_repeated_reads_of_a_file_are_merged_into_one_observation(sh, home, project) -> None:
    for _ in range(3):
        hook(sh, "PostToolUse", tool_payload("s-read", project, "Read", {"file_path": f"{project}/src/a.py"}))
    hook(sh, "PostToolUse", tool_payload("s-other", project, "Read", {"file_path": f"{project}/src/a.py"}))
    rows = db_rows(home, "SELECT session, count(*) FROM observations GROUP BY session ORDER BY session")
    assert rows == [("s-other", 1), ("s-read", 1)]
    assert db_rows(home, "SELECT repeats FROM agent_captures WHERE session = 's-read'") == [(2,)]


def test_config_rules_skip_tools(sh, home, project, tmp_path) -> None:
    config = tmp_path / "config" / "cmem" / "config.toml"
    config.parent.mkdir(parents=True)
    config.write_text('[hooks]\nskip_tools = ["Read", "Grep"]\n')
    hook(sh, "PostToolUse", tool_payload("s-cfg", project, "Read", {"file_path": f"{project}/x.py"}))
    hook(
        sh,
        "PostToolUse",
        tool_payload(
            "s-cfg", project, "Edit", {"file_path": f"{project}/x.py", "old_string": "1", "new_string": "2"}
        ),
    )
    assert db_rows(home, "SELECT title FROM observations") == [("Edited x.py",)]


@pytest.mark.parametrize(
    ("name", "body"),
    [
        ("not json", b"{this is not json"),
        ("empty", b""),
        ("array", b"[1, 2, 3]"),
        ("invalid utf-8", b'{"session_id": "\xff\xfe", "hook_event_name": "PostToolUse"}'),
        ("no session", json.dumps({"hook_event_name": "PostToolUse", "tool_name": "Edit"}).encode()),
        (
            "wrong types",
            json.dumps(
                {
                    "session_id": ["x"],
                    "tool_name": {"a": 1},
                    "tool_input": 7,
                    "hook_event_name": "PostToolUse",
                }
            ).encode(),
        ),
    ],
)
def test_malformed_payloads_exit_zero_silently_and_log_the_error(sh, home, name, body) -> None:
    # The hook contract is the process's: its exit status and both streams' bytes, as the agent reads them.
    result = sh("hook", "PostToolUse", input=body, process=True)
    assert result.exit_code == 0
    assert result.stdout == "" and result.stderr == ""
    log = log_text(home)
    assert "error PostToolUse" in log and "Traceback" not in log
    assert len(log.strip().splitlines()) == 1


def test_unknown_and_passive_events_are_accepted(sh, home, project) -> None:
    for event in ("PreToolUse", "Notification", "PreCompact", "SubagentStop", "BrandNewEvent"):
        result = hook(sh, event, payload(event, "s-x", project, message="hi"))
        assert result.exit_code == 0 and result.stdout == ""
    assert log_text(home) == ""


def test_a_broken_home_is_logged_not_shown(sh, home, project, tmp_path) -> None:
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("x")
    result = hook(
        sh,
        "UserPromptSubmit",
        payload("UserPromptSubmit", "s1", project, prompt="hi"),
        env={"CMEM_HOME": str(blocker / "home")},
    )
    assert result.exit_code == 0 and result.stderr == ""


def test_private_text_and_secrets_never_reach_the_database_export_or_index(sh, home, project) -> None:
    token = "ghp_" + "Zq8" * 12
    stripe = "sk_live_" + "51Hx" * 6
    hook(
        sh,
        "UserPromptSubmit",
        payload(
            "UserPromptSubmit",
            "s-priv",
            project,
            prompt=f"Deploy with <private>the vault code 7431-alpha</private> and GITHUB_TOKEN={token}",
        ),
    )
    hook(
        sh,
        "PostToolUse",
        tool_payload(
            "s-priv",
            project,
            "Edit",
            {
                "file_path": f"{project}/.env",
                "old_string": "STRIPE_KEY=",
                "new_string": f"STRIPE_KEY={stripe}",
            },
        ),
    )
    hook(
        sh,
        "PostToolUse",
        tool_payload(
            "s-priv",
            project,
            "Bash",
            {"command": f"curl -H 'Authorization: Bearer {token}' https://api.github.com/user"},
            {"stdout": "<private>account balance 12,000</private>", "stderr": ""},
        ),
    )
    google = "AIza" + "Sy9" * 11 + "xy"
    hook(
        sh,
        "PostToolUse",
        tool_payload(
            "s-priv",
            project,
            "WebFetch",
            {
                "url": f"https://maps.googleapis.com/maps/api/geocode/json?key={google}",
                "prompt": "<private>office at 221B Baker Street</private> what is returned?",
            },
            {"result": "JSON"},
        ),
    )
    hook(sh, "Stop", payload("Stop", "s-priv", project, last_assistant_message=f"Used {stripe}."))
    assert sh("index").exit_code == 0  # the search index (keyword-only here) is built from the export
    assert b"Edited .env" in (home / "index.db").read_bytes()  # the observations did reach the index
    stored = all_stored_bytes(home)
    assert db_rows(home, "SELECT count(*) FROM observations") == [(3,)]
    # capture keys (merging repeats) are kept too: they must not carry the secret either
    assert db_rows(home, "SELECT count(*) FROM agent_captures WHERE key LIKE 'fetch:%'") == [(1,)]
    for secret in (token, stripe, google, "7431-alpha", "12,000", "Baker Street"):
        assert secret.encode() not in stored, secret
    assert b"[REDACTED:" in stored


def test_excluded_projects_are_never_recorded(sh, home, project, tmp_path) -> None:
    config = tmp_path / "config" / "cmem" / "config.toml"
    config.parent.mkdir(parents=True)
    config.write_text('[privacy]\nexclude_projects = ["billing-*"]\n')
    out = hook(sh, "SessionStart", payload("SessionStart", "s-ex", project))
    hook(sh, "UserPromptSubmit", payload("UserPromptSubmit", "s-ex", project, prompt="secret client work"))
    assert out.stdout == ""
    assert not (home / "cmem.db").exists()  # an excluded project never even opens the store


def test_twenty_hook_processes_at_once_lose_nothing(home, project) -> None:
    procs = []
    for n in range(20):
        body = tool_payload(
            f"s-load-{n % 4}",
            project,
            "Edit",
            {"file_path": f"{project}/src/m{n}.py", "old_string": "a", "new_string": f"b{n}"},
            tool_use_id=f"toolu_load_{n}",
        )
        procs.append(
            subprocess.Popen(
                [sys.executable, "-m", "cmem_cli", "hook", "PostToolUse"],
                env=os.environ,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
            )
        )
        procs[-1].stdin.write(json.dumps(body).encode())
        procs[-1].stdin.close()
    for proc in procs:
        proc.wait(timeout=120)
    assert [p.returncode for p in procs] == [0] * 20
    # On a loaded machine a hook may give up waiting for the lock and spool its event ("spooled" and "slow"
    # lines are allowed); the next hook replays it, so after one more call nothing may be missing.
    subprocess.run(
        [sys.executable, "-m", "cmem_cli", "hook", "Notification"],
        env=os.environ,
        input=json.dumps(payload("Notification", "s-load-0", project)).encode(),
        check=True,
        timeout=120,
    )
    assert " error " not in log_text(home)
    assert " bug " not in log_text(home)
    assert list((home / "spool").glob("*.json")) == []
    titles = {row[0] for row in db_rows(home, "SELECT title FROM observations")}
    assert titles == {f"Edited src/m{n}.py" for n in range(20)}
    assert len(list((home / "export").rglob("*.md"))) == 20


def test_the_typer_command_handles_hooks_too(sh, home, project) -> None:
    result = sh(
        "--home",
        str(home),
        "hook",
        "UserPromptSubmit",
        input=json.dumps(payload("UserPromptSubmit", "s-typer", project, prompt="via typer")),
    )
    assert result.exit_code == 0
    assert db_rows(home, "SELECT text FROM user_prompts") == [("via typer",)]
    assert "Handle one Claude Code hook event" in sh("hook", "--help").stdout


def test_stop_without_the_final_message_reads_it_from_the_transcript_tail(
    sh, home, project, tmp_path
) -> None:
    from tests.agent_fixtures import Transcript

    sid = "s-stop-tail"
    transcript = Transcript(sid, project).prompt("Why is CI red?")
    transcript.tool("Bash", {"command": "gh run view"}, "lint failed")
    transcript.say("CI is red because ruff flags an unused import in api.py.")
    path = transcript.write(tmp_path / "t" / f"{sid}.jsonl")
    hook(sh, "UserPromptSubmit", payload("UserPromptSubmit", sid, project, prompt="Why is CI red?"))
    stop = payload("Stop", sid, project, stop_hook_active=False)
    stop["transcript_path"] = str(path)
    assert hook(sh, "Stop", stop).exit_code == 0
    assert db_rows(home, "SELECT request, completed FROM session_summaries") == [
        ("Why is CI red?", "CI is red because ruff flags an unused import in api.py.")
    ]
    hook(sh, "Stop", stop)  # Stop can fire again for the same prompt: still one summary
    assert db_rows(home, "SELECT count(*) FROM session_summaries") == [(1,)]


def test_session_end_records_the_last_turn_s_summary_when_its_stop_hook_never_ran(
    sh, home, project, tmp_path
) -> None:
    """Claude Code runs cmem's Stop hook in the background, and `claude -p` kills background hooks when it
    exits right after the turn: SessionEnd (which outlives the client) takes the answer from the
    transcript. Once a prompt: a Stop that did run leaves it nothing to add."""
    from tests.agent_fixtures import Transcript

    sid = "s-end-tail"
    transcript = Transcript(sid, project).prompt("Why is CI red?")
    transcript.say("CI is red because ruff flags an unused import in api.py.")
    path = transcript.write(tmp_path / "t" / f"{sid}.jsonl")
    hook(sh, "UserPromptSubmit", payload("UserPromptSubmit", sid, project, prompt="Why is CI red?"))
    end = {**payload("SessionEnd", sid, project, reason="other"), "transcript_path": str(path)}
    assert hook(sh, "SessionEnd", end).exit_code == 0
    assert db_rows(home, "SELECT request, completed FROM session_summaries") == [
        ("Why is CI red?", "CI is red because ruff flags an unused import in api.py.")
    ]
    assert db_rows(home, "SELECT status FROM sessions WHERE session_id = ?", (sid,)) == [("completed",)]

    other = "s-end-after-stop"
    hook(sh, "UserPromptSubmit", payload("UserPromptSubmit", other, project, prompt="And now?"))
    hook(sh, "Stop", payload("Stop", other, project, last_assistant_message="Green again."))
    hook(sh, "SessionEnd", {**payload("SessionEnd", other, project), "transcript_path": str(path)})
    assert db_rows(home, "SELECT completed FROM session_summaries WHERE session = ?", (other,)) == [
        ("Green again.",)
    ]


def test_session_end_gives_no_summary_to_a_turn_that_never_answered(sh, home, project, tmp_path) -> None:
    """The person asked again and quit before the answer: the previous answer is not this prompt's."""
    from tests.agent_fixtures import Transcript

    sid = "s-end-unanswered"
    transcript = Transcript(sid, project).prompt("Why is CI red?").say("An unused import.")
    path = transcript.prompt("Fix it").write(tmp_path / "t" / f"{sid}.jsonl")
    for prompt in ("Why is CI red?", "Fix it"):
        hook(sh, "UserPromptSubmit", payload("UserPromptSubmit", sid, project, prompt=prompt))
    hook(sh, "SessionEnd", {**payload("SessionEnd", sid, project), "transcript_path": str(path)})
    assert db_rows(home, "SELECT count(*) FROM session_summaries") == [(0,)]


def test_a_locked_database_spools_the_event_and_the_next_hook_replays_it(sh, home, project, tmp_path) -> None:
    import apsw

    config = tmp_path / "config" / "cmem" / "config.toml"
    config.parent.mkdir(parents=True)
    config.write_text("[hooks]\nbusy_timeout_ms = 200\n")
    hook(sh, "SessionStart", payload("SessionStart", "s-busy", project))
    secret = "sk-proj-" + "Ab1" * 16
    holder = apsw.Connection(str(home / "cmem.db"))
    holder.set_busy_timeout(5000)
    holder.execute("BEGIN IMMEDIATE")  # another writer holds the lock for a long time
    try:
        result = hook(
            sh,
            "UserPromptSubmit",
            payload("UserPromptSubmit", "s-busy", project, prompt=f"first prompt, key {secret}"),
        )
        assert result.exit_code == 0 and result.stderr == ""
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    spooled = list((home / "spool").glob("*.json"))
    assert len(spooled) == 1
    assert secret.encode() not in spooled[0].read_bytes()
    assert "spooled UserPromptSubmit session=s-busy" in log_text(home)
    assert " error " not in log_text(home)  # a spooled event is kept, not failed

    hook(sh, "UserPromptSubmit", payload("UserPromptSubmit", "s-busy", project, prompt="second prompt"))
    texts = {row[0] for row in db_rows(home, "SELECT text FROM user_prompts WHERE session = 's-busy'")}
    assert texts == {"first prompt, key [REDACTED:openai-key]", "second prompt"}
    assert list((home / "spool").iterdir()) == []


def test_after_compaction_the_session_sees_its_own_last_summary(sh, home, project) -> None:
    sid = "s-compact"
    hook(sh, "UserPromptSubmit", payload("UserPromptSubmit", sid, project, prompt="Port the CLI to click"))
    hook(sh, "Stop", payload("Stop", sid, project, last_assistant_message="Ported 3 of 5 commands."))
    fresh = json.loads(
        hook(sh, "SessionStart", payload("SessionStart", sid, project, source="startup")).stdout
    )
    compacted = json.loads(
        hook(sh, "SessionStart", payload("SessionStart", sid, project, source="compact")).stdout
    )
    assert "Ported 3 of 5 commands." not in fresh["hookSpecificOutput"]["additionalContext"]
    assert "Ported 3 of 5 commands." in compacted["hookSpecificOutput"]["additionalContext"]


def test_merge_scope_prompt_keeps_one_read_per_prompt(sh, home, project, tmp_path) -> None:
    config = tmp_path / "config" / "cmem" / "config.toml"
    config.parent.mkdir(parents=True)
    config.write_text('[hooks]\nmerge_repeats = "prompt"\n')
    read = {"file_path": f"{project}/src/a.py"}
    hook(sh, "UserPromptSubmit", payload("UserPromptSubmit", "s-scope", project, prompt="first"))
    hook(sh, "PostToolUse", tool_payload("s-scope", project, "Read", read))
    hook(sh, "PostToolUse", tool_payload("s-scope", project, "Read", read))
    hook(sh, "UserPromptSubmit", payload("UserPromptSubmit", "s-scope", project, prompt="second"))
    hook(sh, "PostToolUse", tool_payload("s-scope", project, "Read", read))
    assert db_rows(home, "SELECT prompt_number FROM observations ORDER BY id") == [(1,), (2,)]


def test_a_hook_writes_through_the_api_without_building_its_result_types(home, project) -> None:
    """Capture stands on cmem_cli.api but must not pay for the API's named tuples (or typer) on every call."""
    sid = "6f1c2d3e-0000-4000-8000-0000000000aa"
    events = [
        ("UserPromptSubmit", payload("UserPromptSubmit", sid, project, prompt="Round invoice totals")),
        ("PostToolUse", tool_payload(sid, project, "Bash", {"command": "pytest -q"}, {"stdout": "3 passed"})),
    ]
    probe = (
        "import io, json, sys\n"
        "from cmem_cli.capture.hooks.runner import run\n"
        "for event, data in json.loads(sys.argv[1]):\n"
        "    run([event], stdin=io.BytesIO(json.dumps(data).encode()), stdout=io.StringIO())\n"
        "print(sorted(n for n in ('cmem_cli.api', 'cmem_cli.core.results', 'typer') if n in sys.modules))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe, json.dumps(events)],
        capture_output=True, text=True, check=True, env={**os.environ, "CMEM_HOME": str(home)},
    ).stdout  # fmt: skip
    assert out == "['cmem_cli.api']\n"
    assert db_rows(home, "SELECT text FROM user_prompts") == [("Round invoice totals",)]
    assert db_rows(home, "SELECT title FROM observations") == [("Ran pytest -q",)]
