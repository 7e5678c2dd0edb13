"""The briefing keeps what matters, through the real hook and CLI: cmem's own MCP lookups are never
recorded, a session's reads and searches fold into one line, decisions and the last summary lead."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.agent_fixtures import db_rows, payload, tool_payload


@pytest.fixture
def project(tmp_path: Path) -> Path:
    repo = tmp_path / "work" / "orders-api"
    (repo / ".git").mkdir(parents=True)
    (repo / "src" / "orders").mkdir(parents=True)
    return repo


def hook(sh, event: str, data: dict):
    result = sh("hook", event, input=json.dumps(data))
    assert result.exit_code == 0, result.stderr
    return result


def test_cmem_never_records_its_own_mcp_tool_calls(sh, home, project) -> None:
    sid = "s-own-tools"
    hook(sh, "SessionStart", payload("SessionStart", sid, project, source="startup"))
    for tool, tool_input in [
        ("mcp__cmem__search", {"query": "jwt"}),
        ("mcp__cmem__get", {"ids": [1]}),
        ("mcp__cmem__remember", {"title": "x"}),
        ("mcp__github__search_issues", {"query": "jwt"}),
    ]:
        hook(sh, "PostToolUse", tool_payload(sid, project, tool, tool_input, {"content": "ok"}))
    titles = [row[0] for row in db_rows(home, "SELECT title FROM observations ORDER BY id")]
    assert titles == ["Called github search_issues: jwt"]
