"""Registering `cmem mcp` with Claude Code (``cmem install claude-code --mcp``), and taking it out again.

Claude Code reads stdio MCP servers from ``mcpServers`` in ``~/.claude.json`` (user scope; under
``$CLAUDE_CONFIG_DIR`` when set) or in ``.mcp.json`` at the project root (project scope, meant to be committed).
cmem owns exactly one entry, ``mcpServers.cmem``; every other key of those files, which hold much more than
MCP servers, is kept as it was. The write goes through :func:`cmem_cli.capture.install_claude.apply` (backup, atomic).
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

from cmem_cli.capture.install_claude import Change, _read, default_executable, load_json_object
from cmem_cli.core.errors import InvalidInput

SERVER_NAME = "cmem"


def mcp_config_path(scope: str, cwd: Path) -> Path:
    if scope == "user":
        base = os.environ.get("CLAUDE_CONFIG_DIR")
        return (Path(base).expanduser() if base else Path.home()) / ".claude.json"
    if scope == "project":
        return cwd / ".mcp.json"
    raise InvalidInput(f"unknown scope {scope!r} (expected user or project)")


def server_entry(executable: str | None = None) -> dict[str, Any]:
    """The stdio entry other MCP clients take too: the absolute cmem when found, else this Python's module."""
    exe = executable or default_executable()
    if exe:
        return {"type": "stdio", "command": exe, "args": ["mcp"], "env": {}}
    return {"type": "stdio", "command": sys.executable, "args": ["-m", "cmem_cli", "mcp"], "env": {}}


def _load(path: Path, text: str | None) -> dict[str, Any]:
    data = load_json_object(path, text)
    if not isinstance(data.get("mcpServers", {}), dict):
        raise InvalidInput(f'{path}: "mcpServers" must be an object; not touching it')
    return data


def merge_mcp(data: dict[str, Any], *, uninstall: bool, executable: str | None = None) -> dict[str, Any]:
    """A copy of ``data`` with ``mcpServers.cmem`` set (or removed); an emptied ``mcpServers`` goes too."""
    result: dict[str, Any] = json.loads(json.dumps(data))
    servers: dict[str, Any] = result.get("mcpServers") or {}
    if uninstall:
        servers.pop(SERVER_NAME, None)
    else:
        servers[SERVER_NAME] = server_entry(executable)
    if servers:
        result["mcpServers"] = servers
    else:
        result.pop("mcpServers", None)
    return result


def plan_mcp(
    scope: str, *, uninstall: bool, cwd: Path | None = None, executable: str | None = None
) -> Change:
    path = mcp_config_path(scope, cwd or Path.cwd())
    old = _read(path)
    data = _load(path, old)
    merged = merge_mcp(data, uninstall=uninstall, executable=executable)
    if old is not None and merged == data:
        new: str | None = old  # already as wanted: keep the file byte for byte
    elif not merged and (old is None or uninstall):
        new = None  # nothing but cmem was ever in it: remove the file cmem created
    else:
        new = json.dumps(merged, indent=2, ensure_ascii=False) + "\n"
    what = "MCP server removed" if uninstall else "MCP server registered"

    def without_cmem(text: str | None) -> object:
        return merge_mcp(_load(path, text), uninstall=True)

    # ~/.claude.json holds Claude Code's account state: a file created for it is the user's alone
    mode = 0o600 if scope == "user" else 0o644
    return Change(path, old, new, what, mode=mode, without_cmem=without_cmem if uninstall else None)
