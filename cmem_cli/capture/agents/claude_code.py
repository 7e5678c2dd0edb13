"""Claude Code: cmem's hook payload is its own (``cmem hook EVENT``, no adapter), its settings.json holds the
hooks, CLAUDE.md the instructions, and its transcripts are what ``cmem import claude-code`` reads."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from cmem_cli.capture import agent_dirs
from cmem_cli.capture.agents import AgentSpec, Importer, Where, json_hooks

if TYPE_CHECKING:
    from cmem_cli.capture.install_files import Change


class Hook(NamedTuple):
    """One of cmem's entries in settings.json: the tools it matches (None: every call), its timeout in
    seconds, and whether Claude Code waits for it. An entry whose answer the model does not read runs with
    ``"async": true``: the session goes on while its process starts, spools the event and exits."""

    matcher: str | None
    timeout: int
    waits: bool = True


# Every tool but Read (a JavaScript regular expression): their PostToolUse only records.
NOT_READ = "^(?!Read$).*"

# Event -> cmem's entries for it. Claude Code waits for the four that may answer with context (the
# briefing, prompt recall, the notes on a file before an edit and after a Read: file recall, once a file a
# session) and for Stop. PostToolUseFailure is where Claude Code reports failed tool calls (a failing
# command, an edit that no longer matched): the most useful errors to remember. Stop is waited for because
# `claude -p` cancels the background hooks still running when it exits, right after Stop, and then waits
# about 1.5 s before SessionEnd (measured with 2.1.332's --debug-file): a waited Stop (~60 ms) lets the last
# tool call's hook finish first. SessionEnd's hook outlives the client; it takes a turn's summary from the
# transcript when Stop's did not record it (capture/hooks/runner.py).
HOOKS: dict[str, tuple[Hook, ...]] = {
    "SessionStart": (Hook(None, 15),),
    "UserPromptSubmit": (Hook(None, 10),),
    "PreToolUse": (Hook("Edit|MultiEdit|Write|NotebookEdit", 10),),
    "PostToolUse": (Hook("Read", 10), Hook(NOT_READ, 10, waits=False)),
    "PostToolUseFailure": (Hook("*", 10, waits=False),),
    "Stop": (Hook(None, 10),),
    "SessionEnd": (Hook(None, 10, waits=False),),
    # fires for the files SessionStart's watchPaths named: the memories citing one are re-checked at once
    "FileChanged": (Hook(None, 10, waits=False),),
}
# Event -> (what its entries match together, timeout): the registry's view (doctor, docs, detection).
EVENTS: dict[str, tuple[str | None, int]] = {
    event: (hooks[0].matcher if len(hooks) == 1 else "*", hooks[0].timeout) for event, hooks in HOOKS.items()
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


def older_shape(where: Where, commands: list[tuple[str, str]]) -> list[str]:
    """Events whose cmem entries are not the ones this cmem writes (an older cmem's: each one waited for,
    PostToolUse on every tool). They still record, but Claude Code waits for hooks it need not wait for."""
    from cmem_cli.capture.agents import read_json
    from cmem_cli.capture.install_files import is_cmem_command

    hooks = read_json(where.hooks).get("hooks")
    if not isinstance(hooks, dict):
        return []
    differ = []
    for event, wanted in HOOKS.items():
        groups = hooks.get(event)
        found = [
            (group.get("matcher") or None, hook.get("async") is True)
            for group in (groups if isinstance(groups, list) else [])
            if isinstance(group, dict) and isinstance(group.get("hooks"), list)
            for hook in group["hooks"]
            if isinstance(hook, dict) and is_cmem_command(hook.get("command"))
        ]
        if found and sorted(found, key=repr) != sorted(((h.matcher, not h.waits) for h in wanted), key=repr):
            differ.append(event)
    if not differ:
        return []
    return [f"stale: {', '.join(differ)} as an older cmem installed them (waited for where they need not be)"]


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
    checks=older_shape,
)
