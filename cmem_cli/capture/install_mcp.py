"""Registering `cmem mcp` with an agent (``cmem install AGENT``), and taking it out again.

Claude Code reads stdio MCP servers from ``mcpServers`` in ``~/.claude.json`` (user scope; under
``$CLAUDE_CONFIG_DIR`` when set) or in ``.mcp.json`` at the project root (project scope, meant to be committed);
Gemini CLI and Cursor from ``mcpServers`` in their own JSON files, opencode from ``mcp`` in opencode.json
(``install_agents``). cmem owns exactly one entry, named ``cmem``; every other key of those files, which often
hold much more than MCP servers, is kept as it was. The write goes through
:func:`cmem_cli.capture.install_files.apply` (backup, atomic).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from cmem_cli.capture.agent_dirs import claude_json_dir
from cmem_cli.capture.install_files import Change, default_executable, plan_json
from cmem_cli.core.errors import InvalidInput

SERVER_NAME = "cmem"


def mcp_config_path(scope: str, cwd: Path) -> Path:
    if scope == "user":
        return claude_json_dir() / ".claude.json"
    if scope == "project":
        return cwd / ".mcp.json"
    raise InvalidInput(f"unknown scope {scope!r} (expected user or project)")


def server_argv(executable: str | None = None) -> list[str]:
    """The command line of the server: the absolute cmem when found, else this Python's module."""
    exe = executable or default_executable()
    return [exe, "mcp"] if exe else [sys.executable, "-m", "cmem_cli", "mcp"]


def server_entry(executable: str | None = None) -> dict[str, Any]:
    """The stdio entry other MCP clients take too."""
    command, *args = server_argv(executable)
    return {"type": "stdio", "command": command, "args": args, "env": {}}


def check_servers(path: Path, data: dict[str, Any], key: str = "mcpServers") -> dict[str, Any]:
    if not isinstance(data.get(key, {}), dict):
        raise InvalidInput(f'{path}: "{key}" must be an object; not touching it')
    return data


def merge_server(
    data: dict[str, Any], entry: dict[str, Any], *, uninstall: bool, key: str = "mcpServers"
) -> dict[str, Any]:
    """A copy of ``data`` with ``<key>.cmem`` set (or removed); an emptied ``<key>`` goes too."""
    result: dict[str, Any] = json.loads(json.dumps(data))
    servers: dict[str, Any] = result.get(key) or {}
    if uninstall:
        servers.pop(SERVER_NAME, None)
    else:
        servers[SERVER_NAME] = entry
    if servers:
        result[key] = servers
    else:
        result.pop(key, None)
    return result


def merge_mcp(data: dict[str, Any], *, uninstall: bool, executable: str | None = None) -> dict[str, Any]:
    return merge_server(data, server_entry(executable), uninstall=uninstall)


def plan_mcp(
    scope: str, *, uninstall: bool, cwd: Path | None = None, executable: str | None = None
) -> Change:
    path = mcp_config_path(scope, cwd or Path.cwd())

    def merge(data: dict[str, Any], remove: bool) -> dict[str, Any]:
        return merge_mcp(data, uninstall=remove, executable=executable)

    # ~/.claude.json holds Claude Code's account state: a file created for it is the user's alone
    mode = 0o600 if scope == "user" else 0o644
    return plan_json(path, merge, uninstall=uninstall, what="MCP server", check=check_servers, mode=mode)
