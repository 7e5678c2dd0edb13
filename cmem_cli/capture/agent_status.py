"""What is installed for each agent (``cmem install --detect``) and what is wrong with it (``cmem doctor``):
which agents are on this machine, which of cmem's hook entries and MCP registrations their config files hold,
and whether those entries still work (the cmem they run exists, every event cmem needs is there, none it
no longer uses is left, and what the agent's own spec checks besides). Every agent comes from the registry
(:mod:`cmem_cli.capture.agents`).
"""

from __future__ import annotations

import os
import shlex
import shutil
from pathlib import Path
from typing import TypedDict

from cmem_cli.capture.agents import AgentSpec, Where, spec, specs


def installed_commands(agent: str, hooks_file: Path) -> list[tuple[str, str]]:
    """(event, command) for each of cmem's entries in an agent's hook file."""
    return spec(agent).installed(hooks_file)


def _runs(command: str) -> bool:
    """The program a hook command starts exists and may be run."""
    try:
        program = shlex.split(command)[0] if command else ""
    except ValueError:
        return False
    if not program:
        return False
    if os.sep in program:
        path = Path(program).expanduser()
        return path.is_file() and os.access(path, os.X_OK)
    return shutil.which(program) is not None


def problems(agent: str, commands: list[tuple[str, str]], where: Where | None = None) -> list[str]:
    """What is broken or stale in an agent's installed entries (empty: fine, or nothing installed)."""
    if not commands:
        return []
    agent_spec = spec(agent)
    found: list[str] = []
    broken = sorted({command for _, command in commands if not _runs(command)})
    for command in broken:
        found.append(f"broken: {shlex.split(command)[0] if command else 'no command'} cannot be run")
    events = {event for event, _ in commands}
    missing = sorted(agent_spec.event_names - events)
    extra = sorted(events - agent_spec.event_names)
    wrong_agent = agent_spec.names_agent and any(
        f"--agent {agent} " not in command for _, command in commands
    )
    if missing:
        found.append(f"stale: no entry for {', '.join(missing)}")
    if extra:
        found.append(f"stale: entries cmem no longer uses ({', '.join(extra)})")
    if wrong_agent:
        found.append(f"stale: an entry does not say --agent {agent}")
    if agent_spec.checks is not None and where is not None:
        found.extend(agent_spec.checks(where, commands))
    return found


def on_machine(agent_spec: AgentSpec) -> bool:
    """The agent's program is on PATH, or its own folder is in the home."""
    return shutil.which(agent_spec.program) is not None or agent_spec.user_dir().is_dir()


class AgentStatus(TypedDict):
    """An agent in one scope (``user`` or ``project``), as `cmem agents --json` prints it."""

    agent: str
    found: bool  # the agent is on this machine
    scope: str
    hooks: list[str]  # the events cmem's hooks are installed for
    hooks_file: str
    mcp: bool  # cmem's MCP server is registered
    mcp_file: str
    problems: list[str]  # what is broken or stale in the installed entries


def agent_status(cwd: Path | None = None) -> list[AgentStatus]:
    """One row per agent and scope: whether the agent is on this machine, cmem's hooks and MCP server."""
    cwd = cwd or Path.cwd()
    rows: list[AgentStatus] = []
    for agent_spec in specs():
        found = on_machine(agent_spec)
        for scope in ("user", "project"):
            where = agent_spec.files(scope, cwd)
            commands = agent_spec.installed(where.hooks)
            mcp = agent_spec.mcp_registered(where.mcp)
            if scope == "project" and not commands and not mcp:
                continue
            rows.append(
                {
                    "agent": agent_spec.name,
                    "found": found,
                    "scope": scope,
                    "hooks": sorted({event for event, _ in commands}),
                    "hooks_file": str(where.hooks),
                    "mcp": mcp,
                    "mcp_file": str(where.mcp),
                    "problems": problems(agent_spec.name, commands, where),
                }
            )
    return rows
