"""`cmem import opencode FILE`: what `opencode export SESSION_ID` prints (`{info, messages: [{info, parts}]}`)
becomes the records opencode's plugin makes, and never twice: not on a re-run, not after the plugin captured
the same session; an export taken later adds what the session gained."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.agent_fixtures import all_stored_bytes, db_rows
from tests.conftest import fake_repo

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "agents" / "opencode-exports"
SESSION = "ses_5f1c2d3e4a5bQuietRiver"


@pytest.fixture
def project(tmp_path: Path) -> Path:
    return fake_repo(tmp_path / "work", "dates-lib", "src")


def export_of(project: Path) -> dict[str, Any]:
    text = (FIXTURES / "ses_SESSION.json").read_text()
    data: dict[str, Any] = json.loads(
        text.replace("@CWD@", json.dumps(str(project))[1:-1]).replace("@SESSION@", SESSION)
    )
    return data


@pytest.fixture
def export(tmp_path: Path, project: Path) -> Path:
    path = tmp_path / f"{SESSION}.json"
    path.write_text(json.dumps(export_of(project), indent=2))
    return path


def imported(sh, path: Path) -> tuple[int, int, int]:
    result = sh("import", "opencode", str(path), "--settle", "0", "--json")
    assert result.exit_code == 0, result.stderr
    [report] = result.json()
    return report["prompts"], report["observations"], report["summaries"]


def test_an_export_becomes_the_session_the_plugin_would_have_recorded(sh, home, export) -> None:
    assert imported(sh, export) == (1, 2, 1)
    assert db_rows(home, "SELECT agent, project, label FROM sessions WHERE session_id = ?", (SESSION,)) == [
        ("opencode", "dates-lib", "Fix the date parser")
    ]
    # opencode's synthetic text is not the person's prompt; the private span is gone
    assert db_rows(home, "SELECT prompt_number, text FROM user_prompts") == [(1, "Fix the date parser")]
    rows = db_rows(home, "SELECT type, title, files_modified, facts FROM observations ORDER BY id")
    # a call still running has no result: not recorded
    assert [(r[0], r[1]) for r in rows] == [
        ("error", "Command failed: pytest -q tests/test_dates.py"),
        ("change", "Edited src/dates.py"),
    ]
    assert "exit status 1" in json.loads(rows[0][3])
    assert json.loads(rows[1][2]) == ["src/dates.py"]
    assert db_rows(home, "SELECT request, completed FROM session_summaries") == [
        ("Fix the date parser", "Dates are parsed as UTC now; the test passes.")
    ]
    assert b"4111" not in all_stored_bytes(home)


def test_a_later_export_of_the_session_adds_only_what_it_gained(sh, home, export, project) -> None:
    assert imported(sh, export) == (1, 2, 1)
    assert imported(sh, export) == (0, 0, 0)
    data = export_of(project)
    data["messages"] += [
        {
            "info": {"id": "msg_u2", "sessionID": SESSION, "role": "user", "time": {"created": 1764302500000}},
            "parts": [{"type": "text", "text": "Now note it in the changelog"}],
        },
        {
            "info": {"id": "msg_a2", "sessionID": SESSION, "role": "assistant", "time": {"created": 1764302501000}},
            "parts": [
                {"type": "tool", "callID": "toolu_write_2", "tool": "write", "state": {
                    "status": "error", "input": {"filePath": f"{project}/CHANGELOG.md", "content": "- UTC\n"},
                    "error": "permission denied", "time": {"start": 1764302502000, "end": 1764302503000}}},
                {"type": "text", "text": "I could not write the changelog."},
            ],
        },
    ]  # fmt: skip
    export.write_text(json.dumps(data))
    assert imported(sh, export) == (1, 1, 1)
    assert db_rows(home, "SELECT prompt_number, text FROM user_prompts ORDER BY 1") == [
        (1, "Fix the date parser"),
        (2, "Now note it in the changelog"),
    ]
    assert db_rows(home, "SELECT type, title FROM observations ORDER BY id DESC LIMIT 1") == [
        ("error", "Write failed: Wrote CHANGELOG.md")  # the hooks' title for a failed write
    ]


def test_a_session_the_plugin_captured_is_not_imported_twice(sh, home, export, project) -> None:
    """The plugin keys a call by its callID and a prompt by its text parts, as the export holds them."""
    base = {"session_id": SESSION, "cwd": str(project)}

    def hook(event: str, **fields: object) -> None:
        payload = json.dumps({**base, "hook_event_name": event, **fields})
        result = sh("hook", "--agent", "opencode", event, input=payload)
        assert result.exit_code == 0

    hook("session.created")
    hook("chat.message", prompt="Fix the date parser <private>card 4111 1111</private>")
    hook("tool.execute.after", tool="bash", call_id="toolu_bash_1", output="1 failed", metadata={"exit": 1},
         args={"command": "pytest -q tests/test_dates.py", "description": "Run the date tests"})  # fmt: skip
    hook("tool.execute.after", tool="edit", call_id="toolu_edit_1", output="", metadata={},
         args={"filePath": f"{project}/src/dates.py", "oldString": "naive = True", "newString": "naive = False"})  # fmt: skip
    assert db_rows(home, "SELECT count(*) FROM observations") == [(2,)]
    assert imported(sh, export) == (
        0,
        0,
        1,
    )  # the plugin's session.idle carries no answer: the summary is new
    assert db_rows(home, "SELECT count(*) FROM observations") == [(2,)]
    assert db_rows(home, "SELECT count(*) FROM user_prompts") == [(1,)]


def test_no_file_or_a_file_that_is_not_an_export(sh, home, tmp_path) -> None:
    missing = sh("import", "opencode")
    assert missing.exit_code == 2 and len(missing.stderr.splitlines()) == 1
    junk = tmp_path / "notes.json"
    junk.write_text("[1, 2]")
    result = sh("import", "opencode", str(junk), "--json")
    assert result.exit_code == 0, result.stderr
    assert [(r["prompts"], r["observations"], r["bad_lines"]) for r in result.json()] == [(0, 0, 1)]
    gone = sh("import", "opencode", str(tmp_path / "nope.json"))
    assert gone.exit_code == 7 and gone.stderr.startswith("cmem: ") and "nope.json" in gone.stderr


def test_a_deep_or_looping_export_is_one_line_and_the_good_one_beside_it_is_imported(
    sh, home, export, tmp_path
) -> None:
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 100_000 + "]" * 100_000)
    deep_object = tmp_path / "deep-object.json"
    deep_object.write_text('{"info": ' * 100_000 + "{}" + "}" * 100_000)
    loop = tmp_path / "loop.json"
    loop.symlink_to(tmp_path / "loop.json")
    result = sh(
        "import", "opencode", str(deep), str(deep_object), str(loop), str(export), "--settle", "0", "--json"
    )
    assert result.exit_code == 7, result.stderr
    assert "Traceback" not in result.stderr and "internal error" not in result.stderr
    assert result.stderr.splitlines() == [line for line in result.stderr.splitlines() if "loop.json" in line]
    assert len(result.stderr.splitlines()) == 1
    reports = {Path(r["path"]).name: r for r in result.json()}
    assert reports["deep.json"]["bad_lines"] == 1 and reports["deep-object.json"]["bad_lines"] == 1
    assert reports["loop.json"]["error"]
    assert (reports[export.name]["prompts"], reports[export.name]["observations"]) != (0, 0)
    assert db_rows(home, "SELECT count(*) FROM user_prompts")[0][0] == reports[export.name]["prompts"]
