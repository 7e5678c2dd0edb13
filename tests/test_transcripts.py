"""`cmem import transcript` / `cmem import claude-code` on hand-written Claude Code transcripts: what is
stored, and that re-running, appending and half-written lines never import anything twice or lose it."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.agent_fixtures import Transcript, db_rows, payload, tool_payload
from tests.conftest import fake_repo

SID = "0b7e4a52-6c1d-4f7e-9a3b-2d5c8e1f0a11"


@pytest.fixture
def project(tmp_path: Path) -> Path:
    return fake_repo(tmp_path / "src", "shop-web")


def session_transcript(project: Path, session: str = SID) -> Transcript:
    t = Transcript(session, project)
    t.summary("Checkout total rounding fix")
    t.prompt("The checkout total is off by a cent, find out why")
    t.say("Let me look at the cart code.")
    t.tool(
        "Read",
        {"file_path": f"{project}/src/cart.ts"},
        "1\texport function total(...",
        structured={
            "type": "text",
            "file": {
                "filePath": f"{project}/src/cart.ts",
                "numLines": 120,
                "startLine": 1,
                "totalLines": 120,
            },
        },
    )
    t.bookkeeping()
    t.tool(
        "Grep",
        {"pattern": "toFixed", "path": f"{project}/src"},
        "Found 2 files",
        structured={
            "mode": "files_with_matches",
            "filenames": [f"{project}/src/cart.ts", f"{project}/src/tax.ts"],
            "numFiles": 2,
        },
    )
    t.tool(
        "Edit",
        {
            "file_path": f"{project}/src/cart.ts",
            "old_string": "return sum.toFixed(2)",
            "new_string": "return Math.round(sum * 100) / 100",
        },
        "The file has been updated.",
        structured={"filePath": f"{project}/src/cart.ts"},
    )
    t.tool(
        "Bash",
        {"command": "npm test -- cart", "description": "Run cart tests"},
        "Exit code 1\nFAIL src/cart.test.ts\n  expected 10.01",
        is_error=True,
    )
    t.say("The total used toFixed on a float sum; now it rounds cents. One test still fails on tax.")
    t.prompt("Fix the tax test too")
    t.tool(
        "Edit",
        {"file_path": f"{project}/src/tax.ts", "old_string": "rate * x", "new_string": "round(rate * x)"},
        "The file has been updated.",
        structured={"filePath": f"{project}/src/tax.ts"},
    )
    t.tool(
        "Bash",
        {"command": "npm test"},
        "Tests: 42 passed",
        structured={"stdout": "Tests: 42 passed", "stderr": "", "interrupted": False, "isImage": False},
    )
    t.say("All 42 tests pass.")
    return t


def import_(sh, *paths: Path, settle: str = "0"):
    return sh("import", "transcript", *map(str, paths), "--settle", settle, "--json")


def counts(home: Path) -> tuple[int, int, int]:
    return (
        db_rows(home, "SELECT count(*) FROM user_prompts")[0][0],
        db_rows(home, "SELECT count(*) FROM observations")[0][0],
        db_rows(home, "SELECT count(*) FROM session_summaries")[0][0],
    )


def test_a_transcript_becomes_session_prompts_observations_and_turn_summaries(sh, home, project, tmp_path):
    path = session_transcript(project).write(tmp_path / "t" / f"{SID}.jsonl")
    result = import_(sh, path)
    assert result.exit_code == 0, result.stderr
    report = result.json()[0]
    assert report["sessions"] == [SID] and report["complete"] and report["bad_lines"] == 0

    assert db_rows(home, "SELECT project, agent, label, prompt_counter FROM sessions") == [
        ("shop-web", "claude-code", "Checkout total rounding fix", 2)
    ]
    assert db_rows(home, "SELECT prompt_number, text FROM user_prompts ORDER BY 1") == [
        (1, "The checkout total is off by a cent, find out why"),
        (2, "Fix the tax test too"),
    ]
    observations = db_rows(
        home, "SELECT type, title, prompt_number FROM observations ORDER BY created_at, id"
    )
    assert observations == [
        ("discovery", "Read src/cart.ts", 1),
        ("discovery", "Searched code for `toFixed` in src", 1),
        ("change", "Edited src/cart.ts", 1),
        ("error", "Command failed: npm test -- cart", 1),
        ("change", "Edited src/tax.ts", 2),
        ("discovery", "Ran npm test", 2),
    ]
    # observation times come from the transcript, not from the import
    first = db_rows(home, "SELECT min(created_at) FROM observations")[0][0]
    assert time.strftime("%Y-%m-%d", time.gmtime(first / 1000)) == "2026-03-02"
    summaries = db_rows(home, "SELECT request, completed FROM session_summaries ORDER BY created_at")
    assert summaries == [
        (
            "The checkout total is off by a cent, find out why",
            "The total used toFixed on a float sum; now it rounds cents. One test still fails on tax.",
        ),
        ("Fix the tax test too", "All 42 tests pass."),
    ]


def test_importing_again_adds_nothing(sh, home, project, tmp_path):
    path = session_transcript(project).write(tmp_path / f"{SID}.jsonl")
    import_(sh, path)
    before = counts(home)
    second = import_(sh, path).json()[0]
    assert (second["prompts"], second["observations"], second["summaries"]) == (0, 0, 0)
    assert counts(home) == before == (2, 6, 2)


def test_a_fresh_import_from_scratch_ignores_saved_offsets_but_still_adds_nothing(
    sh, home, project, tmp_path
):
    path = session_transcript(project).write(tmp_path / f"{SID}.jsonl")
    import_(sh, path)
    db_rows(home, "SELECT 1")  # the offsets table is ours: forget it to force a full re-read
    import apsw

    conn = apsw.Connection(str(home / "cmem.db"))
    conn.execute("DELETE FROM transcript_offsets")
    conn.close()
    import_(sh, path)
    assert counts(home) == (2, 6, 2)


def test_incremental_import_reads_appended_lines_and_retries_a_half_written_one(sh, home, project, tmp_path):
    full = session_transcript(project).text()
    lines = full.splitlines(keepends=True)
    path = tmp_path / f"{SID}.jsonl"
    cut = 9  # inside the first turn: the Edit's result and the failing command are not written yet
    path.write_text("".join(lines[:cut]) + lines[cut][:40])  # plus half a line being written
    first = import_(sh, path, settle="3600").json()[0]
    assert not first["complete"]
    assert first["prompts"] == 1 and first["observations"] >= 1

    path.write_text("".join(lines[: cut + 3]) + lines[cut + 3][:25])
    import_(sh, path, settle="3600")
    path.write_text(full)
    final = import_(sh, path, settle="0").json()[0]
    assert final["complete"]
    assert counts(home) == (2, 6, 2)

    # the same transcript imported in one go elsewhere gives the same records
    other_home = tmp_path / "other-home"
    sh("import", "transcript", str(path), "--settle", "0", env={"CMEM_HOME": str(other_home)})
    query = "SELECT type, title, prompt_number, created_at FROM observations ORDER BY created_at, title"
    assert db_rows(home, query) == db_rows(other_home, query)
    query = "SELECT request, completed FROM session_summaries ORDER BY created_at"
    assert db_rows(home, query) == db_rows(other_home, query)


def test_an_open_turn_is_summarised_only_once_the_file_settles(sh, home, project, tmp_path):
    path = session_transcript(project).write(tmp_path / f"{SID}.jsonl")
    import_(sh, path, settle="3600")
    assert counts(home) == (2, 6, 1)  # the last turn may still go on
    old = time.time() - 7200
    os.utime(path, (old, old))
    sh("import", "transcript", str(path))  # default settle: the file is two hours old
    assert counts(home) == (2, 6, 2)


def test_a_tool_call_without_result_is_kept_from_its_input_once_the_turn_is_over(sh, home, project, tmp_path):
    t = Transcript(SID, project)
    t.prompt("Rename the module")
    t.tool_use_only("Bash", {"command": "git mv a.py b.py"}, "toolu_lost")
    t.prompt("[Request interrupted by user]")
    t.prompt("Try again")
    path = t.write(tmp_path / f"{SID}.jsonl")
    import_(sh, path, settle="3600")
    assert db_rows(home, "SELECT title FROM observations") == [("Ran git mv a.py b.py",)]
    assert db_rows(home, "SELECT text FROM user_prompts ORDER BY prompt_number") == [
        ("Rename the module",),
        ("Try again",),
    ]


def test_hooks_and_import_of_the_same_session_store_everything_once(sh, home, project, tmp_path):
    t = Transcript(SID, project)
    t.prompt("Add a health endpoint")
    t.tool(
        "Write",
        {"file_path": f"{project}/src/health.ts", "content": "export const ok = true\n"},
        "File created",
        structured={"type": "create", "filePath": f"{project}/src/health.ts"},
        tool_id="toolu_write_1",
    )
    t.tool("Read", {"file_path": f"{project}/src/app.ts"}, "...", tool_id="toolu_read_1")
    t.say("Added /health.")
    # What the hooks saw live:
    sh(
        "hook",
        "UserPromptSubmit",
        input=json.dumps(payload("UserPromptSubmit", SID, project, prompt="Add a health endpoint")),
    )
    sh(
        "hook",
        "PostToolUse",
        input=json.dumps(
            tool_payload(
                SID,
                project,
                "Write",
                {"file_path": f"{project}/src/health.ts", "content": "export const ok = true\n"},
                {"type": "create", "filePath": f"{project}/src/health.ts"},
                tool_use_id="toolu_write_1",
            )
        ),
    )
    sh(
        "hook",
        "PostToolUse",
        input=json.dumps(
            tool_payload(
                SID, project, "Read", {"file_path": f"{project}/src/app.ts"}, tool_use_id="toolu_read_1"
            )
        ),
    )
    sh(
        "hook",
        "Stop",
        input=json.dumps(payload("Stop", SID, project, last_assistant_message="Added /health.")),
    )
    assert counts(home) == (1, 2, 1)
    import_(sh, t.write(tmp_path / f"{SID}.jsonl"))
    assert counts(home) == (1, 2, 1)


def test_repeated_prompt_text_is_counted_not_deduplicated_away(sh, home, project, tmp_path):
    t = Transcript(SID, project)
    for _ in range(3):
        t.prompt("continue").say("ok")
    import_(sh, t.write(tmp_path / f"{SID}.jsonl"))
    assert db_rows(home, "SELECT count(*) FROM user_prompts WHERE text = 'continue'") == [(3,)]
    import_(sh, tmp_path / f"{SID}.jsonl")
    assert db_rows(home, "SELECT count(*) FROM user_prompts WHERE text = 'continue'") == [(3,)]


def test_unreadable_lines_and_unknown_types_are_tolerated(sh, home, project, tmp_path):
    good = Transcript(SID, project).prompt("Hello there").say("Hi").text()
    path = tmp_path / f"{SID}.jsonl"
    path.write_text(
        '{"type": "queue-operation", "operation": "enqueue"}\nnot json at all\n[1,2]\n'
        '{"type": "ai-title", "aiTitle": "x"}\n' + good
    )
    report = import_(sh, path).json()[0]
    assert report["bad_lines"] == 2 and report["prompts"] == 1 and report["complete"]


def test_private_text_and_secrets_in_a_transcript_are_not_stored(sh, home, project, tmp_path):
    key = "sk-ant-api03-" + "Qm9x" * 20
    t = Transcript(SID, project)
    t.prompt(f"Use ANTHROPIC_API_KEY={key} <private>and my SSN 078-05-1120</private> for the test")
    t.tool(
        "Bash",
        {"command": f"export ANTHROPIC_API_KEY={key} && ./run.sh"},
        "ok",
        structured={"stdout": "ok", "stderr": "", "interrupted": False},
    )
    t.say("Done")
    import_(sh, t.write(tmp_path / f"{SID}.jsonl"))
    stored = b"".join(p.read_bytes() for p in home.rglob("*") if p.is_file())
    assert key.encode() not in stored and b"078-05-1120" not in stored
    assert counts(home)[:2] == (1, 1)


def test_import_claude_code_walks_the_projects_tree(sh, home, project, tmp_path):
    root = Path(os.environ["HOME"]) / ".claude" / "projects"
    session_transcript(project).write(root / "-src-shop-web" / f"{SID}.jsonl")
    other = "9d8c7b6a-0000-4000-8000-00000000abcd"
    Transcript(other, project).prompt("Second session").say("ok").write(
        root / "-src-shop-web" / f"{other}.jsonl"
    )
    (root / "-src-shop-web" / other / "tool-results").mkdir(parents=True)
    (root / "-src-shop-web" / other / "tool-results" / "x.jsonl").write_text("{}\n")
    result = sh("import", "claude-code", "--settle", "0")
    assert result.exit_code == 0, result.stderr
    assert "imported 2 transcript(s), 2 session(s): 3 prompts, 6 observations" in result.stdout
    explicit = sh("import", "claude-code", "--root", str(root), "--json", "--settle", "0").json()
    assert sum(r["observations"] for r in explicit) == 0


def test_excluded_projects_and_missing_files(sh, home, project, tmp_path):
    path = session_transcript(project).write(tmp_path / f"{SID}.jsonl")
    result = sh("import", "transcript", str(path), "--exclude-project", "shop-*", "--settle", "0")
    assert result.exit_code == 0
    assert counts(home) == (0, 0, 0)
    missing = sh("import", "transcript", str(tmp_path / "nope.jsonl"))
    assert missing.exit_code != 0 and "nope.jsonl" in missing.stderr and "Traceback" not in missing.stderr
    no_root = sh("import", "claude-code", "--root", str(tmp_path / "none"))
    assert no_root.exit_code == 3 and no_root.stderr.count("\n") == 1


def _library_import(home: Path, path: Path, settle: float) -> None:
    from cmem_cli.api import Memory
    from cmem_cli.capture.hooks.capture import Capture
    from cmem_cli.capture.hooks.rules import HookRules
    from cmem_cli.capture.transcripts import TranscriptImporter

    with Memory(home) as mem:
        TranscriptImporter(Capture(mem, HookRules(), count_repeats=False), settle_seconds=settle).import_file(
            path
        )


def _snapshot(home: Path) -> tuple:
    return (
        db_rows(home, "SELECT prompt_number, text, created_at FROM user_prompts ORDER BY prompt_number"),
        db_rows(
            home, "SELECT type, title, prompt_number, created_at FROM observations ORDER BY created_at, title"
        ),
        db_rows(home, "SELECT request, completed, created_at FROM session_summaries ORDER BY created_at"),
    )


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory):
    """One transcript imported in one go: what any sequence of partial imports must end up with."""
    root = tmp_path_factory.mktemp("reference")
    project = root / "shop-web"
    (project / ".git").mkdir(parents=True)
    text = session_transcript(project).text()
    path = root / f"{SID}.jsonl"
    path.write_text(text)
    _library_import(root / "home", path, settle=0)
    return project, text, _snapshot(root / "home")


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(cuts=st.lists(st.floats(min_value=0.0, max_value=1.0), min_size=1, max_size=4))
def test_any_sequence_of_partial_imports_ends_like_one_import(reference, tmp_path_factory, cuts) -> None:
    project, text, expected = reference
    work = tmp_path_factory.mktemp("partial")
    path = work / f"{SID}.jsonl"
    data = text.encode()
    for cut in sorted(cuts):
        path.write_bytes(data[: int(len(data) * cut)])  # the file as it was at some moment, often mid-line
        _library_import(work / "home", path, settle=3600)
    path.write_bytes(data)
    _library_import(work / "home", path, settle=0)
    assert _snapshot(work / "home") == expected


def test_a_bad_field_never_blocks_the_transcript_and_the_offset_moves_past_it(sh, home, project, tmp_path):
    """A prompt holding a NUL (valid JSON ``\\u0000``) is kept with U+FFFD in its place; a tool call named by
    2 MB is dropped and counted; every later turn is imported, and a second run reads nothing again."""
    t = Transcript(SID, project)
    t.prompt("first prompt with a \x00 inside").say("ok")
    t.tool("X" * 2_000_000, {"file_path": f"{project}/a.ts"}, "done")
    t.prompt("A later prompt").say("done too")
    path = t.write(tmp_path / f"{SID}.jsonl")
    result = import_(sh, path)
    assert result.exit_code == 0, result.stderr
    [report] = result.json()
    assert report["prompts"] == 2 and report["complete"] and report["offset"] == path.stat().st_size
    assert report["dropped"] == 1 and report["observations"] == 0
    texts = [row[0] for row in db_rows(home, "SELECT text FROM user_prompts ORDER BY prompt_number")]
    assert texts == ["first prompt with a \ufffd inside", "A later prompt"]
    again = import_(sh, path)
    assert again.exit_code == 0 and again.json()[0]["prompts"] == 0


def test_one_files_failure_is_one_line_and_the_other_files_are_imported(sh, home, project, tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.mkdir()
    good = Transcript(SID, project).prompt("Hello there").say("Hi").write(tmp_path / f"{SID}.jsonl")
    result = import_(sh, bad, good)
    assert result.exit_code == 7
    assert (
        result.stderr.count("\n") == 1 and "bad.jsonl" in result.stderr and "Traceback" not in result.stderr
    )
    assert counts(home)[0] == 1
