"""What is installed for each agent (``cmem install --detect``) and what is wrong with it (``cmem doctor``):
which agents are on this machine, which of cmem's hook entries and MCP registrations their config files hold,
and whether those entries still work (the cmem they run exists, every event cmem needs is there, none it
no longer uses is left).
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
from pathlib import Path
from typing import Any

from cmem_cli.capture import toml_block
from cmem_cli.capture.install_agents import (
    AGENTS,
    CODEX_EVENTS,
    CURSOR_EVENTS,
    GEMINI_EVENTS,
    files,
)
from cmem_cli.capture.install_files import is_cmem_command
from cmem_cli.core.errors import CmemError

# The program each agent is started as, and the folder it keeps its own state in.
PROGRAMS = {
    "claude-code": "claude",
    "codex": "codex",
    "gemini": "gemini",
    "cursor": "cursor",
    "opencode": "opencode",
}


def _expected(agent: str) -> set[str]:
    if agent == "claude-code":
        from cmem_cli.capture.install_claude import HOOK_EVENTS

        return set(HOOK_EVENTS)
    return {
        "codex": set(CODEX_EVENTS),
        "gemini": set(GEMINI_EVENTS),
        "cursor": set(CURSOR_EVENTS),
        "opencode": {"plugin"},
    }[agent]


def _json(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def installed_commands(agent: str, hooks_file: Path) -> list[tuple[str, str]]:
    """(event, command) for each of cmem's entries in an agent's hook file."""
    if agent == "opencode":
        try:
            text = hooks_file.read_text(encoding="utf-8")
        except OSError:
            return []
        match = re.search(r"^const CMEM = (\[.*\])$", text, re.MULTILINE)
        argv = json.loads(match.group(1)) if match else []
        return [("plugin", shlex.join([*argv, "hook"]))] if argv else [("plugin", "")]
    hooks = _json(hooks_file).get("hooks")
    found = []
    for event, entries in hooks.items() if isinstance(hooks, dict) else []:
        for entry in entries if isinstance(entries, list) else []:
            inner = entry.get("hooks") if isinstance(entry, dict) and "hooks" in entry else [entry]
            for hook in inner if isinstance(inner, list) else []:
                if isinstance(hook, dict) and is_cmem_command(hook.get("command")):
                    found.append((event, hook["command"]))
    return found


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


def problems(agent: str, commands: list[tuple[str, str]]) -> list[str]:
    """What is broken or stale in an agent's installed entries (empty: fine, or nothing installed)."""
    if not commands:
        return []
    found: list[str] = []
    broken = sorted({command for _, command in commands if not _runs(command)})
    for command in broken:
        found.append(f"broken: {shlex.split(command)[0] if command else 'no command'} cannot be run")
    events = {event for event, _ in commands}
    missing = sorted(_expected(agent) - events)
    extra = sorted(events - _expected(agent))
    wrong_agent = agent not in ("claude-code", "opencode") and any(
        f"--agent {agent} " not in command for _, command in commands
    )
    if missing:
        found.append(f"stale: no entry for {', '.join(missing)}")
    if extra:
        found.append(f"stale: entries cmem no longer uses ({', '.join(extra)})")
    if wrong_agent:
        found.append(f"stale: an entry does not say --agent {agent}")
    return found


def _mcp_registered(agent: str, path: Path) -> bool:
    if agent == "codex":
        try:
            data = toml_block.parse(path, path.read_text(encoding="utf-8"))
        except (OSError, CmemError):
            return False
        servers = data.get("mcp_servers")
        return isinstance(servers, dict) and "cmem" in servers
    servers = _json(path).get("mcp" if agent == "opencode" else "mcpServers")
    return isinstance(servers, dict) and "cmem" in servers


def agent_status(cwd: Path | None = None) -> list[dict[str, Any]]:
    """One row per agent and scope: whether the agent is on this machine, cmem's hooks and MCP server."""
    cwd = cwd or Path.cwd()
    rows = []
    for agent in AGENTS:
        user_dir = files(agent, "user", cwd).hooks.parent
        on_machine = shutil.which(PROGRAMS[agent]) is not None or user_dir.is_dir()
        for scope in ("user", "project"):
            where = files(agent, scope, cwd)
            commands = installed_commands(agent, where.hooks)
            mcp = _mcp_registered(agent, where.mcp)
            if scope == "project" and not commands and not mcp:
                continue
            rows.append(
                {
                    "agent": agent,
                    "found": on_machine,
                    "scope": scope,
                    "hooks": sorted({event for event, _ in commands}),
                    "hooks_file": str(where.hooks),
                    "mcp": mcp,
                    "mcp_file": str(where.mcp),
                    "problems": problems(agent, commands) + codex_untrusted(agent, where.hooks),
                }
            )
    return rows


def codex_untrusted(agent: str, hooks_file: Path) -> list[str]:
    """cmem's Codex hooks that Codex will not run: no ``trusted_hash`` for them in the user's config.toml, or
    one for an older command (Codex skips an untrusted hook silently in ``codex exec``)."""
    if agent != "codex":
        return []
    from cmem_cli.capture.agent_dirs import codex_dir
    from cmem_cli.capture.install_agents import codex_trust

    try:
        text = hooks_file.read_text(encoding="utf-8")
    except OSError:
        return []
    wanted = codex_trust(hooks_file, text)
    if not wanted:
        return []
    config = codex_dir() / "config.toml"
    try:
        data = toml_block.parse(config, config.read_text(encoding="utf-8"))
    except (OSError, CmemError):
        data = {}
    hooks = data.get("hooks")
    state = hooks.get("state") if isinstance(hooks, dict) else None
    state = state if isinstance(state, dict) else {}
    project = hooks_file.parent.parent
    projects = data.get("projects")
    trusted_dirs = {
        Path(path) for path, entry in (projects.items() if isinstance(projects, dict) else [])
        if isinstance(entry, dict) and entry.get("trust_level") == "trusted"
    }  # fmt: skip
    if hooks_file.parent != codex_dir() and not ({project, *project.parents} & trusted_dirs):
        return ["untrusted: Codex reads this repository's .codex/ only once you trust the project in Codex"]
    untrusted = [key for key in wanted if key not in state]
    stale = [k for k in wanted if k in state and (state[k] or {}).get("trusted_hash") != wanted[k]]
    found = []
    if untrusted:
        found.append(f"untrusted: Codex does not run {len(untrusted)} of cmem's hooks until they are trusted")
    if stale:
        found.append(
            f"stale: {len(stale)} of cmem's hooks changed since Codex trusted them (Codex skips them)"
        )
    return found
