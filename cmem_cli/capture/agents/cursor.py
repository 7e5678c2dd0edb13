"""Cursor: ``hooks.json`` version 1 (``{event: [{"command": ...}]}``, no matchers or timeouts) and
``mcp.json``. The payload adapter is :mod:`cmem_cli.capture.hooks.adapters.cursor`; Cursor keeps no
transcripts of a documented format, so there is no importer."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from cmem_cli.capture import agent_dirs
from cmem_cli.capture.agents import AgentSpec, Where, json_hooks, json_server

if TYPE_CHECKING:
    from cmem_cli.capture.install_files import Change

# beforeShellExecution is not installed: Cursor waits on its answer as a permission decision, which a memory
# tool has no business giving; afterShellExecution records the command with its output.
EVENTS: dict[str, tuple[str | None, int | None]] = {
    event: (None, None)
    for event in (
        "sessionStart",
        "beforeSubmitPrompt",
        "afterFileEdit",
        "afterShellExecution",
        "afterMCPExecution",
        "postToolUse",  # tools with no event of their own
        "afterAgentResponse",  # the answer: the turn's summary
        "stop",
        "sessionEnd",
    )
}


def files(scope: str, cwd: Path) -> Where:
    base = agent_dirs.cursor_dir() if scope == "user" else cwd / ".cursor"
    return Where(base / "hooks.json", base / "mcp.json")


def plan(where: Where, **options: Any) -> list[Change]:
    from cmem_cli.capture.install_agents import plan_cursor

    return plan_cursor(where, events=EVENTS, agent="cursor", **options)


SPEC = AgentSpec(
    name="cursor",
    title="Cursor",
    program="cursor",
    user_dir=agent_dirs.cursor_dir,
    files=files,
    events=EVENTS,
    timeout_unit="",
    plan=plan,
    adapter="cmem_cli.capture.hooks.adapters.cursor",
    installed=json_hooks,
    mcp_registered=json_server(),
    reference="cursor.com/docs/agent/hooks (hooks.json version 1, Cursor 2.0.77)",
    briefing="sessionStart additional_context",
)
