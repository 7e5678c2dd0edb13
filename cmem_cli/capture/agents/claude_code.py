"""Claude Code: cmem's hook payload is its own (``cmem hook EVENT``, no adapter), its settings.json holds the
hooks, CLAUDE.md the instructions, and its transcripts are what ``cmem import claude-code`` reads."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from cmem_cli.capture import agent_dirs
from cmem_cli.capture.agents import AgentSpec, Importer, Where, json_hooks

if TYPE_CHECKING:
    from cmem_cli.capture.install_files import Change

# Event -> (matcher or None, timeout in seconds). PostToolUseFailure is where Claude Code reports failed
# tool calls (a failing command, an edit that no longer matched): the most useful errors to remember.
EVENTS: dict[str, tuple[str | None, int]] = {
    "SessionStart": (None, 15),
    "UserPromptSubmit": (None, 10),
    # before a file is changed: the notes on it (file recall, once a file a session, with the reads)
    "PreToolUse": ("Edit|MultiEdit|Write|NotebookEdit", 10),
    "PostToolUse": ("*", 10),
    "PostToolUseFailure": ("*", 10),
    "Stop": (None, 10),
    "SessionEnd": (None, 10),
    # fires for the files SessionStart's watchPaths named: the memories citing one are re-checked at once
    "FileChanged": (None, 10),
}


def files(scope: str, cwd: Path) -> Where:
    from cmem_cli.capture.install_claude import settings_paths
    from cmem_cli.capture.install_mcp import mcp_config_path

    return Where(settings_paths(scope, cwd)[0], mcp_config_path(scope, cwd))


def instructions(scope: str, cwd: Path) -> Path:
    from cmem_cli.capture.install_claude import settings_paths

    return settings_paths(scope, cwd)[1]


def plan(where: Where, **options: Any) -> list[Change]:
    from cmem_cli.capture.install_agents import plan_claude

    return plan_claude(where, **options)


def mcp_registered(path: Path) -> bool:
    from cmem_cli.capture.agents import json_server

    return json_server()(path)


SPEC = AgentSpec(
    name="claude-code",
    title="Claude Code",
    program="claude",
    user_dir=agent_dirs.claude_dir,
    files=files,
    events=EVENTS,
    plan=plan,
    adapter=None,
    installed=json_hooks,
    mcp_registered=mcp_registered,
    reference="code.claude.com/docs/en/hooks",
    briefing="SessionStart hookSpecificOutput.additionalContext",
    importer=Importer(
        "transcripts",
        "TranscriptImporter",
        "claude_projects_root",
        "Transcript directory (default: $CLAUDE_CONFIG_DIR/projects or ~/.claude/projects).",
        "Import every Claude Code session transcript, incrementally (safe to run from cron).",
    ),
    instructions=instructions,
    names_agent=False,
)
