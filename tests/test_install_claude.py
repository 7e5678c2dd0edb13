"""`cmem install claude-code`: cmem's hooks and instructions go in and come out again, and nothing else in
the user's Claude Code settings changes. HOME is a temp dir (the `home` fixture): the real ~/.claude is never
touched."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

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
        ours = [c for c in commands if is_cmem_command(c)]
        assert len(ours) == 1 and ours[0].endswith(f" hook {event}")
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
