"""`cmem install claude-code --mcp`: the MCP server entry goes in and comes out again; nothing else in Claude
Code's files changes, and the registered command really serves MCP. HOME is a temp dir (the `home` fixture)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import anyio
import pytest
from mcp import Client, StdioServerParameters

CLAUDE_JSON = {"numStartups": 7, "projects": {"/src/app": {"allowedTools": []}}, "mcpServers": {"other": {}}}


def user_file() -> Path:
    return Path(os.environ["HOME"]) / ".claude.json"


def test_install_registers_the_server_and_keeps_everything_else(sh, home) -> None:
    user_file().parent.mkdir(parents=True, exist_ok=True)
    user_file().write_text(json.dumps(CLAUDE_JSON))
    result = sh("install", "claude-code", "--mcp", "--no-instructions")
    assert result.exit_code == 0, result.stderr
    after = json.loads(user_file().read_text())
    assert after["numStartups"] == 7 and after["projects"] == CLAUDE_JSON["projects"]
    assert after["mcpServers"]["other"] == {}
    entry = after["mcpServers"]["cmem"]
    assert entry["type"] == "stdio" and entry["args"][-1] == "mcp"
    assert len(list(user_file().parent.glob(".claude.json.cmem-backup-*"))) == 1

    again = sh("install", "claude-code", "--mcp", "--no-instructions")
    assert f"unchanged {user_file()}" in again.stdout.splitlines()

    removed = sh("install", "claude-code", "--uninstall", "--no-instructions")
    assert removed.exit_code == 0, removed.stderr
    assert json.loads(user_file().read_text()) == CLAUDE_JSON


def test_a_new_claude_json_is_private_to_the_user(sh, home) -> None:
    """~/.claude.json holds Claude Code's account state: a file cmem creates for it is 0600."""
    result = sh("install", "claude-code", "--mcp", "--no-instructions")
    assert result.exit_code == 0, result.stderr
    assert user_file().stat().st_mode & 0o777 == 0o600


def test_without_mcp_the_file_is_not_touched(sh, home) -> None:
    result = sh("install", "claude-code", "--no-instructions")
    assert result.exit_code == 0, result.stderr
    assert not user_file().exists()
    uninstall = sh("install", "claude-code", "--uninstall", "--no-instructions")
    assert str(user_file()) not in uninstall.stdout


def test_dry_run_shows_the_entry_and_writes_nothing(sh, home) -> None:
    result = sh("install", "claude-code", "--mcp", "--dry-run", "--no-instructions")
    assert result.exit_code == 0, result.stderr
    assert '+  "mcpServers": {' in result.stdout and '+      "args": [' in result.stdout
    assert not user_file().exists()
    assert not (Path(os.environ["HOME"]) / ".claude").exists()


def test_project_scope_writes_dot_mcp_json_and_uninstall_deletes_it(sh, home, tmp_path) -> None:
    result = sh("install", "claude-code", "--scope", "project", "--mcp", "--no-instructions")
    assert result.exit_code == 0, result.stderr
    assert set(json.loads((tmp_path / ".mcp.json").read_text())["mcpServers"]) == {"cmem"}
    sh("install", "claude-code", "--scope", "project", "--uninstall", "--no-instructions")
    assert not (tmp_path / ".mcp.json").exists()


@pytest.mark.parametrize("broken", ["{not json", '{"mcpServers": []}', "[]"])
def test_broken_config_is_left_alone_with_a_one_line_error(sh, home, broken) -> None:
    user_file().parent.mkdir(parents=True, exist_ok=True)
    user_file().write_text(broken)
    result = sh("install", "claude-code", "--mcp", "--no-instructions")
    assert result.exit_code == 4
    assert result.stderr.startswith("cmem: ") and len(result.stderr.strip().splitlines()) == 1
    assert user_file().read_text() == broken
    assert not (Path(os.environ["HOME"]) / ".claude").exists()  # nothing else was written either


def test_the_registered_command_serves_mcp(sh, home) -> None:
    sh("install", "claude-code", "--mcp", "--no-instructions")
    entry = json.loads(user_file().read_text())["mcpServers"]["cmem"]

    async def main() -> list[str]:
        params = StdioServerParameters(command=entry["command"], args=entry["args"], env=dict(os.environ))
        async with Client(params, read_timeout_seconds=60) as client:
            return sorted(tool.name for tool in (await client.list_tools()).tools)

    assert anyio.run(main) == [
        "context",
        "get",
        "invalidate",
        "projects",
        "remember",
        "restore",
        "search",
        "timeline",
    ]
