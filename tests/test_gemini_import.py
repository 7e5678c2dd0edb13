"""`cmem import gemini`: Gemini CLI's saved chats (~/.gemini/tmp/<project>/chats/session-*.jsonl: a session
line, then one line per message, a message written again whole as it grows, `$set` and `$rewindTo` lines)
become the records its hooks make, incrementally, and never twice: not on a re-run, not when a message is
written again, not after the hooks captured the same session."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.agent_fixtures import all_stored_bytes, db_rows
from tests.conftest import fake_repo

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "agents" / "gemini-chats"
SESSION = "6b1e2f3a-4c5d-4e6f-8a7b-9c0d1e2f3a4b"


@pytest.fixture
def project(tmp_path: Path) -> Path:
    return fake_repo(tmp_path / "work", "config-app", "src")


def lines(name: str, project: Path) -> str:
    text = (FIXTURES / name).read_text()
    return text.replace("@CWD@", json.dumps(str(project))[1:-1]).replace("@SESSION@", SESSION)


@pytest.fixture
def chat(home: Path, project: Path) -> Path:
    """The chat where Gemini CLI keeps it: a project folder with its `.project_root`, `chats/` in it."""
    folder = Path(os.environ["HOME"]) / ".gemini" / "tmp" / "config-app"
    (folder / "chats").mkdir(parents=True)
    (folder / ".project_root").write_text(str(project))
    path = folder / "chats" / f"session-2026-11-28T04-00-{SESSION[:8]}.jsonl"
    path.write_text(lines("session-2026-11-28T04-00-SESSION.jsonl", project))
    return path


def imported(sh, *args: str) -> tuple[int, int, int]:
    result = sh("import", "gemini", "--settle", "0", "--json", *args)
    assert result.exit_code == 0, result.stderr
    [report] = result.json()
    return report["prompts"], report["observations"], report["summaries"]


def test_a_chat_becomes_the_session_its_hooks_would_have_recorded(sh, home, chat) -> None:
    assert imported(sh) == (1, 2, 1)
    assert db_rows(home, "SELECT agent, project, label FROM sessions WHERE session_id = ?", (SESSION,)) == [
        ("gemini", "config-app", "Rename the config loader")
    ]
    # the tool answers Gemini passes back to the model as a user message are not prompts
    assert db_rows(home, "SELECT prompt_number, text FROM user_prompts") == [(1, "Rename the config loader.")]
    rows = db_rows(home, "SELECT type, title, agent, files_modified, facts FROM observations ORDER BY id")
    # write_todos is skipped like Claude Code's TodoWrite; the shell call's `Exit Code: 1` makes it an error;
    # the message written again with one more call adds that call alone
    assert [(r[0], r[1], r[2]) for r in rows] == [
        ("error", "Command failed: pytest -q tests/test_config.py", "gemini"),
        ("change", "Edited src/config.py", "gemini"),
    ]
    assert "exit status 1" in json.loads(rows[0][4])
    assert json.loads(rows[1][3]) == ["src/config.py"]
    assert db_rows(home, "SELECT request, completed FROM session_summaries") == [
        ("Rename the config loader.", "Renamed load_cfg to load_config; the test passes now.")
    ]
    assert b"hunter2" not in all_stored_bytes(home)


def test_a_rerun_reads_only_what_was_appended(sh, home, chat, project) -> None:
    assert imported(sh) == (1, 2, 1)
    assert imported(sh) == (0, 0, 0)
    with chat.open("a") as fh:
        fh.write(lines("second-turn.jsonl", project))
    assert imported(sh) == (1, 1, 1)
    assert db_rows(home, "SELECT prompt_number, text FROM user_prompts ORDER BY 1") == [
        (1, "Rename the config loader."),
        (2, "Now document the loader in the README"),
    ]
    assert db_rows(home, "SELECT title FROM observations ORDER BY id DESC LIMIT 1") == [("Read README.md",)]
    # a thought is not the answer
    assert db_rows(home, "SELECT completed FROM session_summaries ORDER BY id DESC LIMIT 1") == [
        ("The README now says how the loader works.",)
    ]


def test_an_open_turn_is_read_again_once_it_has_finished(sh, home, chat, project) -> None:
    """A chat still being written (not settled): the open turn is left for the next run, which adds the call
    its message gained meanwhile and the answer, and stores nothing twice."""
    text = chat.read_text().splitlines(keepends=True)
    chat.write_text("".join(text[:4]))  # the prompt and the first calls; the edit and the answer not yet
    first = sh("import", "gemini", "--json").json()[0]
    assert (first["prompts"], first["observations"], first["complete"]) == (1, 1, False)
    chat.write_text("".join(text))
    assert imported(sh) == (0, 1, 1)
    assert db_rows(home, "SELECT count(*) FROM user_prompts") == [(1,)]
    assert db_rows(home, "SELECT count(*) FROM observations") == [(2,)]


def test_a_session_the_hooks_captured_is_not_imported_twice(sh, home, chat, project) -> None:
    """Gemini's AfterTool gives a call no id: hook and import both key it by its arguments and their
    occurrence in the session, a prompt by its text, the summary by its prompt."""
    base = {"session_id": SESSION, "transcript_path": str(chat), "cwd": str(project),
            "timestamp": "2026-11-28T04:00:00.000Z"}  # fmt: skip

    def hook(event: str, **fields: object) -> None:
        result = sh(
            "hook", "--agent", "gemini", event, input=json.dumps({**base, "hook_event_name": event, **fields})
        )
        assert result.exit_code == 0

    hook("BeforeAgent", prompt="Rename the config loader. <private>staging password hunter2</private>")
    hook(
        "AfterTool",
        tool_name="run_shell_command",
        tool_input={"command": "pytest -q tests/test_config.py", "description": "Run the config tests"},
        tool_response={"llmContent": "Output: F\nFAILED tests/test_config.py::test_loader\nExit Code: 1"},
    )
    hook(
        "AfterTool",
        tool_name="replace",
        tool_input={
            "file_path": f"{project}/src/config.py",
            "instruction": "rename the loader",
            "old_string": "def load_cfg(",
            "new_string": "def load_config(",
        },  # fmt: skip
        tool_response={
            "llmContent": f"Successfully modified file: {project}/src/config.py (1 replacements)."
        },
    )
    hook("AfterAgent", prompt="Rename the config loader.", prompt_response="Renamed it; the test passes now.")
    assert db_rows(home, "SELECT count(*) FROM observations") == [(2,)]
    assert imported(sh) == (0, 0, 0)
    assert db_rows(home, "SELECT count(*) FROM observations") == [(2,)]
    assert db_rows(home, "SELECT count(*) FROM session_summaries") == [(1,)]


def test_the_same_command_run_twice_is_two_observations(sh, home, chat, project) -> None:
    """Keying a call by its arguments counts their occurrences: a second identical call is a new one."""
    assert imported(sh) == (1, 2, 1)
    shell = json.loads(chat.read_text().splitlines()[3])["toolCalls"][1]
    again = {**shell, "id": "run_shell_command-2", "result": [{"functionResponse": {"response": {
        "output": "Output: .\n1 passed in 0.20s\nExit Code: 0"}}}]}  # fmt: skip
    turn = [
        {"id": "u9", "timestamp": "2026-11-28T04:02:00.000Z", "type": "user", "content": "Run them again"},
        {"id": "g9", "timestamp": "2026-11-28T04:02:01.000Z", "type": "gemini", "content": "", "toolCalls": [again]},
    ]  # fmt: skip
    with chat.open("a") as fh:
        fh.write("".join(json.dumps(line) + "\n" for line in turn))
    assert imported(sh) == (1, 1, 0)
    assert db_rows(
        home, "SELECT type FROM observations WHERE title LIKE '%pytest -q tests/test_config.py'"
    ) == [
        ("error",),
        ("discovery",),
    ]


def test_a_chat_from_before_jsonl_is_read_whole(sh, home, chat, project) -> None:
    """Older Gemini CLI wrote one JSON object per chat (session-*.json); one it already copied into a .jsonl
    (on resume) is read from there only."""
    records = [json.loads(line) for line in chat.read_text().splitlines()]
    messages = {m["id"]: m for m in records if "type" in m}  # the last version of each message
    legacy = {**records[0], "summary": "Rename the config loader", "messages": list(messages.values())}
    old = chat.with_name(f"session-2026-11-20T10-00-{SESSION[:8]}.json")
    old.write_text(json.dumps(legacy, indent=2))
    chat.unlink()
    assert imported(sh) == (1, 2, 1)
    assert imported(sh) == (0, 0, 0)
    chat.with_suffix(".json").write_text(json.dumps(legacy))
    copied = chat.with_suffix(".json").with_suffix(".jsonl")
    copied.write_text(lines("session-2026-11-28T04-00-SESSION.jsonl", project))
    result = sh("import", "gemini", "--settle", "0", "--json").json()
    assert sorted(Path(r["path"]).name for r in result) == sorted([old.name, copied.name])
    assert db_rows(home, "SELECT count(*) FROM observations") == [(2,)]


def test_no_gemini_folder_is_a_one_line_error(sh, home) -> None:
    result = sh("import", "gemini")
    assert result.exit_code == 3
    assert result.stderr.startswith("cmem: no Gemini CLI chat directory")
    assert len(result.stderr.splitlines()) == 1


def test_mcp_calls_are_named_by_their_server_and_cmem_s_own_are_not_recorded(sh, home, chat, project) -> None:
    """A saved call names an MCP tool `mcp_<server>_<tool>` alone: the servers of Gemini's settings tell
    the server's name from the tool's, so the call is the one the hook recorded (from its mcp_context), and
    a lookup in cmem's own server is not a memory."""
    settings = Path(os.environ["HOME"]) / ".gemini" / "settings.json"
    settings.write_text(json.dumps({"mcpServers": {"github": {"command": "github-mcp-server"}}}))
    hook = {"session_id": SESSION, "cwd": str(project), "hook_event_name": "AfterTool",
            "tool_name": "mcp_github_get_issue", "tool_input": {"issue_number": 214},
            "mcp_context": {"server_name": "github", "tool_name": "get_issue"},
            "tool_response": {"llmContent": "Issue 214: totals off by one cent"}}  # fmt: skip
    assert sh("hook", "--agent", "gemini", "AfterTool", input=json.dumps(hook)).exit_code == 0
    calls = [
        {"id": "mcp-1", "name": "mcp_github_get_issue", "args": {"issue_number": 214}, "status": "success",
         "result": [{"functionResponse": {"response": {"output": "Issue 214: totals off by one cent"}}}]},
        {"id": "mcp-2", "name": "mcp_cmem_search", "args": {"query": "totals"}, "status": "success",
         "result": [{"functionResponse": {"response": {"output": "#12 Totals round once"}}}]},
    ]  # fmt: skip
    turn = [
        {"id": "u7", "timestamp": "2026-11-28T04:03:00.000Z", "type": "user", "content": "Look at issue 214"},
        {"id": "g7", "timestamp": "2026-11-28T04:03:01.000Z", "type": "gemini", "content": "", "toolCalls": calls},
    ]  # fmt: skip
    with chat.open("a") as fh:
        fh.write("".join(json.dumps(line) + "\n" for line in turn))
    assert imported(sh) == (2, 2, 1)  # the fixture's shell call and edit; the issue lookup was the hook's
    titles = [row[0] for row in db_rows(home, "SELECT title FROM observations ORDER BY id")]
    assert len(titles) == 3 and sum("get_issue" in title for title in titles) == 1, titles
    assert not any("search" in title for title in titles)  # cmem's own lookup


def test_a_nul_in_a_prompt_or_a_2_mb_tool_name_never_blocks_the_chat(sh, home, chat, project) -> None:
    """One bad line is repaired (a NUL becomes U+FFFD) or dropped and counted; the turns after it are
    imported and the offset moves past it, so a second run adds nothing."""
    assert sh("import", "gemini", "--settle", "0").exit_code == 0
    bad = [
        {"id": "u-nul", "timestamp": "2026-11-28T04:00:30.000Z", "type": "user", "content": "with a \x00 in it"},
        {"id": "g-big", "timestamp": "2026-11-28T04:00:31.000Z", "type": "gemini", "content": "",
         "toolCalls": [{"id": "big-1", "name": "n" * 2_000_000, "args": {}, "status": "success"}]},
    ]  # fmt: skip
    with chat.open("a") as fh:
        fh.write("".join(json.dumps(line) + "\n" for line in bad))
        fh.write(lines("second-turn.jsonl", project))
    result = sh("import", "gemini", "--settle", "0", "--json")
    assert result.exit_code == 0, result.stderr
    [report] = result.json()
    assert (report["prompts"], report["dropped"]) == (2, 1)
    assert report["complete"] and report["offset"] == chat.stat().st_size
    texts = db_rows(home, "SELECT text FROM user_prompts ORDER BY prompt_number")
    assert texts[-2:] == [("with a \ufffd in it",), ("Now document the loader in the README",)]
    again = sh("import", "gemini", "--settle", "0", "--json").json()
    assert (again[0]["prompts"], again[0]["observations"], again[0]["dropped"]) == (0, 0, 0)


def test_recall_gemini_added_after_a_prompt_is_not_imported_as_the_prompt(sh, home, chat, project) -> None:
    """Gemini CLI 0.61 appends BeforeAgent's context (cmem's prompt recall) after the prompt, as
    `<hook_context>`, in its saved chat too (found by the real client harness): the prompt imported is the
    person's words, as the hook stored it."""
    recalled = (
        "cmem recalls (memories of this project that match the prompt; `cmem get ID` for details):\n#5 x"
    )
    line = {"id": "u-recall", "timestamp": "2026-11-28T04:00:30.000Z", "type": "user",
            "content": [{"text": f"What did we decide about batches?\n<hook_context>{recalled}</hook_context>"}]}  # fmt: skip
    with chat.open("a") as fh:
        fh.write(json.dumps(line) + "\n")
    assert sh("import", "gemini", "--settle", "0").exit_code == 0
    texts = db_rows(home, "SELECT text FROM user_prompts ORDER BY prompt_number")
    assert texts[-1] == ("What did we decide about batches?",)
