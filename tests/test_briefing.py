"""The briefing keeps what matters, through the real hook and CLI: cmem's own MCP lookups are never
recorded, a session's reads and searches fold into one line, decisions and the last summary lead."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import apsw
import pytest

from tests.agent_fixtures import db_rows, payload, tool_payload
from tests.conftest import fake_repo


@pytest.fixture
def project(tmp_path: Path) -> Path:
    return fake_repo(tmp_path / "work", "orders-api", "src/orders")


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


@pytest.mark.slow
def test_a_session_of_reads_and_searches_folds_into_one_line_each(sh, home, project) -> None:
    sid = "4f1c2d3e-fold"
    hook(sh, "SessionStart", payload("SessionStart", sid, project, source="startup"))
    for n in range(25):
        path = f"{project}/src/orders/file{n}.ts"
        hook(sh, "PostToolUse", tool_payload(sid, project, "Read", {"file_path": path}))
    for pattern in ("refund", "orderTotal", "currency"):
        hook(
            sh, "PostToolUse", tool_payload(sid, project, "Grep", {"pattern": pattern, "path": str(project)})
        )
    hook(sh, "PostToolUse", tool_payload(sid, project, "Bash", {"command": "npm test"},
                                         event="PostToolUseFailure", error="Exit code 1\nFAIL orders"))  # fmt: skip
    sh(
        "add",
        "--type",
        "decision",
        "--title",
        "Refunds are issued in the order's currency",
        "-p",
        "orders-api",
    )
    sh("add", "--type", "bugfix", "--title", "Totals lost a cent on refunds", "-p", "orders-api")
    out = hook(sh, "SessionStart", payload("SessionStart", "next-session", project, source="startup"))
    text = json.loads(out.stdout)["hookSpecificOutput"]["additionalContext"]
    lines = text.splitlines()
    assert not any(line.startswith("#") and "Read src/orders/" in line for line in lines)
    [reads] = [line for line in lines if "read 25 files" in line]
    assert reads.startswith("- ") and "read 25 files under src/orders/" in reads
    [searches] = [line for line in lines if "searched 3 times" in line]
    assert "`refund`" in searches and "`orderTotal`" in searches and "`currency`" in searches
    decision = next(i for i, line in enumerate(lines) if "Refunds are issued in the order's currency" in line)
    bugfix = next(i for i, line in enumerate(lines) if "Totals lost a cent on refunds" in line)
    failed = next(i for i, line in enumerate(lines) if "Command failed: npm test" in line)
    assert max(decision, bugfix) < lines.index(reads) < failed  # what was recorded on purpose leads
    data = sh("context", "-p", "orders-api", "--json").json()
    kinds = {(a["kind"], a["count"]) for a in data["activity"]}
    assert kinds == {("read", 25), ("search", 3)}
    read = next(a for a in data["activity"] if a["kind"] == "read")
    assert read["session"] == sid and len(read["ids"]) == 25 and read["files"] == 25


def test_retrieval_counts_do_not_rank_the_briefing(sh, home) -> None:
    now = datetime.now(UTC)
    records = [
        {"type": "decision", "title": "Cache lives in SQLite", "project": "rank",
         "created_at": (now - timedelta(days=2)).isoformat()},
        {"type": "decision", "title": "Queue lives in Redis", "project": "rank", "created_at": now.isoformat()},
    ]  # fmt: skip
    older, newer = (int(i) for i in sh("add", "--json", "-", input=json.dumps(records)).stdout.split())
    conn = apsw.Connection(str(home / "cmem.db"))
    with conn:  # as if the older one had been fetched a thousand times
        conn.execute("UPDATE observations SET retrieval_count = 1000 WHERE id = ?", (older,))
    conn.close()
    both = sh("context", "-p", "rank", "--json").json()
    assert len(both["observations"]) == 2
    budget = (len(both["text"]) - 1) // 4  # a character short of both lines: room for one
    data = sh("context", "-p", "rank", "--budget", str(budget), "--json").json()
    assert [o["id"] for o in data["observations"]] == [newer]
