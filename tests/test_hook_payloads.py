"""Hook payloads of a shape no agent documents (issue 35): every field given a wrong type, a null, a huge
value, control characters, a lone surrogate. A hook exits 0 with nothing or one JSON answer on stdout,
never logs a bug (an exception cmem did not expect), never leaves a half row (doctor stays clean), and
its log stays bounded and printable. Reproductions through the real CLI; the fuzz through the hook's own
entry point (``runner.run``, what `cmem hook` calls), in-process to keep it fast.
"""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from cmem_cli.capture.agents import specs
from tests.agent_fixtures import db_rows, payload, tool_payload
from tests.hook_log import hook_log
from tests.test_agent_hooks import FIXTURES, fixture


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    path = tmp_path / "work" / "billing-api"
    path.mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(path)], check=True)
    (path / "invoice.py").write_text("total = 1\n")
    return path


def log_lines(home: Path) -> list[str]:
    return hook_log(home).splitlines()


def bugs(home: Path) -> list[str]:
    return [line for line in log_lines(home) if "Z bug " in line]


# -- reproductions, through the real CLI ------------------------------------------------------------------
def test_a_prompt_with_a_lone_surrogate_and_a_nul_is_recorded_not_a_bug(sh, home, repo):
    """JSON may escape any code unit: ``\\ud800`` alone made prompt_prefix raise UnicodeEncodeError (a bug
    line, the prompt lost); a NUL made the prompt "not valid UTF-8 text" (the prompt lost)."""
    body = json.dumps(payload("UserPromptSubmit", "s-sur", repo, prompt="fix \ud800 the \x00 total"))
    result = sh("hook", "UserPromptSubmit", input=body)
    assert (result.exit_code, result.stdout, result.stderr) == (0, "", "")
    assert bugs(home) == [] and log_lines(home) == []
    assert db_rows(home, "SELECT text FROM user_prompts WHERE session = 's-sur'") == [
        ("fix \ufffd the \ufffd total",)
    ]


def test_a_tool_input_with_a_lone_surrogate_is_recorded(sh, home, repo):
    body = json.dumps(tool_payload("s-read", repo, "Grep", {"pattern": "tot\udc80al", "path": str(repo)}))
    result = sh("hook", "PostToolUse", input=body)
    assert result.exit_code == 0 and bugs(home) == []
    [(title,)] = db_rows(home, "SELECT title FROM observations WHERE session = 's-read'")
    assert "tot\ufffdal" in title


@pytest.mark.parametrize(
    "cwd",
    ["h" * 100_000, "/" + "d" * 300 + "/x", "relative/folder", 5],
    ids=["huge", "long-name", "relative", "number"],
)
def test_a_cwd_no_system_could_open_is_ignored_not_a_bug(sh, home, repo, cwd: Any):
    """A 100,000-character cwd made `Path.exists` raise ENAMETOOLONG in every event (a bug line, the
    event lost); a number or a relative path named a project after itself."""
    body = json.dumps({**payload("UserPromptSubmit", "s-cwd", "/", prompt="where am I"), "cwd": cwd})
    result = sh("hook", "UserPromptSubmit", input=body)
    assert result.exit_code == 0 and bugs(home) == []
    # the hook works where the agent started it (the test's folder), as with no cwd at all
    assert db_rows(home, "SELECT project FROM user_prompts WHERE session = 's-cwd'") == [(Path.cwd().name,)]


@pytest.mark.parametrize("target", ["fifo", "/dev/zero"])
def test_a_stop_hook_whose_transcript_is_no_regular_file_returns_at_once(sh, home, repo, tmp_path, target):
    """The Stop hook reads the transcript's tail for the turn's answer: a FIFO there blocked it (and the
    agent) for ever, `/dev/zero` made it read until memory ran out."""
    path = tmp_path / "transcript.jsonl"
    if target == "fifo":
        os.mkfifo(path)
    else:
        path.symlink_to(target)
    body = json.dumps({**payload("Stop", "s-stop", repo), "transcript_path": str(path)})
    result = subprocess.run(  # a hang fails the test at the timeout instead of holding the suite
        [sys.executable, "-m", "cmem_cli", "hook", "Stop"],
        input=body.encode(),
        capture_output=True,
        timeout=30,
    )
    assert (result.returncode, result.stdout) == (0, b"") and bugs(home) == []
    assert db_rows(home, "SELECT count(*) FROM session_summaries") == [(0,)]


def test_the_hook_log_holds_one_bounded_printable_line_per_problem(sh, home, repo):
    """A session id the store refuses is named in the log: cut short, its escape sequences escaped
    (before: 3 MB on one line, and `cat hooks.log` ran the terminal's escape sequences)."""
    session = "\x1b]0;pwned\x07" + "s" * 3_000_000
    result = sh("hook", "SessionStart", input=json.dumps(payload("SessionStart", session, repo)))
    assert result.exit_code == 0
    [line] = log_lines(home)
    assert "session id" in line and "\\x1b]0;pwned\\x07" in line
    assert "\x1b" not in line and "\x07" not in line and len(line) < 9_000
    assert db_rows(home, "SELECT count(*) FROM sessions") == [(0,)]


# -- the fuzz ----------------------------------------------------------------------------------------------
HUGE = "h" * 100_000
CONTROL = "ctl \x1b[31m red \x07 bell \x08\x0b\x0c\x7f \u2028 \u0085 \ud800 \x00 end"
BAD: list[Any] = [None, 7, True, "", CONTROL, HUGE, [1, None], {"a": [1]}]
EVENTS = [
    "SessionStart",
    "UserPromptSubmit",
    "Read",
    "Edit",
    "Bash",
    "PostToolUseFailure",
    "Stop",
    "SessionEnd",
]


def claude_payload(name: str, repo: Path) -> dict[str, Any]:
    """One payload of an event (or of a tool's PostToolUse) as Claude Code documents it."""
    s, path = "fuzz-claude", str(repo / "invoice.py")
    return {
        "SessionStart": lambda: payload("SessionStart", s, repo, source="startup"),
        "UserPromptSubmit": lambda: payload("UserPromptSubmit", s, repo, prompt="fix the total"),
        "Read": lambda: tool_payload(
            s, repo, "Read", {"file_path": path, "offset": 1}, {"file": {"content": "x"}}
        ),
        "Edit": lambda: tool_payload(
            s, repo, "Edit", {"file_path": path, "old_string": "1", "new_string": "2"}
        ),
        "Bash": lambda: tool_payload(s, repo, "Bash", {"command": "pytest -q"}, {"stdout": "1 passed"}),
        "PostToolUseFailure": lambda: tool_payload(
            s, repo, "Bash", {"command": "false"}, "", event="PostToolUseFailure", error="boom"
        ),
        "Stop": lambda: payload("Stop", s, repo, last_assistant_message="done", stop_hook_active=False),
        "SessionEnd": lambda: payload("SessionEnd", s, repo, reason="other"),
    }[name]()


def variants(base: dict[str, Any], values: list[Any]) -> list[dict[str, Any]]:
    """``base`` with one field (a top-level one, or one of ``tool_input``'s) set to each of ``values``."""
    out = []
    for key in [*base, *(f"tool_input.{k}" for k in base.get("tool_input") or {})]:
        for value in values:
            data = json.loads(json.dumps(base))
            outer, _, inner = key.partition(".")
            if inner:
                data[outer][inner] = value
            else:
                data[key] = value
            out.append(data)
    return out


def run_hook(args: list[str], data: Any) -> str:
    from cmem_cli.capture.hooks import runner

    out = io.StringIO()
    raw = json.dumps(data).encode("utf-8", "surrogatepass")  # ensure_ascii: surrogates travel as escapes
    assert runner.run(args, stdin=io.BytesIO(raw), stdout=out) == 0
    return out.getvalue()


def assert_clean(sh, home: Path, answers: list[str]) -> None:
    for answer in answers:  # nothing, or one JSON object (the agent parses it)
        assert answer == "" or isinstance(json.loads(answer), dict), answer[:200]
    assert bugs(home) == []
    for line in log_lines(home):
        assert len(line) < 9_000 and "\x1b" not in line and "\x00" not in line
    doctor = sh("doctor", "--json")  # no half row: every row has its file, every file its row
    failed = [c for c in json.loads(doctor.stdout)["checks"] if c["status"] == "fail"]
    assert failed == [], failed


@pytest.mark.parametrize("name", EVENTS)
def test_every_field_given_every_wrong_shape_never_breaks_a_hook(sh, home, repo, name: str):
    base = claude_payload(name, repo)
    event = base["hook_event_name"]
    answers = [run_hook([event], data) for data in variants(base, BAD)]
    if name == "Read":  # and a payload that is no object at all
        answers += [run_hook([event], whole) for whole in BAD]
    assert_clean(sh, home, answers)
    if name in RECORDS:  # the variants whose bad field did not matter were recorded, as the agent sent them
        assert db_rows(home, RECORDS[name])[0][0] > 0


RECORDS = {
    "UserPromptSubmit": "SELECT count(*) FROM user_prompts WHERE text = 'fix the total'",
    "Read": "SELECT count(*) FROM observations WHERE files_read LIKE '%invoice.py%'",
    "Edit": "SELECT count(*) FROM observations WHERE files_modified LIKE '%invoice.py%'",
    "Bash": "SELECT count(*) FROM observations WHERE narrative LIKE '%1 passed%'",
}


@pytest.mark.parametrize("agent", [spec.name for spec in specs() if spec.adapter])
def test_every_agents_documented_payloads_with_wrong_shapes_never_break_a_hook(sh, home, repo, agent):
    """Each field of each documented payload gets one wrong value (taken in turn from the list)."""
    answers = []
    turn = 0
    for path in sorted((FIXTURES / agent).glob("*.json")):
        name = path.name.removesuffix(".json")
        if name.endswith(".huge"):
            continue  # a 5 MB output: tests/test_agent_hooks.py takes it through; here it would only be slow
        base = fixture(agent, name, repo, f"fuzz-{agent}")
        event = base.get("hook_event_name") or name.split(".")[0]
        for key in base:
            turn += 1
            answers.append(run_hook(["--agent", agent, event], {**base, key: BAD[turn % len(BAD)]}))
    assert_clean(sh, home, answers)
