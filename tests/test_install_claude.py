"""`cmem install claude-code`: cmem's hooks and instructions go in and come out again, and nothing else in
the user's Claude Code settings changes. HOME is a temp dir (the `home` fixture): the real ~/.claude is never
touched."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from cmem_cli.capture.agents.claude_code import HOOKS
from cmem_cli.capture.install_claude import HOOK_EVENTS, is_cmem_command, merge_instructions, merge_settings
from tests.agent_fixtures import db_rows

EXISTING = {
    "model": "sonnet",
    "permissions": {"allow": ["Bash(npm test:*)"], "deny": ["Read(./.env)"]},
    "env": {"NODE_ENV": "development"},
    "hooks": {
        "PostToolUse": [
            {
                "matcher": "Edit|Write",
                "hooks": [{"type": "command", "command": 'npx prettier --write "$FILE"'}],
            }
        ],
        "PreToolUse": [
            {
                "matcher": "Bash",
                "hooks": [{"type": "command", "command": "~/.claude/hooks/guard.sh", "timeout": 5}],
            }
        ],
        "Notification": [],
    },
    "statusLine": {"type": "command", "command": "~/.claude/statusline.sh"},
}


@pytest.fixture
def claude_dir(home: Path) -> Path:
    path = Path(os.environ["HOME"]) / ".claude"
    path.mkdir(parents=True)
    return path


def settings(claude_dir: Path) -> dict:
    return json.loads((claude_dir / "settings.json").read_text())


def backups(directory: Path) -> list[Path]:
    return sorted(directory.glob("*.cmem-backup-*"))


def test_install_adds_every_hook_and_keeps_all_other_settings(sh, claude_dir) -> None:
    (claude_dir / "settings.json").write_text(json.dumps(EXISTING, indent=4))
    result = sh("install", "claude-code")
    assert result.exit_code == 0, result.stderr
    after = settings(claude_dir)
    for key in ("model", "permissions", "env", "statusLine"):
        assert after[key] == EXISTING[key]
    assert (
        after["hooks"]["PreToolUse"][: len(EXISTING["hooks"]["PreToolUse"])]
        == EXISTING["hooks"]["PreToolUse"]
    )
    assert after["hooks"]["PostToolUse"][0] == EXISTING["hooks"]["PostToolUse"][0]
    for event in HOOK_EVENTS:
        commands = [h["command"] for g in after["hooks"][event] for h in g["hooks"]]
        mine = [c for c in commands if is_cmem_command(c)]
        assert len(mine) == len(HOOKS[event]) and all(c.endswith(f" hook {event}") for c in mine)
    assert len(backups(claude_dir)) == 1
    assert json.loads(backups(claude_dir)[0].read_text()) == EXISTING


def test_installing_twice_changes_nothing(sh, claude_dir) -> None:
    (claude_dir / "settings.json").write_text(json.dumps(EXISTING))
    sh("install", "claude-code")
    first = (claude_dir / "settings.json").read_bytes()
    claude_md = (claude_dir / "CLAUDE.md").read_bytes()
    again = sh("install", "claude-code")
    assert again.exit_code == 0
    assert "unchanged" in again.stdout
    assert (claude_dir / "settings.json").read_bytes() == first
    assert (claude_dir / "CLAUDE.md").read_bytes() == claude_md
    assert len(backups(claude_dir)) == 1  # no backup when nothing is written


def test_uninstall_round_trips_the_settings_and_claude_md(sh, claude_dir) -> None:
    (claude_dir / "settings.json").write_text(json.dumps(EXISTING, indent=2))
    (claude_dir / "CLAUDE.md").write_text("# My rules\n\nAlways write tests first.\n")
    sh("install", "claude-code")
    md = (claude_dir / "CLAUDE.md").read_text()
    assert md.startswith("# My rules\n\nAlways write tests first.\n")
    assert "cmem search" in md and "cmem timeline" in md and "cmem get" in md and "cmem add" in md
    assert len(md.splitlines()) < 20  # short: it is read every session
    result = sh("install", "claude-code", "--uninstall")
    assert result.exit_code == 0, result.stderr
    assert settings(claude_dir) == EXISTING
    assert (claude_dir / "CLAUDE.md").read_text() == "# My rules\n\nAlways write tests first.\n"


def test_uninstall_removes_files_that_only_cmem_created(sh, claude_dir) -> None:
    sh("install", "claude-code")
    assert (claude_dir / "settings.json").exists() and (claude_dir / "CLAUDE.md").exists()
    sh("install", "claude-code", "--uninstall")
    assert list(claude_dir.iterdir()) == []  # no `{}` left behind, no backup of cmem's own content


def test_uninstall_keeps_no_backup_that_holds_only_what_the_file_holds_now(sh, claude_dir) -> None:
    (claude_dir / "settings.json").write_text(json.dumps(EXISTING, indent=2))
    (claude_dir / "CLAUDE.md").write_text("# My rules\n")
    sh("install", "claude-code")
    assert len(backups(claude_dir)) == 2  # install backed up both of the user's files
    sh("install", "claude-code", "--uninstall")
    assert backups(claude_dir) == []
    assert settings(claude_dir) == EXISTING and (claude_dir / "CLAUDE.md").read_text() == "# My rules\n"


def test_a_backup_holding_the_user_s_later_changes_is_kept(sh, claude_dir) -> None:
    (claude_dir / "settings.json").write_text(json.dumps(EXISTING, indent=2))
    sh("install", "claude-code", "--no-instructions")
    changed = {**settings(claude_dir), "model": "opus"}  # the user edits the file while cmem is installed
    (claude_dir / "settings.json").write_text(json.dumps(changed, indent=2))
    sh("install", "claude-code", "--uninstall", "--no-instructions")
    kept = [json.loads(path.read_text()) for path in backups(claude_dir)]
    assert kept == [EXISTING]  # the state before install; the uninstall's own backup held nothing more
    assert settings(claude_dir)["model"] == "opus"


def test_claude_md_names_cmem_by_a_path_the_agent_can_run(sh, claude_dir, tmp_path) -> None:
    """Claude Code runs the section's commands with its own PATH: where `cmem` is not the one installed,
    the section calls it by its absolute path, as the hooks do."""
    import sys

    installed = Path(sys.executable).with_name("cmem")
    sh("install", "claude-code", env={"PATH": "/usr/bin:/bin"})
    md = (claude_dir / "CLAUDE.md").read_text()
    assert f'`{installed} search "QUERY"`' in md and f"`{installed} add --type" in md
    sh("install", "claude-code", env={"PATH": f"{installed.parent}:/usr/bin:/bin"})
    again = (claude_dir / "CLAUDE.md").read_text()
    assert '`cmem search "QUERY"`' in again and str(installed) not in again


def test_dry_run_writes_nothing_and_shows_the_diff(sh, claude_dir) -> None:
    (claude_dir / "settings.json").write_text(json.dumps(EXISTING))
    before = (claude_dir / "settings.json").read_bytes()
    result = sh("install", "claude-code", "--dry-run")
    assert result.exit_code == 0
    assert "+" in result.stdout and "hook SessionStart" in result.stdout
    assert (claude_dir / "settings.json").read_bytes() == before
    assert not (claude_dir / "CLAUDE.md").exists() and not backups(claude_dir)


def test_project_scope_writes_into_the_current_directory(sh, home, tmp_path) -> None:
    result = sh("install", "claude-code", "--scope", "project", "--no-instructions")
    assert result.exit_code == 0, result.stderr
    project_settings = json.loads((tmp_path / ".claude" / "settings.json").read_text())
    assert set(project_settings["hooks"]) == set(HOOK_EVENTS)
    assert not (tmp_path / "CLAUDE.md").exists()
    assert not (Path(os.environ["HOME"]) / ".claude").exists()


def test_broken_settings_are_left_alone_with_a_one_line_error(sh, claude_dir) -> None:
    (claude_dir / "settings.json").write_text('{"model": "sonnet",')
    result = sh("install", "claude-code")
    assert result.exit_code == 4
    assert result.stderr.count("\n") == 1 and "not valid JSON" in result.stderr
    assert (claude_dir / "settings.json").read_text() == '{"model": "sonnet",'
    assert sh("install", "claude-code", "--scope", "galaxy").exit_code != 0


def test_a_moved_cmem_is_updated_in_place_and_foreign_cmem_like_commands_are_kept() -> None:
    old = merge_settings(EXISTING, uninstall=False, executable="/old/venv/bin/cmem")
    old["hooks"]["Stop"].append({"hooks": [{"type": "command", "command": "echo cmemories > /tmp/x"}]})
    new = merge_settings(old, uninstall=False, executable="/new/bin/cmem")
    commands = [h["command"] for g in new["hooks"]["Stop"] for h in g["hooks"]]
    assert commands == ["echo cmemories > /tmp/x", "/new/bin/cmem hook Stop"]
    assert merge_settings(new, uninstall=True)["hooks"]["Stop"] == [
        {"hooks": [{"type": "command", "command": "echo cmemories > /tmp/x"}]}
    ]


def test_instruction_block_replaced_not_duplicated() -> None:
    once = merge_instructions("intro\n", uninstall=False)
    twice = merge_instructions(once, uninstall=False)
    assert once == twice and once.count("cmem:begin") == 1
    assert merge_instructions(twice, uninstall=True) == "intro\n"


def test_installed_command_runs_a_hook(sh, claude_dir, tmp_path) -> None:
    """The command written into settings.json is one that actually works as a hook."""
    import shlex
    import subprocess

    sh("install", "claude-code")
    command = next(
        h["command"] for g in settings(claude_dir)["hooks"]["UserPromptSubmit"] for h in g["hooks"]
    )
    body = json.dumps(
        {
            "session_id": "s-installed",
            "cwd": str(tmp_path),
            "hook_event_name": "UserPromptSubmit",
            "prompt": "hello from the installed hook",
        }
    )
    proc = subprocess.run(
        shlex.split(command), input=body.encode(), capture_output=True, env=os.environ, timeout=60
    )
    assert proc.returncode == 0
    assert db_rows(Path(os.environ["CMEM_HOME"]), "SELECT text FROM user_prompts") == [
        ("hello from the installed hook",)
    ]


# What `cmem install claude-code` wrote before Claude Code ran its recording hooks in the background: one
# group an event, each waited for, PostToolUse on every tool.
OLD_SHAPE = {
    "SessionStart": (None, 15),
    "UserPromptSubmit": (None, 10),
    "PreToolUse": ("Edit|MultiEdit|Write|NotebookEdit", 10),
    "PostToolUse": ("*", 10),
    "PostToolUseFailure": ("*", 10),
    "Stop": (None, 10),
    "SessionEnd": (None, 10),
    "FileChanged": (None, 10),
}


def with_old_install(settings: dict, executable: str) -> dict:
    """``settings`` with cmem's entries as an older cmem added them (after the person's own)."""
    result = json.loads(json.dumps(settings))
    hooks = result.setdefault("hooks", {})
    for event, (matcher, timeout) in OLD_SHAPE.items():
        entry = {"type": "command", "command": f"{executable} hook {event}", "timeout": timeout}
        hooks.setdefault(event, []).append({**({"matcher": matcher} if matcher else {}), "hooks": [entry]})
    return result


def ours(after: dict) -> dict[str, list[tuple[str | None, bool]]]:
    """event -> (matcher, runs in the background) of each of cmem's entries."""
    return {
        event: [
            (group.get("matcher"), hook.get("async") is True)
            for group in groups
            for hook in group["hooks"]
            if is_cmem_command(hook["command"])
        ]
        for event, groups in after["hooks"].items()
        if any(is_cmem_command(h["command"]) for g in groups for h in g["hooks"])
    }


def test_claude_code_waits_only_for_the_hooks_that_answer_with_context(sh, claude_dir) -> None:
    """The briefing, prompt recall, the notes before an edit and after a Read, and the turn's end are waited
    for; recording a tool call, a failure, the session's end or a watched file's change runs in the
    background ("async": true)."""
    assert sh("install", "claude-code").exit_code == 0
    assert ours(settings(claude_dir)) == {
        "SessionStart": [(None, False)],
        "UserPromptSubmit": [(None, False)],
        "PreToolUse": [("Edit|MultiEdit|Write|NotebookEdit", False)],
        "PostToolUse": [("Read", False), ("^(?!Read$).*", True)],
        "PostToolUseFailure": [("*", True)],
        "Stop": [(None, False)],
        "SessionEnd": [(None, True)],
        "FileChanged": [(None, True)],
    }


def test_the_background_matcher_takes_every_tool_but_read() -> None:
    """Claude Code reads a matcher that is not a plain list of names as a JavaScript regular expression,
    tested against the tool's name; Python's `re.search` reads this one the same way."""
    import re

    from cmem_cli.capture.agents.claude_code import NOT_READ

    for tool in ("Edit", "Bash", "Write", "Reader", "ReadX", "mcp__cmem__search", "NotebookRead"):
        assert re.search(NOT_READ, tool), tool
    assert not re.search(NOT_READ, "Read")


def test_an_install_of_the_old_shape_is_upgraded_in_place_and_uninstalls_byte_for_byte(
    sh, claude_dir
) -> None:
    original = json.dumps(EXISTING, indent=2)
    path = claude_dir / "settings.json"
    path.write_text(original)
    sh("install", "claude-code", "--no-instructions")  # the backup of the person's file, as then
    executable = next(
        h["command"].rsplit(" hook ", 1)[0]
        for h in settings(claude_dir)["hooks"]["Stop"][0]["hooks"]
        if is_cmem_command(h["command"])
    )
    path.write_text(json.dumps(with_old_install(EXISTING, executable), indent=2) + "\n")
    detected = sh("install", "--detect", "--json").json()
    [row] = [r for r in detected if r["agent"] == "claude-code" and r["scope"] == "user"]
    assert [p for p in row["problems"] if "older cmem" in p], row
    doctor = {c["name"]: c for c in sh("doctor", "--json").json()["checks"]}["agent claude-code (user)"]
    assert doctor["status"] == "fail" and "older cmem" in doctor["detail"], doctor

    upgraded = sh("install", "claude-code", "--no-instructions")
    assert upgraded.exit_code == 0, upgraded.stderr
    after = settings(claude_dir)
    assert ours(after)["PostToolUse"] == [("Read", False), ("^(?!Read$).*", True)]
    assert after["hooks"]["PostToolUse"][0] == EXISTING["hooks"]["PostToolUse"][0]  # the person's, first
    assert len(backups(claude_dir)) == 1  # only cmem's entries changed: no second backup
    doctor = {c["name"]: c for c in sh("doctor", "--json").json()["checks"]}["agent claude-code (user)"]
    assert doctor["status"] == "ok", doctor

    assert sh("install", "claude-code", "--uninstall", "--no-instructions").exit_code == 0
    assert path.read_text() == original
    assert backups(claude_dir) == []


def test_uninstall_never_restores_a_backup_that_holds_cmem_s_entries(sh, claude_dir) -> None:
    """An older cmem backed the file up when it replaced its own entries (a moved cmem, a new shape): that
    backup holds the person's settings and cmem's old entries, and is not what uninstall brings back."""
    original = json.dumps(EXISTING, indent=2)
    path = claude_dir / "settings.json"
    path.write_text(original)
    (claude_dir / "CLAUDE.md").write_text("# My rules\n")
    sh("install", "claude-code")
    old_file = json.dumps(with_old_install(EXISTING, "/old/venv/bin/cmem"), indent=2) + "\n"
    old_md = merge_instructions("# My rules\n", uninstall=False, command="/old/venv/bin/cmem")
    for name, text in (("settings.json", old_file), ("CLAUDE.md", old_md)):
        (claude_dir / f"{name}.cmem-backup-29991231-235959").write_text(text)  # the newest backup
        (claude_dir / name).write_text(text)
    assert sh("install", "claude-code").exit_code == 0  # the upgrade
    assert sh("install", "claude-code", "--uninstall").exit_code == 0
    assert path.read_text() == original
    assert (claude_dir / "CLAUDE.md").read_text() == "# My rules\n"
